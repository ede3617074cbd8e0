// The clocks of a plain log line: ISO 8601, syslog / dmesg -T month-day-time, glog, epoch
// seconds (see parse_parts.hpp).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "triage/logs/parse_parts.hpp"
#include "triage/logs/patterns.hpp"
#include "util.hpp"

namespace hanglab::logparse {

// "HH:MM:SS[.frac]" at p; returns the end or npos.
size_t parse_hms(sv s, size_t p, double* sod, double* res) {
  if (p + 8 > s.size() || !is2(s, p) || s[p + 2] != ':' || !is2(s, p + 3) || s[p + 5] != ':' || !is2(s, p + 6))
    return npos;
  const int h = two(s, p), mi = two(s, p + 3), se = two(s, p + 6);
  if (h > 23 || mi > 59 || se > 60) return npos;
  *sod = h * 3600 + mi * 60 + se;
  *res = 1;
  p += 8;
  if (p + 1 < s.size() && (s[p] == '.' || s[p] == ',') && dig(s[p + 1])) {
    ++p;
    long long digits = 0;
    int n = 0;
    while (p < s.size() && dig(s[p])) {
      if (n < 9) digits = digits * 10 + (s[p] - '0'), ++n;
      ++p;
    }
    static const double kRes[] = {1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9};
    *sod += static_cast<double>(digits) * kRes[n];
    *res = kRes[n];
  }
  return p;
}

int month_of(sv s, size_t p) {
  static const char* kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                  "jul", "aug", "sep", "oct", "nov", "dec"};
  if (p + 3 > s.size()) return 0;
  for (int i = 0; i < 12; ++i) {
    if (lc(s[p]) == kMonths[i][0] && lc(s[p + 1]) == kMonths[i][1] && lc(s[p + 2]) == kMonths[i][2]) return i + 1;
  }
  return 0;
}

// syslog "Nov 29 08:26:59" / dmesg -T "Sat Nov 29 08:26:59 2026" (with_weekday).
size_t parse_month_day_time(sv s, size_t p, int year, bool with_weekday, double* t, double* res, bool* no_year) {
  if (with_weekday) {
    if (p + 4 > s.size() || !alpha(s[p]) || !alpha(s[p + 1]) || !alpha(s[p + 2]) || s[p + 3] != ' ') return npos;
    p += 4;
  }
  const int mo = month_of(s, p);
  if (!mo || p + 3 >= s.size() || s[p + 3] != ' ') return npos;
  p += 4;
  if (p < s.size() && s[p] == ' ') ++p;  // "Nov  9"
  long long day = 0;
  size_t e = read_int(s, p, &day);
  if (e == npos || day < 1 || day > 31 || e >= s.size() || s[e] != ' ') return npos;
  double sod = 0;
  size_t q = parse_hms(s, e + 1, &sod, res);
  if (q == npos) return npos;
  long long y = year;
  *no_year = true;
  if (q + 5 <= s.size() && s[q] == ' ' && dig(s[q + 1]) && dig(s[q + 2]) && dig(s[q + 3]) && dig(s[q + 4])) {
    y = (s[q + 1] - '0') * 1000 + (s[q + 2] - '0') * 100 + (s[q + 3] - '0') * 10 + (s[q + 4] - '0');
    q += 5;
    *no_year = false;
  }
  *t = static_cast<double>(days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(day)) * 86400) + sod;
  return q;
}

// A 10-digit Unix epoch ("1764404819.123456") followed by a space or ']'.
size_t parse_epoch(sv s, size_t p, double* t, double* res) {
  size_t q = p;
  while (q < s.size() && dig(s[q])) ++q;
  if (q - p != 10 || s[p] != '1') return npos;
  double v = 0;
  size_t e = read_double(s, p, &v);
  if (e == npos || e >= s.size() || (s[e] != ' ' && s[e] != ']' && s[e] != '\t')) return npos;
  *t = v;
  *res = e > q ? std::pow(10.0, -static_cast<double>(e - q - 1)) : 1;
  return e;
}

// The glog header after a severity letter: "[IWEF]MMDD HH:MM:SS.frac tid file:line] ".
// Also the time-less PyTorch form "[E ProcessGroupNCCL.cpp:563] ". `bracket`: the
// header is inside "[...]". Returns the position after "] ", or npos.
size_t parse_glog_header(sv s, size_t p, bool bracket, int year, LogLine& o) {
  if (p >= s.size()) return npos;
  const char sev = s[p];
  if (sev != 'I' && sev != 'W' && sev != 'E' && sev != 'F') return npos;
  double t = 0, res = 0;
  size_t q;
  if (p + 1 < s.size() && s[p + 1] == ' ') {
    if (!bracket) return npos;
    q = p + 2;
  } else {
    q = parse_glog_time(s.substr(p), year, &t, &res);
    if (!q) return npos;
    q += p;
  }
  // The rest of the header ends at the first ']' with no space-free garbage before it.
  const size_t close = s.find(']', q);
  if (close == npos || close - q > 160) return npos;
  if (!bracket) {
    // "12345 file.cpp:123]": a thread id and a file:line.
    size_t r = skip_sp(s, q);
    while (r < s.size() && dig(s[r])) ++r;
    if (r == q) return npos;
  }
  if (t != 0 && !o.has_t) {
    o.has_t = true;
    o.t = t;
    o.t_res = res;
    o.no_year = true;
  }
  size_t e = close + 1;
  if (e < s.size() && s[e] == ' ') ++e;
  return e;
}

}  // namespace hanglab::logparse

namespace hanglab {

using namespace logparse;

size_t parse_iso_time(std::string_view s, double* t, double* res) {
  if (s.size() < 16) return 0;
  for (int i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!dig(s[i])) return 0;
  }
  if (s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ' && s[10] != '_')) return 0;
  const int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
  const int mo = two(s, 5), d = two(s, 8);
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return 0;
  double sod = 0;
  size_t p = s.size() >= 19 ? parse_hms(s, 11, &sod, res) : npos;
  if (p == npos) {
    // To the minute ("2025-02-18 12:54 "): a log collector's or a console's stamp.
    if (!is2(s, 11) || s[13] != ':' || !is2(s, 14) || (s.size() > 16 && s[16] != ' ')) return 0;
    const int h = two(s, 11), mi = two(s, 14);
    if (h > 23 || mi > 59) return 0;
    sod = h * 3600.0 + mi * 60.0;
    *res = 60;
    p = 16;
  }
  double offset = 0;
  if (p < s.size() && s[p] == 'Z') {
    ++p;
  } else if (p + 5 < s.size() + 0 && (s[p] == '+' || s[p] == '-') && is2(s, p + 1)) {
    size_t q = p + 3;
    if (q < s.size() && s[q] == ':') ++q;
    if (is2(s, q)) {
      offset = (two(s, p + 1) * 3600 + two(s, q) * 60) * (s[p] == '+' ? 1 : -1);
      p = q + 2;
    }
  }
  // Consecutive lines share their date: remember the last one.
  thread_local int last_ymd = -1;
  thread_local long long last_days = 0;
  const int ymd = (y * 13 + mo) * 32 + d;
  if (ymd != last_ymd) {
    last_ymd = ymd;
    last_days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  }
  *t = static_cast<double>(last_days * 86400) + sod - offset;
  return p;
}

size_t parse_glog_time(std::string_view s, int year, double* t, double* res) {
  // "I1129 08:26:59.123456"
  if (s.size() < 14) return 0;
  if (s[0] != 'I' && s[0] != 'W' && s[0] != 'E' && s[0] != 'F') return 0;
  if (!is2(s, 1) || !is2(s, 3) || s[5] != ' ') return 0;
  const int mo = two(s, 1), d = two(s, 3);
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return 0;
  double sod = 0;
  size_t p = parse_hms(s, 6, &sod, res);
  if (p == npos) return 0;
  *t = static_cast<double>(days_from_civil(year, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400) + sod;
  return p;
}

}  // namespace hanglab

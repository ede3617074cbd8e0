// parse_log_line(): one plain log line -> clock, attribution, meaning. See the header
// for the formats. The order of the checks matters in two ways: prefixes are peeled
// outermost first (the collector's clock before the process' own), and message kinds
// are tested most specific first (a DistBackendError whose text is a watchdog timeout
// is an echo, not a generic exception).
#include "triage/logs/parse.hpp"
#include "triage/logs/patterns.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

namespace hanglab {

namespace {

using sv = std::string_view;
constexpr size_t npos = sv::npos;

inline bool dig(char c) { return c >= '0' && c <= '9'; }
inline bool alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline char lc(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }
inline bool has(sv s, sv n) { return s.find(n) != npos; }

// Case-insensitive find; `needle` must be lower case.
size_t ifind(sv hay, sv needle, size_t from = 0) {
  if (needle.empty()) return from;
  if (hay.size() < needle.size()) return npos;
  const char first = needle[0];
  const char first_up = (first >= 'a' && first <= 'z') ? static_cast<char>(first - 32) : first;
  const size_t last = hay.size() - needle.size();
  for (size_t i = from; i <= last; ++i) {
    const char c = hay[i];
    if (c != first && c != first_up) continue;
    size_t k = 1;
    while (k < needle.size() && lc(hay[i + k]) == needle[k]) ++k;
    if (k == needle.size()) return i;
  }
  return npos;
}
inline bool ihas(sv hay, sv needle) { return ifind(hay, needle) != npos; }

// "Saving latest checkpoint ...", "Saving best model checkpoint to ...": the verb, then the
// word "checkpoint" within a few words after it (not "saving" and "checkpoint" anywhere apart).
bool saving_checkpoint(sv m) {
  for (sv verb : {sv("saving "), sv("writing ")}) {
    const size_t k = ifind(m, verb);
    if (k == npos) continue;
    const size_t c = ifind(m, "checkpoint", k + verb.size());
    if (c != npos && c - (k + verb.size()) <= 24) return true;
  }
  return false;
}

bool istarts(sv s, sv lower_prefix) {
  if (s.size() < lower_prefix.size()) return false;
  for (size_t i = 0; i < lower_prefix.size(); ++i) {
    if (lc(s[i]) != lower_prefix[i]) return false;
  }
  return true;
}

inline bool starts(sv s, sv p) { return s.size() >= p.size() && s.compare(0, p.size(), p) == 0; }

size_t skip_sp(sv s, size_t p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
  return p;
}

sv trim(sv s) {
  size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  size_t e = s.size();
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

// Integer at s[p]; returns the end, or npos when there is no digit. Allows a sign.
size_t read_int(sv s, size_t p, long long* v) {
  bool neg = false;
  if (p < s.size() && (s[p] == '-' || s[p] == '+')) {
    neg = s[p] == '-';
    ++p;
  }
  if (p >= s.size() || !dig(s[p])) return npos;
  // Saturates at 10^18 - 1 (no overflow on a 40-digit "number" in a corrupted line) and
  // consumes every digit, so the rest of the line is parsed from where the number ends.
  long long x = 0;
  constexpr long long kMax = 999999999999999999LL;
  while (p < s.size() && dig(s[p])) {
    x = x > kMax / 10 ? kMax : std::min(kMax, x * 10 + (s[p] - '0'));
    ++p;
  }
  *v = neg ? -x : x;
  return p;
}

size_t read_double(sv s, size_t p, double* v) {
  // Fast path for the plain decimals of step lines ("0.4816", "1057"); strtod only for
  // exponents.
  {
    size_t q = p;
    bool neg = false;
    if (q < s.size() && (s[q] == '-' || s[q] == '+')) neg = s[q++] == '-';
    double x = 0;
    bool any = false;
    while (q < s.size() && dig(s[q])) x = x * 10 + (s[q++] - '0'), any = true;
    if (q < s.size() && s[q] == '.') {
      ++q;
      double scale = 0.1;
      while (q < s.size() && dig(s[q])) x += (s[q++] - '0') * scale, scale *= 0.1, any = true;
    }
    if (!any) return npos;
    if (q >= s.size() || (s[q] != 'e' && s[q] != 'E')) {
      *v = neg ? -x : x;
      return q;
    }
  }
  const size_t b = p;
  if (p < s.size() && (s[p] == '-' || s[p] == '+')) ++p;
  bool any = false;
  while (p < s.size() && dig(s[p])) ++p, any = true;
  if (p < s.size() && s[p] == '.') {
    ++p;
    while (p < s.size() && dig(s[p])) ++p, any = true;
  }
  if (!any) return npos;
  if (p < s.size() && (s[p] == 'e' || s[p] == 'E') && p + 1 < s.size() &&
      (dig(s[p + 1]) || ((s[p + 1] == '-' || s[p + 1] == '+') && p + 2 < s.size() && dig(s[p + 2])))) {
    p += 2;
    while (p < s.size() && dig(s[p])) ++p;
  }
  char buf[64];
  const size_t n = std::min<size_t>(p - b, sizeof buf - 1);
  std::memcpy(buf, s.data() + b, n);
  buf[n] = 0;
  *v = std::strtod(buf, nullptr);
  return p;
}

// The integer after `key` (skipping spaces, ':' and '='), only when the number is
// complete: followed by a delimiter, not by the end of a truncated line.
long long int_after(sv s, sv key, size_t from = 0, bool need_delim = true) {
  size_t k = s.find(key, from);
  if (k == npos) return -1;
  size_t p = k + key.size();
  while (p < s.size() && (s[p] == ' ' || s[p] == ':' || s[p] == '=' || s[p] == '\t')) ++p;
  long long v = 0;
  const size_t e = read_int(s, p, &v);
  if (e == npos) return -1;
  if (need_delim && e >= s.size()) return -1;
  return v;
}

long long iint_after(sv s, sv lower_key) {
  size_t k = ifind(s, lower_key);
  if (k == npos) return -1;
  size_t p = k + lower_key.size();
  while (p < s.size() && (s[p] == ' ' || s[p] == ':' || s[p] == '=' || s[p] == '\t')) ++p;
  long long v = 0;
  if (read_int(s, p, &v) == npos) return -1;
  return v;
}

// The token after `key` up to one of `stops` (only when a stop follows: a truncated
// "OpType=ALLRED" at the end of the line is not an op).
sv token_after(sv s, sv key, const char* stops) {
  size_t k = s.find(key);
  if (k == npos) return {};
  const size_t b = k + key.size();
  size_t e = b;
  while (e < s.size() && !std::strchr(stops, s[e])) ++e;
  if (e >= s.size()) return {};
  return s.substr(b, e - b);
}

long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

inline int two(sv s, size_t p) { return (s[p] - '0') * 10 + (s[p + 1] - '0'); }

bool is2(sv s, size_t p) { return p + 1 < s.size() && dig(s[p]) && dig(s[p + 1]); }

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

bool host_char(char c) { return alpha(c) || dig(c) || c == '.' || c == '-' || c == '_'; }

// One prefix at s[p]; returns the position after it or npos.
size_t peel_prefix(sv s, size_t p, const LogLineContext& ctx, LogLine& o, bool first) {
  if (p >= s.size()) return npos;
  // srun -l pads its labels ("  3: "): only at the very start of the line.
  if (first && (s[p] == ' ')) {
    size_t q = skip_sp(s, p);
    long long r = 0;
    const size_t e = read_int(s, q, &r);
    if (q - p <= 6 && e != npos && e - q <= 6 && e + 1 < s.size() && s[e] == ':' && s[e + 1] == ' ') {
      o.rank = static_cast<int>(r);
      o.rank_src = RankSource::kLauncher;
      return e + 2;
    }
    return npos;
  }
  const char c = s[p];
  double t = 0, res = 0;
  if (dig(c)) {
    if (size_t n = parse_iso_time(s.substr(p), &t, &res)) {
      if (!o.has_t) {
        o.has_t = true;
        o.t = t;
        o.t_res = res;
      }
      size_t e = p + n;
      // containerd/CRI log files: "<time> stdout F <message>".
      if (e + 9 <= s.size() && (s.compare(e, 8, " stdout ") == 0 || s.compare(e, 8, " stderr ") == 0) &&
          (s[e + 8] == 'F' || s[e + 8] == 'P') && e + 9 < s.size() && s[e + 9] == ' ')
        e += 10;
      // Python logging: "2026-11-29 08:26:59,123 - name - LEVEL - " / " | LEVEL | ".
      return e;
    }
    if (size_t e = parse_epoch(s, p, &t, &res); e != npos) {
      if (!o.has_t) {
        o.has_t = true;
        o.t = t;
        o.t_res = res;
      }
      return e;
    }
    // srun -l / torchrun-style launcher label "3: ".
    if (first || o.rank_src < RankSource::kLauncher) {
      long long r = 0;
      size_t e = read_int(s, p, &r);
      if (e != npos && e - p <= 6 && e + 1 < s.size() && s[e] == ':' && (s[e + 1] == ' ' || s[e + 1] == '\t') &&
          o.rank_src < RankSource::kLauncher) {
        o.rank = static_cast<int>(r);
        o.rank_src = RankSource::kLauncher;
        return e + 2;
      }
    }
    return npos;
  }
  if (c == '[') {
    sv r = s.substr(p);
    if (starts(r, "[rank")) {  // lower case only: "[Rank 3]" is ProcessGroupNCCL's, maybe PG-local
      size_t q = p + 5;
      if (q < s.size() && s[q] == ' ') ++q;
      long long v = 0;
      size_t e = read_int(s, q, &v);
      if (e == npos && q < s.size() && s[q] == '?') e = q + 1, v = -1;
      if (e != npos && e < s.size() && s[e] == ']') {
        if (v >= 0 && o.rank_src < RankSource::kPrefix) {
          o.rank = static_cast<int>(v);
          o.rank_src = RankSource::kPrefix;
        }
        ++e;
        if (e < s.size() && s[e] == ':') ++e;
        if (e < s.size() && s[e] == ' ') ++e;
        return e;
      }
    }
    if (starts(r, "[default")) {
      long long v = 0;
      size_t e = read_int(s, p + 8, &v);
      if (e != npos && e + 1 < s.size() && s[e] == ']' && s[e + 1] == ':') {
        o.local_rank = static_cast<int>(v);
        if (o.rank_src < RankSource::kLocal) {
          o.rank = static_cast<int>(v);
          o.rank_src = RankSource::kLocal;
        }
        e += 2;
        if (e < s.size() && s[e] == ' ') ++e;
        return e;
      }
    }
    if (p + 1 < s.size() && dig(s[p + 1])) {
      // "[1,3]<stderr>:" (Open MPI --tag-output)
      long long job = 0, rk = 0;
      size_t e = read_int(s, p + 1, &job);
      // "[3]<stderr>:" (horovodrun's tag: the process's rank)
      if (e != npos && e + 1 < s.size() && s[e] == ']' &&
          (starts(s.substr(e + 1), "<stdout>:") || starts(s.substr(e + 1), "<stderr>:"))) {
        size_t q = e + 10;
        if (q < s.size() && s[q] == ' ') ++q;
        if (o.rank_src < RankSource::kLauncher) {
          o.rank = static_cast<int>(job);
          o.rank_src = RankSource::kLauncher;
        }
        return q;
      }
      if (e != npos && e < s.size() && s[e] == ',') {
        size_t e2 = read_int(s, e + 1, &rk);
        if (e2 != npos && e2 < s.size() && s[e2] == ']') {
          size_t q = e2 + 1;
          if (starts(s.substr(q), "<stdout>:") || starts(s.substr(q), "<stderr>:")) q += 9;
          if (q < s.size() && s[q] == ':') ++q;
          if (q < s.size() && s[q] == ' ') ++q;
          if (o.rank_src < RankSource::kLauncher) {
            o.rank = static_cast<int>(rk);
            o.rank_src = RankSource::kLauncher;
          }
          return q;
        }
      }
      // "[2025-12-18 20:27:22,783]" / "[1764404819.123]" / dmesg "[12345.678901]"
      if (size_t n = parse_iso_time(r.substr(1), &t, &res); n && p + 1 + n < s.size() && s[p + 1 + n] == ']') {
        if (!o.has_t) {
          o.has_t = true;
          o.t = t;
          o.t_res = res;
        }
        return skip_sp(s, p + 2 + n);
      }
      if (size_t e3 = parse_epoch(s, p + 1, &t, &res); e3 != npos && s[e3] == ']') {
        if (!o.has_t) {
          o.has_t = true;
          o.t = t;
          o.t_res = res;
        }
        return skip_sp(s, e3 + 1);
      }
    }
    if (p + 1 < s.size() && s[p + 1] == ' ') {
      // dmesg uptime "[ 1234.567890] ": no wall clock, ordered by position.
      size_t q = skip_sp(s, p + 1);
      double v = 0;
      size_t e = read_double(s, q, &v);
      if (e != npos && e < s.size() && s[e] == ']') return skip_sp(s, e + 1);
    }
    // glog in brackets: "[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] ", "[E ProcessGroupNCCL.cpp:563] "
    if (size_t e = parse_glog_header(s, p + 1, true, ctx.year, o); e != npos) return e;
    // dmesg -T "[Sat Nov 29 08:26:59 2026] "
    bool no_year = false;
    if (size_t e = parse_month_day_time(s, p + 1, ctx.year, true, &t, &res, &no_year);
        e != npos && e < s.size() && s[e] == ']') {
      if (!o.has_t) {
        o.has_t = true;
        o.t = t;
        o.t_res = res;
        o.no_year = no_year;
      }
      return skip_sp(s, e + 1);
    }
    // Level tags and logger locations: "[INFO] ", "[logging.py:128:log_dist] ", "[titan] "
    {
      size_t q = p + 1;
      while (q < s.size() && q - p < 64 && s[q] != ']' && s[q] != ' ' && s[q] != '[') ++q;
      if (q < s.size() && s[q] == ']' && q > p + 1) {
        sv inner = s.substr(p + 1, q - p - 1);
        // "[host:3]" (a launcher's host:rank tag)
        const size_t colon = inner.rfind(':');
        if (colon != npos && colon > 0 && colon + 1 < inner.size()) {
          bool num = true;
          for (size_t i = colon + 1; i < inner.size(); ++i) num &= dig(inner[i]);
          bool hostish = true, letter = false;
          for (size_t i = 0; i < colon; ++i) {
            hostish &= host_char(inner[i]);
            letter |= alpha(inner[i]);
          }
          sv host = inner.substr(0, colon);
          const auto ends = [&](sv suf) { return host.size() > suf.size() && host.substr(host.size() - suf.size()) == suf; };
          const bool source_file = ends(".py") || ends(".cc") || ends(".cpp") || ends(".h");
          if (num && hostish && letter && !source_file && inner.find(':') == colon) {
            long long v = 0;
            read_int(inner, colon + 1, &v);
            // Weak: Open MPI's own crash handler prints "[host:pid]"; the analyzer drops
            // "ranks" that only this tag names and that do not fit the world.
            if (o.rank_src < RankSource::kHostTag) {
              o.rank = static_cast<int>(v);
              o.rank_src = RankSource::kHostTag;
            }
            o.host = host;
            size_t e = q + 1;
            if (e < s.size() && s[e] == ':') ++e;
            return skip_sp(s, e);
          }
        }
        static const char* kLevels[] = {"info", "warning", "warn", "error", "debug", "critical", "fatal", "titan"};
        for (const char* l : kLevels) {
          if (inner.size() == std::strlen(l) && istarts(inner, l)) return skip_sp(s, q + 1);
        }
        // "[logging.py:128:log_dist]": a source location, only as a leading tag
        if (inner.find(".py:") != npos) return skip_sp(s, q + 1);
      }
    }
    return npos;
  }
  // glog without brackets: "E1129 08:26:59.123456 12345 file.cpp:123] "
  if (c == 'I' || c == 'W' || c == 'E' || c == 'F') {
    if (size_t e = parse_glog_header(s, p, false, ctx.year, o); e != npos) return e;
  }
  // syslog "Nov 29 08:26:59 host kernel: " (only at the start: month names are capitalised)
  if (first && c >= 'A' && c <= 'Z') {
    bool no_year = false;
    size_t e = parse_month_day_time(s, p, ctx.year, false, &t, &res, &no_year);
    if (e != npos && e < s.size() && s[e] == ' ') {
      size_t h = e + 1;
      size_t he = h;
      while (he < s.size() && host_char(s[he])) ++he;
      if (he > h && he < s.size() && s[he] == ' ') {
        if (!o.has_t) {
          o.has_t = true;
          o.t = t;
          o.t_res = res;
          o.no_year = no_year;
        }
        o.host = s.substr(h, he - h);
        size_t q = he + 1;
        if (starts(s.substr(q), "kernel: ")) q += 8;
        return q;
      }
    }
  }
  return npos;
}

// Python logging levels and logger names in front of the message: "- name - INFO - msg",
// "name - INFO - msg" (after its clock), "INFO:root:msg", "INFO msg". One pass over the
// '-' of the head: step lines, the hot path, usually have none.
bool level_word(sv s, size_t p, size_t* end) {
  static const sv kLevels[] = {"INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL", "WARN"};
  for (const sv l : kLevels) {
    if (s.size() >= p + l.size() && s.compare(p, l.size(), l) == 0) {
      *end = p + l.size();
      return true;
    }
  }
  return false;
}

sv strip_level(sv m) {
  m = trim(m);
  for (int round = 0; round < 2 && !m.empty(); ++round) {
    bool cut = false;
    const size_t head = std::min<size_t>(m.size(), 100);
    for (size_t k = 0; k + 3 < head;) {
      const void* hit = std::memchr(m.data() + k, '-', head - k);
      if (!hit) break;
      k = static_cast<size_t>(static_cast<const char*>(hit) - m.data());
      size_t e = 0;
      if ((k == 0 || m[k - 1] == ' ') && k + 1 < m.size() && m[k + 1] == ' ' && level_word(m, k + 2, &e) &&
          m.compare(e, 3, " - ") == 0) {
        m = trim(m.substr(e + 3));
        cut = true;
        break;
      }
      ++k;
    }
    if (cut) continue;
    // "INFO:root:msg" / "WARNING:torch.distributed.run:msg" / "INFO: msg" / "INFO msg" (not
    // "ERROR (comm) ...", the hanglab workloads' own format)
    const char c = m[0];
    size_t e = 0;
    if ((c == 'I' || c == 'W' || c == 'E' || c == 'D' || c == 'C') && level_word(m, 0, &e) && m.size() > e + 2 &&
        (m[e] == ':' || (m[e] == ' ' && m[e + 1] != '('))) {
      size_t q = e + 1;
      if (m[e] == ':') {
        // optional logger name up to the next ':'
        size_t k = q;
        while (k < m.size() && k - q < 80 && m[k] != ':' && m[k] != ' ') ++k;
        if (k < m.size() && m[k] == ':') q = k + 1;
      }
      m = trim(m.substr(q));
      continue;
    }
    break;
  }
  return m;
}

// "[1, 2, 3]" after `key`.
void read_rank_list(sv s, size_t from, std::vector<int>& out) {
  size_t b = s.find('[', from);
  if (b == npos) return;
  size_t e = s.find(']', b);
  if (e == npos) return;
  size_t p = b + 1;
  while (p < e) {
    p = skip_sp(s, p);
    long long v = 0;
    size_t q = read_int(s, p, &v);
    if (q == npos || q > e) break;
    out.push_back(static_cast<int>(v));
    p = q;
    while (p < e && (s[p] == ',' || s[p] == ' ')) ++p;
  }
}

int signal_from_name(sv s) {
  struct Name {
    const char* n;
    int sig;
  };
  static const Name kNames[] = {{"sigkill", 9},      {"killed", 9},       {"sigsegv", 11},    {"segmentation", 11},
                                {"sigbus", 7},       {"bus error", 7},    {"sigabrt", 6},     {"abort", 6},
                                {"sigterm", 15},     {"terminated", 15},  {"sigint", 2},      {"interrupt", 2},
                                {"sigill", 4},       {"illegal inst", 4}, {"sigfpe", 8},      {"floating point", 8},
                                {"sighup", 1},       {"sigpipe", 13},     {"sigxcpu", 24}};
  for (const auto& n : kNames) {
    if (ihas(s, n.n)) return n.sig;
  }
  return 0;
}

// "torch.cuda.OutOfMemoryError: ..." -> the class token, when the message starts
// with a dotted identifier ending in Error/Exception/Interrupt followed by ':' or end.
sv exception_class(sv m) {
  size_t e = 0;
  while (e < m.size() && (alpha(m[e]) || dig(m[e]) || m[e] == '_' || m[e] == '.')) ++e;
  if (e < 5 || (e < m.size() && m[e] != ':')) return {};
  sv cls = m.substr(0, e);
  auto ends = [&](sv suf) { return cls.size() >= suf.size() && cls.substr(cls.size() - suf.size()) == suf; };
  if (ends("Error") || ends("Exception") || ends("Interrupt") || ends("Exit") || ends("Failure")) return cls;
  return {};
}

bool comm_text(sv m) {
  return has(m, "Timed out waiting") || has(m, "Connection closed") || has(m, "Connection reset") ||
         has(m, "communicator was aborted") || has(m, "Watchdog caught") || has(m, "NCCL error") ||
         has(m, "remote process exited") || has(m, "Socket Timeout") || has(m, "Broken pipe") ||
         has(m, "ProcessGroupNCCL is aborted") || has(m, "Read error") || has(m, "NCCL communicator") ||
         has(m, "DistBackendError") || has(m, "watchdog thread terminated");
}

void parse_workncll_fields(sv m, LogLine& o) {
  o.seq = int_after(m, "SeqNum=");
  o.op = token_after(m, "OpType=", ",)");
  o.numel_in = int_after(m, "NumelIn=");
  o.numel_out = int_after(m, "NumelOut=");
  o.timeout_ms = int_after(m, "Timeout(ms)=");
  o.ran_ms = int_after(m, "ran for ");
}

void parse_work_status(sv m, LogLine& o) {
  long long v = int_after(m, "last enqueued NCCL work:");
  if (v < 0) v = int_after(m, "Last enqueued NCCL work:");
  if (v < 0) v = int_after(m, "last enqueued work:");
  o.last_enqueued = v;
  // "-1" (nothing completed yet) reads as -1, the same as "not stated".
  long long c = int_after(m, "last completed NCCL work:", 0, false);
  if (c == -1) c = int_after(m, "last completed work:", 0, false);
  if (c == -1 && !has(m, "last completed")) c = int_after(m, "Last completed NCCL work:", 0, false);
  o.last_completed = c;
  if (o.seq < 0) o.seq = int_after(m, "work sequence id:", 0, false);
  if (o.seq < 0) o.seq = int_after(m, "Timeout at NCCL work:", 0, false);
}

// "[PG ID 0 PG GUID 0(default_pg) Rank 2]", "[PG 1 Rank 0]", "[PG 0 (default_pg) Rank 3]"
void parse_pg_tag(sv m, LogLine& o) {
  size_t k = m.find("[PG ");
  if (k == npos || k > 200) return;
  size_t close = m.find(']', k);
  if (close == npos) return;
  sv tag = m.substr(k + 4, close - k - 4);
  size_t rk = tag.rfind(" Rank ");
  if (rk == npos) return;
  long long v = 0;
  if (read_int(tag, rk + 6, &v) == npos) return;
  sv id = trim(tag.substr(0, rk));
  if (starts(id, "ID ")) {
    sv rest = id.substr(3);
    size_t sp = rest.find(' ');
    sv num = sp == npos ? rest : rest.substr(0, sp);
    o.pg = has(rest, "(default_pg)") ? sv("0(default_pg)") : num;
    o.pg_default = num == "0" || has(rest, "default_pg");
  } else {
    o.pg = id;
    o.pg_default = id == "0" || has(id, "default_pg");
  }
  o.pg_rank = static_cast<int>(v);
  if (o.pg_default && o.rank_src < RankSource::kMessage) {
    o.rank = o.pg_rank;
    o.rank_src = RankSource::kMessage;
  }
}

// A step line: the message starts with "step N", "Step: N", "step=N", "iteration N/M",
// "global_step=N". Fast path: the first word decides.
bool parse_step(sv m, LogLine& o) {
  size_t p;
  if (m.size() < 6) return false;
  const char c = lc(m[0]);
  if (c == 's' && istarts(m, "step")) {
    p = 4;
  } else if (c == 'i' && istarts(m, "iteration")) {
    p = 9;
  } else if (c == 'i' && istarts(m, "iter ")) {
    p = 4;
  } else if (c == 'g' && istarts(m, "global_step")) {
    p = 11;
  } else if (c == '[' && istarts(m, "[step ")) {
    p = 5;
  } else {
    return false;
  }
  if (p >= m.size() || !(m[p] == ' ' || m[p] == ':' || m[p] == '=' || m[p] == '\t')) return false;
  while (p < m.size() && (m[p] == ' ' || m[p] == ':' || m[p] == '=' || m[p] == '\t')) ++p;
  long long s = 0;
  size_t e = read_int(m, p, &s);
  if (e == npos || s < 0) return false;
  o.kind = LogKind::kStep;
  o.step = static_cast<int>(s);
  if (e < m.size() && m[e] == '/') {
    size_t q = skip_sp(m, e + 1);
    long long tot = 0;
    if (read_int(m, q, &tot) != npos) o.total_steps = static_cast<int>(tot);
  }
  // (the loss is not parsed: nothing in the analysis uses it, and this is the hot path)
  sv rest = m.substr(e);
  if (size_t k = rest.find("dur_ms"); k != npos) {
    size_t q = k + 6;
    while (q < rest.size() && (rest[q] == ' ' || rest[q] == ':' || rest[q] == '=')) ++q;
    double v = 0;
    if (read_double(rest, q, &v) != npos) o.dur_ms = v;
  }
  return true;
}

void set_world(sv m, LogLine& o) {
  size_t k0 = ifind(m, "world_size");
  // torchrun's "local_world_size=8" is the processes of one node, not the job
  while (k0 != npos && k0 >= 6 && istarts(m.substr(k0 - 6), "local_")) k0 = ifind(m, "world_size", k0 + 10);
  if (size_t k = k0; k != npos) {
    long long v = iint_after(m.substr(k), "world_size");
    if (v > 0) o.world = static_cast<int>(v);
  } else if (size_t k2 = ifind(m, "world size"); k2 != npos) {
    long long v = iint_after(m.substr(k2), "world size");
    if (v > 0) o.world = static_cast<int>(v);
  }
}

void classify_text(sv m, LogLine& o);

// hanglab workloads: "ERROR (comm) in backward at step 6: <what> (in allreduce seq 12, numel 4225)"
bool parse_harness_error(sv m, LogLine& o) {
  if (!starts(m, "ERROR (")) return false;
  const size_t close = m.find(')', 7);
  if (close == npos) return false;
  const sv cls = m.substr(7, close - 7);
  sv rest = m.substr(close + 1);
  if (starts(rest, " in ")) {
    rest = rest.substr(4);
    const size_t at = rest.find(" at step ");
    if (at != npos) {
      o.where = rest.substr(0, at);
      long long st = 0;
      size_t e = read_int(rest, at + 9, &st);
      if (e != npos) {
        o.step = static_cast<int>(st);
        rest = rest.substr(e);
        if (starts(rest, ": ")) rest = rest.substr(2);
      }
    }
  }
  // "(in allreduce seq 12, numel 4225)"
  const size_t in = rest.rfind(" (in ");
  if (in != npos) {
    sv coll = rest.substr(in + 5);
    const size_t sp = coll.find(' ');
    if (sp != npos) {
      o.op = coll.substr(0, sp);
      o.seq = int_after(coll, "seq ");
      o.numel_in = int_after(coll, "numel ");
    }
  }
  // What the exception text says first; the workload's class decides the rest.
  LogLine inner;
  classify_text(rest, inner);
  o.word = cls;
  if (inner.kind == LogKind::kCudaOom || inner.kind == LogKind::kCudaError || inner.kind == LogKind::kDiskFull ||
      inner.kind == LogKind::kWrongIfname || inner.kind == LogKind::kShmError || inner.kind == LogKind::kStoreRefused ||
      inner.kind == LogKind::kAddressInUse || inner.kind == LogKind::kDnsFailure) {
    o.kind = inner.kind;
  } else if (cls == "timeout") {
    o.kind = inner.kind == LogKind::kStoreTimeout ? LogKind::kStoreTimeout : LogKind::kGlooTimeout;
    o.timeout_ms = inner.timeout_ms;
  } else if (cls == "comm") {
    o.kind = LogKind::kCommClosed;
  } else if (cls == "rendezvous") {
    o.kind = inner.kind == LogKind::kStoreTimeout ? LogKind::kStoreTimeout : LogKind::kRendezvousError;
  } else if (cls == "data") {
    o.kind = LogKind::kDataError;
  } else if (cls == "usage") {
    o.kind = LogKind::kUsageError;
  } else {
    o.kind = LogKind::kException;
  }
  // fail() exits with the class' code right after this line.
  o.code = cls == "comm" ? 10 : cls == "timeout" ? 11 : cls == "rendezvous" ? 12 : cls == "data" ? 13
           : cls == "usage" ? 2 : 1;
  return true;
}

// The older hanglab fixture format: "error in allreduce (step 3, seq 6): <what>" and
// "unhandled exception in forward (step 4): <what>".
bool parse_legacy_error(sv m, LogLine& o) {
  const bool coll = starts(m, "error in ");
  const bool exc = starts(m, "unhandled exception in ");
  if (!coll && !exc) return false;
  const size_t open = m.find(" (step ");
  const size_t close = m.find("): ");
  if (open == npos || close == npos || close < open) return false;
  const sv head = m.substr(coll ? 9 : 23, open - (coll ? 9 : 23));
  const sv inside = m.substr(open + 2, close - open - 2);
  o.step = static_cast<int>(int_after(inside, "step ", 0, false));
  const sv what = m.substr(close + 3);
  if (exc) {
    o.where = head;
    o.kind = LogKind::kException;
    o.code = 1;
    LogLine inner;
    classify_text(what, inner);
    if (inner.kind == LogKind::kCudaOom || inner.kind == LogKind::kCudaError) o.kind = inner.kind;
    return true;
  }
  o.op = head;
  o.seq = int_after(inside, "seq ", 0, false);
  LogLine inner;
  classify_text(what, inner);
  o.kind = inner.kind == LogKind::kNone ? LogKind::kCommException : inner.kind;
  o.timeout_ms = inner.timeout_ms;
  o.word = inner.word;
  o.code = o.kind == LogKind::kGlooTimeout ? 11 : 10;
  return true;
}

void classify_text(sv m, LogLine& o) {
  // --- hanglab workloads (exact formats, cheap to test first)
  if (parse_harness_error(m, o)) return;
  if (parse_legacy_error(m, o)) return;
  if (starts(m, "done: ")) {
    long long s = 0;
    size_t e = read_int(m, 6, &s);
    if (e != npos) {
      o.kind = LogKind::kDone;
      o.step = static_cast<int>(s);
      if (e < m.size() && m[e] == '/') {
        long long tot = 0;
        if (read_int(m, e + 1, &tot) != npos) o.total_steps = static_cast<int>(tot);
      }
      return;
    }
  }
  if (starts(m, "hanglab hook ")) return;  // injected ground truth: never evidence
  if (starts(m, "lingering after the training loop") || m == "final barrier") {
    o.kind = LogKind::kLeftLoop;
    return;
  }
  if (starts(m, "data exhausted after ") || starts(m, "data loader exhausted after ")) {
    o.kind = LogKind::kDataExhausted;
    o.step = static_cast<int>(int_after(m, "after ", 0, false));
    o.total_steps = static_cast<int>(int_after(m, " of ", 0, false));
    return;
  }
  if (starts(m, "process group ready")) {
    o.kind = LogKind::kInitDone;
    set_world(m, o);
    return;
  }
  if (starts(m, "checkpoint at step ") && has(m, " saved")) {
    o.kind = LogKind::kCheckpointEnd;
    o.step = static_cast<int>(int_after(m, "step ", 0, false));
    return;
  }
  if (starts(m, "eval at step ")) {
    o.kind = LogKind::kEvalEnd;
    o.step = static_cast<int>(int_after(m, "step ", 0, false));
    return;
  }

  // --- PyTorch ProcessGroupNCCL
  if (has(m, "Watchdog caught collective operation timeout")) {
    o.kind = (has(m, "thread terminated with exception") || starts(trim(m), "what():")) ? LogKind::kWatchdogRepeat
                                                                                         : LogKind::kWatchdogTimeout;
    parse_workncll_fields(m, o);
    return;
  }
  if (has(m, "Received a dump signal") || has(m, "dump signal from another rank")) {
    o.kind = LogKind::kDumpSignal;
    if (size_t k = m.find("from "); k != npos) {
      size_t q = skip_sp(m, k + 5);
      if (starts(m.substr(q), "rank ")) {
        long long v = 0;
        if (read_int(m, q + 5, &v) != npos) o.other_rank = static_cast<int>(v);
      }
    }
    parse_work_status(m, o);
    return;
  }
  if (has(m, "Heartbeat monitor timed out") || has(m, "watchdog got stuck for")) {
    o.kind = LogKind::kHeartbeatMonitor;
    return;
  }
  if (has(m, " [missing ranks: ")) {
    // Horovod's stall check: "allreduce.avg_loss [missing ranks: 1]": the ranks that never
    // submitted the tensor its peers wait on (word "stall").
    o.kind = LogKind::kDesyncMissing;
    o.word = "stall";
    size_t p = m.find(" [missing ranks: ") + 17;
    const size_t e = m.find(']', p);
    while (e != npos && p < e) {
      long long v = 0;
      const size_t q = read_int(m, skip_sp(m, p), &v);
      if (q == npos || q > e) break;
      o.ranks.push_back(static_cast<int>(v));
      p = q;
      while (p < e && (m[p] == ',' || m[p] == ' ')) ++p;
    }
    return;
  }
  if (has(m, "are the lagging ranks")) {
    o.kind = LogKind::kDesyncMissing;
    read_rank_list(m, m.find("ranks ["), o.ranks);
    return;
  }
  if (has(m, "joined but didn't finish collective #") || has(m, "but didn't join collective #")) {
    o.kind = LogKind::kDesyncLagging;
    read_rank_list(m, 0, o.ranks);
    o.seq = int_after(m, "collective #", 0, false);
    return;
  }
  if (has(m, "Detected mismatch between collectives on ranks")) {
    // "Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, ...), but Rank 2
    //  is running collective: CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE, TensorShape=[1] ...)"
    o.kind = LogKind::kCollMismatch;
    o.word = "fingerprint";
    for (size_t k = m.find("Rank "); k != npos; k = m.find("Rank ", k + 5)) {
      long long v = 0;
      const size_t e = read_int(m, k + 5, &v);
      if (e != npos && e < m.size() && m.compare(e, 4, " is ") == 0) o.ranks.push_back(static_cast<int>(v));
    }
    o.seq = int_after(m, "SequenceNumber=", 0, false);
    return;
  }
  if (has(m, "op.preamble.length <= op.nbytes")) {
    // Gloo received a message of another size than the buffer it posted for the same slot:
    // the two ranks ran different collectives.
    o.kind = LogKind::kCollMismatch;
    o.word = "size";
    return;
  }
  if (has(m, "last enqueued") && (has(m, "last completed") || has(m, "work sequence id"))) {
    o.kind = LogKind::kWorkStatus;
    parse_work_status(m, o);
    return;
  }
  if (has(m, "ProcessGroupNCCL initialization options") || has(m, "ProcessGroupNCCL initialized with")) {
    o.kind = LogKind::kPgInit;
    long long g = int_after(m, "global rank:", 0, false);
    if (g >= 0) o.other_rank = static_cast<int>(g);
    long long sz = int_after(m, "size:", 0, false);
    if (sz > 0) o.world = static_cast<int>(sz);
    return;
  }

  // --- exceptions (a Python traceback's last line, possibly rank-prefixed)
  if (const sv cls = exception_class(m); !cls.empty()) {
    o.word = cls;
    if (has(cls, "OutOfMemoryError") || has(m, "CUDA out of memory")) {
      o.kind = LogKind::kCudaOom;
    } else if (starts(cls, "nccl")) {  // ncclRemoteError:, ncclSystemError:, ncclInternalError: ...
      o.kind = cls == "ncclRemoteError"          ? LogKind::kNcclRemoteError
               : cls == "ncclSystemError"        ? LogKind::kNcclSystemError
               : cls == "ncclUnhandledCudaError" ? LogKind::kCudaError
                                                 : LogKind::kNcclError;
    } else if (has(m, "Unable to find address for") || has(m, "no socket interface found")) {
      o.kind = LogKind::kWrongIfname;
    } else if (has(m, "unhandled system error") && !has(m, "NCCL error")) {
      o.kind = LogKind::kNcclSystemError;
    } else if (has(cls, "ChildFailedError")) {
      o.kind = LogKind::kChildFailed;
    } else if (has(cls, "SignalException") || cls == "KeyboardInterrupt") {
      o.kind = LogKind::kSignalException;
      long long s = int_after(m, "got signal:", 0, false);
      o.signal = s > 0 ? static_cast<int>(s) : (cls == "KeyboardInterrupt" ? 2 : 0);
    } else if (has(cls, "DistStoreError") || has(m, "clients joined") || has(m, "client socket has timed out") ||
               has(m, "Socket Timeout")) {
      o.kind = LogKind::kStoreTimeout;
      if (size_t k = m.find(" clients joined"); k != npos) {
        size_t b = m.rfind(' ', k - 1);
        long long j = 0, w = 0;
        size_t e = read_int(m, b == npos ? 0 : b + 1, &j);
        if (e != npos && e < m.size() && m[e] == '/' && read_int(m, e + 1, &w) != npos) {
          o.joined = static_cast<int>(j);
          o.world = static_cast<int>(w);
        }
      }
    } else if (has(cls, "Rendezvous")) {
      o.kind = has(cls, "Timeout") ? LogKind::kStoreTimeout : LogKind::kRendezvousError;
    } else if (has(m, "unhandled cuda error") || (has(m, "CUDA error") && !comm_text(m))) {
      o.kind = LogKind::kCudaError;
    } else if (comm_text(m)) {
      // "RuntimeError: [...unbound_buffer.cc:81] Timed out waiting 1800000ms for recv operation to complete"
      if (has(m, "Timed out waiting") && has(m, " operation to complete")) {
        o.kind = LogKind::kGlooTimeout;
        o.timeout_ms = int_after(m, "Timed out waiting ", 0, false);
      } else if (has(m, "remote process exited")) {
        o.kind = LogKind::kNcclRemoteError;
      } else if (has(m, "Connection closed by peer") || has(m, "Connection reset by peer") ||
                 (has(m, "Read error") && has(m, "pair.cc")) || has(m, "Broken pipe")) {
        o.kind = LogKind::kCommClosed;
      } else {
        o.kind = LogKind::kCommException;
      }
    } else if (has(m, "No space left on device")) {
      o.kind = LogKind::kDiskFull;
    } else if (has(m, "DataLoader worker") && has(m, "killed by signal")) {
      o.kind = LogKind::kDataLoaderKilled;
      o.signal = signal_from_name(m.substr(m.find("killed by signal") + 16));
      o.pid = int_after(m, "(pid ", 0, false);
    } else if (has(m, "Address already in use")) {
      o.kind = LogKind::kAddressInUse;
    } else if (has(m, "Connection refused") || has(m, "failed to connect")) {
      o.kind = LogKind::kStoreRefused;
    } else if (has(m, "Name or service not known") || has(m, "Temporary failure in name resolution")) {
      o.kind = LogKind::kDnsFailure;
    } else if (has(m, "insufficient shared memory")) {
      o.kind = LogKind::kShmBusError;
    } else {
      o.kind = LogKind::kException;
    }
    return;
  }

  if (has(m, "NCCL communicator was aborted") || has(m, "ProcessGroupNCCL aborted") ||
      has(m, "communicator was aborted")) {
    o.kind = LogKind::kCommAborted;
    return;
  }
  if (has(m, "Some NCCL operations have failed or timed out") || has(m, "taking the entire process down")) {
    o.kind = LogKind::kNcclAsyncFailed;
    return;
  }

  // --- NCCL's own lines ("host:pid:tid [dev] NCCL WARN ...")
  if (const size_t nk = m.find("NCCL WARN"); nk != npos || has(m, "NCCL INFO")) {
    if (has(m, "no socket interface found") || has(m, "No socket interface") || has(m, "SOCKET_IFNAME")) {
      o.kind = LogKind::kWrongIfname;
    } else if ((has(m, "shared memory") || has(m, "/dev/shm") || has(m, "shm_")) &&
               (ihas(m, "error") || ihas(m, "unable") || ihas(m, "fail") || ihas(m, "cannot"))) {
      o.kind = LogKind::kShmError;
      o.world = -1;
      long long size = int_after(m, "(size ", 0, false);
      o.numel_in = size;
    } else if (has(m, "NET/IB") && (ihas(m, "error") || ihas(m, "fail") || has(m, "IBV_WC") || ihas(m, "retry"))) {
      o.kind = LogKind::kIbError;
    } else if (has(m, "NET/Socket") && (ihas(m, "error") || ihas(m, "fail") || ihas(m, "closed"))) {
      o.kind = LogKind::kSocketError;
    } else if (has(m, "Init COMPLETE")) {
      o.kind = LogKind::kInitDone;
      if (size_t k = m.find(" rank "); k != npos) {
        long long r = 0;
        if (read_int(m, k + 6, &r) != npos) o.other_rank = static_cast<int>(r);
      }
      long long n = int_after(m, " nranks ", 0, false);
      if (n > 0) o.world = static_cast<int>(n);
    } else if ((has(m, "Abort COMPLETE") || has(m, "Destroy COMPLETE")) && has(m, " nranks ")) {
      // "comm 0x56.. rank 5 nranks 8 cudaDev 1 busId a7000 - Abort COMPLETE": the size of the
      // communicator, not a sign that init had finished (an abort can end a failed init).
      const long long n = int_after(m, " nranks ", 0, false);
      if (n > 0) {
        o.kind = LogKind::kWorldSize;
        o.world = static_cast<int>(n);
      }
    } else if (nk != npos && (has(m, "remote process exited") || has(m, "Connection closed"))) {
      o.kind = LogKind::kNcclRemoteError;
    } else if (nk != npos && (ihas(m, "error") || ihas(m, "fail"))) {
      o.kind = LogKind::kNcclError;
    }
    if (o.kind != LogKind::kNone) return;
  }
  if (has(m, "remote process exited or there was a network error")) {
    o.kind = LogKind::kNcclRemoteError;
    return;
  }
  if (has(m, "unhandled system error")) {
    o.kind = LogKind::kNcclSystemError;
    return;
  }
  if (has(m, "unhandled cuda error")) {
    o.kind = LogKind::kCudaError;
    return;
  }

  // --- Gloo / TCP
  if (has(m, "Timed out waiting") && (has(m, " operation to complete") || has(m, "ms for"))) {
    o.kind = LogKind::kGlooTimeout;
    o.timeout_ms = int_after(m, "Timed out waiting ", 0, false);
    o.word = has(m, "for recv") ? sv("recv") : has(m, "for send") ? sv("send") : sv();
    return;
  }
  if (has(m, "Connection closed by peer") || has(m, "Connection reset by peer") || has(m, "Broken pipe") ||
      (has(m, "Read error") && has(m, "pair.cc")) || has(m, "Connection closed by remote")) {
    o.kind = LogKind::kCommClosed;
    return;
  }

  // --- store / rendezvous / interfaces
  if (has(m, "no socket interface found") || has(m, "Unable to find address for") ||
      (has(m, "SOCKET_IFNAME") && (has(m, "No such device") || ihas(m, "not found")))) {
    o.kind = LogKind::kWrongIfname;
    return;
  }
  if (has(m, "client socket has timed out") || has(m, "Socket Timeout") || has(m, "clients joined") ||
      has(m, "waiting for clients") || has(m, "Timed out initializing process group")) {
    o.kind = LogKind::kStoreTimeout;
    if (size_t k = m.find(" clients joined"); k != npos) {
      size_t b = m.rfind(' ', k - 1);
      long long j = 0, w = 0;
      size_t e = read_int(m, b == npos ? 0 : b + 1, &j);
      if (e != npos && e < m.size() && m[e] == '/' && read_int(m, e + 1, &w) != npos) {
        o.joined = static_cast<int>(j);
        o.world = static_cast<int>(w);
      }
    }
    return;
  }
  if (has(m, "Address already in use")) {
    o.kind = LogKind::kAddressInUse;
    return;
  }
  if (has(m, "client socket has failed to connect") || (has(m, "Connection refused") && ihas(m, "connect"))) {
    o.kind = LogKind::kStoreRefused;
    return;
  }
  if (has(m, "Name or service not known") || has(m, "Temporary failure in name resolution") ||
      has(m, "nodename nor servname")) {
    o.kind = LogKind::kDnsFailure;
    return;
  }
  if (has(m, "RendezvousTimeoutError") || has(m, "RendezvousClosedError") || has(m, "RendezvousConnectionError")) {
    o.kind = has(m, "Timeout") ? LogKind::kStoreTimeout : LogKind::kRendezvousError;
    return;
  }

  // --- launchers: torchelastic, Open MPI, Slurm
  if (has(m, "closing signal SIG")) {
    o.kind = LogKind::kLauncherSignal;
    o.pid = int_after(m, "Sending process ", 0, false);
    const size_t k = m.find("closing signal ");
    o.word = token_after(m.substr(k), "closing signal ", " \t.");
    if (o.word.empty()) o.word = m.substr(k + 15);
    o.signal = signal_from_name(o.word);
    return;
  }
  if (has(m, "failed (exitcode: ")) {
    o.kind = LogKind::kLauncherExit;
    long long c = int_after(m, "failed (exitcode: ", 0, false);
    if (c < 0 && c > -65) {
      o.signal = static_cast<int>(-c);
    }
    o.code = static_cast<int>(c);
    o.local_rank = static_cast<int>(int_after(m, "local_rank: ", 0, false));
    o.pid = int_after(m, "(pid: ", 0, false);
    return;
  }
  if (starts(trim(m), "*** SIG")) {  // glog's failure signal handler: "*** SIGSEGV (@0x0) received by PID ..."
    o.kind = LogKind::kCrash;
    o.signal = signal_from_name(m);
    if (!o.signal) o.signal = 6;
    o.pid = int_after(m, "received by PID ", 0, false);
    return;
  }
  if (has(m, ") received by PID ")) {
    o.kind = LogKind::kSignalReceived;
    o.signal = static_cast<int>(int_after(m, "Signal ", 0, false));
    o.pid = int_after(m, "received by PID ", 0, false);
    return;
  }
  if (has(m, "ChildFailedError")) {
    o.kind = LogKind::kChildFailed;
    return;
  }
  if (has(m, "Root Cause (first observed failure)")) {
    o.kind = LogKind::kSummaryHeader;
    o.word = "root";
    return;
  }
  {
    const sv tm = trim(m);
    if (tm == "Failures:") {
      o.kind = LogKind::kSummaryHeader;
      o.word = "failures";
      return;
    }
    if (tm.size() >= 4 && tm[0] == '[' && tm[tm.size() - 1] == ':' && tm[tm.size() - 2] == ']') {
      long long v = 0;
      if (read_int(tm, 1, &v) == tm.size() - 2) {
        o.kind = LogKind::kSummaryEntry;
        o.other_rank = static_cast<int>(v);
        return;
      }
    }
    if (tm.size() >= 10 && (tm.find_first_not_of('=') == npos || tm.find_first_not_of('-') == npos)) {
      o.kind = LogKind::kSummaryEnd;
      return;
    }
    static const char* kFields[] = {"time", "host", "rank", "exitcode", "error_file", "traceback"};
    for (const char* f : kFields) {
      const size_t n = std::strlen(f);
      if (tm.size() > n && tm.compare(0, n, f) == 0 && (tm[n] == ' ' || tm[n] == ':')) {
        size_t q = skip_sp(tm, n);
        if (q < tm.size() && tm[q] == ':') {
          o.kind = LogKind::kSummaryField;
          o.word = tm.substr(0, n);
          o.where = trim(tm.substr(q + 1));
          return;
        }
      }
    }
  }
  if (has(m, "mpirun noticed that process rank ")) {
    o.kind = LogKind::kMpiExit;
    o.other_rank = static_cast<int>(int_after(m, "process rank ", 0, false));
    o.pid = int_after(m, "with PID ", 0, false);
    o.host = token_after(m, "on node ", " \t");
    if (has(m, "exited on signal")) {
      o.signal = static_cast<int>(int_after(m, "exited on signal ", 0, false));
    } else {
      long long c = int_after(m, "exit code ", 0, false);
      o.code = c >= 0 ? static_cast<int>(c) : kNoCode;
    }
    return;
  }
  if (has(m, "Process name: [[")) {
    o.kind = LogKind::kMpiProcessName;
    const size_t k = m.find("Process name: [[");
    const size_t close = m.find("]", k + 16);
    const size_t comma = m.find(',', k + 16);
    if (close != npos && comma != npos && comma < close) {
      const size_t comma2 = m.find(',', comma + 1);
      long long v = 0;
      if (comma2 != npos && read_int(m, comma2 + 1, &v) != npos) o.other_rank = static_cast<int>(v);
    }
    return;
  }
  if (starts(trim(m), "srun: error: ") && has(m, ": task ")) {
    o.kind = LogKind::kSrunTask;
    const sv rest = trim(m).substr(13);
    const size_t colon = rest.find(':');
    if (colon != npos) o.host = rest.substr(0, colon);
    o.other_rank = static_cast<int>(int_after(m, ": task ", 0, false));
    const size_t k = m.find(": task ");
    const size_t c2 = m.find(": ", k + 7);
    if (c2 != npos) {
      const sv what = m.substr(c2 + 2);
      o.word = what;
      if (has(what, "exit code")) {
        o.code = static_cast<int>(int_after(what, "exit code", 0, false));
      } else {
        o.signal = signal_from_name(what);
      }
    }
    return;
  }
  if (has(m, "oom_kill event") || has(m, "oom-kill event")) {
    o.kind = LogKind::kOomKill;
    return;
  }

  // --- kernel and container runtime
  if ((has(m, "Killed process ") && (ihas(m, "out of memory") || ihas(m, "oom"))) || has(m, "oom-kill:")) {
    o.kind = LogKind::kOomKill;
    long long pid = int_after(m, "Killed process ", 0, false);
    if (pid < 0) pid = int_after(m, ",pid=", 0, false);
    o.pid = pid;
    if (size_t k = m.find("Killed process "); k != npos) {
      const size_t open = m.find('(', k);
      const size_t close = m.find(')', k);
      if (open != npos && close != npos && close > open) o.word = m.substr(open + 1, close - open - 1);
    } else if (size_t k2 = m.find(",task="); k2 != npos) {
      o.word = token_after(m.substr(k2), ",task=", ",");
    }
    return;
  }
  if (has(m, "OOMKilled")) {
    o.kind = LogKind::kOomKill;
    return;
  }
  if (has(m, "oom_reaper") || has(m, "invoked oom-killer")) return;

  // --- data loading, crashes, storage
  if (has(m, "DataLoader worker") && (has(m, "killed by signal") || has(m, "exited unexpectedly"))) {
    o.kind = LogKind::kDataLoaderKilled;
    if (size_t k = m.find("killed by signal"); k != npos) o.signal = signal_from_name(m.substr(k + 16));
    o.pid = int_after(m, "(pid ", 0, false);
    return;
  }
  if (has(m, "Unexpected bus error encountered in worker") || has(m, "insufficient shared memory")) {
    o.kind = LogKind::kShmBusError;
    return;
  }
  if (has(m, "terminate called after throwing an instance of")) {
    o.kind = LogKind::kTerminate;
    o.word = token_after(m, "instance of '", "'");
    return;
  }
  if (has(m, "Traceback (most recent call last)")) {
    o.kind = LogKind::kTraceback;
    return;
  }
  if (has(m, "Segmentation fault") || has(m, "(core dumped)") || starts(trim(m), "Bus error") ||
      has(m, "Fatal Python error") || has(m, "Illegal instruction") || has(m, "Floating point exception")) {
    o.kind = LogKind::kCrash;
    o.signal = signal_from_name(m);
    if (!o.signal) o.signal = 6;
    return;
  }
  // The shell's notice of a child killed by SIGKILL: "Killed" alone, or bash's
  // "line 28:  8156 Killed   python3 main.py".
  if (trim(m) == "Killed" || (has(m, ": line ") && has(m, " Killed "))) {
    o.kind = LogKind::kExitStatus;
    o.signal = 9;
    return;
  }
  if (has(m, "No space left on device")) {
    o.kind = LogKind::kDiskFull;
    return;
  }
  if (has(m, "Stale file handle") || has(m, "not responding, still trying") || has(m, "Input/output error") ||
      has(m, "Remote I/O error") || (has(m, "blocked for more than") && has(m, "seconds"))) {
    o.kind = LogKind::kStorageError;
    return;
  }
  if (has(m, "CUDA out of memory")) {
    o.kind = LogKind::kCudaOom;
    return;
  }
  if (has(m, "CUDA error") || (has(m, "NVRM") && has(m, "Xid"))) {
    o.kind = LogKind::kCudaError;
    return;
  }

  // --- exit statuses
  {
    long long c = -1;
    bool found = false;
    static const char* kKeys[] = {"exit code", "Exit Code", "exit status", "exitcode", "exited with code",
                                  "return code =", "returned exit code"};
    for (const char* key : kKeys) {
      const size_t k = m.find(key);
      if (k == npos) continue;
      size_t q = k + std::strlen(key);
      while (q < m.size() && (m[q] == ' ' || m[q] == ':' || m[q] == '=' || m[q] == '\t')) ++q;
      if (read_int(m, q, &c) != npos) {
        found = true;
        break;
      }
    }
    if (found) {
      o.kind = LogKind::kExitStatus;
      if (c < 0 && c > -65) {
        o.signal = static_cast<int>(-c);
      }
      o.code = static_cast<int>(c);
      return;
    }
  }

  // --- phases
  if (ihas(m, "saving checkpoint") || ihas(m, "saving model checkpoint") || ihas(m, "save_checkpoint") ||
      ihas(m, "writing checkpoint") || saving_checkpoint(m)) {
    o.kind = LogKind::kCheckpointBegin;
    return;
  }
  if (ihas(m, "checkpoint saved") || ihas(m, "saved checkpoint") || (ihas(m, "checkpoint") && ihas(m, " saved "))) {
    o.kind = LogKind::kCheckpointEnd;
    return;
  }
  if (ihas(m, "running validation") || ihas(m, "running evaluation") || ihas(m, "start evaluation") ||
      ihas(m, "starting validation") || ihas(m, "starting evaluation") || istarts(m, "evaluating")) {
    o.kind = LogKind::kEvalBegin;
    return;
  }
  if (ihas(m, "validation loss") || ihas(m, "eval_loss") || ihas(m, "evaluation finished") ||
      ihas(m, "validation finished")) {
    o.kind = LogKind::kEvalEnd;
    return;
  }
  if (ihas(m, "waiting for data") || ihas(m, "loading shard") || ihas(m, "reading shard") ||
      ihas(m, "fetching batch")) {
    o.kind = LogKind::kDataWait;
    return;
  }
  if (ihas(m, "training completed") || ihas(m, "training finished") || ihas(m, "finished training") ||
      ihas(m, "training done")) {
    o.kind = LogKind::kDone;
    return;
  }
  if (has(m, "Completed store-based barrier") || ihas(m, "process group initialized") ||
      ihas(m, "init_process_group done")) {
    o.kind = LogKind::kInitDone;
    set_world(m, o);
    return;
  }
  set_world(m, o);
  if (o.world < 0) {
    long long n = int_after(m, "WORLD_SIZE=", 0, false);
    if (n > 0) o.world = static_cast<int>(n);
  }
  if (o.world > 0) o.kind = LogKind::kWorldSize;
}

}  // namespace

const char* log_kind_name(LogKind k) {
  switch (k) {
    case LogKind::kNone: return "none";
    case LogKind::kStep: return "step";
    case LogKind::kDone: return "done";
    case LogKind::kLeftLoop: return "left_loop";
    case LogKind::kDataExhausted: return "data_exhausted";
    case LogKind::kInitDone: return "init_done";
    case LogKind::kWorldSize: return "world_size";
    case LogKind::kPgInit: return "pg_init";
    case LogKind::kCheckpointBegin: return "checkpoint_begin";
    case LogKind::kCheckpointEnd: return "checkpoint_end";
    case LogKind::kEvalBegin: return "eval_begin";
    case LogKind::kShutdown: return "shutdown";
    case LogKind::kInitStep: return "init_step";
    case LogKind::kProgress: return "progress";
    case LogKind::kEvalEnd: return "eval_end";
    case LogKind::kDataWait: return "data_wait";
    case LogKind::kWatchdogTimeout: return "watchdog_timeout";
    case LogKind::kWatchdogRepeat: return "watchdog_repeat";
    case LogKind::kWorkStatus: return "work_status";
    case LogKind::kDumpSignal: return "dump_signal";
    case LogKind::kHeartbeatMonitor: return "heartbeat_monitor";
    case LogKind::kDesyncMissing: return "desync_missing";
    case LogKind::kDesyncLagging: return "desync_lagging";
    case LogKind::kCollMismatch: return "coll_mismatch";
    case LogKind::kCommAborted: return "comm_aborted";
    case LogKind::kNcclAsyncFailed: return "nccl_async_failed";
    case LogKind::kNcclRemoteError: return "nccl_remote_error";
    case LogKind::kNcclSystemError: return "nccl_system_error";
    case LogKind::kNcclError: return "nccl_error";
    case LogKind::kWrongIfname: return "wrong_ifname";
    case LogKind::kShmError: return "shm_error";
    case LogKind::kIbError: return "ib_error";
    case LogKind::kSocketError: return "socket_error";
    case LogKind::kGlooTimeout: return "gloo_timeout";
    case LogKind::kCommClosed: return "comm_closed";
    case LogKind::kLocalPeerClosed: return "local_peer_closed";
    case LogKind::kStoreTimeout: return "store_timeout";
    case LogKind::kStoreRefused: return "store_refused";
    case LogKind::kAddressInUse: return "address_in_use";
    case LogKind::kDnsFailure: return "dns_failure";
    case LogKind::kRendezvousError: return "rendezvous_error";
    case LogKind::kTraceback: return "traceback";
    case LogKind::kException: return "exception";
    case LogKind::kCommException: return "comm_exception";
    case LogKind::kCudaOom: return "cuda_oom";
    case LogKind::kCudaError: return "cuda_error";
    case LogKind::kTerminate: return "terminate";
    case LogKind::kCrash: return "crash";
    case LogKind::kDataLoaderKilled: return "dataloader_killed";
    case LogKind::kShmBusError: return "shm_bus_error";
    case LogKind::kOomKill: return "oom_kill";
    case LogKind::kDiskFull: return "disk_full";
    case LogKind::kResourceLimit: return "resource_limit";
    case LogKind::kStorageError: return "storage_error";
    case LogKind::kDataError: return "data_error";
    case LogKind::kUsageError: return "usage_error";
    case LogKind::kExitStatus: return "exit_status";
    case LogKind::kSignalReceived: return "signal_received";
    case LogKind::kSignalException: return "signal_exception";
    case LogKind::kLauncherSignal: return "launcher_signal";
    case LogKind::kLauncherExit: return "launcher_exit";
    case LogKind::kChildFailed: return "child_failed";
    case LogKind::kMpiExit: return "mpi_exit";
    case LogKind::kMpiProcessName: return "mpi_process_name";
    case LogKind::kSrunTask: return "srun_task";
    case LogKind::kSummaryHeader: return "summary_header";
    case LogKind::kSummaryEntry: return "summary_entry";
    case LogKind::kSummaryField: return "summary_field";
    case LogKind::kSummaryEnd: return "summary_end";
  }
  return "?";
}

size_t parse_iso_time(std::string_view s, double* t, double* res) {
  if (s.size() < 19) return 0;
  for (int i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!dig(s[i])) return 0;
  }
  if (s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != ' ' && s[10] != '_')) return 0;
  const int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
  const int mo = two(s, 5), d = two(s, 8);
  if (mo < 1 || mo > 12 || d < 1 || d > 31) return 0;
  double sod = 0;
  size_t p = parse_hms(s, 11, &sod, res);
  if (p == npos) return 0;
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

bool parse_log_line(std::string_view line, const LogLineContext& ctx, LogLine& o) {
  o.has_t = o.no_year = false;
  o.t = o.t_res = 0;
  o.rank = o.local_rank = o.pg_rank = -1;
  o.rank_src = RankSource::kNone;
  o.pg = o.host = o.msg = o.op = o.word = o.where = {};
  o.pg_default = false;
  o.pid = -1;
  o.kind = LogKind::kNone;
  o.seq = o.numel_in = o.numel_out = o.timeout_ms = o.ran_ms = o.last_enqueued = o.last_completed = -1;
  o.step = o.total_steps = o.other_rank = o.world = o.joined = -1;
  o.dur_ms = -1;
  o.code = kNoCode;
  o.signal = 0;
  o.ranks.clear();
  o.category = o.cause = {};

  while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.remove_suffix(1);
  // A progress bar rewrites its line with '\r': what the terminal showed is the last part.
  if (std::memchr(line.data(), '\r', line.size())) line = line.substr(line.rfind('\r') + 1);

  size_t p = 0;
  for (int i = 0; i < 10 && p < line.size(); ++i) {
    const size_t q = peel_prefix(line, i == 0 ? p : p, ctx, o, i == 0);
    if (q == npos || q <= p) break;
    p = q;
    // Separators between prefixes: spaces, "| ", "- " after a clock.
    while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
  }
  sv m = line.substr(p);
  o.msg = m;

  // In-message attribution.
  if (starts(m, "[Rank ")) {
    long long v = 0;
    size_t e = read_int(m, 6, &v);
    if (e != npos && e < m.size() && m[e] == ']') {
      if (o.rank_src < RankSource::kMessage) {
        o.rank = static_cast<int>(v);
        o.rank_src = RankSource::kMessage;
      }
      m = m.substr(skip_sp(m, e + 1));
    }
  } else if (starts(m, "Rank ")) {
    long long v = 0;
    size_t e = read_int(m, 5, &v);
    if (e != npos && e < m.size() && m[e] == ':' && o.rank_src < RankSource::kMessage) {
      o.rank = static_cast<int>(v);
      o.rank_src = RankSource::kMessage;
    }
  }
  if (!m.empty() && m[0] == '[' && starts(m, "[PG ")) {
    parse_pg_tag(m, o);
    const size_t close = m.find(']');
    if (close != npos) m = m.substr(skip_sp(m, close + 1));
  } else {
    // "[PG 1 Rank 2]" or "[Rank 3]" later in the message: one pass over its '['.
    const size_t lim = std::min<size_t>(m.size(), 200);
    for (size_t k = 0; k < lim;) {
      const void* hit = std::memchr(m.data() + k, '[', lim - k);
      if (!hit) break;
      k = static_cast<size_t>(static_cast<const char*>(hit) - m.data());
      if (m.compare(k, 4, "[PG ") == 0) {
        parse_pg_tag(m.substr(k), o);
      } else if (o.rank_src < RankSource::kMessage && m.compare(k, 6, "[Rank ") == 0) {
        long long v = 0;
        const size_t e = read_int(m, k + 6, &v);
        if (e != npos && e < m.size() && m[e] == ']') {
          o.rank = static_cast<int>(v);
          o.rank_src = RankSource::kMessage;
        }
      }
      ++k;
    }
  }

  // The common case first: a step line.
  const sv body = strip_level(m);
  if (parse_step(body, o)) return true;

  // NCCL's own prefix "host:pid:tid [dev] NCCL ..."
  if (const size_t nk = body.find(" NCCL "); nk != npos && nk < 120) {
    const sv head = body.substr(0, nk);
    const size_t c1 = head.find(':');
    // The host is the line's first token: "[E207 19:37:09.98 ProcessGroupNCCL.cpp:681] ... NCCL" is a clock.
    if (c1 != npos && c1 > 0 && head.substr(0, c1).find_first_of(" \t[]") == npos) {
      long long pid = 0;
      const size_t e = read_int(head, c1 + 1, &pid);
      if (e != npos && e < head.size() && head[e] == ':') {
        o.host = head.substr(0, c1);
        o.pid = pid;
      }
    }
  }
  const long long pid_before = o.pid;
  const sv host_before = o.host;
  if (!match_line_pattern(body, o)) classify_text(body, o);
  if (o.kind == LogKind::kNone) match_line_pattern(body, o, true);
  if (o.kind == LogKind::kStoreTimeout || o.kind == LogKind::kException || o.kind == LogKind::kCommException) {
    if (o.word.empty()) o.word = exception_class(body);
  }
  // NCCL prefix pid/host stay unless the event named its own (OOM kill, launcher).
  if (o.pid < 0) o.pid = pid_before;
  if (o.host.empty()) o.host = host_before;
  return o.kind != LogKind::kNone;
}

int rank_from_path(std::string_view rel_path, bool kubeflow_master) {
  // Components from the file name up.
  std::vector<sv> parts;
  size_t b = 0;
  while (b <= rel_path.size()) {
    size_t e = rel_path.find('/', b);
    if (e == npos) e = rel_path.size();
    if (e > b) parts.push_back(rel_path.substr(b, e - b));
    b = e + 1;
  }
  auto all_digits = [](sv s) {
    if (s.empty() || s.size() > 7) return false;
    for (char c : s) {
      if (!dig(c)) return false;
    }
    return true;
  };
  for (size_t i = parts.size(); i-- > 0;) {
    sv name = parts[i];
    if (i + 1 == parts.size()) {
      // strip extensions
      for (int round = 0; round < 2; ++round) {
        const size_t dot = name.rfind('.');
        if (dot == npos || dot == 0) break;
        const sv ext = name.substr(dot + 1);
        if (ext == "log" || ext == "txt" || ext == "out" || ext == "err" || ext == "stdout" || ext == "stderr" ||
            ext == "gz")
          name = name.substr(0, dot);
      }
    }
    // hanglab run directories: ranks/<r>/stdout.log
    if (all_digits(name) && name.size() <= 7 && i > 0 && parts[i - 1] == "ranks") return std::stoi(std::string(name));
    struct Tok {
      const char* word;
      int kind;  // 0 rank, 1 worker, 2 master
    };
    static const Tok kToks[] = {{"rank", 0}, {"worker", 1}, {"master", 2}};
    for (const auto& tok : kToks) {
      size_t from = 0;
      while (true) {
        const size_t k = ifind(name, tok.word, from);
        if (k == npos) break;
        from = k + 1;
        if (k > 0 && alpha(name[k - 1])) continue;  // "cranky", "coworker"
        size_t q = k + std::strlen(tok.word);
        if (q < name.size() && (name[q] == 's' || name[q] == 'S') && tok.kind != 0) ++q;  // "workers-3"
        if (q < name.size() && (name[q] == '-' || name[q] == '_' || name[q] == '.')) ++q;
        long long v = 0;
        const size_t e = read_int(name, q, &v);
        if (e == npos || name[q] == '-' || name[q] == '+') continue;
        if (e < name.size() && (dig(name[e]) || alpha(name[e]))) continue;
        if (tok.kind == 1) return static_cast<int>(v) + (kubeflow_master ? 1 : 0);
        return static_cast<int>(v);
      }
    }
  }
  return -1;
}

}  // namespace hanglab

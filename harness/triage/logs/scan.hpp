// Text-scanning helpers of the plain-log line parser (internal to logs/*.cpp: parse.cpp,
// clock.cpp, writers.cpp, fields.cpp, classify_text.cpp): case-insensitive search, numbers,
// the value after a key. Inline: they run on every byte of every log line.
#pragma once

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace hanglab::logparse {

using sv = std::string_view;
constexpr size_t npos = sv::npos;

inline bool dig(char c) { return c >= '0' && c <= '9'; }

inline bool alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

inline char lc(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

inline bool has(sv s, sv n) { return s.find(n) != npos; }

// Case-insensitive find; `needle` must be lower case.
inline size_t ifind(sv hay, sv needle, size_t from = 0) {
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

inline bool istarts(sv s, sv lower_prefix) {
  if (s.size() < lower_prefix.size()) return false;
  for (size_t i = 0; i < lower_prefix.size(); ++i) {
    if (lc(s[i]) != lower_prefix[i]) return false;
  }
  return true;
}

inline bool starts(sv s, sv p) { return s.size() >= p.size() && s.compare(0, p.size(), p) == 0; }

inline size_t skip_sp(sv s, size_t p) {
  while (p < s.size() && (s[p] == ' ' || s[p] == '\t')) ++p;
  return p;
}

inline sv trim(sv s) {
  size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  size_t e = s.size();
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) --e;
  return s.substr(b, e - b);
}

// Integer at s[p]; returns the end, or npos when there is no digit. Allows a sign.
inline size_t read_int(sv s, size_t p, long long* v) {
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

inline size_t read_double(sv s, size_t p, double* v) {
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
inline long long int_after(sv s, sv key, size_t from = 0, bool need_delim = true) {
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

inline long long iint_after(sv s, sv lower_key) {
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
inline sv token_after(sv s, sv key, const char* stops) {
  size_t k = s.find(key);
  if (k == npos) return {};
  const size_t b = k + key.size();
  size_t e = b;
  while (e < s.size() && !std::strchr(stops, s[e])) ++e;
  if (e >= s.size()) return {};
  return s.substr(b, e - b);
}

inline int two(sv s, size_t p) { return (s[p] - '0') * 10 + (s[p + 1] - '0'); }

inline bool is2(sv s, size_t p) { return p + 1 < s.size() && dig(s[p]) && dig(s[p + 1]); }

inline bool host_char(char c) { return alpha(c) || dig(c) || c == '.' || c == '-' || c == '_'; }

// The number of c10d's store barrier key, "store_based_barrier_key:37" -> 37 (torch 1.x distributed_c10d.py
// _store_based_barrier: "store_based_barrier_key:{_group_count}"); -1 when the line names none.
inline long long store_barrier_key(sv msg) {
  constexpr sv kKey = "store_based_barrier_key:";
  const size_t k = msg.find(kKey), b = k + kKey.size();
  if (k == npos || b == msg.size() || !dig(msg[b])) return -1;
  long long key = 0;
  for (size_t p = b; p < msg.size() && dig(msg[p]) && key < 1000000; ++p) key = key * 10 + (msg[p] - '0');
  return key;
}

}  // namespace hanglab::logparse

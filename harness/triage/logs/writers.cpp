// The writers' prefixes peeled off a plain log line, outermost first (collectors, launchers,
// rank labels, levels), and the rank a file's path names (see parse_parts.hpp).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "triage/logs/parse_parts.hpp"
#include "triage/logs/patterns.hpp"

namespace hanglab::logparse {

// One prefix at s[p]; returns the position after it or npos.
// A prefix that begins with a digit: an ISO or epoch clock, a launcher's "3: " rank label.
static size_t peel_numeric(sv s, size_t p, LogLine& o, bool first) {
  double t = 0, res = 0;
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
  // srun -l's task label "3: " (kSrunLabel: a rank only where srun started the ranks).
  if (first || o.rank_src < RankSource::kSrunLabel) {
    long long r = 0;
    size_t e = read_int(s, p, &r);
    if (e != npos && e - p <= 6 && e + 1 < s.size() && s[e] == ':' && (s[e + 1] == ' ' || s[e + 1] == '\t') &&
        o.rank_src < RankSource::kSrunLabel) {
      o.rank = bounded_rank(r);
      o.rank_src = RankSource::kSrunLabel;
      return e + 2;
    }
  }
  return npos;
}

// Open MPI's I/O forwarding tags each line of a rank's output with the stream it came from
// (orte/mca/iof/base/iof_base_output.c: "[%s,%s]<%s>:" with the job id, the vpid -- the rank in
// MPI_COMM_WORLD -- and "stdout", "stderr" or "stddiag"; horovodrun's own tag is "[rank]<stream>:").
// The length of the stream tag at s[q], or 0.
static size_t iof_stream_tag(sv s, size_t q) {
  const sv r = s.substr(std::min(q, s.size()));
  for (const sv t : {sv("<stdout>:"), sv("<stderr>:"), sv("<stddiag>:")})
    if (starts(r, t)) return t.size();
  return 0;
}

// A bracketed prefix: "[rank3]:", "[1,3]<stderr>:", "[host:N]", glog in brackets, levels, source tags.
static size_t peel_bracket(sv s, size_t p, const LogLineContext& ctx, LogLine& o, bool first) {
  double t = 0, res = 0;
  sv r = s.substr(p);
  if (starts(r, "[rank")) {  // lower case only: "[Rank 3]" is ProcessGroupNCCL's, maybe PG-local
    size_t q = p + 5;
    if (q < s.size() && s[q] == ' ') ++q;
    long long v = 0;
    size_t e = read_int(s, q, &v);
    if (e == npos && q < s.size() && s[q] == '?') e = q + 1, v = -1;
    if (e != npos && e < s.size() && s[e] == ']') {
      if (v >= 0 && o.rank_src < RankSource::kPrefix) {
        o.rank = bounded_rank(v);
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
      o.local_rank = bounded_rank(v);
      if (o.rank_src < RankSource::kLocal) {
        o.rank = bounded_rank(v);
        o.rank_src = RankSource::kLocal;
      }
      e += 2;
      if (e < s.size() && s[e] == ' ') ++e;
      return e;
    }
  }
  if (p + 1 < s.size() && dig(s[p + 1])) {
    // "[1,3]<stderr>:" (Open MPI --tag-output: job id, then the rank)
    long long job = 0, rk = 0;
    size_t e = read_int(s, p + 1, &job);
    // "[3]<stderr>:" (horovodrun's tag: the process's rank)
    if (e != npos && e + 1 < s.size() && s[e] == ']' && iof_stream_tag(s, e + 1) > 0) {
      size_t q = e + 1 + iof_stream_tag(s, e + 1);
      if (q < s.size() && s[q] == ' ') ++q;
      if (o.rank_src < RankSource::kLauncher) {
        o.rank = bounded_rank(job);
        o.rank_src = RankSource::kLauncher;
      }
      return q;
    }
    if (e != npos && e < s.size() && s[e] == ',') {
      size_t e2 = read_int(s, e + 1, &rk);
      if (e2 != npos && e2 < s.size() && s[e2] == ']') {
        size_t q = e2 + 1;
        q += iof_stream_tag(s, q);
        if (q < s.size() && s[q] == ':') ++q;
        if (q < s.size() && s[q] == ' ') ++q;
        if (o.rank_src < RankSource::kLauncher) {
          o.rank = bounded_rank(rk);
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
            o.rank = bounded_rank(v);
            o.rank_src = RankSource::kHostTag;
          }
          // A number no rank can be is the pid.
          if (o.pid < 0 && v >= kMaxWorld) o.pid = v;
          o.host = host;
          if (o.host_tagged.empty()) o.host_tagged = s.substr(p);
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

// Ray's log monitor prefix (python/ray/_private/worker.py print_worker_logs@ray-2.40.0): "(" [a task's or actor's
// name " "] "pid=" PID [", ip=" IP] ") " before each line a worker process wrote, "(raylet" [", ip=" IP] ") "
// before the raylet's own. The writer's pid and host (a raylet line names no pid: the raylet's is not printed).
static size_t peel_ray(sv s, size_t p, LogLine& o) {
  const size_t close = s.find(')', p);
  if (close == npos || close - p > 200 || close + 1 >= s.size() || s[close + 1] != ' ') return npos;
  sv in = s.substr(p + 1, close - p - 1);
  sv ip;
  if (const size_t k = in.find(", ip="); k != npos) {
    ip = in.substr(k + 5);
    in = in.substr(0, k);
    if (ip.empty() || ip.find_first_of(" ,()") != npos) return npos;
  }
  long long pid = -1;
  if (in != "raylet") {
    const size_t k = in.rfind("pid=");
    if (k == npos || (k > 0 && in[k - 1] != ' ')) return npos;
    const size_t e = read_int(in, k + 4, &pid);
    if (e == npos || e != in.size() || pid <= 0) return npos;
  }
  if (pid > 0 && o.pid < 0) o.pid = pid;
  if (!ip.empty() && o.host.empty()) o.host = ip;
  return skip_sp(s, close + 1);
}

size_t peel_prefix(sv s, size_t p, const LogLineContext& ctx, LogLine& o, bool first) {
  if (p >= s.size()) return npos;
  // srun -l pads its labels ("  3: "): only at the very start of the line.
  if (first && (s[p] == ' ')) {
    size_t q = skip_sp(s, p);
    // A clock after leading blanks (a log collector's " 2025-02-18 12:54 " before the program's line): the
    // prefixes go on after it. Not an indented line's text (a traceback's "  File ..."), which stays as it is.
    double t0 = 0, r0 = 0;
    if (q - p <= 4 && q < s.size() && dig(s[q]) && parse_iso_time(s.substr(q), &t0, &r0)) return q;
    long long r = 0;
    const size_t e = read_int(s, q, &r);
    if (q - p <= 6 && e != npos && e - q <= 6 && e + 1 < s.size() && s[e] == ':' && s[e + 1] == ' ') {
      o.rank = bounded_rank(r);
      o.rank_src = RankSource::kSrunLabel;
      return e + 2;
    }
    return npos;
  }
  const char c = s[p];
  double t = 0, res = 0;
  if (dig(c)) return peel_numeric(s, p, o, first);
  if (c == '[') return peel_bracket(s, p, ctx, o, first);
  if (c == '(') return peel_ray(s, p, o);
  // glog without brackets: "E1129 08:26:59.123456 12345 file.cpp:123] "
  if (c == 'I' || c == 'W' || c == 'E' || c == 'F') {
    if (size_t e = parse_glog_header(s, p, false, ctx.year, o); e != npos) return e;
  }
  // syslog "Nov 29 08:26:59 host kernel: " (only at the start: month names are capitalised)
  if (first && c >= 'A' && c <= 'Z') {
    bool no_year = false;
    // mpirun --timestamp-output: ctime() without its newline, then the tag with no space between
    // ("Wed Jan 16 12:50:13 2019[1,17]<stderr>:"; orte/mca/iof/base/iof_base_output.c:114-121,
    // orte_iof_base_write_output @open-mpi/ompi 34d089db; PRRTE's prte_iof_base_write_output alike).
    if (size_t e = parse_month_day_time(s, p, ctx.year, true, &t, &res, &no_year);
        e != npos && !no_year && e < s.size() && (s[e] == '[' || s[e] == ' ')) {
      if (!o.has_t) {
        o.has_t = true;
        o.t = t;
        o.t_res = res;
      }
      return s[e] == ' ' ? e + 1 : e;
    }
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
      // "... - INFO - msg", and "name - INFO: msg" (ColossalAI's "colossalai - colossalai - INFO: msg")
      if ((k == 0 || m[k - 1] == ' ') && k + 1 < m.size() && m[k + 1] == ' ' && level_word(m, k + 2, &e) &&
          (m.compare(e, 3, " - ") == 0 || m.compare(e, 2, ": ") == 0)) {
        m = trim(m.substr(e + (m[e] == ':' ? 2 : 3)));
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

}  // namespace hanglab::logparse

namespace hanglab {

using namespace logparse;

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
    if (all_digits(name) && name.size() <= 7 && i > 0 && parts[i - 1] == "ranks") return bounded_rank(std::stoll(std::string(name)));
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
        if (tok.kind == 1) return bounded_rank(v + (kubeflow_master ? 1 : 0));
        return bounded_rank(v);
      }
    }
  }
  return -1;
}

}  // namespace hanglab

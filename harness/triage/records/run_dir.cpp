// Triage records: reads a run directory (harness.jsonl, ranks/<r>/events.jsonl, stdout.log,
// stderr.log, stack.txt, oom.txt) into RunObservations; see run_dir.hpp. Each stdout/stderr line is
// read by the plain-log classifier (records/message_facts.cpp, logs/parse.hpp): the ones it reads as
// a failure are kept as LogHits with that reading.
#include "triage/records/run_dir.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string_view>

#include "triage/logs/parse.hpp"
#include "triage/logs/progress.hpp"
#include "triage/records/message_facts.hpp"
#include "triage/records/stack_class.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// A real job's logs can be large: keep the first hits only, they carry the cause.
constexpr size_t kMaxLogHitsPerFile = 64;

// A line the plain-log classifier reads as a failure (root, echo, exit, teardown), a traceback's header
// (the exception follows it) or the program's word that its data ran out: what the reasoner cites.
bool worth_citing(const LineReading& r) {
  return r.role != Role::kInfo || r.kind == LogKind::kTraceback || r.kind == LogKind::kDataExhausted;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::optional<std::vector<std::string>> read_lines(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return lines;
}

template <typename T>
std::optional<T> get_opt(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return std::nullopt;
  }
}

template <typename T>
T get_or(const json& j, const char* key, T fallback) {
  return get_opt<T>(j, key).value_or(fallback);
}


void read_trace(const fs::path& file, RankObservations& r) {
  auto lines = read_lines(file);
  if (!lines) return;
  for (size_t i = 0; i < lines->size(); ++i) {
    const int ln = static_cast<int>(i) + 1;
    const std::string& text = (*lines)[i];
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
    // A kill mid-write leaves a truncated last line; anything unparsable is skipped.
    if (!j.is_object() || !j.contains("t") || !j["t"].is_number() || !j.contains("ev") || !j["ev"].is_string()) {
      r.bad_lines.push_back(ln);
      continue;
    }
    const double t = j["t"].get<double>();
    const std::string ev = j["ev"].get<std::string>();
    if (!r.has_trace) r.first_t = t;
    r.has_trace = true;
    if (t >= r.last_t) {
      r.last_t = t;
      r.last_line = ln;
    }
    if (ev != "hb" && t >= r.last_progress_t) {
      r.last_progress_t = t;
      r.last_progress_line = ln;
    }
    if (ev == "start") {
      r.start_t = t;
      r.start_line = ln;
      r.pid = get_opt<long long>(j, "pid");
      r.claimed_rank = get_opt<int>(j, "rank");
    } else if (ev == "phase") {
      const std::string name = get_or<std::string>(j, "name", "");
      const std::string edge = get_or<std::string>(j, "edge", "");
      if (edge == "begin") {
        r.open_phases.push_back(name);
      } else if (edge == "end") {
        auto it = std::find(r.open_phases.rbegin(), r.open_phases.rend(), name);
        if (it != r.open_phases.rend()) r.open_phases.erase(std::next(it).base());
        if (name == "init") {
          r.init_ended = true;
          r.init_end_line = ln;
          r.init_end_t = t;
        }
      }
      r.last_phase = r.open_phases.empty() ? name : r.open_phases.back();
      r.last_phase_ended = r.open_phases.empty() && edge == "end";
      r.last_phase_line = ln;
      r.last_phase_t = t;
      r.last_phase_step = get_or<int>(j, "step", r.last_phase_step);
      if (name == "backward" && edge == "begin") r.backward_steps.insert(r.last_phase_step);
    } else if (ev == "coll") {
      const auto seq = get_opt<long long>(j, "seq");
      if (!seq) continue;
      const std::string edge = get_or<std::string>(j, "edge", "");
      if (edge == "begin" && !r.colls.count(*seq)) {
        CollRecord c;
        c.seq = *seq;
        c.op = get_or<std::string>(j, "op", "");
        c.numel = get_or<long long>(j, "numel", -1);
        c.step = get_or<int>(j, "step", 0);
        c.begin_t = t;
        c.begin_line = ln;
        c.phase = r.open_phases.empty() ? "" : r.open_phases.back();
        r.colls.emplace(*seq, std::move(c));
      } else if (edge == "end") {
        auto it = r.colls.find(*seq);
        if (it != r.colls.end() && !it->second.end_t) {
          it->second.end_t = t;
          it->second.end_line = ln;
        }
      }
    } else if (ev == "step") {
      StepRecord s;
      s.step = get_or<int>(j, "step", 0);
      s.t = t;
      s.dur_ms = get_or<double>(j, "dur_ms", 0);
      s.line = ln;
      if (j.contains("loss")) {
        const auto& l = j["loss"];
        if (l.is_null()) {
          s.loss_nonfinite = true;
        } else if (l.is_number()) {
          s.loss_nonfinite = !std::isfinite(l.get<double>());
        } else if (l.is_string()) {
          const std::string v = lower(l.get<std::string>());
          s.loss_nonfinite = v.find("nan") != std::string::npos || v.find("inf") != std::string::npos;
        }
      }
      s.had_backward = r.backward_steps.count(s.step) > 0;
      r.steps.push_back(s);
    } else if (ev == "hb") {
      r.hb_t.push_back(t);
      r.last_hb_line = ln;
    } else if (ev == "fault") {
      r.faults.push_back({t, ln, get_or<std::string>(j, "kind", ""), get_or<std::string>(j, "detail", "")});
    } else if (ev == "error") {
      ErrorRecord e;
      e.t = t;
      e.line = ln;
      e.msg = get_or<std::string>(j, "msg", "");
      e.where = get_or<std::string>(j, "where", "");
      e.cls = get_or<std::string>(j, "class", "other");
      e.step = get_or<int>(j, "step", 0);
      e.seq = get_or<long long>(j, "seq", 0);
      e.says = read_message_facts(e.msg);
      r.errors.push_back(std::move(e));
    } else if (ev == "exit") {
      if (!r.trace_exit_code) {
        r.trace_exit_code = get_or<int>(j, "code", -1);
        r.trace_exit_t = t;
        r.trace_exit_line = ln;
      }
    }
  }
  // Time spent inside the step's collectives, i.e. computing nothing and waiting for
  // peers: a straggler's peers have long collectives, the straggler short ones.
  for (auto& s : r.steps) {
    double ms = 0;
    for (const auto& [seq, c] : r.colls) {
      if (c.step == s.step && c.end_t && *c.end_t <= s.t + 1e-9) ms += (*c.end_t - c.begin_t) * 1000.0;
    }
    s.coll_ms = ms;
  }
}

void read_log(const fs::path& file, const char* name, RankObservations& r) {
  auto lines = read_lines(file);
  if (!lines) return;
  size_t kept = 0;
  for (size_t i = 0; i < lines->size() && kept < kMaxLogHitsPerFile; ++i) {
    std::string text = (*lines)[i];
    double t = 0;
    const auto sp = text.find(' ');
    if (sp != std::string::npos) {
      if (auto ts = parse_log_timestamp(text.substr(0, sp))) {
        t = *ts;
        text = text.substr(sp + 1);
      }
    }
    TextFacts says = read_message_facts(text);
    // hanglab's workloads name the store they were given in their start line (workloads/loop/trainer.cpp
    // "%s starting: world_size %d, backend %s, steps %d, master %s", nccl_probe/main.cpp).
    if (r.start_master.empty() && text.find(" starting: world_size") != std::string::npos) r.start_master = says.master;
    if (!worth_citing(says.read)) continue;
    r.log_hits.push_back({name, static_cast<int>(i) + 1, t, std::move(text), std::move(says)});
    ++kept;
  }
}

// Progress lines (logs/progress.hpp) of both streams, in clock order: a tqdm bar goes to
// stderr, a print() to stdout.
struct ProgressLine {
  double t = 0;
  std::string ref;
  std::string text;
  std::string what;
  std::string pattern;
  std::optional<long long> steps_done;
};

void read_progress(const fs::path& file, const char* name, std::vector<ProgressLine>& out) {
  auto lines = read_lines(file);
  if (!lines) return;
  for (size_t i = 0; i < lines->size(); ++i) {
    std::string_view text = (*lines)[i];
    double t = 0;
    const auto sp = text.find(' ');
    if (sp == std::string_view::npos) continue;
    auto ts = parse_log_timestamp(std::string(text.substr(0, sp)));
    if (!ts) continue;  // only the harness' own time-stamped lines: the gap needs a clock
    t = *ts;
    text = text.substr(sp + 1);
    auto m = match_progress(text);
    if (!m) continue;
    std::string shown(text.substr(0, 200));
    if (auto cr = shown.find_last_of('\r'); cr != std::string::npos) shown = shown.substr(cr + 1);
    out.push_back({t, fmt::format("{}:{}", name, i + 1), shown, m->describe(), std::string(m->pattern), m->steps_done()});
  }
}

std::optional<ProgressSeen> summarize_progress(std::vector<ProgressLine> v) {
  if (v.empty()) return std::nullopt;
  std::stable_sort(v.begin(), v.end(), [](const ProgressLine& a, const ProgressLine& b) { return a.t < b.t; });
  ProgressSeen p;
  p.lines = static_cast<int>(v.size());
  p.first_t = v.front().t;
  p.last_t = v.back().t;
  p.last_ref = v.back().ref;
  p.last_text = v.back().text;
  p.last_what = v.back().what;
  p.pattern = v.back().pattern;
  for (auto it = v.rbegin(); it != v.rend() && !p.steps_done; ++it) p.steps_done = it->steps_done;
  std::vector<double> gaps;
  for (size_t i = 1; i < v.size(); ++i) gaps.push_back(v[i].t - v[i - 1].t);
  if (!gaps.empty()) {
    std::sort(gaps.begin(), gaps.end());
    p.median_gap_s = gaps[gaps.size() / 2];
  }
  return p;
}

// oom.txt: "oom_kill N" counters (N > 0) or kernel "oom-kill"/"Killed process" lines.
void read_oom(const fs::path& file, RankObservations& r) {
  auto lines = read_lines(file);
  if (!lines) return;
  for (size_t i = 0; i < lines->size(); ++i) {
    const std::string& l = (*lines)[i];
    if (l.empty() || l[0] == '#') continue;
    const std::string low = lower(l);
    long long kills = 0;
    const bool counter = std::sscanf(low.c_str(), "oom_kill %lld", &kills) == 1 && kills > 0;
    const bool kernel = low.find("oom-kill") != std::string::npos || low.find("killed process") != std::string::npos ||
                        low.find("out of memory") != std::string::npos;
    if (counter || kernel) {
      r.oom_evidence = LogHit{"oom.txt", static_cast<int>(i) + 1, 0, l, {}};
      return;
    }
  }
}

void read_harness(const fs::path& file, HarnessObservations& h) {
  auto lines = read_lines(file);
  if (!lines) return;
  h.present = true;
  for (size_t i = 0; i < lines->size(); ++i) {
    const int ln = static_cast<int>(i) + 1;
    json j = json::parse((*lines)[i], nullptr, false);
    if (!j.is_object() || !j.contains("t") || !j["t"].is_number() || !j.contains("ev") || !j["ev"].is_string())
      continue;
    const double t = j["t"].get<double>();
    const std::string ev = j["ev"].get<std::string>();
    // "fault" lines are the injected ground truth: kept for context only (HarnessFault).
    if (ev == "run_start") {
      h.start_t = t;
      h.world_size = get_opt<int>(j, "world_size");
      if (j.contains("timeouts") && j["timeouts"].is_object()) {
        const json& to = j["timeouts"];
        h.heartbeat_s = get_opt<double>(to, "heartbeat_s");
        h.collective_s = get_opt<double>(to, "collective_s");
        h.init_s = get_opt<double>(to, "init_s");
        h.progress_s = get_opt<double>(to, "progress_s");
      }
    } else if (ev == "launch") {
      const auto rank = get_opt<int>(j, "rank");
      if (rank) h.launches[*rank] = {t, ln, get_or<long long>(j, "pid", 0)};
    } else if (ev == "exit") {
      const auto rank = get_opt<int>(j, "rank");
      if (rank && !h.exits.count(*rank)) {
        h.exits[*rank] = {t, ln, get_opt<int>(j, "code"), get_opt<int>(j, "signal"), get_opt<bool>(j, "by_teardown")};
      }
    } else if (ev == "detect") {
      const std::string detail = get_or<std::string>(j, "detail", "");
      h.detections.push_back({t, ln, get_or<std::string>(j, "detector", ""), get_or<int>(j, "rank", -1), detail,
                              read_message_facts(detail)});
    } else if (ev == "detect_retracted") {
      // The supervisor found this detection to be another's echo (a peer's closed connection after
      // a rank's own backend timeout): not a detection of the run.
      const std::string det = get_or<std::string>(j, "detector", "");
      const int rank = get_or<int>(j, "rank", -1);
      h.detections.erase(std::remove_if(h.detections.begin(), h.detections.end(),
                                        [&](const auto& d) { return d.detector == det && d.rank == rank; }),
                         h.detections.end());
    } else if (ev == "teardown") {
      if (!h.teardown_t) {
        h.teardown_t = t;
        h.teardown_reason = get_or<std::string>(j, "reason", "");
        h.teardown_line = ln;
      }
    } else if (ev == "fault") {
      HarnessFault f;
      f.t = t;
      f.line = ln;
      f.kind = get_or<std::string>(j, "kind", "");
      if (j.contains("ranks") && j["ranks"].is_array()) {
        for (const auto& x : j["ranks"]) {
          if (x.is_number_integer()) f.ranks.push_back(x.get<int>());
        }
      }
      h.faults.push_back(std::move(f));
    } else if (ev == "nodes" && j.contains("nodes") && j["nodes"].is_object() && j["nodes"].contains("nodes") &&
               j["nodes"]["nodes"].is_array()) {
      h.nodes.clear();
      h.nodes_line = ln;
      for (const auto& n : j["nodes"]["nodes"]) {
        if (!n.is_object()) continue;
        HarnessNode hn;
        hn.node = get_or<int>(n, "node", 0);
        hn.name = get_or<std::string>(n, "name", "");
        hn.addr = get_or<std::string>(n, "addr", "");
        hn.addr2 = get_or<std::string>(n, "eth1", "");
        if (n.contains("ranks") && n["ranks"].is_array())
          for (const auto& x : n["ranks"])
            if (x.is_number_integer()) hn.ranks.push_back(x.get<int>());
        h.nodes.push_back(std::move(hn));
      }
    } else if (ev == "net_probe" && j.contains("probe") && j["probe"].is_object()) {
      const json& p = j["probe"];
      h.probe = {};
      h.probe.line = ln;
      h.probe.pings = get_or<int>(p, "pings", 0);
      h.probe.mtu = get_or<int>(p, "mtu", 0);
      if (p.contains("pairs") && p["pairs"].is_array())
        for (const auto& x : p["pairs"]) {
          if (!x.is_object()) continue;
          h.probe.pairs.push_back({get_or<int>(x, "from", 0), get_or<int>(x, "to", 0), get_or<int>(x, "small", 0),
                                   get_or<int>(x, "large", 0)});
        }
    } else if (ev == "stack_capture") {
      if (!h.stacks_t) h.stacks_t = t;
    } else if (ev == "run_end") {
      h.end_t = t;
    }
  }
  std::stable_sort(h.detections.begin(), h.detections.end(),
                   [](const HarnessDetect& a, const HarnessDetect& b) { return a.t < b.t; });
}

// ---- stack.txt ---------------------------------------------------------------------

struct RawFrame {
  std::string name;
  std::string where;  // "from /lib/..." or "at file:line" tail, for library checks
  int line = 0;
};

struct RawThread {
  std::string header;
  bool main = false;
  std::vector<RawFrame> frames;  // innermost first
};

// Removes a trailing balanced "(...)" or "<...>" group: gdb prints demangled
// signatures for frames without debug info ("f(int) ()"), and templates are noise.
std::string strip_trailing_group(std::string s, char open, char close) {
  const auto is_call_operator = [&] { return s.size() >= 10 && s.compare(s.size() - 10, 10, "operator()") == 0; };
  while (!s.empty() && s.back() == close && !is_call_operator()) {
    int depth = 0;
    size_t i = s.size();
    while (i-- > 0) {
      if (s[i] == close) ++depth;
      if (s[i] == open && --depth == 0) break;
    }
    if (i == std::string::npos || i == 0) break;
    s.erase(i);
    while (!s.empty() && s.back() == ' ') s.pop_back();
  }
  return s;
}

std::optional<RawFrame> parse_gdb_frame(const std::string& line, int ln) {
  // "#3  0x00007f.. in name (args) at file:line" | "#3  name (args) at ..." | "... from lib"
  size_t p = 1;
  while (p < line.size() && std::isdigit(static_cast<unsigned char>(line[p]))) ++p;
  while (p < line.size() && line[p] == ' ') ++p;
  std::string rest = line.substr(p);
  if (rest.rfind("0x", 0) == 0) {
    const auto in = rest.find(" in ");
    if (in == std::string::npos) return std::nullopt;
    rest = rest.substr(in + 4);
  }
  const auto paren = rest.find(" (");
  RawFrame f;
  f.name = paren == std::string::npos ? rest : rest.substr(0, paren);
  f.name = strip_trailing_group(strip_trailing_group(f.name, '(', ')'), '<', '>');
  for (const char* key : {" from ", " at "}) {
    const auto k = rest.rfind(key);
    if (k != std::string::npos) {
      f.where = rest.substr(k + 1);
      break;
    }
  }
  f.line = ln;
  return f;
}

// Plumbing between the program and the kernel: libc/libpthread/libstdc++ internals,
// thread start-up, and bare blocking calls (reported via syscall_of() instead).
bool is_noise_frame(const RawFrame& f) {
  const std::string& n = f.name;
  static const std::vector<std::string> kPrefixes = {"__", "futex",   "pthread_", "std::",   "start_thread", "clone",
                                                     "??", "syscall", "_start",   "<signal", "gsignal"};
  static const std::set<std::string> kExact = {"raise", "abort",   "epoll_wait", "poll",    "ppoll",   "nanosleep",
                                               "sleep", "usleep",  "read",       "recv",    "recvmsg", "select",
                                               "wait",  "waitpid", "accept",     "connect", "write",   "send"};
  for (const auto& pre : kPrefixes) {
    if (n.rfind(pre, 0) == 0) return true;
  }
  if (kExact.count(n)) return true;
  return f.where.find("libc.so") != std::string::npos || f.where.find("libpthread") != std::string::npos ||
         f.where.find("libstdc++") != std::string::npos || f.where.find("./nptl/") != std::string::npos ||
         f.where.find("../sysdeps/") != std::string::npos;
}

// The blocking system call a libc frame stands for: "__GI___clock_nanosleep" ->
// nanosleep, "__libc_recv" -> recv. Whole names only ("pthread" contains "read").
std::string syscall_of(const RawFrame& f) {
  std::string n = lower(f.name);
  for (bool changed = true; changed;) {
    changed = false;
    for (const char* pre : {"_", "gi_", "libc_", "clock_", "internal_"}) {
      if (n.rfind(pre, 0) == 0) {
        n.erase(0, std::string_view(pre).size());
        changed = true;
      }
    }
  }
  static const std::map<std::string, std::string> kCalls = {
      {"nanosleep", "nanosleep"}, {"epoll_wait", "epoll_wait"}, {"poll", "poll"},      {"ppoll", "poll"},
      {"select", "select"},       {"pselect6", "select"},       {"recv", "recv"},      {"recvmsg", "recv"},
      {"recvfrom", "recv"},       {"accept", "accept"},         {"accept4", "accept"}, {"connect", "connect"},
      {"read", "read"},           {"pread64", "read"},          {"write", "write"},    {"send", "send"},
      {"sendmsg", "send"},        {"fsync", "fsync"},           {"fdatasync", "fsync"}};
  auto it = kCalls.find(n);
  return it == kCalls.end() ? "" : it->second;
}

std::optional<StackFrameInfo> innermost_interesting(const RawThread& th, const std::string& tool) {
  if (th.frames.empty()) return std::nullopt;
  std::string sys;
  for (const auto& f : th.frames) {
    if (!is_noise_frame(f)) {
      StackFrameInfo info{tool, sys.empty() ? f.name : fmt::format("{} in {}", sys, f.name), f.line};
      return info;
    }
    if (sys.empty()) sys = syscall_of(f);
  }
  const auto& f = th.frames.front();
  return StackFrameInfo{tool, sys.empty() ? f.name : sys, f.line};
}

std::optional<StackFrameInfo> parse_gdb(const std::vector<std::string>& lines) {
  std::vector<RawThread> threads;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind("Thread ", 0) == 0 && l.find('(') != std::string::npos) {
      RawThread th;
      th.header = l;
      th.main = l.rfind("Thread 1 (", 0) == 0;
      threads.push_back(std::move(th));
    } else if (l.size() > 1 && l[0] == '#' && std::isdigit(static_cast<unsigned char>(l[1]))) {
      if (threads.empty()) threads.push_back({"", true, {}});  // plain `bt`
      if (l.rfind("#0 ", 0) == 0 && !threads.back().frames.empty()) threads.push_back({"", false, {}});
      if (auto f = parse_gdb_frame(l, static_cast<int>(i) + 1)) threads.back().frames.push_back(*f);
    }
  }
  if (threads.empty()) return std::nullopt;
  auto it = std::find_if(threads.begin(), threads.end(), [](const RawThread& t) { return t.main; });
  const RawThread& th = it != threads.end() ? *it : threads.front();
  auto info = innermost_interesting(th, "gdb");
  if (info) {
    for (const auto& f : th.frames) info->frames.push_back(f.where.empty() ? f.name : f.name + "\t" + f.where);
  }
  return info;
}

std::optional<StackFrameInfo> parse_py_spy(const std::vector<std::string>& lines) {
  // Thread 0x7F.. (idle): "MainThread"
  //     wait (threading.py:320)          <- innermost first
  std::vector<RawThread> threads;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.rfind("Thread ", 0) == 0) {
      RawThread th;
      th.header = l;
      th.main = l.find("\"MainThread\"") != std::string::npos;
      threads.push_back(std::move(th));
    } else if (!threads.empty() && l.rfind("    ", 0) == 0) {
      std::string s = l.substr(l.find_first_not_of(' '));
      if (s.empty()) continue;
      RawFrame f;
      f.name = s;
      f.line = static_cast<int>(i) + 1;
      const auto paren = s.find(" (");
      const std::string file = paren == std::string::npos ? "" : s.substr(paren + 2);
      // Frames of the interpreter's own threading module are waits, not the culprit.
      if (file.rfind("threading.py", 0) == 0 || file.find("/threading.py") != std::string::npos) f.where = "libc.so";
      threads.back().frames.push_back(std::move(f));
    }
  }
  if (threads.empty()) return std::nullopt;
  auto it = std::find_if(threads.begin(), threads.end(), [](const RawThread& t) { return t.main; });
  const RawThread& th = it != threads.end() ? *it : threads.front();
  if (th.frames.empty()) return std::nullopt;
  StackFrameInfo info{"py-spy", th.frames.front().name, th.frames.front().line};
  for (const auto& f : th.frames) {
    if (f.where.empty()) {
      info.frame = f.name;
      info.line = f.line;
      break;
    }
  }
  for (const auto& f : th.frames) info.frames.push_back(f.name);
  // "Thread 15172 (idle): "MainThread"": idle = off CPU, blocked in a call
  if (th.header.find("(idle)") != std::string::npos) info.idle = true;
  if (th.header.find("(active") != std::string::npos) info.idle = false;
  return info;
}

}  // namespace

std::optional<double> parse_log_timestamp(const std::string& s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, consumed = 0;
  double sec = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%lf%n", &y, &mo, &d, &h, &mi, &sec, &consumed) != 6) {
    return std::nullopt;
  }
  if (static_cast<size_t>(consumed) + 1 != s.size() || s.back() != 'Z') return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec < 0 || sec >= 61) return std::nullopt;
  const long long days = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return static_cast<double>(days * 86400 + h * 3600 + mi * 60) + sec;
}

std::optional<StackFrameInfo> parse_stack_text(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    auto nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    lines.push_back(text.substr(pos, nl - pos));
    pos = nl + 1;
  }
  const bool py = std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("Process ", 0) == 0 || l.find("\"MainThread\"") != std::string::npos || l.rfind("Python v", 0) == 0;
  });
  auto info = py ? parse_py_spy(lines) : parse_gdb(lines);
  // The harness' header: "# py-spy of rank 2 (pid 15172) at 2026-12-02T00:37:39.608053Z" and
  // "# state: S wchan: do_epoll_wait" (the process state before the tool stopped it).
  std::string state, wchan;
  std::optional<double> at;
  for (const auto& l : lines) {
    if (l.rfind("# state: ", 0) == 0) {
      char st[8] = {0}, wc[128] = {0};
      if (std::sscanf(l.c_str(), "# state: %7s wchan: %127s", st, wc) >= 1) {
        state = st[0] == '?' ? "" : st;
        wchan = (wc[0] == '-' && wc[1] == 0) ? "" : wc;
      }
    } else if (l.rfind("# ", 0) == 0 && l.find(" of rank ") != std::string::npos) {
      const auto k = l.rfind(" at ");
      if (k != std::string::npos) at = parse_log_timestamp(l.substr(k + 4));
    }
  }
  if (!info && (state.empty() && !at)) return std::nullopt;
  if (!info) info = StackFrameInfo{py ? "py-spy" : "gdb", "", 0};
  info->state = state;
  info->wchan = wchan;
  info->t = at;
  classify_stack(*info);
  return info;
}

bool is_run_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir / "ranks", ec)) return false;
  if (fs::exists(dir / "harness.jsonl", ec)) return true;
  for (fs::directory_iterator it(dir / "ranks", ec), end; !ec && it != end; it.increment(ec)) {
    if (fs::exists(it->path() / "events.jsonl", ec)) return true;
  }
  return false;
}

RunObservations load_run_observations(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(fmt::format("triage: {} is not a directory", dir.string()));
  const fs::path ranks_dir = dir / "ranks";
  if (!fs::is_directory(ranks_dir, ec)) {
    throw std::runtime_error(fmt::format("triage: {} has no ranks/ folder", dir.string()));
  }
  RunObservations run;
  read_harness(dir / "harness.jsonl", run.harness);

  std::vector<int> ranks;
  for (fs::directory_iterator it(ranks_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!it->is_directory() || name.empty() ||
        !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); }) || name.size() > 6)
      continue;
    ranks.push_back(std::stoi(name));
  }
  if (ec) throw std::runtime_error(fmt::format("triage: cannot list {}: {}", ranks_dir.string(), ec.message()));
  for (const auto& [rank, launch] : run.harness.launches) ranks.push_back(rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());

  for (int rank : ranks) {
    RankObservations r;
    r.rank = rank;
    const fs::path rd = ranks_dir / std::to_string(rank);
    read_trace(rd / "events.jsonl", r);
    read_log(rd / "stderr.log", "stderr.log", r);
    read_log(rd / "stdout.log", "stdout.log", r);
    read_oom(rd / "oom.txt", r);
    std::vector<ProgressLine> progress;
    read_progress(rd / "stdout.log", "stdout.log", progress);
    read_progress(rd / "stderr.log", "stderr.log", progress);
    r.progress = summarize_progress(std::move(progress));
    if (auto lines = read_lines(rd / "stack.txt")) {
      std::string text;
      for (const auto& l : *lines) text += l + "\n";
      r.stack = parse_stack_text(text);
    }
    run.ranks.emplace(rank, std::move(r));
  }
  return run;
}

}  // namespace hanglab

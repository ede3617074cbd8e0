#include "detect/liveness.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace hanglab {

namespace {

// The share of a core one runnable task gets now: cores / the 1-minute load, at most 1.
double cpu_share_under_load() {
  static const double cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  double load1 = 0;
  if (FILE* f = std::fopen("/proc/loadavg", "re")) {
    if (std::fscanf(f, "%lf", &load1) != 1) load1 = 0;
    std::fclose(f);
  }
  return std::clamp(cores / std::max(load1, cores), 0.05, 1.0);
}

// One small /proc file into buf; -1 when it cannot be read (the thread or process is gone,
// or permission is missing).
ssize_t read_small(const std::string& path, char* buf, size_t cap) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = ::read(fd, buf, cap - 1);
  ::close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return n;
}

std::vector<pid_t> list_numeric(const std::string& dir) {
  std::vector<pid_t> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    out.push_back(static_cast<pid_t>(std::atoi(e->d_name)));
  }
  ::closedir(d);
  return out;
}

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

constexpr size_t kMaxProcesses = 256;  // a rank's tree; more is a fork bomb, not a rank

}  // namespace

const char* activity_name(Activity a) {
  switch (a) {
    case Activity::kUnknown: return "unknown";
    case Activity::kBusy: return "busy";
    case Activity::kDisk: return "disk";
    case Activity::kBlocked: return "blocked";
    case Activity::kStopped: return "stopped";
    case Activity::kGone: return "gone";
  }
  return "unknown";
}

std::optional<StatFields> parse_stat_line(std::string_view line) {
  const auto lp = line.find('(');
  const auto rp = line.rfind(')');
  if (lp == std::string_view::npos || rp == std::string_view::npos || rp < lp || rp + 2 >= line.size())
    return std::nullopt;
  StatFields f;
  f.comm = std::string(line.substr(lp + 1, rp - lp - 1));
  f.state = line[rp + 2];
  return f;
}

std::optional<std::array<unsigned long long, 3>> parse_schedstat(std::string_view text) {
  std::array<unsigned long long, 3> v{};
  std::string s(text);
  char* p = s.data();
  for (auto& x : v) {
    char* end = nullptr;
    x = std::strtoull(p, &end, 10);
    if (end == p) return std::nullopt;
    p = end;
  }
  return v;
}

std::optional<long long> parse_reaped_children_ticks(std::string_view line) {
  const auto rp = line.rfind(')');
  if (rp == std::string_view::npos) return std::nullopt;
  std::string rest(line.substr(rp + 1));
  // After ")": state (3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
  // utime stime (14, 15) cutime cstime (16, 17).
  char* p = rest.data();
  long long v[15] = {0};
  ++p;  // the space after ')'
  while (*p == ' ') ++p;
  ++p;  // the state letter
  for (long long& x : v) {
    char* end = nullptr;
    x = std::strtoll(p, &end, 10);
    if (end == p) return std::nullopt;
    p = end;
  }
  return v[12] + v[13];
}

std::optional<long long> parse_io_bytes(std::string_view text) {
  long long total = 0;
  int found = 0;
  for (std::string_view key : {"read_bytes: ", "write_bytes: "}) {
    size_t k = 0;
    // the key at a line start ("cancelled_write_bytes" also ends in "write_bytes: ")
    while ((k = text.find(key, k)) != std::string_view::npos && k > 0 && text[k - 1] != '\n') ++k;
    if (k == std::string_view::npos) continue;
    total += std::atoll(std::string(text.substr(k + key.size(), 24)).c_str());
    ++found;
  }
  if (found == 0) return std::nullopt;
  return total;
}

std::string where_of_wchan(char state, std::string_view w) {
  if (state == 'R') return "running";
  if (state == 'T' || state == 't' || w == "do_signal_stop") return "stopped";
  if (has(w, "fuse") || w == "request_wait_answer" || starts(w, "nfs") || starts(w, "rpc_")) return "fs";
  if (state == 'D') return "disk";
  if (has(w, "futex")) return "futex";
  if (has(w, "epoll") || has(w, "poll") || has(w, "select")) return "poll";
  if (has(w, "sk_wait") || has(w, "tcp_") || has(w, "unix_stream") || has(w, "inet_csk") || has(w, "sock") ||
      w == "wait_woken")
    return "socket";
  if (has(w, "nanosleep") || has(w, "hrtimer")) return "sleep";
  if (has(w, "pipe")) return "pipe";
  if (w == "do_wait" || has(w, "wait4") || has(w, "waitid")) return "child";
  if (w.empty() || w == "0") return "sleeping";
  return "other:" + std::string(w);
}

nlohmann::json RankLiveness::to_json(double mono_to_unix) const {
  nlohmann::json busy_j = nlohmann::json::array();
  for (const auto& b : busy)
    busy_j.push_back({{"pid", b.pid}, {"tid", b.tid}, {"comm", b.comm}, {"state", std::string(1, b.state)},
                      {"demand", std::round(b.demand * 1000) / 1000}, {"cpu", std::round(b.cpu * 1000) / 1000}});
  nlohmann::json j = {{"activity", activity_name(activity)},
                      {"state", std::string(1, state)},
                      {"wchan", wchan},
                      {"where", where},
                      {"main_ran", main_ran},
                      {"processes", processes},
                      {"threads", threads},
                      {"busy_threads", busy_j},
                      {"disk_threads", disk_threads},
                      {"io_bytes", io_bytes},
                      {"window_s", std::round(window_s * 1000) / 1000}};
  j["sampled_t"] = sampled_mono > 0 ? nlohmann::json(sampled_mono + mono_to_unix) : nlohmann::json(nullptr);
  j["last_active_t"] = last_active_mono > 0 ? nlohmann::json(last_active_mono + mono_to_unix) : nlohmann::json(nullptr);
  j["blocked_since_t"] =
      blocked_since_mono > 0 ? nlohmann::json(blocked_since_mono + mono_to_unix) : nlohmann::json(nullptr);
  return j;
}

bool LivenessSampler::sample(const std::vector<Target>& targets, double now_mono) {
  if (last_mono_ > 0 && now_mono - last_mono_ < o_.interval_s) return false;
  last_mono_ = now_mono;
  for (const auto& t : targets)
    if (t.pid > 0) sample_one(t, now_mono);
  return true;
}

const RankLiveness* LivenessSampler::get(int key) const {
  auto it = state_.find(key);
  return it == state_.end() ? nullptr : &it->second.live;
}

void LivenessSampler::sample_one(const Target& t, double now_mono) {
  State& st = state_[t.key];
  if (st.pid != t.pid) st = State{}, st.pid = t.pid;  // a new process: a new window
  const bool first = st.mono == 0;
  const double dt = now_mono - st.mono;
  RankLiveness live = st.live;
  live.sampled_mono = now_mono;
  live.window_s = first ? 0 : dt;
  live.busy.clear();
  live.disk_threads = 0;
  live.main_ran = false;
  live.threads = 0;

  const std::string root = "/proc/" + std::to_string(t.pid);
  char buf[4096];
  // The process tree, breadth first, through each thread's children file.
  std::vector<pid_t> procs = {t.pid};
  std::map<pid_t, ThreadCounters> threads;
  std::map<pid_t, long long> io;
  std::map<pid_t, long long> reaped;
  long long io_delta = 0;
  long long reaped_delta = 0;
  bool root_alive = false;
  for (size_t i = 0; i < procs.size() && procs.size() <= kMaxProcesses; ++i) {
    const pid_t p = procs[i];
    const std::string pdir = "/proc/" + std::to_string(p);
    const std::vector<pid_t> tids = list_numeric(pdir + "/task");
    if (tids.empty()) continue;
    if (p == t.pid) root_alive = true;
    // CPU of the process's children that ended in the window (a shell running short-lived
    // commands works in them): cutime + cstime of its stat.
    if (read_small(pdir + "/stat", buf, sizeof buf) > 0)
      if (auto c = parse_reaped_children_ticks(buf)) {
        reaped[p] = *c;
        auto prev = st.reaped.find(p);
        if (!first && prev != st.reaped.end()) reaped_delta += std::max(0LL, *c - prev->second);
      }
    if (read_small(pdir + "/io", buf, sizeof buf) > 0)
      if (auto b = parse_io_bytes(buf)) {
        io[p] = *b;
        auto prev = st.io.find(p);
        if (!first) io_delta += prev == st.io.end() ? 0 : std::max(0LL, *b - prev->second);
      }
    for (pid_t tid : tids) {
      const std::string tdir = pdir + "/task/" + std::to_string(tid);
      if (t.tree && (i + 1 < kMaxProcesses) && read_small(tdir + "/children", buf, sizeof buf) > 0) {
        for (char* s = buf; *s;) {
          char* end = nullptr;
          long c = std::strtol(s, &end, 10);
          if (end == s) break;
          if (c > 0 && std::find(procs.begin(), procs.end(), c) == procs.end()) procs.push_back(static_cast<pid_t>(c));
          s = end;
        }
      }
      if (read_small(tdir + "/stat", buf, sizeof buf) <= 0) continue;
      const auto sf = parse_stat_line(buf);
      if (!sf) continue;
      ++live.threads;
      if (sf->state == 'D') ++live.disk_threads;
      if (tid == t.pid) {
        live.state = sf->state;
        live.wchan.clear();
        if (read_small(tdir + "/wchan", buf, sizeof buf) > 0 && std::strcmp(buf, "0") != 0) live.wchan = buf;
        live.where = where_of_wchan(live.state, live.wchan);
      }
      if (read_small(tdir + "/schedstat", buf, sizeof buf) <= 0) continue;
      const auto ss = parse_schedstat(buf);
      if (!ss) continue;
      const ThreadCounters now{(*ss)[0], (*ss)[1], (*ss)[2]};
      threads[tid] = now;
      if (first || dt <= 0) continue;
      // A thread born in the window counts from zero.
      ThreadCounters was;
      if (auto it = st.threads.find(tid); it != st.threads.end()) was = it->second;
      const double run_ns = static_cast<double>(now.run_ns - std::min(now.run_ns, was.run_ns));
      const double wait_ns = static_cast<double>(now.wait_ns - std::min(now.wait_ns, was.wait_ns));
      const double runs = static_cast<double>(now.runs - std::min(now.runs, was.runs));
      ThreadActivity a;
      a.pid = p;
      a.tid = tid;
      a.state = sf->state;
      a.comm = sf->comm;
      a.cpu = run_ns / 1e9 / dt;
      a.demand = (run_ns + wait_ns) / 1e9 / dt;
      // One run that lasted the whole window is never counted as a new run.
      a.run_ms = run_ns <= 0 ? 0 : run_ns / 1e6 / std::max(1.0, runs);
      if (tid == p && run_ns / 1e6 >= o_.main_ran_ms) live.main_ran = true;
      if (a.demand >= o_.busy_demand && a.run_ms >= o_.busy_run_ms) live.busy.push_back(std::move(a));
    }
  }
  live.processes = static_cast<int>(std::min(procs.size(), kMaxProcesses));
  if (!first && dt > 0 && reaped_delta > 0) {
    static const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
    ThreadActivity a;
    a.pid = t.pid;
    a.comm = "(ended children)";
    a.state = 'Z';
    a.cpu = static_cast<double>(reaped_delta) / ticks_per_s / dt;
    // A reaped child's wait for a CPU went with it (its schedstat is gone): on a loaded machine
    // it ran only the share the load left it, so what it wanted is its CPU over that share.
    a.demand = a.cpu / cpu_share_under_load();
    a.run_ms = o_.busy_run_ms;  // unknown: they ran, and they are gone
    if (a.demand >= o_.busy_demand) live.busy.push_back(std::move(a));
  }
  st.threads = std::move(threads);
  st.io = std::move(io);
  st.reaped = std::move(reaped);
  st.mono = now_mono;
  std::sort(live.busy.begin(), live.busy.end(),
            [](const ThreadActivity& a, const ThreadActivity& b) { return a.demand > b.demand; });
  if (live.busy.size() > 4) live.busy.resize(4);
  live.io_bytes = io_delta;
  if (!root_alive) {
    live.activity = Activity::kGone;
  } else if (first) {
    live.activity = Activity::kUnknown;
  } else if (!live.busy.empty()) {
    live.activity = Activity::kBusy;
  } else if (live.disk_threads > 0 || io_delta >= o_.io_bytes) {
    live.activity = Activity::kDisk;
  } else if (live.state == 'T' || live.state == 't') {
    live.activity = Activity::kStopped;
  } else {
    live.activity = Activity::kBlocked;
  }
  if (live.activity == Activity::kBusy || live.activity == Activity::kDisk) {
    live.last_active_mono = now_mono;
    live.blocked_since_mono = 0;
  } else if ((live.activity == Activity::kBlocked || live.activity == Activity::kStopped) &&
             live.blocked_since_mono == 0) {
    live.blocked_since_mono = now_mono - dt;
  }
  st.live = std::move(live);
}

}  // namespace hanglab

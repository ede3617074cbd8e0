#include "util.hpp"

#include "signal_name.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <csignal>
#include <spawn.h>
#include <sys/prctl.h>
#include <unistd.h>  // environ
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

namespace hanglab {

double unix_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

double mono_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

std::string utc_stamp(double unix_t) {
  time_t s = static_cast<time_t>(unix_t);
  tm tmv{};
  gmtime_r(&s, &tmv);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tmv);
  return buf;
}

std::string iso_time(double unix_t) {
  time_t s = static_cast<time_t>(unix_t);
  long us = static_cast<long>((unix_t - static_cast<double>(s)) * 1e6);
  if (us < 0) us = 0;
  if (us > 999999) us = 999999;
  tm tmv{};
  gmtime_r(&s, &tmv);
  char buf[40];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tmv);
  return fmt::format("{}.{:06d}Z", buf, us);
}

std::string utf8_prefix(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  // Back up over continuation bytes (10xxxxxx) to the start of the cut character.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string rank_ranges(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    if (j - i >= 2) {
      out += fmt::format("{}-{}", ranks[i], ranks[j]);
    } else {
      for (size_t k = i; k <= j; ++k) out += (k > i ? "," : "") + std::to_string(ranks[k]);
    }
    i = j + 1;
  }
  return out;
}

void throw_system_error(const std::string& call, const std::string& context) {
  int e = errno;
  throw std::runtime_error(fmt::format("{}: {} failed: {} (errno {})", context, call, std::strerror(e), e));
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw_system_error("open", p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& p, const std::string& data) {
  auto tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_system_error("open", tmp.string());
    out << data;
    if (!out) throw_system_error("write", tmp.string());
  }
  std::filesystem::rename(tmp, p);
}

JsonlWriter::JsonlWriter(const std::filesystem::path& p) {
  fd_ = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_system_error("open", p.string());
}

JsonlWriter::~JsonlWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlWriter::write(const nlohmann::json& obj) {
  if (fd_ < 0) return;
  std::string line = obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_system_error("write", "harness.jsonl");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void child_after_fork(pid_t parent) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) _exit(127);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGHUP, SIGQUIT}) ::signal(s, SIG_DFL);
}

ToolResult run_tool(const std::vector<std::string>& argv) {
  ToolResult r;
  if (argv.empty()) return r;
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw_system_error("pipe2", "running " + argv[0]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = ::posix_spawnp(&pid, argv[0].c_str(), &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (err != 0) {
    ::close(pipefd[0]);
    r.output = argv[0] + ": " + std::strerror(err);
    return r;
  }
  char buf[4096];
  for (ssize_t n; (n = ::read(pipefd[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (r.output.size() < (1 << 20)) r.output.append(buf, static_cast<size_t>(n));
  }
  ::close(pipefd[0]);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0) {
    if (errno != EINTR) {
      r.status = 127;  // reaped by someone else: the output is all we know
      return r;
    }
  }
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  while (!r.output.empty() && (r.output.back() == '\n' || r.output.back() == ' ')) r.output.pop_back();
  return r;
}

std::string run_tool_checked(const std::vector<std::string>& argv) {
  ToolResult r = run_tool(argv);
  if (!r.ok()) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    throw std::runtime_error(fmt::format("`{}` failed (status {}): {}", cmd, r.status, r.output));
  }
  return r.output;
}

std::string signal_name(int sig) {
  const char* abbrev = sig > 0 ? ::sigabbrev_np(sig) : nullptr;
  return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace hanglab

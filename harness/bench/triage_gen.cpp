#include "bench/triage_gen.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "triage/triage.hpp"
#include "triage/logs/reader.hpp"
#include "triage/reason/log.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;

namespace {

constexpr long long kT0 = 1795939200;  // 2026-11-29T00:00:00Z

// "2026-11-29T08:00:01.234567Z", fast: the date part is fixed.
int iso(char* out, double t) {
  const long long sod = static_cast<long long>(t) - kT0;
  const int us = static_cast<int>((t - static_cast<double>(static_cast<long long>(t))) * 1e6);
  return std::sprintf(out, "2026-11-29T%02lld:%02lld:%02lld.%06dZ", sod / 3600, (sod / 60) % 60, sod % 60, us);
}

// Appends rank r's lines to `out`: a start line, its step lines, its watchdog lines.
void rank_lines(const SyntheticJob& j, int r, bool prefix_rank, std::string& out) {
  char line[512];
  auto put = [&](int n) { out.append(line, static_cast<size_t>(n)); };
  double t = static_cast<double>(kT0) + 8 * 3600 + 0.001 * (r % 1000);
  int n = iso(line, t);
  n += std::sprintf(line + n, " [rank%d]:world_size=%d backend=nccl\n", r, j.ranks);
  put(n);
  for (int s = 1; s <= j.steps; ++s) {
    t += 1.05;
    n = iso(line, t);
    n += prefix_rank ? std::sprintf(line + n, " [rank %d] step %d/%d loss %.4f dur_ms %d\n", r, s, j.steps + 100,
                                    2.0 - s * 1e-4, 1050 + (s * 7 + r) % 40)
                     : std::sprintf(line + n, " step %d/%d loss %.4f dur_ms %d\n", s, j.steps + 100, 2.0 - s * 1e-4,
                                    1050 + (s * 7 + r) % 40);
    put(n);
  }
  if (r == j.absent) return;
  t += 600.02;
  n = iso(line, t);
  n += std::sprintf(line + n,
                    " [rank%d]:[E1129 08:45:12.123456789 ProcessGroupNCCL.cpp:616] [PG ID 0 PG GUID 0(default_pg) "
                    "Rank %d] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=%d, OpType=ALLREDUCE, "
                    "NumelIn=25557032, NumelOut=25557032, Timeout(ms)=600000) ran for 600023 milliseconds before "
                    "timing out.\n",
                    r, r, 2 * j.steps + 1);
  put(n);
  n = iso(line, t + 0.0003);
  n += std::sprintf(line + n,
                    " [rank%d]:[E1129 08:45:12.123756789 ProcessGroupNCCL.cpp:1664] [PG ID 0 PG GUID 0(default_pg) "
                    "Rank %d]  failure detected by watchdog at work sequence id: %d PG status: last enqueued work: %d, "
                    "last completed work: %d\n",
                    r, r, 2 * j.steps + 1, 2 * j.steps + 2, 2 * j.steps);
  put(n);
  n = iso(line, t + 0.0005);
  n += std::sprintf(line + n,
                    " [rank%d]:[E1129 08:45:12.123956789 ProcessGroupNCCL.cpp:630] [Rank %d] Some NCCL operations have "
                    "failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations "
                    "might run on corrupted/incomplete data.\n",
                    r, r);
  put(n);
}

}  // namespace

uint64_t synthetic_incident_lines(const SyntheticJob& j) {
  return static_cast<uint64_t>(j.ranks) * static_cast<uint64_t>(j.steps + 4) - 3;
}

uint64_t write_synthetic_incident(const SyntheticJob& j, const fs::path& dir, bool combined) {
  fs::create_directories(dir);
  uint64_t bytes = 0;
  std::string buf;
  buf.reserve(static_cast<size_t>(j.steps) * 80 + 1024);
  if (combined) {
    // One file, ranks interleaved step by step as a launcher's console would show them:
    // written rank-block by rank-block here for speed, which the parser cannot tell apart.
    FILE* f = std::fopen((dir / "job.log").c_str(), "w");
    if (!f) return 0;
    for (int r = 0; r < j.ranks; ++r) {
      buf.clear();
      rank_lines(j, r, true, buf);
      bytes += std::fwrite(buf.data(), 1, buf.size(), f);
    }
    std::fclose(f);
  } else {
    for (int r = 0; r < j.ranks; ++r) {
      buf.clear();
      rank_lines(j, r, false, buf);
      FILE* f = std::fopen((dir / ("train-worker-" + std::to_string(r) + ".log")).c_str(), "w");
      if (!f) return 0;
      bytes += std::fwrite(buf.data(), 1, buf.size(), f);
      std::fclose(f);
    }
  }
  return bytes;
}

namespace {

TriageMeasure measure_exec(const fs::path& dir, const SyntheticJob& j, const fs::path& exe) {
  TriageMeasure res;
  const fs::path out = dir.string() + ".triage.json";
  std::fflush(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    res.answer = "error: fork failed";
    return res;
  }
  if (pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = ::open("/dev/null", O_WRONLY);
    if (fd < 0 || null < 0) ::_exit(127);
    ::dup2(fd, 1);
    ::dup2(null, 2);
    const std::string d = dir.string();
    ::execl(exe.c_str(), exe.c_str(), "triage", d.c_str(), "--format", "json", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  struct rusage ru {};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.maxrss_kb = ru.ru_maxrss;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    res.answer = WIFSIGNALED(status) ? "error: hanglab triage killed by signal " + std::to_string(WTERMSIG(status))
                                     : "error: hanglab triage exited " + std::to_string(WEXITSTATUS(status));
    return res;
  }
  try {
    const auto r = nlohmann::json::parse(read_file(out));
    const auto missing = r.value("missing_ranks", std::vector<int>{});
    const int world = r.value("world_size", 0);
    res.ok = missing == std::vector<int>{j.absent} && world == j.ranks;
    res.answer = r.value("category", "?") + "/" + r.value("cause", "?") + " missing " +
                 (missing.empty() ? std::string("none") : std::to_string(missing.front())) + " of " +
                 std::to_string(world);
  } catch (const std::exception& e) {
    res.answer = std::string("error: ") + e.what();
  }
  std::error_code ec;
  fs::remove(out, ec);
  return res;
}

}  // namespace

TriageMeasure measure_log_triage(const fs::path& dir, const SyntheticJob& j, unsigned threads, const fs::path& exe) {
  if (!exe.empty()) return measure_exec(dir, j, exe);
  TriageMeasure res;
  int fds[2];
  if (::pipe(fds) != 0) {
    res.answer = "error: pipe failed";
    return res;
  }
  std::fflush(nullptr);  // the child must not flush the parent's buffered output again
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    res.answer = "error: fork failed";
    return res;
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string msg;
    try {
      const auto inputs = list_log_inputs({dir}, false);
      const auto corpus = load_log_corpus(inputs, threads);
      const auto r = analyze_log_corpus(corpus, {});
      const bool ok = r.missing_ranks == std::vector<int>{j.absent} && r.world_size == j.ranks;
      msg = std::string(ok ? "1 " : "0 ") + r.category + "/" + r.cause + " missing " +
            (r.missing_ranks.empty() ? std::string("none") : std::to_string(r.missing_ranks.front())) + " of " +
            std::to_string(r.world_size);
    } catch (const std::exception& e) {
      msg = std::string("0 error: ") + e.what();
    }
    (void)!::write(fds[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string msg;
  char b[512];
  for (ssize_t n; (n = ::read(fds[0], b, sizeof b)) > 0;) msg.append(b, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  struct rusage ru {};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.maxrss_kb = ru.ru_maxrss;
  res.ok = !msg.empty() && msg[0] == '1';
  res.answer = msg.size() > 2 ? msg.substr(2) : (msg.empty() ? "error: the triage child died (signal or OOM)" : msg);
  return res;
}

}  // namespace hanglab

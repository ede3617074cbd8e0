// triage_bench: how long plain-log triage takes, and how much memory, on the logs of a
// large job. It writes a synthetic incident -- N ranks, S step lines per rank in the
// kubectl/torch_ddp format, then a PyTorch 2.4 watchdog timeout (with its "failure detected"
// and "Some NCCL operations have failed" lines) on every rank but one --
// either as one file per rank or as one combined file, then triages it in a child
// process and reports the child's wall time and peak RSS (getrusage ru_maxrss via wait4),
// the bytes read, and whether the answer is right (the silent rank missing by absence).
// Not a test: timing on a shared 2-core machine is data, not a verdict.
//
// usage: triage_bench [--ranks 1024,16384] [--steps 2000] [--layout per-rank|combined|both]
//                     [--dir DIR] [--threads N] [--keep]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "triage.hpp"
#include "triage_logs.hpp"

namespace fs = std::filesystem;

namespace {

constexpr long long kT0 = 1795939200;  // 2026-11-29T00:00:00Z

// "2026-11-29T08:00:01.234567Z", fast: the date part is fixed.
int iso(char* out, double t) {
  const long long sod = static_cast<long long>(t) - kT0;
  const int us = static_cast<int>((t - static_cast<double>(static_cast<long long>(t))) * 1e6);
  return std::sprintf(out, "2026-11-29T%02lld:%02lld:%02lld.%06dZ", sod / 3600, (sod / 60) % 60, sod % 60, us);
}

struct Job {
  int ranks = 0;
  int steps = 0;
  int absent = 0;  // the rank that never reports the timeout
};

// Appends rank r's lines to `out`: a start line, its step lines, its watchdog line.
void rank_lines(const Job& j, int r, bool prefix_rank, std::string& out) {
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

uint64_t generate(const Job& j, const fs::path& dir, bool combined) {
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

struct Result {
  double wall_s = 0;
  long maxrss_kb = 0;
  bool ok = false;
  std::string answer;
};

// Triage in a child so its peak RSS is its own, not the generator's.
Result measure(const fs::path& dir, const Job& j, unsigned threads) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string msg;
    try {
      const auto inputs = hanglab::list_log_inputs({dir}, false);
      const auto corpus = hanglab::load_log_corpus(inputs, threads);
      const auto r = hanglab::analyze_log_corpus(corpus, {});
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
  ::wait4(pid, &status, 0, &ru);
  Result res;
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.maxrss_kb = ru.ru_maxrss;
  res.ok = !msg.empty() && msg[0] == '1';
  res.answer = msg.size() > 2 ? msg.substr(2) : msg;
  return res;
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(std::atoi(p));
    const char* c = std::strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> worlds = {1024, 16384};
  int steps = 2000;
  std::string layout = "both";
  fs::path base = fs::temp_directory_path() / "hanglab_triage_bench";
  unsigned threads = 0;
  bool keep = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "triage_bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--ranks") {
      worlds = parse_list(next());
    } else if (a == "--steps") {
      steps = std::atoi(next());
    } else if (a == "--layout") {
      layout = next();
    } else if (a == "--dir") {
      base = next();
    } else if (a == "--threads") {
      threads = static_cast<unsigned>(std::atoi(next()));
    } else if (a == "--keep") {
      keep = true;
    } else {
      std::fprintf(stderr,
                   "usage: triage_bench [--ranks 1024,16384] [--steps 2000] [--layout per-rank|combined|both] "
                   "[--dir DIR] [--threads N] [--keep]\n");
      return 2;
    }
  }
  std::printf("%-8s %-9s %7s %12s %10s %9s %9s %11s  %s\n", "ranks", "layout", "steps", "bytes", "lines", "gen s",
              "triage s", "peak RSS MB", "answer");
  int rc = 0;
  for (int w : worlds) {
    for (const char* lay : {"per-rank", "combined"}) {
      if (layout != "both" && layout != lay) continue;
      const Job j{w, steps, w / 2 + 1};
      const fs::path dir = base / (std::to_string(w) + "-" + lay);
      fs::remove_all(dir);
      const auto g0 = std::chrono::steady_clock::now();
      const uint64_t bytes = generate(j, dir, std::string(lay) == "combined");
      const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
      const uint64_t lines = static_cast<uint64_t>(w) * static_cast<uint64_t>(steps + 4) - 3;
      const Result r = measure(dir, j, threads);
      std::printf("%-8d %-9s %7d %12llu %10llu %9.1f %9.2f %11.1f  %s%s\n", w, lay, steps,
                  static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(lines), gen_s, r.wall_s,
                  r.maxrss_kb / 1024.0, r.ok ? "" : "WRONG: ", r.answer.c_str());
      std::fflush(stdout);
      if (!r.ok) rc = 1;
      if (!keep) fs::remove_all(dir);
    }
  }
  return rc;
}

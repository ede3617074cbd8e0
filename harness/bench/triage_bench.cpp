// triage_bench: how long plain-log triage takes, and how much memory, on the logs of a
// large job. It writes a synthetic incident (bench/triage_gen.hpp: N ranks, S step lines
// per rank, a watchdog timeout on every rank but one), either as one file per rank or as
// one combined file, then triages it in a child process and reports the child's wall time
// and peak RSS (getrusage ru_maxrss via wait4), the bytes read, and whether the answer is
// right (the silent rank missing by absence). `hanglab bench` measures the same incidents
// through the `hanglab triage` command; this tool varies layout, steps and threads.
// Not a test: timing on a shared 2-core machine is data, not a verdict.
//
// usage: triage_bench [--ranks 1024,16384] [--steps 2000] [--layout per-rank|combined|both]
//                     [--dir DIR] [--threads N] [--keep]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/triage_gen.hpp"

namespace fs = std::filesystem;
using hanglab::SyntheticJob;

namespace {

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
      const SyntheticJob j{w, steps, w / 2 + 1};
      const fs::path dir = base / (std::to_string(w) + "-" + lay);
      fs::remove_all(dir);
      const auto g0 = std::chrono::steady_clock::now();
      const uint64_t bytes = hanglab::write_synthetic_incident(j, dir, std::string(lay) == "combined");
      const double gen_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - g0).count();
      const uint64_t lines = hanglab::synthetic_incident_lines(j);
      const hanglab::TriageMeasure r = hanglab::measure_log_triage(dir, j, threads);
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

// fr_bench: the Flight Recorder section of `hanglab bench` alone ("Flight Recorder: hanglab vs
// torchfrtrace", bench/fr_bench.hpp): real Gloo dumps scaled to N ranks, read by `hanglab
// triage` and by torchfrtrace; prints the table and writes the section's JSON with --json.
// Not a test: timing on a shared machine is data. Exit 0 written, 1 hanglab's verdict wrong or a
// dump set not generated, 2 bad options.
//
// usage: fr_bench [--ranks 8,1024] [--cases stuck,mismatched,killed,healthy] [--repeat 3]
//                 [--hanglab PATH] [--json FILE] [--work DIR]
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <sstream>

#include <CLI/CLI.hpp>

#include "bench/fr_bench.hpp"
#include "util.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  hanglab::FrBenchOptions o;
  std::string json_out, work, hanglab_exe;
  CLI::App app{"hanglab triage vs torchfrtrace on real Flight Recorder dumps scaled to N ranks"};
  app.add_option("--ranks", o.ranks, "rank counts")->delimiter(',')->check(CLI::Range(2, 1 << 20))->capture_default_str();
  app.add_option("--cases", o.cases, "cases of harness/testdata/fr")->delimiter(',')->capture_default_str();
  app.add_option("--repeat", o.repeat, "runs per tool and dump set (the median is kept)")
      ->check(CLI::Range(1, 50))
      ->capture_default_str();
  app.add_option("--hanglab", hanglab_exe, "the hanglab binary (default: ../hanglab beside fr_bench)");
  app.add_option("--json", json_out, "write the section's JSON here");
  app.add_option("--work", work, "keep the scaled dump sets here (default: a temporary directory, removed)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  o.hanglab_exe = hanglab_exe.empty() ? fs::read_symlink("/proc/self/exe").parent_path().parent_path() / "hanglab"
                                      : fs::path(hanglab_exe);
  if (::access(o.hanglab_exe.c_str(), X_OK) != 0) {
    std::cerr << "fr_bench: " << o.hanglab_exe.string() << ": not an executable (build hanglab, or --hanglab PATH)\n";
    return 2;
  }
  o.work = work;
  o.note = [](const std::string& s) { std::cerr << "fr_bench: " << s << std::endl; };
  std::vector<std::string> errors;
  const nlohmann::json j = hanglab::run_fr_bench(o, errors);
  for (const auto& p : hanglab::check_fr_bench_json(j)) errors.push_back(p);
  std::cout << hanglab::render_fr_bench_text(j);
  if (!json_out.empty()) hanglab::write_file(json_out, j.dump(2) + "\n");
  for (const auto& e : errors) std::cout << "  problem: " << e << "\n";
  return errors.empty() ? 0 : 1;
}

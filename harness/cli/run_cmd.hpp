// `hanglab run`: scenarios (files or directories), each possibly repeated, one at a time
// or several at once (-j N), then the verdict lines in scenario order, the summary table,
// the pass rates of repeated scenarios, the combined JUnit file and the matrix page.
#pragma once

#include <csignal>
#include <string>
#include <vector>

namespace hanglab {

struct RunCommand {
  std::vector<std::string> paths;
  std::string results = "results";
  std::string junit;
  bool json_out = false;
  bool no_stacks = false;
  int jobs = 0;        // 0 = the number of online CPUs
  int repeat = 1;      // runs per scenario
  int interrupt_fd = -1;
  volatile sig_atomic_t* interrupted = nullptr;
};

// Returns the process exit code (design: 0 all expectations met or observed, 1 a failed
// expectation, 2 usage error, 3 unknown, 4 all skipped, 130 interrupted).
int run_command(const RunCommand& cmd);

}  // namespace hanglab

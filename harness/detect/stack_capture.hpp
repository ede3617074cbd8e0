// The stack capture of a declared hang: every live rank's stack, read by py-spy (Python
// ranks) or gdb (native ones), all ranks in parallel, into ranks/<r>/stack.txt with a header
// giving the process state and kernel wait channel before the tool stopped it. Bounded by
// timeout_s as a whole; a tool still running then is killed. Runs before any teardown signal,
// so what it records is where the ranks stood, not where a teardown left them.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab {

struct StackCaptureTarget {
  int rank = 0;
  pid_t pid = 0;
};

struct StackCaptureOptions {
  std::filesystem::path run_dir;
  double timeout_s = 20;
  std::function<void(pid_t, const std::string&)> on_spawn;  // record a tool's process (state file)
  std::function<void(const nlohmann::json&)> log;           // harness.jsonl events
  std::function<void(double)> pump;                         // keep reading the ranks' pipes meanwhile
};

void capture_stacks(const std::vector<StackCaptureTarget>& targets, const StackCaptureOptions& o);

}  // namespace hanglab

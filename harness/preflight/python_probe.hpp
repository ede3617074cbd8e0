// The checks that need the job's Python (--python): the versions the ranks will load (torch and the
// NCCL wheel torch ships with, read from the installed distributions' metadata without importing
// torch, so it takes a fraction of a second) and, with --smoke, a collective with the job's backend
// through torch.distributed: init through a TCP store on node 0, an all_reduce of one element and
// of 1 MiB, a barrier, all under a short timeout. Each runs as a child process started at once and
// collected later with a deadline, so they overlap the other checks; a child that overruns is
// killed and named.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab::preflight {

class ChildRun {
 public:
  ChildRun() = default;
  ~ChildRun();
  ChildRun(const ChildRun&) = delete;
  ChildRun& operator=(const ChildRun&) = delete;
  // Starts argv (argv[0] searched in PATH); false with `error` set when it cannot be started.
  bool start(const std::vector<std::string>& argv, std::string& error);
  // Waits until it exits or deadline_mono; kills it at the deadline. Returns its stdout; status is
  // its exit status, -1 when killed at the deadline, 127 when it could not run.
  std::string finish(double deadline_mono, int& status, std::string* err_text = nullptr);
  bool started() const { return pid_ > 0; }

 private:
  pid_t pid_ = 0;
  int out_ = -1, err_ = -1;
  std::string out_buf_, err_buf_;
};

// The versions probe's argv for `python`.
std::vector<std::string> versions_argv(const std::string& python);
// Parses its output: {"python", "torch", "nccl"}; on failure {"unavailable": "PYTHON: why"} (versions
// unknown: versions.agree warns for that node and leaves it out of the comparison).
nlohmann::json parse_versions(const std::string& out, int status, const std::string& python, const std::string& err);

// The smoke collective's argv: backend gloo|nccl, store at addr:port, this node's rank of world.
std::vector<std::string> smoke_argv(const std::string& python, const std::string& backend, const std::string& addr,
                                    int port, int rank, int world, double timeout_s);

}  // namespace hanglab::preflight

// The results of `hanglab preflight`: one CheckResult per (check, node), the report that
// collects them for the whole job, its three renderings (text for people, JSON with one object
// per check, JUnit XML for CI) and the exit code (0 every check passed, 1 a check failed, 4 a
// check could not be made here because it needs what this node lacks: a GPU, root).
//
// Status semantics: pass and warn are measured verdicts; fail names the node and the measured
// value against its rule; skip means "this check applies to the job but could not be made here"
// (`needs` says why). A check that does not apply to the job at all (no --ckpt-dir, one node and
// the pairwise checks) is not a result: it is listed in `not_run` with the reason.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab::preflight {

enum class Status { kPass, kWarn, kFail, kSkip };

const char* status_name(Status s);  // "pass" | "warn" | "fail" | "skip"
// Parses status_name's words; throws std::invalid_argument on anything else.
Status status_from_name(const std::string& s);

struct CheckResult {
  std::string name;      // family.check, e.g. "shm.capacity", "net.reach"
  int node = 0;          // the node rank the verdict is about (for pairwise checks: the node blamed)
  std::string host;      // that node's host name, when known
  Status status = Status::kPass;
  std::string measured;  // the value found, with its unit
  std::string rule;      // what it was held against
  std::string detail;    // why, in a sentence: what was seen and what it means for the job
  std::string needs;     // skip only: what the check needs that is missing ("a GPU", "root")
  double at_s = 0;       // seconds from this node's start when the verdict was reached
};

nlohmann::json to_json(const CheckResult& r);
CheckResult check_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception on a bad shape

struct NotRun {
  std::string name;
  std::string reason;
};

struct Report {
  // What the job looks like, as node 0 (or the reporting node) understood it.
  int nodes = 1;
  int reporting_node = 0;  // the node that wrote this report (0: the whole job)
  bool whole_job = true;   // false: one node's own results (node k's --out with {node}, or node 0 not reached)
  bool delivered = true;   // whole_job false: these results reached node 0 and are in its report too
  int job_exit_code = -1;  // whole_job false: the job's exit code node 0 sent back (-1: none came)
  std::string master;      // MASTER_ADDR:MASTER_PORT
  int world_size = 1;
  int ranks_per_node = 1;
  std::string backend;
  std::string ifname;      // the interface the job's backend will use ("" = its default)
  std::string launcher;    // where node rank and node count came from (torchrun, slurm, mpirun, env, standalone)
  double deadline_s = 0;
  double elapsed_s = 0;
  std::vector<CheckResult> checks;
  std::vector<NotRun> not_run;

  int failed() const;
  int warned() const;
  int skipped() const;
  int exit_code() const;  // 1 any fail; else 4 any skip; else 0
};

nlohmann::json to_json(const Report& r);
Report report_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception on a bad shape
std::string render_text(const Report& r);
std::string render_junit(const Report& r);

// A byte count for people: "64.0 MiB", "512 B".
std::string human_bytes(double bytes);

}  // namespace hanglab::preflight

// The plain-log line parser's parts, shared between its files (internal to logs/*.cpp):
//   clock.cpp          the clocks of a line (ISO 8601, syslog, glog, epoch, dmesg)
//   writers.cpp        the writers' prefixes peeled off a line (launchers, collectors, levels), rank from a path
//   fields.cpp         fields inside a message (ranks, signals, PG tags, steps, world size, errors)
//   classify_text.cpp  what a message means (its LogKind and fields): the specific checks, in order
//   classify_host.cpp  ... its last family: the host's messages (kernel, container runtime, data loading, CUDA)
//   peer_connect.cpp   a failed connect to a peer's loopback address (wrong interface)
//   hydra.cpp          MPICH Hydra's / Intel MPI's launcher lines: their shape, Intel's proxy launch failure
//   parse.cpp          parse_log_line(), the driver; log_kind_name()
#pragma once

#include <string_view>
#include <vector>

#include "triage/logs/parse.hpp"
#include "triage/logs/scan.hpp"

namespace hanglab::logparse {

// clock.cpp
// syslog "Nov 29 08:26:59" / dmesg -T "Sat Nov 29 08:26:59 2026" (with_weekday).
size_t parse_month_day_time(sv s, size_t p, int year, bool with_weekday, double* t, double* res, bool* no_year);
// A 10-digit Unix epoch ("1764404819.123456") followed by a space or ']'.
size_t parse_epoch(sv s, size_t p, double* t, double* res);
// The glog header after a severity letter: "[IWEF]MMDD HH:MM:SS.frac tid file:line] ".
// Also the time-less PyTorch form "[E ProcessGroupNCCL.cpp:563] ". `bracket`: the
// header is inside "[...]". Returns the position after "] ", or npos.
size_t parse_glog_header(sv s, size_t p, bool bracket, int year, LogLine& o);

// writers.cpp
// One prefix at s[p]; returns the position after it or npos.
size_t peel_prefix(sv s, size_t p, const LogLineContext& ctx, LogLine& o, bool first);
sv strip_level(sv m);

// fields.cpp
// "Saving latest checkpoint ...", "Saving best model checkpoint to ...": the verb, then the
// word "checkpoint" within a few words after it (not "saving" and "checkpoint" anywhere apart).
bool saving_checkpoint(sv m);
// "[1, 2, 3]" after `key`.
void read_rank_list(sv s, size_t from, std::vector<int>& out);
int signal_from_name(sv s);
// "torch.cuda.OutOfMemoryError: ..." -> the class token, when the message starts
// with a dotted identifier ending in Error/Exception/Interrupt followed by ':' or end.
sv exception_class(sv m);
bool comm_text(sv m);
void parse_workncll_fields(sv m, LogLine& o);
// The element count of a fingerprint's "TensorShape=[20, 10]" (200); -1 when absent, nested or cut.
long long shape_numel(sv m);
void parse_work_status(sv m, LogLine& o);
// "[PG ID 0 PG GUID 0(default_pg) Rank 2]", "[PG 1 Rank 0]", "[PG 0 (default_pg) Rank 3]"
void parse_pg_tag(sv m, LogLine& o);
// A step line: the message starts with "step N", "Step: N", "step=N", "iteration N/M",
// "global_step=N". Fast path: the first word decides.
bool parse_step(sv m, LogLine& o);
// A data-preparation library's own progress line (kDataPrep): the work a process does on its data
// before training, e.g. faiss's k-means. Read before parse_step: faiss's "Iteration N (...)" is no step.
bool parse_data_prep(sv m, LogLine& o);
// A framework's per-step report whose label says the step is an evaluation's (kEvalBegin: an
// evaluation under way), e.g. RETURNN's "ep 1 dev eval, step 97, ...". Read before parse_step.
bool parse_eval_progress(sv m, LogLine& o);
// mmengine's per-iteration header (LogProcessor.get_log_after_iter/_epoch): "Epoch(train) [e][i/N]" and
// "Iter(train) [i/N]" are training, "Epoch(val)", "Epoch(test)", "Iter(val)", "Iter(test)" an evaluation.
bool parse_mmengine(sv m, LogLine& o);
void set_world(sv m, LogLine& o);
// hanglab workloads: "ERROR (comm) in backward at step 6: <what> (in allreduce seq 12, numel 4225)"
bool parse_harness_error(sv m, LogLine& o);
// The older hanglab fixture format: "error in allreduce (step 3, seq 6): <what>" and
// "unhandled exception in forward (step 4): <what>".
bool parse_legacy_error(sv m, LogLine& o);

// classify_text.cpp
// True when the hand-written checks read the line: a kind, or a line known to mean nothing (a
// hanglab hook's line, Slurm's daemons talking among themselves): the catalogue is not asked then.
bool classify_text(sv m, LogLine& o);
// The error a C library's or CUDA runtime's text names (strerror, cudaGetErrorString), kNone when none.
LogKind system_error_kind(sv m);
// A CUDA runtime's out-of-memory error text (cudaErrorMemoryAllocation's wording).
bool cuda_runtime_oom(sv m);
// The process's own host-memory allocation failed (classify_host.cpp): kHostOom.
bool host_alloc_failed(sv m);
// ENOSPC ("No space left on device") writing a shared-memory object: a full /dev/shm (classify_host.cpp).
bool shm_enospc(sv m);

// agent_layout.cpp
// torchrun's elastic agent's rendezvous result ("  group_rank=1", "  local_ranks=[0, 1]", "  global_ranks=[8, 9]",
// "  global_world_sizes=[16, 16]") and its launch banner ("  min_nodes                : 2"): kAgentLayout.
bool agent_layout_lines(sv m, LogLine& o);

// classify_cli.cpp
// Python argparse's usage error ("train.py: error: unrecognized arguments: --local-rank=2", ArgumentParser.error):
// kUsageError, exit status 2; o.word "launcher_argument" where the rejected argument is the one torch's launcher
// adds to every worker.
bool argparse_usage_error(sv m, LogLine& o);
// A name resolver's failure text (getaddrinfo's gai_strerror in glibc, musl and the BSDs; busybox nslookup's).
bool resolver_failure(sv m);

// classify_host.cpp
// classify_text's family for the host: the kernel and container runtime, data loading, crashes,
// storage, CUDA. True when it read the line.
bool host_lines(sv m, LogLine& o);
// A data-loader worker process killed by a signal, as the frameworks' parents report it: torch's
// "DataLoader worker (pid N) is killed by signal: <strsignal>" (torch/csrc/DataLoader.cpp) and
// "DataLoader worker (pid(s) N) exited unexpectedly", Paddle's "DataLoader process (pid N) exited is
// killed by signal: <strsignal>." (paddle/fluid/imperative/data_loader.cc, _throw_error_if_process_failed,
// wrapped as "SystemError: (Fatal) ..."). Sets kDataLoaderKilled, the signal and the worker's pid.
bool dataloader_killed(sv m, LogLine& o);

// hydra.cpp
// The message of a Hydra line "[mpiexec@HOST] FUNC (FILE:LINE): <message>" / "[proxy:P:I@HOST] ...", after the
// tag and the function's location; empty when the line is not of that shape. `launcher`: written by mpiexec.
sv hydra_message(sv m, bool* launcher = nullptr);
// Intel MPI's "unable to run [bstrap_]proxy on HOST (pid N, exit code C)" on mpiexec's line: a launch failure
// at init (no source is public; see hydra.cpp).
bool hydra_proxy_not_run(sv m, LogLine& o);

// peer_connect.cpp
// A failed connect to a peer's advertised address (a Gloo pair, NCCL's bootstrap or socket
// transport) that names a loopback or link-local address: the peer advertised an address only its own
// host (or link) reaches (wrong socket interface, or a host name resolving to 127.0.1.1). Sets kWrongIfname.
bool loopback_peer_connect(sv m, LogLine& o);

}  // namespace hanglab::logparse

// The JAX/XLA distributed runtime's own verdicts, read from the message catalogue's TSL / XLA emitters
// (logs/catalogue: tsl-6a79f3a, tsl-2e2b2c7, xla-zkx-7068370): the TSL coordination service that
// jax.distributed.initialize starts (task registration, heartbeats, barriers) and XLA's in-process
// rendezvous of a process's device threads. What the catalogue's meaning says of a format is applied here
// with the facts its holes and the lines after it carry:
//   - a task is the JAX process index: XLA's client registers process `process_id` as the task
//     "/job:jax_worker/replica:0/task:<process_id>" (xla/pjrt/distributed/client.cc,
//     DistributedRuntimeCoordinationServiceClient: coord_agent_->Initialize(env, "jax_worker", node_id, ...));
//   - a heartbeat timeout names the task that stopped heartbeating: it is missing (why is not in the text);
//   - a barrier timeout names its barrier, whose id says what it is (the client's connect barrier and the
//     service's registration and device barriers are start-up; "Shutdown::" the shutdown barrier; any other
//     a program's own), and lists the tasks that never arrived on the lines after it, as many as the
//     version prints: a list cut at the emitter's cap does not name every missing task and is not kept;
//   - the service stopping because cluster registration failed is a rendezvous that timed out in init;
//   - the rendezvous warning's name "initialize clique ..." is the creation of a clique's communicators at
//     its first use (start-up work).
// parse.cpp calls read_coordination() per line; reader.cpp folds a list's lines into its header's event
// with CoordinationList. Internal to hanglab_triage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "triage/logs/parse.hpp"
#include "triage/logs/reader.hpp"

namespace hanglab {

// The JAX process index a TSL task name "/job:jax_worker/replica:<r>/task:<n>" (coordination_service.cc
// GetTaskName) names, found anywhere in `s`; -1 when `s` holds no task name, or one of another job (a
// TensorFlow cluster's "/job:worker" or "/job:ps" counts its tasks per job, which are no global ranks).
// `whole`: `s` must be the task name and nothing else (a line of a list).
int jax_task_rank(std::string_view s, bool whole = false);

// One line read as the coordination service or the XLA rendezvous wrote it (the catalogue's entry of a
// tsl/xla emitter, or an entry of a task list the line before opened: LogLineContext::coord_list). Sets
// the event it is, word "coordination" for every line of the service's verdicts, and returns true; false
// for any other line.
bool read_coordination(std::string_view body, const LogLineContext& ctx, LogLine& o);

// The task list after a verdict's header (a barrier timeout's "Timed out task names:", the unhealthy
// tasks), one task name per line, until a line that is none. Its entries are the header event's ranks,
// kept only when the list names every task it stands for: the count the service printed (the tasks at
// the barrier and in it) says how many, else the version's cap (tsl 2e2b2c7 lists at most
// kPendingTaskLogLimit = 20 names, coordination_service.cc:65 and :458-463: 20 names may stand for more).
class CoordinationList {
 public:
  // The next line may continue the list (for LogLineContext::coord_list).
  bool active() const { return open_; }
  // Each parsed line of the file, before it becomes an event (`line_no`: its line in the file). True when
  // the line was the list's own (an entry, the barrier's count): folded into the header's event, which is
  // events[header] once note_event kept the header line (a header whose event was not kept takes nothing).
  bool line(const LogLine& l, uint32_t line_no, std::vector<LogEvent>& events);
  // At the end of the file: the list's last line was its last.
  void close(std::vector<LogEvent>& events);

 private:
  bool open_ = false;
  size_t header_ = SIZE_MAX;  // index the header's event got (events.size() when its line was read)
  uint32_t header_line_ = 0;
  int cap_ = 0;               // the names the version prints at most (0: no cap)
  int listed_ = 0;
  int joined_ = -1, world_ = -1;
  std::vector<int> ranks_;
};

}  // namespace hanglab

// The JAX/XLA distributed runtime's verdicts (see coordination.hpp). Sources cited below: google/tsl at
// 6a79f3a2 (2022-10) and 2e2b2c79 (2024-04), XLA's copy of it and of xla/service/rendezvous.cc as vendored
// in fractalyze/zkx 7068370 (catalogue emitters tsl-6a79f3a, tsl-2e2b2c7, xla-zkx-7068370), and
// openxla/xla's xla/pjrt/distributed/client.cc (library id 2247690524, 2023).
#include "triage/logs/coordination.hpp"

#include <algorithm>
#include <cstring>
#include <optional>

#include "triage/logs/catalogue.hpp"
#include "triage/logs/scan.hpp"

namespace hanglab {

namespace {

using logparse::dig;
using logparse::npos;
using logparse::read_int;
using logparse::starts;
using logparse::sv;
using logparse::trim;

constexpr sv kWord = "coordination";

// The catalogue entry of a tsl/xla emitter the line matches, with a meaning; null otherwise. Every line
// these emitters' verdicts are read from names a task or a barrier, or the service, or a rendezvous: the
// catalogue is asked only for such lines (the hot path has none of these words).
const CatalogueEntry* coordination_entry(sv m, std::optional<CatalogueHit>& hit) {
  static constexpr sv kWords[] = {"task", "Task", "Barrier", "rendezvous", "oordination", "egistration"};
  if (std::none_of(std::begin(kWords), std::end(kWords), [&](sv w) { return m.find(w) != npos; })) return nullptr;
  hit = builtin_catalogue().match(m);
  if (!hit || !hit->entry->meaning || (hit->entry->emitter != "tsl" && hit->entry->emitter != "xla")) return nullptr;
  return hit->entry;
}

bool names(const CatalogueEntry& e, const char* name) { return e.meaning->names.count(name) > 0; }

// The entry and its phase; not its role: a verdict naming other tasks is no failure of the line's writer
// (as Horovod's stall report and c10d's monitored_barrier, the reasoner reads its ranks: word "coordination").
void set_meaning(const CatalogueEntry& e, LogLine& o) {
  o.catalogue = &e;
  o.phase = e.meaning->phase;
  o.word = kWord;
}

// The barrier a timeout names, by its id (the hole before ". Timed out task names" / ". This usually
// happens"; the service prints "<id>::<counter>" in 2025's BarrierName):
//   "PjRT_Client_Connect": DistributedRuntimeCoordinationServiceClient::Connect(), every process's
//     jax.distributed.initialize, waits there after registering (xla/pjrt/distributed/client.cc);
//   "[Init]Wait_for_all_tasks_to_register": kClusterRegisterBarrierId, the service's own registration
//     barrier (xla/tsl/.../coordination_service.cc:49-50@zkx 7068370);
//   "WaitForAllTasks::<n>": the device exchange of EnumerateDevices at start-up (coordination_service.cc:
//     device_propagation_barrier_id_, StrCat("WaitForAllTasks::", service_incarnation_)@2e2b2c7);
//   "Shutdown::<n>": shutdown_barrier_id_, the shutdown barrier every task enters when it shuts down.
// Anything else is a barrier of the program's own (orbax's checkpoint barriers): no phase from the id.
sv barrier_phase(sv id) {
  if (id == "PjRT_Client_Connect" || starts(id, "[Init]Wait_for_all_tasks_to_register") ||
      starts(id, "WaitForAllTasks::"))
    return "init";
  if (starts(id, "Shutdown::")) return "shutdown";
  return {};
}

}  // namespace

int jax_task_rank(sv s, bool whole) {
  constexpr sv kJob = "/job:jax_worker/replica:";
  const size_t j = s.find(kJob);
  if (j == npos || (whole && j != 0)) return -1;
  long long replica = 0, task = 0;
  size_t p = read_int(s, j + kJob.size(), &replica);
  if (p == npos || s.compare(p, 6, "/task:") != 0) return -1;
  p = read_int(s, p + 6, &task);
  if (p == npos || (p < s.size() && dig(s[p])) || (whole && p != s.size())) return -1;
  return bounded_rank(task);
}

bool read_coordination(sv body, const LogLineContext& ctx, LogLine& o) {
  // A line of a task list: the whole line is one task name (GetTaskName(task), "\n" after each).
  if (ctx.coord_list) {
    const sv t = trim(body);
    if (starts(t, "/job:") && t.find("/task:") != npos && t.find(' ') == npos) {
      o.kind = LogKind::kDesyncMissing;
      o.word = kWord;
      o.report_entry = true;
      if (const int r = jax_task_rank(t, /*whole=*/true); r >= 0) o.ranks.push_back(r);
      return true;
    }
  }
  std::optional<CatalogueHit> hit;
  const CatalogueEntry* e = coordination_entry(body, hit);
  if (!e) return false;
  const CatalogueMeaning& m = *e->meaning;
  if (m.kind == "DesyncMissing" && names(*e, "peer_rank")) {
    // A heartbeat timeout naming its task ("Task <task> heartbeat timeout", "... heartbeat has timed out for
    // <task> ..."): the staleness check found its last heartbeat older than heartbeat_timeout_ms
    // (coordination_service.cc:394-398@6a79f3a2, :405-416@2e2b2c7): that task is missing.
    set_meaning(*e, o);
    o.kind = LogKind::kDesyncMissing;
    if (const auto task = hit->named("peer_rank")) {
      if (const int r = jax_task_rank(*task); r >= 0) o.ranks.push_back(r);
    }
    return true;
  }
  if (m.kind == "DesyncMissing") {
    // A barrier timeout (its id in the hole "op"), a shutdown barrier's failure, the unhealthy tasks' list.
    set_meaning(*e, o);
    o.kind = LogKind::kDesyncMissing;
    if (const auto id = hit->named("op")) {
      // The id is one token; a hole that ends the format (2022's "Barrier_id: {}") also holds what follows it
      // in the line (the status's payload).
      o.op = trim(*id).substr(0, trim(*id).find(' '));
      if (const sv phase = barrier_phase(o.op); !phase.empty()) o.phase = phase;
      if (o.phase == "init") {
        // The tasks that never arrived at a start-up barrier: the rendezvous timed out short of them.
        o.kind = LogKind::kRendezvousError;
        o.category = "rendezvous";
        o.cause = "rendezvous_timeout";
      }
    }
    return true;
  }
  if (m.role == "root" && m.category == "rendezvous") {
    // The service stopping because cluster registration failed: the meaning as is. (Its other failures, the
    // checks of its arguments, are read as any catalogue line is, after the tables: parse.cpp.)
    set_meaning(*e, o);
    o.role = m.role;
    if (m.kind != "Info") o.kind = log_kind_from_name(m.kind);
    o.category = m.category;
    o.cause = m.cause;
    return true;
  }
  if (names(*e, "joined") && names(*e, "world")) {
    // A barrier timeout's count (2025): "# of tasks that reached the barrier: R/N." (coordination_service.cc:
    // 697-704@zkx 7068370): the list after it names N - R tasks when it is whole.
    o.word = kWord;
    o.catalogue = e;
    if (const auto j = hit->named_int("joined")) o.joined = static_cast<int>(std::clamp<long long>(*j, -1, kMaxWorld));
    if (const auto w = hit->named_int("world")) o.world = bounded_world(*w);
    return true;
  }
  if (names(*e, "op") && m.role == "context") {
    // XLA's rendezvous stuck warning (AwaitAndLogIfStuck, zkx/service/rendezvous.cc:98-111): its name says
    // what the device threads wait for. "initialize clique for rank %d; clique=%s; run_id=%d" is
    // InitializeGpuClique's rendezvous (zkx/backends/gpu/collectives/gpu_cliques.cc:293-295): a clique's
    // NCCL communicators are created at its first use, the start-up of the collectives over those devices.
    o.catalogue = e;
    o.word = kWord;
    if (const auto name = hit->named("op"); name && starts(trim(*name), "initialize clique")) o.kind = LogKind::kInitBegin;
    return true;
  }
  if (m.role == "context" && m.kind == "Info") {
    // The lines inside a verdict (the first task at a barrier, the unhealthy list's closing sentence, the
    // registration failure's "Original error:" carrying the barrier's text read above): no event of their own.
    o.word = kWord;
    o.catalogue = e;
    return true;
  }
  return false;
}

bool CoordinationList::line(const LogLine& l, uint32_t line_no, std::vector<LogEvent>& events) {
  const bool ours = l.word == kWord;
  if (open_ && ours && l.report_entry) {
    ++listed_;
    if (l.ranks.empty()) {
      ranks_.push_back(-1);  // a task of another job: no rank, the list cannot be kept whole
    } else {
      ranks_.push_back(l.ranks.front());
    }
    return true;
  }
  if (open_ && ours && l.kind == LogKind::kNone) {
    if (l.joined >= 0 && l.world > 0) {
      joined_ = l.joined;
      world_ = l.world;
    }
    return true;  // the count, the first task at the barrier: the list goes on after them
  }
  if (open_) close(events);
  // A verdict whose tasks follow it, one per line: a barrier timeout (tsl 2e2b2c7: "... Timed out task
  // names:\n" + pending_tasks; xla: after the count and the first task) or the unhealthy tasks (StrJoin of
  // every stale task, no cap). The 2022 barrier text names no task: its list ends at once.
  if (!ours || !l.catalogue || !l.catalogue->meaning || l.catalogue->meaning->kind != "DesyncMissing" ||
      l.catalogue->meaning->names.count("peer_rank"))
    return false;
  open_ = true;
  header_ = events.size();
  header_line_ = line_no;
  const bool barrier = l.catalogue->meaning->names.count("op") > 0;
  // tsl: at most kPendingTaskLogLimit = 20 names (coordination_service.cc:65, ":458-463@2e2b2c7": "<=" then
  // break); xla's versions print kPendingStragglerLogLimit - 1 = 2 (zkx 7068370) or kPendingTaskLogLimit - 1
  // = 19 names with the count before them: only the count tells (-1).
  cap_ = !barrier ? 0 : l.catalogue->emitter == "tsl" ? 20 : -1;
  listed_ = 0;
  joined_ = world_ = -1;
  ranks_.clear();
  return false;
}

void CoordinationList::close(std::vector<LogEvent>& events) {
  if (!open_) return;
  open_ = false;
  if (header_ >= events.size() || events[header_].line != header_line_ || listed_ == 0) return;
  bool whole = std::find(ranks_.begin(), ranks_.end(), -1) == ranks_.end();
  if (world_ > 0 && joined_ >= 0)
    whole = whole && listed_ == world_ - joined_;
  else
    whole = whole && (cap_ == 0 || (cap_ > 0 && listed_ < cap_));
  if (!whole) return;  // not every missing task is named: no list is claimed
  LogEvent& h = events[header_];
  for (int r : ranks_)
    if (std::find(h.ranks.begin(), h.ranks.end(), r) == h.ranks.end()) h.ranks.push_back(r);
  if (world_ > 0) h.world = world_;
  if (joined_ >= 0) h.joined = joined_;
}

}  // namespace hanglab

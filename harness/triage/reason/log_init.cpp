// Plain-log reasoning: duplicate RANK and init / rendezvous failures (see log_analyzer.hpp).
#include "triage/reason/log_analyzer.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "triage/model/causes.hpp"
#include "util.hpp"

namespace hanglab::plainlog {

// The same rank's start-up line in two files while some rank of the world never logged:
// two processes were started with one RANK (a copy-pasted launch line or node_rank).
bool LogAnalyzer::try_duplicate() {
  // Two start-up lines of one rank: in two files, or in one file with other lines between them
  // (two processes' interleaved output; a logger with two handlers writes its copy on the next line).
  std::map<int, std::vector<const WorldHint*>> starts;
  for (const auto& h : c_.world_hints) {
    if (!valid_rank(h.rank) || h.joined >= 0) continue;  // a barrier's count is no start-up line
    auto& v = starts[h.rank];
    if (std::none_of(v.begin(), v.end(), [&](const WorldHint* x) {
          return x->file == h.file && (x->text != h.text || h.line <= x->line + 1);
        }))
      v.push_back(&h);
  }
  const WorldHint* a = nullptr;
  const WorldHint* b = nullptr;
  int dup = -1;
  for (const auto& [rank, v] : starts) {
    if (v.size() >= 2) {
      dup = rank;
      a = v[0];
      b = v[1];
      break;
    }
  }
  if (dup < 0 || !world_stated_) return false;
  // In one file, a failure between the two lines makes the second a restart's (torchrun's new
  // round after a failed one), not a second process.
  if (a->file == b->file)
    for (const Fail* f : all_fails())
      if (f->role != Role::kInfo && f->file == a->file && f->line > a->line && f->line < b->line) return false;
  std::vector<int> silent;
  for (const auto& s : rs_) {
    if (!s.seen()) silent.push_back(s.rank);
  }
  // The silent ranks never started: few among the world, or the ranks the processes' own join lines
  // leave out (never_joined: one host's combined output, where two copies of a rank took the place
  // of others: Lightning on two nodes that both took ranks 0-3).
  if (silent.empty() || (!silence_proves(silent.size()) && never_joined().empty())) return false;
  r_.category = "rendezvous";
  r_.cause = "duplicate_rank";
  r_.phase = training_started_ ? "training" : "init";
  r_.missing_ranks = silent;
  r_.confidence = "high";
  Fail f;
  f.rank = dup;
  f.has_t = false;
  f.ref = ref(b->file, b->line);
  f.what = a->file == b->file ? fmt::format("started twice: {} and {} both start as rank {}", ref(a->file, a->line),
                                           ref(b->file, b->line), dup)
                              : fmt::format("started twice: {} and {} both start as rank {}", c_.files[a->file].name,
                                            c_.files[b->file].name, dup);
  set_first(f);
  add_evidence(ref(a->file, a->line), fmt::format("rank {} starts here: {}", dup, short_text(a->text)));
  add_evidence(ref(b->file, b->line), fmt::format("and again here: {}", short_text(b->text)));
  add_evidence(fmt::format("(no log of rank {})", silent.front()),
               fmt::format("{} never logged a line in a world of {}", reason::ranks_phrase_counted(silent), world_));
  for (const Fail* e : all_fails()) {
    if (e->role == Role::kEcho || e->role == Role::kRoot) {
      add_evidence(e->ref, fmt::format("rank {}: {}", e->rank, short_text(e->what)));
      break;
    }
  }
  r_.summary = fmt::format("rendezvous (duplicate_rank): rank {} was started twice; {} never started", dup,
                           reason::ranks_phrase_counted(silent));
  return true;
}

// init_process_group's store-based barrier (torch/distributed/distributed_c10d.py _store_based_barrier,
// torch 1.x-2.0): each rank adds itself to the barrier's key and polls the count until it equals the world
// size, logging "Waiting in store based barrier to initialize process group for rank: R, key: K
// (world_size=N, worker_count=C, timeout=T)" every 10 s while the count is short, and raises "Timed out
// initializing process group in store based barrier" after T. Ranks that wait there and print nothing
// else -- no failure, no completed barrier, no step or collective after it -- are stuck in init waiting
// for ranks that never arrived: the rendezvous timed out (or will). A count above the world can never
// come down to it: the key also holds another run's arrivals (a restarted or requeued job, or two jobs,
// on one store address or init file), a stale rendezvous. Which ranks are missing only when the count,
// stated again and again, equals the waiters seen (the rest never added themselves).
bool LogAnalyzer::try_store_wait() {
  if (training_started_ || steps_seen()) return false;
  for (const Fail* f : all_fails()) {
    if (f->role == Role::kRoot || f->role == Role::kExit) return false;  // a failure's own rules decide
  }
  std::set<int> waiters;
  const WorldHint* count = nullptr;
  const WorldHint* over = nullptr;
  for (const auto& h : c_.world_hints) {
    if (h.joined < 0 || h.world < 2 || !valid_rank(h.rank)) continue;
    if (world_stated_ && h.world != world_) continue;
    waiters.insert(h.rank);
    if (h.joined > h.world) {
      if (!over || h.joined > over->joined) over = &h;
    } else if (h.joined < h.world && (!count || h.joined > count->joined)) {
      count = &h;
    }
  }
  const WorldHint* h = over ? over : count;
  if (!h) return false;
  r_.category = "rendezvous";
  r_.phase = "init";
  r_.confidence = "medium";
  add_evidence(ref(h->file, h->line), fmt::format("rank {} waits in init's store barrier, {} of {} ranks counted: {}",
                                                   h->rank, h->joined, h->world, short_text(h->text)));
  if (over) {
    r_.cause = "stale_rendezvous";
    note(fmt::format("the store counted {} arrivals for a world of {}: the count can never equal the world, so "
                     "the barrier never completes; the key holds an earlier run's arrivals too (a restarted or "
                     "requeued job reusing the store's address/port or init file, or two jobs sharing it)",
                     over->joined, over->world));
    r_.summary = fmt::format("rendezvous (stale_rendezvous): the store barrier counted {} arrivals for a world of {}",
                             over->joined, over->world);
    return true;
  }
  // A later group's barrier (key > 1: a new_group() after the default group): every rank of the world
  // passed the default group's barrier, so the ones not counted now are alive and started; they are
  // late into this group's creation, held up in init by their own work.
  const bool later_group = count->key >= 2;
  if (later_group) {
    r_.category = "straggler";
    r_.cause = "stuck_in_init";
    note(fmt::format("the barrier's key is store_based_barrier_key:{}, a process group created after the "
                     "default one: every rank passed the default group's barrier, so the {} not counted are alive "
                     "and late, not absent",
                     count->key, count->world - count->joined == 1 ? "rank" : "ranks"));
  } else {
    r_.cause = "rendezvous_timeout";
  }
  if (count->settled >= 1 && count->joined == static_cast<int>(waiters.size())) {
    for (int r = 0; r < count->world; ++r)
      if (!waiters.count(r)) r_.missing_ranks.push_back(r);
    add_evidence(fmt::format("(no wait line of rank {})", r_.missing_ranks.front()),
                 fmt::format("the count stayed at {}, the ranks seen waiting: {} never arrived", count->joined,
                             reason::ranks_phrase_counted(r_.missing_ranks)));
  } else {
    note(fmt::format("the store counted {} of {} ranks; which ranks never arrived is not in these lines",
                     count->joined, count->world));
  }
  r_.summary = fmt::format("{} ({}): {} wait{} in init's store barrier with {} of {} ranks arrived, and nothing after",
                           r_.category, r_.cause, reason::ranks_phrase_counted(std::vector<int>(waiters.begin(), waiters.end())),
                           waiters.size() == 1 ? "s" : "", count->joined, count->world);
  return true;
}

// torchelastic closes a run id's rendezvous when an agent of it shuts down (launch_agent's finally:
// rdzv_handler.shutdown(); dynamic_rendezvous.py / etcd_rendezvous.py then raise RendezvousClosedError
// to every later join). An agent whose rendezvous is closed while nothing of its own job failed and
// before any worker trained joined a run that had already ended: the store still holds an earlier
// run's state under this run id (a restarted or re-submitted job reusing it, a default run id).
bool LogAnalyzer::closed_before_join(const Fail& pick) {
  if (!pick.ev || pick.ev->word != "RendezvousClosedError" || training_started_) return false;
  for (const Fail* f : all_fails())
    if (f->role == Role::kRoot || f->role == Role::kExit) return false;
  note("the rendezvous was already closed when this agent first joined it, and nothing of this job failed "
       "before: an agent of the same run id had shut it down, a run this one cannot be part of (a reused or "
       "default run id, a restarted job finding the earlier run's store)");
  return true;
}

namespace {

// What an init failure means, by its cause (the answer's headline).
const std::map<std::string, const char*> kInitWhy = {
    {"wrong_ifname", "no usable socket interface (NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME)"},
    {"address_in_use", "the rendezvous port is already in use"},
    {"dns_failure", "a host name did not resolve"},
    {"connection_refused", "the rendezvous store refused the connection"},
    {"nccl_shm", "NCCL could not create its /dev/shm segment"},
    {"unique_id_exchange", "a rank timed out fetching the NCCL unique id from rank 0 through the store (rank 0 "
                           "never published it: it failed or was late)"},
    {"rendezvous_timeout", "ranks timed out waiting for each other in rendezvous"},
    {"stale_rendezvous", "the rendezvous store counted more ranks than the world: an earlier run's arrivals "
                         "(a restarted job reusing the store)"},
    {"store_timeout", "a client timed out connecting to the TCPStore: nothing listened at MASTER_ADDR:MASTER_PORT"},
    {"store_unreachable", "no address of the TCPStore's host could be reached (MASTER_ADDR, its resolution, or the "
                          "route to it)"},
    {"rendezvous_error", "process-group creation failed"}};

// The ranks a rendezvous verdict lists as never arrived: the JAX/TSL coordination service's start-up barrier
// names the tasks not at it (logs/coordination.cpp keeps a list only when it names every one of them).
std::vector<int> ranks_listed(const std::vector<const Fail*>& fails, int world) {
  std::vector<int> v;
  for (const Fail* f : fails)
    if (f->ev && f->ev->word == "coordination")
      for (int r : f->ev->ranks)
        if (r >= 0 && r < world && std::find(v.begin(), v.end(), r) == v.end()) v.push_back(r);
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

// c10d's store-based barrier counts each rank as it enters (_store_based_barrier: store.add(key, 1), then
// it polls the count until world_size; distributed_c10d.py, torch 1.9-2.0): a timed-out rank counts
// itself. True when the ranks whose timeout lines show this barrier's key account for every arrival:
// the other ranks never arrived.
static bool barrier_counted_all(const std::vector<const Fail*>& init_fails, const LogEvent* joined_ev, int joined,
                                int of) {
  if (!joined_ev || joined < 1) return false;
  const long long key = joined_ev->barrier_key;  // the reader's (logs/reader.cpp)
  std::set<int> counted;
  for (const Fail* f : init_fails)
    if (f->rank >= 0 && f->ev && f->ev->joined >= 0 && f->ev->world == of && f->ev->barrier_key == key)
      counted.insert(f->rank);
  return key >= 0 && static_cast<int>(counted.size()) == joined;
}

bool LogAnalyzer::try_init() {
  std::vector<const Fail*> init_fails;
  for (const Fail* f : all_fails()) {
    // host_unreachable before any step: a peer's advertised address has no route (its socket
    // interface is on another network), not a rendezvous fault.
    if (f->category == "rendezvous" || f->cause == "wrong_ifname" || f->cause == "nccl_shm" ||
        (f->cause == "host_unreachable" && !steps_seen()) ||
        (f->ev && (f->ev->kind == LogKind::kStoreTimeout || f->ev->kind == LogKind::kRendezvousError)))
      init_fails.push_back(f);
  }
  // Also host-level interface/shm lines that could not be attributed.
  const LogEvent* host_env = nullptr;
  for (const LogEvent* e : host_events_) {
    if (e->kind == LogKind::kWrongIfname || e->kind == LogKind::kShmError) {
      host_env = e;
      break;
    }
  }
  if (init_fails.empty() && !host_env) return false;
  r_.phase = "init";
  static const std::vector<std::string> kOrder = {"wrong_ifname",       "host_unreachable", "address_in_use", "dns_failure",
                                                  "connection_refused", "nccl_shm",       "unique_id_exchange",
                                                  "rendezvous_timeout", "store_timeout",  "store_unreachable",
                                                  "rendezvous_error"};
  const Fail* pick = nullptr;
  for (const auto& cause : kOrder) {
    for (const Fail* f : init_fails) {
      if (f->cause == cause) {
        pick = f;
        break;
      }
    }
    if (pick) break;
  }
  if (!pick && !init_fails.empty()) pick = init_fails.front();  // a cause the order does not list
  Fail host_fail;
  if (!pick && host_env) {
    host_fail = make_fail(*host_env, -1);
    describe(*host_env, host_fail);
    pick = &host_fail;
  }
  r_.cause = pick->cause;
  // A bus error in NCCL's threads may come at any time, not only while a communicator is set up.
  if (pick->ev && pick->ev->kind == LogKind::kCrash) r_.phase = default_phase();
  // The store torchrun's c10d rendezvous connects to is the rendezvous itself: a store timeout under
  // its RendezvousError is the rendezvous timing out. Not under RendezvousConnectionError: the
  // backend raises that when its client never reached the store (c10d_rendezvous_backend.py), which
  // is what the store's own timeout line says.
  if (r_.cause == "store_timeout") {
    for (const Fail* f : init_fails) {
      if (f->ev && f->ev->kind == LogKind::kRendezvousError && f->ev->torch_rendezvous &&
          f->ev->word != "RendezvousConnectionError")
        r_.cause = "rendezvous_timeout";
    }
  }
  if (r_.cause == "rendezvous_error" && closed_before_join(*pick)) r_.cause = "stale_rendezvous";
  r_.category = !pick->category.empty()          ? pick->category
                : pick->cause == "wrong_ifname" ? "network"
                : pick->cause == "nccl_shm"     ? "resource_limit"
                                                : "rendezvous";
  // Who never showed up: ranks of a stated world without a single line; a store's
  // "N/M clients joined" says how many.
  std::vector<int> silent;
  for (const auto& s : rs_) {
    if (!s.seen()) silent.push_back(s.rank);
  }
  int joined = -1, of = -1;
  const LogEvent* joined_ev = nullptr;
  for (const Fail* f : init_fails) {
    if (f->ev && f->ev->joined >= 0) {
      joined = f->ev->joined;
      of = f->ev->world;
      joined_ev = f->ev;
      break;
    }
  }
  std::vector<int> failed_ranks;
  for (const Fail* f : init_fails) {
    if (f->rank >= 0 && std::find(failed_ranks.begin(), failed_ranks.end(), f->rank) == failed_ranks.end())
      failed_ranks.push_back(f->rank);
  }
  std::sort(failed_ranks.begin(), failed_ranks.end());
  if (joined_ev && of > joined && joined >= 0) partial_join_ = true;
  if (joined_ev) {
    add_evidence(ref(*joined_ev), fmt::format("{} of {} ranks joined the store: {}", joined, of,
                                              short_text(joined_ev->text)));
  }
  // More arrivals than the world has ranks ("world_size=8, worker_count=16"): the barrier's key
  // also counts another incarnation's ranks, a restarted or requeued job that found the earlier
  // run's store (same MASTER_ADDR:PORT or init file), and the count can never equal the world
  // (submitit#1613, after a preemption).
  if (joined_ev && of > 0 && joined > of && r_.cause == "rendezvous_timeout") {
    r_.cause = "stale_rendezvous";
    note(fmt::format("the store counted {} arrivals for a world of {}: it holds an earlier run's arrivals too (a "
                     "restarted or requeued job reusing the store's address/port or init file, or two jobs sharing "
                     "it)",
                     joined, of));
  }
  // Silence proves a rank never joined when the silent ones are a minority, or when the others'
  // own join lines show the paste is the job's output (never_joined()).
  const bool counted_all = barrier_counted_all(init_fails, joined_ev, joined, of);
  const bool silence =
      silence_proves(silent.size()) || (!silent.empty() && never_joined() == silent) || counted_all;
  const std::vector<int> listed = ranks_listed(init_fails, world_);
  if (!listed.empty()) {
    r_.missing_ranks = listed;
    r_.confidence = "high";
    set_first(*pick);
  } else if (world_stated_ && silence && (joined < 0 || of - joined == static_cast<int>(silent.size()))) {
    r_.missing_ranks = silent;
    r_.confidence = "high";
    add_evidence(fmt::format("(no log of rank {})", silent.front()),
                 fmt::format("{} wrote no line at all in a world of {}: never started or never reached "
                             "rendezvous",
                             reason::ranks_phrase_counted(silent), world_));
    Fail f;
    f.rank = silent.front();
    f.what = "never started: no log line at all";
    f.ref = fmt::format("(no log of rank {})", silent.front());
    set_first(f);
  } else {
    if (joined >= 0 && of > joined) {
      note(fmt::format("the store counted {} of {} clients, but which rank is missing is not in these logs", joined,
                       of));
    }
    r_.confidence = pick->ev && pick->ev->kind != LogKind::kStoreTimeout ? "high" : "medium";
    set_first(*pick);
  }
  add_evidence(pick->ref, (pick->rank >= 0 ? fmt::format("rank {}: ", pick->rank) : std::string()) + pick->what);
  if (!r_.missing_ranks.empty() && pick->cause != "rendezvous_timeout" && pick->cause != "rendezvous_error") {
    // An explicit cause (interface, port) with silent ranks: both are reported.
    note(fmt::format("{} also never logged", reason::ranks_phrase_counted(r_.missing_ranks)));
  }
  std::vector<std::string> parts;
  if (!r_.missing_ranks.empty())
    parts.push_back(fmt::format("{} never {}", reason::ranks_phrase_counted(r_.missing_ranks),
                                listed.empty() ? "logged" : "arrived (the service's own list)"));
  if (!failed_ranks.empty()) parts.push_back(fmt::format("{} failed in init", reason::ranks_phrase_counted(failed_ranks)));
  if (auto w = kInitWhy.find(r_.cause); w != kInitWhy.end()) parts.push_back(w->second);
  // Any other cause (a duplicate GPU, an invalid device): what the answer means, from the one list
  // of answers, else the failure's own words; never an empty headline.
  if (parts.empty())
    for (const TriageCause& c : triage_causes())
      if (c.category == r_.category && c.cause == r_.cause) parts.emplace_back(c.meaning);
  if (parts.empty() && !pick->what.empty()) parts.push_back(pick->what);
  r_.summary = fmt::format("{} ({}): {}", r_.category, r_.cause, fmt::join(parts, "; "));
  return true;
}

}  // namespace hanglab::plainlog

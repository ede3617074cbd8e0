// Rules that read shapes, not wordings (issue 24 item 2; reason/log_shapes.cpp), on lines as their
// emitters print them (the format is quoted from the emitter's source in each test):
//   membership lines against the world size -> the ranks that never joined, in init;
//   a progress bar that keeps counting while the peers time out -> a live straggler, its phase the bar's;
//   a launcher or agent passing on a signal it received -> the job was stopped from outside.
#include <catch2/catch.hpp>

#include "triage/log_test_support.hpp"
#include "triage/logs/progress.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

namespace {

// c10d's watchdog line (ProcessGroupNCCL.cpp: "[Rank N] Watchdog caught collective operation timeout:
// WorkNCCL(SeqNum=..., OpType=..., NumelIn=..., NumelOut=..., Timeout(ms)=...) ran for ... milliseconds").
std::string watchdog(int rank, int seq, long long timeout_ms) {
  return fmt::format(
      "[E ProcessGroupNCCL.cpp:475] [Rank {}] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum={}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)={}) ran for {} "
      "milliseconds before timing out.\n",
      rank, seq, timeout_ms, timeout_ms + 8);
}

// tqdm's format_meter: "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]"
std::string bar(const std::string& desc, int n, int total, const std::string& elapsed, const std::string& rate) {
  const int pct = 100 * n / total;
  return fmt::format("{}: {:3d}%|#####     | {}/{} [{}<10:00, {}]", desc, pct, n, total, elapsed, rate);
}

}  // namespace

// ---- membership ----------------------------------------------------------------------------

TEST_CASE("membership: Lightning's join lines state rank and world", "[triage_logs][shapes]") {
  // lightning/fabric/utilities/distributed.py: f"Initializing distributed: GLOBAL_RANK: {global_rank}, MEMBER:
  // {global_rank + 1}/{world_size}"
  const auto l = parse(
      "[2024-03-01 10:00:01,123][lightning.fabric.utilities.distributed][INFO] - Initializing "
      "distributed: GLOBAL_RANK: 2, MEMBER: 3/4");
  CHECK(l.kind == LogKind::kWorldSize);
  CHECK(l.rank == 2);
  CHECK(l.world == 4);
  // ...and rank 0's once init completed: rank_zero_info("All distributed processes registered. Starting with
  // {world_size} processes")
  const auto done = parse("All distributed processes registered. Starting with 4 processes");
  CHECK(done.kind == LogKind::kInitDone);
  CHECK(done.world == 4);
  // c10d: "Rank %s: Completed store-based barrier for key:%s with %s nodes."
  const auto barrier = parse("Rank 3: Completed store-based barrier for key:store_based_barrier_key:1 with 8 nodes.");
  CHECK(barrier.kind == LogKind::kInitDone);
  CHECK(barrier.rank == 3);
  CHECK(barrier.world == 8);
}

TEST_CASE("membership: half the world never joined, the job waits in init", "[triage_logs][shapes]") {
  TempDir t("members_half");
  write_file(t.dir / "slurm-101.out",
             "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n"
             "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.world_size == 4);
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "rank_never_started");
  CHECK(r.phase == "init");
  CHECK(r.missing_ranks == std::vector<int>{2, 3});
  CHECK(r.scope == "subset");
  check_refs(t.dir, r);
}

TEST_CASE("membership: init that completed, or one process's line, proves no absence", "[triage_logs][shapes]") {
  {
    TempDir t("members_done");
    write_file(t.dir / "out.log",
               "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n"
               "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4\n"
               "All distributed processes registered. Starting with 4 processes\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.cause != "rank_never_started");
    CHECK(r.missing_ranks.empty());
  }
  {
    TempDir t("members_one");
    write_file(t.dir / "out.log", "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.missing_ranks.empty());  // one process's own log says nothing of the others
  }
  {
    // Two hosts named: a node's log says nothing of the other node's ranks.
    TempDir t("members_hosts");
    write_file(t.dir / "rank-0.log",
               "node-a:101:101 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
               "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n");
    write_file(t.dir / "rank-1.log",
               "node-b:202:202 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
               "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.world_size == 4);
    CHECK(r.missing_ranks.empty());
  }
}

TEST_CASE("membership: a store timeout names the ranks that never joined even when they are half",
          "[triage_logs][shapes]") {
  TempDir t("members_store");
  // torch/distributed/distributed_c10d.py _store_based_barrier: "Timed out initializing process group in store
  // based barrier on rank: {}, for key: {} (world_size={}, worker_count={}, timeout={})"
  write_file(t.dir / "slurm-102.out",
             "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n"
             "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4\n"
             "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, for key: "
             "store_based_barrier_key:1 (world_size=4, worker_count=2, timeout=0:30:00)\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rendezvous");
  CHECK(r.phase == "init");
  CHECK(r.missing_ranks == std::vector<int>{2, 3});
}

TEST_CASE("membership: the store barrier's wait line names its rank, and its count bounds the silence",
          "[triage_logs][shapes]") {
  // torch 1.x distributed_c10d.py _store_based_barrier, every 10 s while the count is short: "Waiting in
  // store based barrier to initialize process group for rank: {}, key: {} (world_size={}, worker_count={},
  // timeout={})". The line is the waiting rank's own; the count is how many ranks added their key.
  const auto wait = [](int rank, int world, int count) {
    return fmt::format(
        "INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize process group for "
        "rank: {}, key: store_based_barrier_key:1 (world_size={}, worker_count={}, timeout=0:30:00)\n",
        rank, world, count);
  };
  const auto l = parse(wait(1, 4, 1));
  CHECK(l.rank == 1);
  CHECK(l.world == 4);
  CHECK(l.joined == 1);
  {
    // Ranks 0 and 1 joined, rank 1 waits with one arrival: ranks 2 and 3 never started, and the
    // rendezvous waits for them into its timeout.
    TempDir t("members_wait");
    write_file(t.dir / "out.log",
               "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n"
               "Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/4\n" +
                   wait(1, 4, 1));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rendezvous");
    CHECK(r.cause == "rendezvous_timeout");
    CHECK(r.phase == "init");
    CHECK(r.missing_ranks == std::vector<int>{2, 3});
    check_refs(t.dir, r);
  }
  {
    // Three of sixteen print that they wait, and the store counted seven: the ranks that arrived are
    // more than the paste shows, so the silent ones are not proven absent.
    TempDir t("members_counted");
    write_file(t.dir / "out.log", wait(6, 16, 7) + wait(3, 16, 7) + wait(4, 16, 7) +
                                      "Initializing distributed: GLOBAL_RANK: 3, MEMBER: 4/16\n"
                                      "Initializing distributed: GLOBAL_RANK: 4, MEMBER: 5/16\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.missing_ranks.empty());
  }
}

// distributed_c10d.py's _store_based_barrier (torch 1.9-2.0): store.add(key, 1) as a rank enters, then it polls
// until the count is world_size and raises "Timed out initializing process group in store based barrier on rank:
// %s, for key: %s (world_size=%s, worker_count=%s, timeout=%s)": the count includes the rank that timed out.
TEST_CASE("membership: a store barrier count that the shown ranks account for names the ranks that never arrived",
          "[triage_logs][shapes]") {
  const auto line = [](int rank, int world, int count) {
    return fmt::format(
        "RuntimeError: Timed out initializing process group in store based barrier on rank: {}, for key: "
        "store_based_barrier_key:1 (world_size={}, worker_count={}, timeout=0:30:00)\n",
        rank, world, count);
  };
  TempDir t("barrier_counted_all");
  write_file(t.dir / "train.log", line(0, 2, 1));
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rendezvous");
  CHECK(r.missing_ranks == std::vector<int>{1});
  // 7 of 8 arrived but one rank's line is shown: six arrivals are not in the paste, so which rank is missing is not.
  TempDir u("barrier_counted_part");
  write_file(u.dir / "train.log", line(0, 8, 7));
  const auto q = triage_logs({u.dir});
  INFO(render_text(q));
  CHECK(q.category == "rendezvous");
  CHECK(q.missing_ranks.empty());
}

TEST_CASE("membership: a store barrier count stated again and again names every rank that never arrived",
          "[triage_logs][shapes]") {
  std::string joins;
  for (int r : {2, 4, 1, 6, 7}) joins += fmt::format("Initializing distributed: GLOBAL_RANK: {}, MEMBER: {}/8\n", r, r + 1);
  const std::string wait =
      "[2025-03-11 05:21:{:02d},421][torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier to "
      "initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=8, worker_count=1, "
      "timeout=0:30:00)\n";
  TempDir t("barrier_settled");
  write_file(t.dir / "train.log", joins + fmt::format(fmt::runtime(wait), 4) + fmt::format(fmt::runtime(wait), 14) +
                                      fmt::format(fmt::runtime(wait), 24));
  auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.cause == "rendezvous_timeout");
  CHECK(r.missing_ranks == std::vector<int>{1, 2, 3, 4, 5, 6, 7});  // a join line is printed before the barrier
  // One wait line is a moment's count: only the silent ranks are known absent.
  TempDir o("barrier_once");
  write_file(o.dir / "train.log", joins + fmt::format(fmt::runtime(wait), 4));
  r = triage_logs({o.dir});
  CHECK(r.missing_ranks == std::vector<int>{3, 5});
}

// ---- a busy progress bar ------------------------------------------------------------------

TEST_CASE("progress bars: tqdm's meter read, and the phase its description names", "[triage_logs][shapes]") {
  TqdmBar b;
  REQUIRE(parse_tqdm_bar("Tokenizing train set:  45%|####5     | 4500/10000 [12:02<14:43, 6.23it/s]", b));
  CHECK(b.desc == "Tokenizing train set");
  CHECK(b.n == 4500);
  CHECK(b.total == 10000);
  CHECK(b.elapsed_s == 722);
  CHECK(b.unit == "it");
  REQUIRE(parse_tqdm_bar("Map (num_proc=8):  12%|#2        | 1200/10000 [1:02:03<00:10, 843.12 examples/s]", b));
  CHECK(b.elapsed_s == 3723);
  CHECK(b.unit == "examples");
  REQUIRE(parse_tqdm_bar(" 45%|####5     | 212/469 [00:10<00:12, 20.10it/s]", b));
  CHECK(b.desc.empty());
  REQUIRE(parse_tqdm_bar("Preparing set...:  36%|###6      | 24/67 [23:16<30:00, 41.87s/it]", b));
  CHECK(b.unit == "it");
  CHECK_FALSE(parse_tqdm_bar("loss 45% lower | 3/4", b));
  CHECK(bar_phase("Tokenizing train set", "it") == "data");
  CHECK(bar_phase("Map (num_proc=8)", "examples") == "data");
  CHECK(bar_phase("Generating train split", "examples") == "data");
  CHECK(bar_phase("Preparing test set...", "it") == "data");  // the verb decides, not the set's name
  CHECK(bar_phase("Saving checkpoint", "it") == "checkpoint");
  CHECK(bar_phase("Loading checkpoint shards", "it") == "init");
  CHECK(bar_phase("Validation DataLoader 0", "it") == "eval");
  CHECK(bar_phase("Epoch 3", "it") == "training");
  CHECK(bar_phase("", "it") == "training");
  CHECK(bar_phase("Frobnicating", "it") == "");
}

TEST_CASE("progress bars: a reinforcement-learning trainer's stage bars count the training step",
          "[triage_logs][shapes]") {
  // veRL-family dp_actor.py: tqdm(micro_batches, desc="Compute log probs"), tqdm(..., desc="Update policy").
  CHECK(bar_phase("Compute log probs", "it") == "training");
  CHECK(bar_phase("Update policy", "it") == "training");
  CHECK(bar_phase("Computing rewards", "it") == "training");  // not data preparation's "computing"
  CHECK(bar_phase("Validation rollouts", "it") == "eval");
  // The bar before a kill is the phase the kill hit (torchrun's agent: "failed (exitcode: -9) local_rank: 0").
  TempDir t("rl_bar");
  write_file(t.dir / "train.log",
             bar("Compute log probs", 244, 320, "08:56", "1.65s/it") + "\n" +
                 "E0402 15:02:00.117000 135782 torch/distributed/elastic/multiprocessing/api.py:869] failed "
                 "(exitcode: -9) local_rank: 0 (pid: 4242) of binary: /usr/bin/python3\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.phase == "training");
}

TEST_CASE("busy bar: data preparation counting on while the peers time out is a live straggler",
          "[triage_logs][shapes]") {
  TempDir t("busy_bar");
  write_file(t.dir / "train.log", bar("Tokenizing train set", 24, 67, "23:16", "41.87s/it") + "\n" +
                                      bar("Tokenizing train set", 25, 67, "24:03", "43.23s/it") + "\n" +
                                      watchdog(1, 3, 1800000) + watchdog(2, 3, 1800000) +
                                      bar("Tokenizing train set", 26, 67, "24:51", "44.65s/it") + "\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "straggler");
  CHECK(r.cause == "slow_rank");
  CHECK(r.phase == "data");
  CHECK(r.missing_ranks.empty());  // the bar names no rank
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->rank == -1);
  check_refs(t.dir, r);
}

TEST_CASE("busy bar: a rank's own bar names it -- a save's bar names the checkpoint phase", "[triage_logs][shapes]") {
  // Ordered by clocks: the save's last redraw is stamped after the first timeout.
  TempDir c("busy_bar_clock");
  write_file(c.dir / "all.log",
             "2024-05-01T10:00:00Z [rank0]: step 40/100\n2024-05-01T10:00:00Z [rank1]: step 40/100\n"
             "2024-05-01T10:00:00Z [rank2]: step 40/100\n"
             "2024-05-01T10:00:05Z [rank0]: " +
                 bar("Saving checkpoint shards", 1, 8, "00:05", "5.1s/it") + "\n" + "2024-05-01T10:01:00Z [rank1]:" +
                 watchdog(1, 161, 60000) + "2024-05-01T10:01:00Z [rank2]:" + watchdog(2, 161, 60000) +
                 "2024-05-01T10:01:30Z [rank0]: " + bar("Saving checkpoint shards", 3, 8, "01:30", "30.2s/it") + "\n");
  const auto r = triage_logs({c.dir});
  INFO(render_text(r));
  CHECK(r.category == "straggler");
  CHECK(r.cause == "slow_rank");
  CHECK(r.phase == "checkpoint");
  CHECK(r.missing_ranks == std::vector<int>{0});
}

TEST_CASE("busy bar: a bar that stopped before the wait, or a training bar without order, proves nothing",
          "[triage_logs][shapes]") {
  TempDir t("bar_stopped");
  // A short data bar long done (elapsed far below the timeout), then every rank but one waits.
  write_file(t.dir / "train.log", bar("Tokenizing train set", 66, 67, "00:20", "3.1it/s") + "\n" +
                                      bar("Tokenizing train set", 67, 67, "00:21", "3.1it/s") + "\n" +
                                      watchdog(1, 3, 1800000) + watchdog(2, 3, 1800000));
  const auto r = triage_logs({t.dir});
  CHECK(r.cause != "slow_rank");
  // A training bar whose elapsed time is the whole run's: no clock, no order, no claim.
  TempDir u("bar_training");
  write_file(u.dir / "train.log", bar("Epoch 3", 200, 469, "3:10:00", "1.1it/s") + "\n" +
                                      bar("Epoch 3", 212, 469, "3:10:11", "1.1it/s") + "\n" +
                                      watchdog(1, 9000, 1800000) + watchdog(2, 9000, 1800000));
  const auto q = triage_logs({u.dir});
  CHECK(q.cause != "slow_rank");
  // A training bar (Lightning's "Epoch 0", drawn by rank 0 only) still counting after rank 1's timeout
  // line: a data-parallel step needs the peer's collectives, so that process was not late to the one rank 1
  // waited in but issuing others or training apart from it; which, the lines do not say.
  TempDir w("bar_training_after");
  write_file(w.dir / "train.log", bar("Epoch 0", 8692, 9188, "30:57", "4.68it/s") + "\n" +
                                      watchdog(1, 4013, 600000) + bar("Epoch 0", 8695, 9188, "30:58", "4.68it/s") +
                                      "\n");
  const auto a = triage_logs({w.dir});
  INFO(render_text(a));
  CHECK(a.category != "straggler");
  CHECK(a.missing_ranks.empty());
}

TEST_CASE("busy bar: a peer's timeout written onto a rank's unfinished bar -- that rank was still at its work",
          "[triage_logs][shapes]") {
  // torchrun --tee prefixes each line with the local rank ("[default0]:", elastic tail_log.py); datasets' map
  // counts "examples". tqdm ends a bar's line when the bar closes: rank 2's timeout runs on from rank 0's
  // redraw, so rank 0 was still grouping texts (8 %) when it came, and never reached SeqNum 3.
  TempDir t("bar_cut_by_timeout");
  write_file(t.dir / "train.log",
             "[default0]:Grouping texts in chunks of 2049:   8%|8         | 726000/9672101 [02:32<30:38, 4866.01 "
             "examples/s][default2]:" +
                 watchdog(2, 3, 600000) + "[default3]:" + watchdog(3, 3, 600000));
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "straggler");
  CHECK(r.cause == "slow_rank");
  CHECK(r.phase == "data");
  CHECK(r.missing_ranks == std::vector<int>{0});
  // A finished bar (its count at its total) before the timeout says nothing of the wait.
  write_file(t.dir / "train.log",
             "[default0]:Grouping texts in chunks of 2049: 100%|##########| 9672101/9672101 [02:32<00:00, 4866.01 "
             "examples/s][default2]:" +
                 watchdog(2, 3, 600000) + "[default3]:" + watchdog(3, 3, 600000));
  const auto q = triage_logs({t.dir});
  INFO(render_text(q));
  CHECK(q.cause != "slow_rank");
}

TEST_CASE("busy bar: a redraw joined to a peer's error, a count without a total, a bare bar after its announcement",
          "[triage_logs][shapes]") {
  // tqdm ends a redraw with '\r', not a newline: the watchdog line of another process joins it. The
  // rank that line names is a waiter, not the bar's writer. Torch before 1.10 printed no SeqNum.
  const std::string old_watchdog =
      "[E ProcessGroupNCCL.cpp:567] [Rank {}] Watchdog caught collective operation timeout: "
      "WorkNCCL(OpType=ALLREDUCE, Timeout(ms)=60000) ran for 67434 milliseconds before timing out.";
  TempDir t("bar_joined");
  write_file(t.dir / "train.log", bar("train: Scanning labels", 43830, 45049, "01:07", "66.12it/s") +
                                      fmt::format(fmt::runtime(old_watchdog), 1) + "\n" +
                                      fmt::format(fmt::runtime(old_watchdog), 2) + "\n" +
                                      bar("train: Scanning labels", 43843, 45049, "01:07", "74.98it/s") +
                                      "[E ProcessGroupNCCL.cpp:327] Some NCCL operations have failed or timed out.\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "straggler");
  CHECK(r.phase == "data");
  CHECK(r.missing_ranks.empty());  // neither waiter drew it
  // datasets' bars have no total: "{desc}: {n}{unit} [{elapsed}, {rate}]" (tqdm.format_meter).
  TqdmBar b;
  REQUIRE(parse_tqdm_bar("Generating train split: 2230000 examples [29:59, 1466.92 examples/s]", b));
  CHECK(b.desc == "Generating train split");
  CHECK(b.n == 2230000);
  CHECK(b.total == -1);
  CHECK(b.elapsed_s == 1799);
  CHECK(b.unit == "examples");
  CHECK_FALSE(parse_tqdm_bar("step 12 [00:10, lr 3e-4/s]", b));
  TempDir u("bar_count");
  write_file(u.dir / "train.log", "Generating train split: 2230000 examples [29:59, 1466.92 examples/s]" +
                                      watchdog(1, 2, 1800000) +
                                      "Generating train split: 2231702 examples [30:00, 1577.98 examples/s]\n");
  const auto q = triage_logs({u.dir});
  INFO(render_text(q));
  CHECK(q.cause == "slow_rank");
  CHECK(q.phase == "data");
  // A bar without a description counts what its writer announced before it; a count that starts
  // over is a new bar (here after a cache check, which is no evaluation).
  TempDir v("bar_bare");
  write_file(v.dir / "train.log", "checking cache validity...\n" + bar("", 1818, 1818, "00:00", "237679.84it/s") +
                                      "\ncaching latents...\n" + bar("", 1582, 1818, "30:02", "1.13s/it") +
                                      watchdog(1, 3, 1800000) + bar("", 1583, 1818, "30:03", "1.13s/it") + "\n");
  const auto w = triage_logs({v.dir});
  INFO(render_text(w));
  CHECK(w.cause == "slow_rank");
  CHECK(w.phase == "data");
}

// ---- a signal passed on ---------------------------------------------------------------------

TEST_CASE("stop signal: the notices of launchers that pass a signal on", "[triage_logs][shapes]") {
  // torch/distributed/elastic/agent/server/api.py: logger.warning("Received %s death signal, shutting down workers",
  // e.sigval)
  auto l = parse(
      "W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/agent/server/api.py:688] Received "
      "Signals.SIGTERM death signal, shutting down workers");
  CHECK(l.kind == LogKind::kStopSignal);
  CHECK(l.signal == 15);
  CHECK(l.word == "torchrun");
  l = parse("WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers");
  CHECK(l.signal == 1);
  // Slurm src/srun/signals.c
  CHECK(parse("srun: forcing job termination").kind == LogKind::kStopSignal);
  CHECK(parse("srun: forcing job termination").signal == 15);
  CHECK(parse("srun: sending Ctrl-C to StepId=6053.0").signal == 2);
  CHECK(parse("srun: interrupt (one more within 1 sec to abort)").signal == 2);
  // src/slurmd/slurmstepd/req.c: "*** %s ON %s CANCELLED AT %s DUE to SIGNAL %s ***" (strsignal)
  l = parse("slurmstepd: error: *** STEP 6053.0 ON node-017 CANCELLED AT 2024-04-23T12:18:08 DUE to SIGNAL Hangup ***");
  CHECK(l.kind == LogKind::kStopSignal);
  CHECK(l.signal == 1);
  // Open MPI orte/mca/ess/hnp/ess_hnp_module.c: "%s: Forwarding signal %d to job"
  l = parse("mpirun: Forwarding signal 18 to job");
  CHECK(l.kind == LogKind::kStopSignal);
  CHECK(l.signal == 18);
  CHECK(l.word == "mpirun");
}

TEST_CASE("stop signal: torchrun passing on SIGTERM while the job trained is a stop from outside",
          "[triage_logs][shapes]") {
  TempDir t("stop_sigterm");
  write_file(t.dir / "train.log",
             "[default0]:step 311/28845\n[default1]:step 311/28845\n"
             "W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/agent/server/api.py:688] Received "
             "Signals.SIGTERM death signal, shutting down workers\n"
             "W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/multiprocessing/api.py:857] Sending "
             "process 6236 closing signal SIGTERM\n"
             "W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/multiprocessing/api.py:857] Sending "
             "process 6239 closing signal SIGTERM\n"
             "Traceback (most recent call last):\n"
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 6230 got signal: 15\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "external_signal");
  CHECK(r.phase == "training");
  CHECK(r.missing_ranks.empty());
  CHECK(r.scope == "all");
  CHECK(r.summary.find("SIGTERM") != std::string::npos);
  CHECK(r.summary.find("scheduler") != std::string::npos);
  check_refs(t.dir, r);
}

TEST_CASE("stop signal: DDP's rebuilt-buckets line before it says the job was training", "[triage_logs][shapes]") {
  TempDir t("stop_ddp_phase");
  // torch/nn/parallel/distributed.py logs it in the second iteration's forward; then torchrun
  // (elastic/agent/server/api.py) receives SIGTERM and passes it on.
  const std::string lines =
      "INFO:torch.nn.parallel.distributed:Reducer buckets have been rebuilt in this iteration.\n"
      "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, shutting down workers\n"
      "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 811 closing signal SIGTERM\n";
  write_file(t.dir / "train.log", lines);
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.cause == "external_signal");
  CHECK(r.phase == "training");
  // Without it nothing in these lines says what the job was doing.
  TempDir u("stop_no_phase");
  write_file(u.dir / "train.log", lines.substr(lines.find('\n') + 1));
  CHECK(triage_logs({u.dir}).phase == "unknown");
}

TEST_CASE("stop signal: a forwarded SIGHUP (only the closing signals show it) and a SignalException",
          "[triage_logs][shapes]") {
  {
    // torchrun sends its workers SIGTERM on its own; any other closing signal is one it received.
    TempDir t("stop_sighup");
    write_file(t.dir / "train.log",
               "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 53738 closing signal SIGHUP\n"
               "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 53740 closing signal SIGHUP\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "external_signal");
  }
  {
    TempDir t("stop_exc");
    // torch/distributed/elastic/multiprocessing/api.py: raise SignalException(f"Process {os.getpid()} got signal:
    // {sigval}")
    write_file(t.dir / "train.log",
               "{'loss': 0.6931, 'learning_rate': 4.9e-05, 'epoch': 0.04}\n"
               "torch.distributed.elastic.multiprocessing.api.SignalException: Process 792735 got signal: 1\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "external_signal");
  }
}

TEST_CASE("stop signal: after a failure it is the reaction, a Ctrl-C names no cause, SIGCONT stops nothing",
          "[triage_logs][shapes]") {
  {
    TempDir t("stop_after");
    write_file(t.dir / "train.log", "2024-05-01T10:00:00Z [rank1]:" + watchdog(1, 7, 600000) +
                                        "2024-05-01T10:00:00Z [rank2]:" + watchdog(2, 7, 600000) +
                                        "2024-05-01T10:05:00Z srun: forcing job termination\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.cause != "external_signal");
  }
  {
    TempDir t("stop_ctrl_c");
    write_file(t.dir / "train.log",
               "[2024-02-22 19:20:22,163][torch.nn.parallel.distributed][INFO] - Reducer buckets have been rebuilt in "
               "this iteration.\n"
               "WARNING:torch.distributed.elastic.agent.server.api:Received 2 death signal, shutting down workers\n"
               "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4797 closing signal SIGINT\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "unknown");
    CHECK(r.summary.find("Ctrl-C") != std::string::npos);
  }
  {
    TempDir t("stop_cont");
    write_file(t.dir / "train.log", "step 3/10\nmpirun: Forwarding signal 18 to job\nstep 4/10\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.cause != "external_signal");
  }
}

// ---- an evaluation under way while only some ranks wait (reason/log_waiting.cpp) ------------

TEST_CASE("eval under way while only some ranks time out: a rank evaluating alone", "[triage_logs][shapes]") {
  // mmengine's BaseMetric.evaluate computes the metric on rank 0 and broadcasts it; its runner
  // logs "Evaluating bbox..."-style lines from rank 0 only, with no rank in them.
  const std::string eval_line = "10/26 11:27:48 - mmengine - INFO - Evaluating bbox...\n";
  const std::string step_line = "step 3400/5000 loss 0.31\n";
  // No --world-size: the world is read from the ranks seen (given, rank 0's silence would be
  // proven absence, which the absence rules read first).
  const TriageOptions opts;
  {
    TempDir t("eval_alone");
    write_file(t.dir / "train.log", step_line + eval_line + watchdog(1, 4178, 1800000) + watchdog(2, 4178, 1800000) +
                                        watchdog(3, 4178, 1800000));
    const auto r = triage_logs({t.dir}, opts);
    INFO(render_text(r));
    CHECK(r.category == "straggler");
    CHECK(r.cause == "slow_rank");
    CHECK(r.phase == "eval");
    CHECK(r.scope == "subset");
    CHECK(r.missing_ranks.empty());  // the marker names no rank
  }
  {
    // Every rank reports the collective: nobody is busy elsewhere (a hang inside it, or a
    // collective the eval path skipped): not a rank evaluating alone.
    TempDir t("eval_all_wait");
    write_file(t.dir / "train.log", step_line + eval_line + watchdog(0, 4178, 1800000) + watchdog(1, 4178, 1800000) +
                                        watchdog(2, 4178, 1800000) + watchdog(3, 4178, 1800000));
    const auto r = triage_logs({t.dir}, opts);
    CHECK(r.cause != "slow_rank");
  }
  {
    // A step after the evaluation's start: the evaluation ended, the hang is in training.
    TempDir t("eval_then_step");
    write_file(t.dir / "train.log", eval_line + step_line + watchdog(1, 4178, 1800000) + watchdog(2, 4178, 1800000));
    const auto r = triage_logs({t.dir}, opts);
    CHECK(r.cause != "slow_rank");
    CHECK(r.phase != "eval");
  }
  {
    // The waiting rank's own evaluation line: it evaluates too, so uneven evaluation data or a
    // collective skipped in the eval path fit as well.
    TempDir t("eval_waiter_evaluates");
    write_file(t.dir / "rank-1.log", "Evaluating the results...\n" + watchdog(1, 4178, 1800000));
    write_file(t.dir / "rank-2.log", "Evaluating the results...\n" + watchdog(2, 4178, 1800000));
    const auto r = triage_logs({t.dir}, opts);
    INFO(render_text(r));
    CHECK(r.cause != "slow_rank");
  }
}

// ---- a data preparation under way while only some ranks wait (reason/log_waiting.cpp) --------

TEST_CASE("faiss k-means under way while only some ranks time out: a rank preparing data alone",
          "[triage_logs][shapes]") {
  // faiss/Clustering.cpp@02dbb4e:148 "Clustering %d points in %zdD to %zd clusters, redo %d times, %d
  // iterations", :187 "  Preprocessing in %.2f s", :336 "  Iteration %d (%.2f s, search %.2f s):
  // objective=%g imbalance=%.3f nsplit=%d       \r" (redrawn in place).
  const std::string header = "Clustering 111099511 points in 128D to 524288 clusters, redo 1 times, 4 iterations\n";
  const std::string iters =
      "  Iteration 0 (812.45 s, search 790.12 s): objective=1.2e+07 imbalance=1.304 nsplit=0       \r"
      "  Iteration 1 (1630.10 s, search 1580.77 s): objective=1.1e+07 imbalance=1.210 nsplit=0       \r\n";
  {
    const auto l = parse(iters.substr(0, iters.find('\r')));
    CHECK(l.kind == LogKind::kDataPrep);  // k-means rounds, not training steps
    CHECK(parse(header).kind == LogKind::kDataPrep);
    CHECK(parse("Iteration 50 (loss 0.3)").kind == LogKind::kStep);
  }
  const TriageOptions opts;
  {
    TempDir t("faiss_alone");
    write_file(t.dir / "train.log", header + "  Preprocessing in 8.98 s\n" + watchdog(1, 5, 600000));
    const auto r = triage_logs({t.dir}, opts);
    INFO(render_text(r));
    CHECK(r.category == "straggler");
    CHECK(r.cause == "slow_rank");
    CHECK(r.phase == "data");
    CHECK(r.scope == "subset");
    CHECK(r.missing_ranks.empty());  // the clustering names no rank
  }
  {
    TempDir t("faiss_iters");
    write_file(t.dir / "train.log", header + iters + watchdog(2, 5, 600000) + watchdog(3, 5, 600000));
    const auto r = triage_logs({t.dir}, opts);
    INFO(render_text(r));
    CHECK(r.cause == "slow_rank");
    CHECK(r.phase == "data");  // faiss's iterations are no steps (a step after the header would end it)
  }
  {
    // A step after the clustering: the preparation ended, the hang is in training.
    TempDir t("faiss_then_step");
    write_file(t.dir / "train.log", header + "step 3400/5000 loss 0.31\n" + watchdog(1, 4178, 1800000));
    const auto r = triage_logs({t.dir}, opts);
    CHECK(r.cause != "slow_rank");
    CHECK(r.phase == "training");
  }
  {
    // The waiting ranks' own clustering: every rank prepares, nobody alone.
    TempDir t("faiss_waiter_prepares");
    write_file(t.dir / "rank-1.log", header + watchdog(1, 5, 600000));
    write_file(t.dir / "rank-2.log", header + watchdog(2, 5, 600000));
    const auto r = triage_logs({t.dir}, opts);
    INFO(render_text(r));
    CHECK(r.cause != "slow_rank");
  }
}

TEST_CASE("RETURNN's eval step reports mark an evaluation under way, its train reports steps", "[triage_logs][shapes]") {
  // returnn/torch/engine.py _print_process: ", ".join([report_prefix, "step %i" % step, ...]) with
  // report_prefix f"ep {epoch} {dataset_name} eval" (eval) or f"ep {epoch} train"; the TF engine's
  // "epoch {epoch} '{dataset}' eval" / "train epoch {epoch}".
  const std::string eval_line = "ep 1 dev eval, step 97, min_wer -0.688, ce 0.859, fer 0.977, mem_usage:cuda:0 1.6GB\n";
  CHECK(parse(eval_line).kind == LogKind::kEvalBegin);
  CHECK(parse("pretrain epoch 3 'dev' eval, step 12, ce 0.5, 0.031 sec/step").kind == LogKind::kEvalBegin);
  CHECK(parse("ep 1 train, step 97, ce 0.859, 0.412 sec/step").kind != LogKind::kEvalBegin);
  const TriageOptions opts;
  {
    TempDir t("returnn_eval_alone");
    write_file(t.dir / "train.log", eval_line + watchdog(1, 41, 1800000) + watchdog(2, 41, 1800000));
    const auto r = triage_logs({t.dir}, opts);
    INFO(render_text(r));
    CHECK(r.cause == "slow_rank");
    CHECK(r.phase == "eval");
  }
}

TEST_CASE("lm-eval's request announcements mark an evaluation under way on the writing rank", "[triage_logs][shapes]") {
  // lm_eval/evaluator.py evaluate(): eval_logger.info(f"Running {reqtype} requests"), on every rank.
  const std::string line = "2024-02-01:10:12:13,456 INFO     [evaluator.py:361] Running generate_until requests\n";
  CHECK(parse(line).kind == LogKind::kEvalBegin);
  CHECK(parse("Running loglikelihood requests").kind == LogKind::kEvalBegin);
  CHECK(parse("Running 4 requests").kind != LogKind::kEvalBegin);
  const TriageOptions opts;
  {
    // Rank 0's own announcement, ranks 1 and 2 time out: rank 0 still generating.
    TempDir t("lm_eval_alone");
    write_file(t.dir / "rank-0.log", line);
    write_file(t.dir / "rank-1.log", watchdog(1, 3, 1800000));
    write_file(t.dir / "rank-2.log", watchdog(2, 3, 1800000));
    const auto r = triage_logs({t.dir}, opts);
    INFO(render_text(r));
    CHECK(r.cause == "slow_rank");
    CHECK(r.phase == "eval");
  }
  {
    // The waiting ranks announced their requests too: each evaluates its share, nobody alone.
    TempDir t("lm_eval_all");
    write_file(t.dir / "rank-1.log", line + watchdog(1, 3, 1800000));
    write_file(t.dir / "rank-2.log", line + watchdog(2, 3, 1800000));
    const auto r = triage_logs({t.dir}, opts);
    CHECK(r.cause != "slow_rank");
  }
}

TEST_CASE("a collective's timeout alone shows no phase -- a step line or a training-loop frame shows training",
          "[triage_logs][shapes]") {
  // Collectives run in evaluation, in saves and at a run's end too: the timeout's SeqNum counts them all.
  {
    TempDir t("lone_timeout");
    write_file(t.dir / "train.log", watchdog(1, 778778, 1800000));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "unknown");
    CHECK(r.phase == "unknown");
  }
  {
    TempDir t("timeout_after_steps");
    write_file(t.dir / "train.log", "step 3400/5000 loss 0.31\n" + watchdog(1, 778778, 1800000));
    const auto r = triage_logs({t.dir});
    CHECK(r.phase == "training");
  }
  {
    // A traceback whose innermost frame is the training loop's (transformers' Trainer).
    TempDir t("timeout_in_train_frame");
    write_file(t.dir / "train.log",
               watchdog(1, 778778, 1800000) +
                   "Traceback (most recent call last):\n"
                   "  File \"/usr/local/lib/python3.10/dist-packages/transformers/trainer.py\", line 1938, in "
                   "_inner_training_loop\n"
                   "    self.accelerator.backward(loss)\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase == "training");
  }
  {
    // A gradient bucket's size (DDP: 1 MiB first, 25 MiB after, c10d/reducer.hpp) in the ALLREDUCE every
    // reporting rank waited in: a backward pass; a one-element ALLREDUCE (a metric, a flag) shows nothing.
    const auto wd = [](int rank, long long numel) {
      return fmt::format(
          "[Rank {}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, "
          "NumelIn={}, NumelOut={}, Timeout(ms)=600000) ran for 600064 milliseconds before timing out.\n",
          rank, numel, numel);
    };
    TempDir t("timeout_grad_bucket");
    write_file(t.dir / "train.log", wd(0, 6832129) + wd(1, 6832129));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase == "training");
    TempDir u("timeout_one_element");
    write_file(u.dir / "train.log", wd(0, 1) + wd(1, 1));
    const auto q = triage_logs({u.dir});
    INFO(render_text(q));
    CHECK(q.phase == "unknown");
  }
}

// ProcessGroupNCCL's watchdog throws to take its process down after a collective failed (c10::Error's header
// "Exception raised from <watchdog function> at ProcessGroupNCCL.cpp"), then std::terminate aborts: torchrun's
// exitcode -6 for it is the tear-down, not a crash.
TEST_CASE("a SIGABRT exit after ProcessGroupNCCL's watchdog threw is its tear-down, not a crash", "[triage_logs]") {
  const std::string exit_line =
      "[2026-01-17 06:10:35,778] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) "
      "local_rank: 0 (pid: 223) of binary: /usr/bin/python3\n";
  for (const char* fn : {"ncclCommWatchdog", "watchdogHandler", "checkTimeout", "runLoop"}) {
    CHECK(parse(fmt::format("Exception raised from {} at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1186 "
                            "(most recent call first):",
                            fn))
              .kind == LogKind::kNcclAsyncFailed);
  }
  CHECK(parse("Exception raised from runLoop at ../torch/csrc/elsewhere.cpp:10 (most recent call first):").kind !=
        LogKind::kNcclAsyncFailed);
  {
    TempDir t("watchdog_abort");
    write_file(t.dir / "train.log",
               "Exception raised from ncclCommWatchdog at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1186 "
               "(most recent call first):\nframe #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57\n" +
                   exit_line);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "unknown");
    CHECK(r.missing_ranks.empty());
  }
  {
    // std::terminate's what() quoting ProcessGroupNCCL's NCCL check: a failed NCCL call, not a crash.
    TempDir t("terminate_nccl");
    write_file(t.dir / "train.log",
               "terminate called after throwing an instance of 'std::runtime_error'\n"
               "  what():  NCCL error: internal error, NCCL version 2.7.8\nFatal Python error: Aborted\n"
               "model-train.sh: line 40:  2093 Aborted                 python train.py\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause != "crashed");
  }
  {
    // Without the watchdog's lines the same exit is a crash.
    TempDir t("plain_abort");
    write_file(t.dir / "train.log", exit_line);
    const auto r = triage_logs({t.dir});
    CHECK(r.cause == "crashed");
  }
}

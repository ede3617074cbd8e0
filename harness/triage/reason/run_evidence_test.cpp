// One evidence model per run: the supervisor's exits, the stacks with their process state and
// the progress lines decide a bring-your-own run's answer over the plain-log reading.
#include "triage/reason/run_evidence.hpp"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>

#include "triage/reason/run.hpp"
#include "triage/records/run_dir.hpp"
#include "triage/records/stack_class.hpp"

#include <filesystem>
#include <fstream>

using namespace hanglab;

namespace {

// A 3-rank bring-your-own run as records/run_dir.cpp reads it; the plain-log answer it starts
// from said "init, everybody hung" (what the logs alone gave, issue 17).
struct Fixture {
  RunObservations in;
  TriageResult r;
  Fixture() {
    in.harness.present = true;
    in.harness.start_t = 1000;
    in.harness.progress_s = 8;
    in.harness.collective_s = 60;
    for (int rank = 0; rank < 3; ++rank) {
      RankObservations o;
      o.rank = rank;
      ProgressSeen p;
      p.lines = 20;
      p.first_t = 1005;
      p.last_t = 1012;
      p.last_ref = "stdout.log:20";
      p.last_what = "epoch 6 (4 steps)";
      p.median_gap_s = 0.35;
      o.progress = p;
      in.ranks[rank] = o;
      RankTimeline t;
      t.rank = rank;
      t.liveness = "hung";
      r.per_rank.push_back(t);
    }
    r.world_size = 3;
    r.phase = "init";
    r.category = "unknown";
    r.cause = "no_error_logged";
    r.t0 = 1000;
    r.source = "logs";
  }
  void stack(int rank, const std::string& state, std::vector<std::string> frames, bool idle, double t) {
    StackFrameInfo s;
    s.tool = "py-spy";
    s.state = state;
    s.frames = std::move(frames);
    s.idle = idle;
    s.t = t;
    classify_stack(s);
    in.ranks[rank].stack = s;
  }
  void exit(int rank, double t, std::optional<int> code, std::optional<int> sig, bool teardown, int line) {
    in.harness.exits[rank] = HarnessExit{t, line, code, sig, teardown};
  }
  const RankTimeline& rank(int k) const { return r.per_rank.at(k); }
  RankTimeline& rank(int k) { return r.per_rank.at(k); }
};

}  // namespace

TEST_CASE("a SIGKILLed bring-your-own rank: culprit from the supervisor, training from its progress lines") {
  Fixture f;
  f.exit(1, 1012.5, std::nullopt, 9, false, 40);
  f.exit(0, 1012.6, 1, std::nullopt, false, 41);
  f.exit(2, 1012.6, 1, std::nullopt, false, 42);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "rank_exit");
  CHECK(f.r.cause == "killed");
  CHECK(f.r.missing_ranks == std::vector<int>{1});
  CHECK(f.r.phase == "training");
  CHECK(f.rank(1).liveness == "dead");
  CHECK(f.rank(0).liveness == "dead");
  CHECK(*f.rank(1).signal == 9);
  CHECK(*f.rank(0).exit_code == 1);
  CHECK(f.rank(1).progress == "epoch 6 (4 steps)");
  CHECK(f.r.echoes.size() == 2);
  REQUIRE(f.r.first_failure);
  CHECK(f.r.first_failure->evidence == "harness.jsonl:40");
}

TEST_CASE("a rank SIGKILLed while fetching its next batch died in training, not in data loading") {
  // trl_kill_rank: the liveness watch sampled the culprit inside accelerate's DataLoaderShard a moment before the kill.
  Fixture f;
  f.stack(1, "S",
          {"_BaseDataLoaderIter.__next__ (torch/utils/data/dataloader.py:725)",
           "DataLoaderShard.__iter__ (accelerate/data_loader.py:598)", "Trainer.get_batch_samples (transformers/trainer.py:2299)",
           "Trainer._inner_training_loop (transformers/trainer.py:1660)"},
          false, 1012.4);
  REQUIRE(f.in.ranks[1].stack->klass == "data");
  f.exit(1, 1012.5, std::nullopt, 9, false, 40);
  f.exit(0, 1012.6, 1, std::nullopt, false, 41);
  f.exit(2, 1012.6, 1, std::nullopt, false, 42);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.cause == "killed");
  CHECK(f.r.phase == "training");
}

TEST_CASE("a culprit's stack sampled before the job's first progress line does not name the phase it died in") {
  // lightning_kill_rank: the liveness watch sampled the quiet culprit while it was still
  // building DistributedDataParallel (init), 2 s before rank 0's bar began; it was killed
  // in training. Progress lines come after every rank is past init, the culprit too.
  Fixture f;
  for (int k : {1, 2}) f.in.ranks[k].progress.reset();
  f.stack(1, "S", {"_verify_param_shape_across_processes (torch/distributed/utils.py:299)",
                   "DistributedDataParallel.__init__ (torch/nn/parallel/distributed.py:867)",
                   "DDPStrategy._setup_model (lightning/pytorch/strategies/ddp.py:120)"}, true, 1003.0);
  f.exit(1, 1012.5, std::nullopt, 9, false, 40);
  f.exit(0, 1012.6, 1, std::nullopt, false, 41);
  f.exit(2, 1012.6, 1, std::nullopt, false, 42);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.missing_ranks == std::vector<int>{1});
  CHECK(f.r.phase == "training");
  // The same stack sampled after the progress began is where the culprit stood: init.
  Fixture g;
  for (int k : {1, 2}) g.in.ranks[k].progress.reset();
  g.stack(1, "S", {"_verify_param_shape_across_processes (torch/distributed/utils.py:299)",
                   "DistributedDataParallel.__init__ (torch/nn/parallel/distributed.py:867)"}, true, 1006.0);
  g.exit(1, 1012.5, std::nullopt, 9, false, 40);
  g.exit(0, 1012.6, 1, std::nullopt, false, 41);
  g.exit(2, 1012.6, 1, std::nullopt, false, 42);
  apply_run_evidence(g.in, g.r, false);
  CHECK(g.r.phase == "init");
}

TEST_CASE("a SIGKILLed rank of a program that prints no progress: the phase from its peers' tracebacks") {
  // accelerate 1.15's test_script: rank 0's traceback runs through training_check.
  Fixture f;
  for (int k : {0, 1, 2}) f.in.ranks[k].progress.reset();
  f.rank(0).last_phase = "training";
  f.rank(0).failure_ref = "ranks/0/stderr.log:34";
  f.rank(2).last_phase = "unknown";
  f.exit(1, 1012.5, std::nullopt, 9, false, 40);
  f.exit(0, 1012.6, 1, std::nullopt, false, 41);
  f.exit(2, 1012.6, 1, std::nullopt, false, 42);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.missing_ranks == std::vector<int>{1});
  CHECK(f.r.phase == "training");
  bool cited = false;
  for (const auto& e : f.r.evidence) cited = cited || e.ref == "ranks/0/stderr.log:34";
  CHECK(cited);
}

TEST_CASE("a frozen rank of a program that prints no progress: the phase from the stacks' frames") {
  Fixture f;
  for (int k : {0, 1, 2}) f.in.ranks[k].progress.reset();
  f.in.harness.teardown_t = 1021;
  f.in.harness.detections.push_back({1020.1, 30, "harness_watchdog", -1, "no progress on any live rank for 8.1 s"});
  // The stopped culprit stands in a helper that names no phase; its peers wait in an
  // all_gather called from accelerate's training_check (py-spy, innermost first).
  f.stack(1, "T", {"check_seedable_sampler (accelerate/test_utils/scripts/test_script.py:300)",
                   "main (accelerate/test_utils/scripts/test_script.py:880)"}, true, 1020.3);
  for (int k : {0, 2})
    f.stack(k, "S", {"all_gather (torch/distributed/distributed_c10d.py:5315)",
                     "are_the_same_tensors (accelerate/test_utils/testing.py:727)",
                     "training_check (accelerate/test_utils/scripts/test_script.py:456)",
                     "main (accelerate/test_utils/scripts/test_script.py:893)"}, true, 1020.3);
  for (int k : {0, 1, 2}) f.exit(k, 1021.5, std::nullopt, 15, true, 60 + k);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.cause == "frozen");
  CHECK(f.r.missing_ranks == std::vector<int>{1});
  CHECK(f.r.phase == "training");
  // A stopped culprit whose own frames name the loop: "Trainer._inner_training_loop".
  Fixture g;
  for (int k : {0, 1, 2}) g.in.ranks[k].progress.reset();
  g.in.harness.teardown_t = 1021;
  g.in.harness.detections.push_back({1020.1, 30, "harness_watchdog", -1, "no progress on any live rank for 8.1 s"});
  g.stack(1, "T", {"Trainer._get_num_items_in_batch (transformers/trainer.py:2330)",
                   "Trainer._inner_training_loop (transformers/trainer.py:1660)"}, true, 1020.3);
  for (int k : {0, 2}) g.stack(k, "S", {"all_gather (torch/distributed/distributed_c10d.py:5315)"}, true, 1020.3);
  for (int k : {0, 1, 2}) g.exit(k, 1021.5, std::nullopt, 15, true, 60 + k);
  apply_run_evidence(g.in, g.r, false);
  CHECK(g.r.phase == "training");
  // Stopped inside DDP's construction (init frames, innermost first) of a model training_check wraps after
  // the job has trained, while a peer already waits in the backward pass's allreduce: the job is past init.
  Fixture h;
  for (int k : {0, 1, 2}) h.in.ranks[k].progress.reset();
  h.in.harness.teardown_t = 1021;
  h.in.harness.detections.push_back({1020.1, 30, "harness_watchdog", -1, "no progress on any live rank for 8.1 s"});
  h.stack(1, "T", {"_sync_module_states (torch/distributed/utils.py:299)",
                   "DistributedDataParallel.__init__ (torch/nn/parallel/distributed.py:850)",
                   "Accelerator.prepare_model (accelerate/accelerator.py:1850)",
                   "training_check (accelerate/test_utils/scripts/test_script.py:464)"}, true, 1020.3);
  h.stack(0, "S", {"_engine_run_backward (torch/autograd/graph.py:825)", "backward (torch/_tensor.py:626)",
                   "training_check (accelerate/test_utils/scripts/test_script.py:472)"}, true, 1020.3);
  h.stack(2, "S", {"_sync_module_states (torch/distributed/utils.py:299)",
                   "DistributedDataParallel.__init__ (torch/nn/parallel/distributed.py:850)"}, true, 1020.3);
  for (int k : {0, 1, 2}) h.exit(k, 1021.5, std::nullopt, 15, true, 60 + k);
  apply_run_evidence(h.in, h.r, false);
  CHECK(h.r.cause == "frozen");
  CHECK(h.r.phase == "training");
  // Every rank in the construction: the job is in init (a hang at the first wrap, as at start-up).
  Fixture i;
  for (int k : {0, 1, 2}) i.in.ranks[k].progress.reset();
  i.in.harness.teardown_t = 1021;
  i.in.harness.detections.push_back({1020.1, 30, "harness_watchdog", -1, "no progress on any live rank for 8.1 s"});
  for (int k : {0, 1, 2})
    i.stack(k, k == 1 ? "T" : "S", {"_sync_module_states (torch/distributed/utils.py:299)",
                                     "DistributedDataParallel.__init__ (torch/nn/parallel/distributed.py:850)",
                                     "main (train.py:40)"}, true, 1020.3);
  for (int k : {0, 1, 2}) i.exit(k, 1021.5, std::nullopt, 15, true, 60 + k);
  apply_run_evidence(i.in, i.r, false);
  CHECK(i.r.phase == "init");
}

TEST_CASE("an exception exit reported a moment after a peer's echo exit still names the signal death") {
  Fixture f;
  f.exit(0, 1012.50, 1, std::nullopt, false, 40);  // waitpid order is not cause order
  f.exit(2, 1012.55, std::nullopt, 9, false, 41);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.missing_ranks == std::vector<int>{2});
  f = Fixture();
  f.exit(1, 1012.5, 1, std::nullopt, false, 40);
  f.exit(0, 1013.0, 1, std::nullopt, false, 41);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.missing_ranks == std::vector<int>{1});
  CHECK(f.r.cause == "exception");
}

TEST_CASE("exit codes alone do not overturn a culprit the logs named -- a signal death does") {
  Fixture f;  // a skipped collective: the culprit exits 0, its peers' echoes exit 1 first
  f.r.category = "collective_mismatch";
  f.r.cause = "skipped_collective";
  f.r.missing_ranks = {1};
  f.exit(2, 1012.0, 1, std::nullopt, false, 40);
  f.exit(1, 1012.1, 0, std::nullopt, false, 41);
  f.exit(0, 1012.2, 1, std::nullopt, false, 42);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "collective_mismatch");
  CHECK(f.r.missing_ranks == std::vector<int>{1});
  CHECK(f.rank(1).liveness == "completed");
  CHECK(f.rank(2).liveness == "dead");
  f = Fixture();
  f.r.category = "rank_exit";
  f.r.missing_ranks = {0};
  f.exit(0, 1012.2, 1, std::nullopt, false, 42);
  f.exit(2, 1012.0, std::nullopt, 9, false, 40);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.missing_ranks == std::vector<int>{2});
}

TEST_CASE("a signal death in the exit path of an error the logs counted as an echo does not overturn them") {
  // python_ddp_skip_backward under torch 2.15: rank 1 finished and left; rank 0 raised "Connection
  // closed by peer" (an echo), printed its traceback, then aborted in Py_FinalizeEx (SIGABRT).
  Fixture f;
  f.r.category = "collective_mismatch";
  f.r.cause = "skipped_collective";
  f.r.missing_ranks = {1};
  f.r.echoes.push_back(Failure{0, 1012.05, "RuntimeError: ... Connection closed by peer", "ranks/0/stderr.log:21"});
  f.r.echoes.push_back(Failure{2, 1012.06, "RuntimeError: ... Connection closed by peer", "ranks/2/stderr.log:21"});
  f.exit(1, 1012.04, 0, std::nullopt, false, 40);
  f.exit(0, 1012.07, std::nullopt, 6, false, 41);
  f.exit(2, 1013.0, 1, std::nullopt, false, 42);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "collective_mismatch");
  CHECK(f.r.cause == "skipped_collective");
  CHECK(f.r.missing_ranks == std::vector<int>{1});
  CHECK(*f.rank(0).signal == 6);
  CHECK(f.rank(0).liveness == "dead");
  // The same abort with no error of its own logged before it is a death of its own.
  Fixture g;
  g.r.category = "collective_mismatch";
  g.r.cause = "skipped_collective";
  g.r.missing_ranks = {1};
  g.r.echoes.push_back(Failure{0, 1012.50, "RuntimeError: ... Connection closed by peer", "ranks/0/stderr.log:21"});
  g.exit(1, 1012.04, 0, std::nullopt, false, 40);
  g.exit(0, 1012.07, std::nullopt, 6, false, 41);
  apply_run_evidence(g.in, g.r, false);
  CHECK(g.r.category == "rank_exit");
  CHECK(g.r.cause == "crashed");
  CHECK(g.r.missing_ranks == std::vector<int>{0});
  // A peer's SIGKILL reported after such an abort is still the death that decides.
  Fixture k;
  k.r.category = "network";
  k.r.cause = "connection_lost";
  k.r.missing_ranks = {1};
  k.r.echoes.push_back(Failure{0, 1012.05, "RuntimeError: ... Connection closed by peer", "ranks/0/stderr.log:21"});
  k.exit(0, 1012.07, std::nullopt, 6, false, 41);
  k.exit(2, 1012.10, std::nullopt, 9, false, 42);
  apply_run_evidence(k.in, k.r, false);
  CHECK(k.r.category == "rank_exit");
  CHECK(k.r.cause == "killed");
  CHECK(k.r.missing_ranks == std::vector<int>{2});
}

TEST_CASE("a rank that exited of a cause its own log named keeps the cause (wrong socket interface)") {
  // A Python rank's init_process_group raised "Unable to find address for: hanglab_none0": the
  // plain-log reading says network/wrong_ifname, rank 1 (no missing ranks: the logs cannot tell
  // who was left), and rank 1 is the first to exit, code 1 (scenarios/tooling/wrong_socket_ifname).
  Fixture f;
  f.r.phase = "init";
  f.r.category = "network";
  f.r.cause = "wrong_ifname";
  f.r.first_failure = Failure{1, 1005.2, "Unable to find address for: hanglab_none0", "ranks/1/stderr.log:30"};
  f.exit(1, 1005.3, 1, std::nullopt, false, 40);
  f.exit(0, 1006.0, std::nullopt, 15, true, 41);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "network");
  CHECK(f.r.cause == "wrong_ifname");
  CHECK(f.r.missing_ranks == std::vector<int>{1});
  // The same first exit after the logs named another rank's failure: the exit decides, as before.
  f = Fixture();
  f.r.category = "network";
  f.r.cause = "wrong_ifname";
  f.r.first_failure = Failure{2, 1005.2, "Unable to find address for: eth9", "ranks/2/stderr.log:30"};
  f.exit(1, 1005.3, 1, std::nullopt, false, 40);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "rank_exit");
  CHECK(f.r.cause == "exception");
}

TEST_CASE("a stopped rank outranks its peers' timeout exits") {
  Fixture f;
  f.exit(0, 1019, 1, std::nullopt, false, 40);
  f.exit(1, 1019, 1, std::nullopt, false, 41);
  f.in.harness.teardown_t = 1026;
  f.exit(2, 1026.5, std::nullopt, 9, true, 50);
  f.stack(2, "T", {"main (train.py:148)", "<module> (train.py:164)"}, true, 1025.5);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "straggler");
  CHECK(f.r.cause == "frozen");
  CHECK(f.r.missing_ranks == std::vector<int>{2});
  CHECK(f.rank(2).liveness == "frozen");
  CHECK(f.rank(2).proc_state == "T");
  CHECK(f.rank(0).liveness == "dead");
  CHECK(f.r.phase == "training");
}

TEST_CASE("a save on stalled storage that trips the watchdog: checkpoint, slow not dead, detector in context") {
  Fixture f;
  f.in.harness.teardown_t = 1021;
  f.in.harness.detections.push_back({1020.1, 30, "harness_watchdog", -1, "no progress on any live rank for 8.1 s"});
  f.stack(0, "D", {"__exit__ (torch/serialization.py:499)", "save (torch/serialization.py:850)",
                   "main (progress_train.py:61)"}, true, 1020.3);
  for (int k : {1, 2})
    f.stack(k, "S", {"_engine_run_backward (torch/autograd/graph.py:768)", "backward (torch/_tensor.py:521)",
                     "main (progress_train.py:55)"}, true, 1020.3);
  for (int k : {0, 1, 2}) f.exit(k, 1021.5, std::nullopt, 9, true, 60 + k);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "straggler");
  CHECK(f.r.cause == "slow_storage");
  CHECK(f.r.phase == "checkpoint");
  CHECK(f.r.missing_ranks == std::vector<int>{0});
  CHECK(f.rank(0).liveness == "slow");
  CHECK(f.rank(1).liveness == "hung");
  CHECK(f.rank(0).stack_class == "io");
  CHECK(f.rank(0).top_frames.size() == 3);
  CHECK(f.r.detector_context.find("harness_watchdog after 8.1 s") != std::string::npos);
  CHECK(f.r.detector_context.find("rank 0 was in torch.save for 8.3 s") != std::string::npos);
  CHECK(f.r.detector_context.find("waiting in the DDP gradient allreduce") != std::string::npos);
  CHECK(f.r.detector_context.find("slow, not dead") != std::string::npos);
  CHECK(f.r.detector_context.find("progress_s (8 s) is below") != std::string::npos);
}

TEST_CASE("a library's own save (not torch.save) is named by its frames -- the last step comes from the counters") {
  // TRL 1.16's SFTTrainer under slow storage, as py-spy read it (scenarios/thirdparty/trl_slow_checkpoint).
  Fixture f;
  for (int k : {0, 1, 2}) f.in.ranks[k].progress->steps_done = k == 0 ? 300 : std::optional<long long>();
  f.in.ranks[2].progress->steps_done = 412;
  f.in.harness.teardown_t = 1021;
  f.in.harness.detections.push_back({1020.1, 30, "harness_watchdog", -1, "no progress on any live rank for 8.1 s"});
  f.stack(0, "S", {"RepoCard.save (huggingface_hub/repocard.py:132)",
                   "_BaseTrainer.create_model_card (trl/trainer/base_trainer.py:210)",
                   "SFTTrainer._save_checkpoint (trl/trainer/sft_trainer.py:1714)",
                   "Trainer._maybe_log_save_evaluate (transformers/trainer.py:2285)"}, true, 1020.3);
  for (int k : {1, 2})
    f.stack(k, "S", {"all_gather (torch/distributed/distributed_c10d.py:5315)",
                     "distributed_broadcast_scalars (transformers/trainer_pt_utils.py:200)"}, true, 1020.3);
  for (int k : {0, 1, 2}) f.exit(k, 1021.5, std::nullopt, 15, true, 60 + k);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.phase == "checkpoint");
  CHECK(f.r.missing_ranks == std::vector<int>{0});
  CHECK(f.rank(0).liveness == "slow");
  CHECK(f.r.detector_context.find("torch.save") == std::string::npos);
  CHECK(f.r.detector_context.find("a checkpoint save (SFTTrainer._save_checkpoint") != std::string::npos);
  CHECK(f.r.detector_context.find("in RepoCard.save") != std::string::npos);
  // The fewest steps a counting rank reported (rank 1 counts none).
  CHECK(f.r.last_good_step == 300);
}

TEST_CASE("a traced run keeps its verdict -- the table gets states and frames") {
  Fixture f;
  f.r.category = "rank_exit";
  f.r.missing_ranks = {2};
  f.stack(0, "S", {"c10d::ProcessGroupGloo::AsyncWork::wait"}, true, 1020);
  f.exit(1, 1012.5, std::nullopt, 9, false, 40);
  apply_run_evidence(f.in, f.r, true);
  CHECK(f.r.category == "rank_exit");
  CHECK(f.r.missing_ranks == std::vector<int>{2});
  CHECK(f.rank(0).stack_class == "collective");
  CHECK(f.rank(1).exit_t == 1012.5);
}

TEST_CASE("every rank exited 0 on its own: nothing failed, whatever the logs lacked") {
  Fixture f;
  for (int rank = 0; rank < 3; ++rank) f.exit(rank, 1013 + 0.1 * rank, 0, std::nullopt, false, 40 + rank);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "none");
  CHECK(f.r.cause == "none");
  CHECK(f.r.scope == "none");
  CHECK(f.r.missing_ranks.empty());
  for (int rank = 0; rank < 3; ++rank) CHECK(f.rank(rank).liveness == "completed");
}

TEST_CASE("the same with no progress lines (a script that prints nothing a table knows)") {
  Fixture f;
  for (auto& [rank, o] : f.in.ranks) o.progress.reset();
  for (int rank = 0; rank < 3; ++rank) f.exit(rank, 1013 + 0.1 * rank, 0, std::nullopt, false, 40 + rank);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "none");
  CHECK(f.r.cause == "none");
}

TEST_CASE("a launcher's console (rank -1, no exit of its own) does not stop a clean run being clean") {
  Fixture f;
  RankObservations launcher;
  launcher.rank = -1;
  f.in.ranks[-1] = launcher;
  for (int rank = 0; rank < 3; ++rank) f.exit(rank, 1013 + 0.1 * rank, 0, std::nullopt, false, 40 + rank);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.category == "none");
}
TEST_CASE("a SIGTERM death reported with a peer's SIGKILL at the same moment is the launcher stopping a survivor") {
  // torchrun stops the survivors with SIGTERM as soon as a worker dies; both deaths reaped in one
  // pass carry one time.
  Fixture f;
  f.exit(0, 1012.5, std::nullopt, 15, false, 40);
  f.exit(1, 1012.5, std::nullopt, 9, false, 41);
  f.exit(2, 1012.5, std::nullopt, 15, false, 42);
  apply_run_evidence(f.in, f.r, false);
  CHECK(f.r.cause == "killed");
  CHECK(f.r.missing_ranks == std::vector<int>{1});
  REQUIRE(f.r.first_failure);
  CHECK(f.r.first_failure->evidence == "harness.jsonl:41");
}

namespace {

// A 2-rank run directory: rank 0 waits in allreduce seq 2 of step 2, rank 1 is alive (heartbeating) in
// phase data of step 2; the harness's watchdog tears both down. `rank1_log` is rank 1's stdout.log.
std::filesystem::path stuck_in_data_run(const std::string& name, const std::string& rank1_log) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hanglab_run_evidence_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir / "ranks/0");
  fs::create_directories(dir / "ranks/1");
  std::ofstream(dir / "harness.jsonl")
      << R"({"t":1000.0,"ev":"run_start","world_size":2,)"
         R"("timeouts":{"heartbeat_s":1,"collective_s":5,"init_s":30,"progress_s":10}})"
         "\n"
      << R"({"t":1000.1,"ev":"launch","rank":0,"pid":100})" "\n"
      << R"({"t":1000.1,"ev":"launch","rank":1,"pid":101})" "\n"
      << R"({"t":1030.0,"ev":"detect","detector":"harness_watchdog","rank":-1,"detail":"no progress for 10 s"})" "\n"
      << R"({"t":1030.5,"ev":"teardown","reason":"harness_watchdog"})" "\n"
      << R"({"t":1031.0,"ev":"exit","rank":0,"signal":15,"by_teardown":true})" "\n"
      << R"({"t":1031.0,"ev":"exit","rank":1,"signal":15,"by_teardown":true})" "\n";
  for (int r = 0; r < 2; ++r) {
    std::ofstream ev(dir / "ranks" / std::to_string(r) / "events.jsonl");
    ev << fmt::format(R"({{"t":1001.0,"ev":"start","pid":{},"rank":{}}})", 100 + r, r) << "\n"
       << R"({"t":1001.1,"ev":"phase","name":"init","edge":"begin"})" "\n"
       << R"({"t":1001.5,"ev":"phase","name":"init","edge":"end"})" "\n"
       << R"({"t":1002.2,"ev":"coll","edge":"begin","seq":1,"op":"allreduce","numel":10,"step":1})" "\n"
       << R"({"t":1002.3,"ev":"coll","edge":"end","seq":1})" "\n"
       << R"({"t":1002.4,"ev":"step","step":1,"dur_ms":400,"loss":2.0})" "\n";
    if (r == 0) {
      ev << R"({"t":1002.7,"ev":"phase","name":"backward","edge":"begin","step":2})" "\n"
         << R"({"t":1002.8,"ev":"coll","edge":"begin","seq":2,"op":"allreduce","numel":10,"step":2})" "\n";
    } else {
      ev << R"({"t":1002.5,"ev":"phase","name":"data","edge":"begin","step":2})" "\n";
    }
    for (int i = 0; i < 27; ++i) ev << fmt::format(R"({{"t":{}.0,"ev":"hb"}})", 1003 + i) << "\n";
  }
  std::ofstream(dir / "ranks/1/stdout.log") << rank1_log;
  return dir;
}

}  // namespace

// A rank stuck in data loading is out of /dev/shm only where a line the classifier reads says so: the
// loader's banner naming /dev/shm (workloads/loop/trainer.cpp) is no such line; MapAllocator's ENOSPC on
// a shared-memory object is.
TEST_CASE("run records: a data stall is shm_exhausted only by a line that proves it", "[run_evidence]") {
  const std::string banner =
      "2026-11-29T11:17:00.150000Z [rank 1] data loader: 2 worker process(es) (pids 7,8), prefetch 2 per worker, "
      "batches of 2.00 MiB through /dev/shm (write)\n";
  {
    const auto dir = stuck_in_data_run("banner", banner);
    const TriageResult r = analyze_run(load_run_observations(dir));
    CHECK(r.category == "data_loading");
    CHECK(r.cause == "data_loader_stall");
    CHECK(r.missing_ranks == std::vector<int>{1});
    std::filesystem::remove_all(dir);
  }
  {
    const auto dir = stuck_in_data_run(
        "enospc", banner +
                      "2026-11-29T11:17:02.000000Z [rank1]: RuntimeError: unable to write to file "
                      "</torch_3345_2361545085_0>: No space left on device (28)\n");
    const TriageResult r = analyze_run(load_run_observations(dir));
    CHECK(r.category == "data_loading");
    CHECK(r.cause == "shm_exhausted");
    CHECK(r.missing_ranks == std::vector<int>{1});
    bool cited = false;
    for (const auto& e : r.evidence) cited = cited || e.ref == "ranks/1/stdout.log:2";
    CHECK(cited);
    std::filesystem::remove_all(dir);
  }
}

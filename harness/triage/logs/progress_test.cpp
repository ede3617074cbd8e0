// The progress-line table: every entry's example parses to that entry with its fields, the
// common shapes give the right numbers, and prose that merely mentions a step does not count.
#include "triage/logs/progress.hpp"

#include <catch2/catch.hpp>
#include <set>
#include <string>

using namespace hanglab;

TEST_CASE("every progress pattern's example line parses to its own entry") {
  std::set<std::string> names;
  for (const auto& p : progress_patterns()) {
    INFO(p.name << ": " << p.example);
    CHECK(names.insert(std::string(p.name)).second);
    auto m = match_progress(p.example);
    REQUIRE(m);
    CHECK(m->pattern == p.name);
    CHECK((m->epoch || m->step));
  }
}

TEST_CASE("progress fields of the common shapes") {
  auto m = match_progress("[GPU1] Epoch 12 | Batchsize: 32 | Steps: 22");
  REQUIRE(m);
  CHECK(*m->epoch == 12);
  CHECK(!m->step);
  CHECK(*m->step_total == 22);
  CHECK(m->describe() == "epoch 12 (22 steps)");

  m = match_progress("[1/5][20/469] Loss_D: 0.65 Loss_G: 2.87");
  REQUIRE(m);
  CHECK(*m->epoch == 1);
  CHECK(*m->epoch_total == 5);
  CHECK(*m->step == 20);
  CHECK(*m->step_total == 469);

  m = match_progress("step 300/1000 loss 0.12");
  REQUIRE(m);
  CHECK(*m->step == 300);
  CHECK(*m->step_total == 1000);

  m = match_progress("[rank 2] step 29/200 loss 0.4183 dur_ms 101.2");
  REQUIRE(m);
  CHECK(*m->step == 29);

  m = match_progress("loss=0.31 iter=120");
  REQUIRE(m);
  CHECK(*m->step == 120);

  m = match_progress("Epoch 3");
  REQUIRE(m);
  CHECK(*m->epoch == 3);

  m = match_progress(R"({"global_step": 41, "loss": 0.5})");
  REQUIRE(m);
  CHECK(*m->step == 41);

  m = match_progress("{'loss': 0.6931, 'learning_rate': 4.9e-05, 'epoch': 0.04}");
  REQUIRE(m);
  CHECK(*m->epoch == Approx(0.04));

  m = match_progress(" iteration      120/   10000 | consumed samples:  61440 | lm loss: 7.1E+00 |");
  REQUIRE(m);
  CHECK(*m->step == 120);
  CHECK(*m->step_total == 10000);

  m = match_progress("Epoch 0: 100%|##########| 469/469 [00:31<00:00, 15.01it/s, v_num=3]");
  REQUIRE(m);
  CHECK(m->pattern == "lightning_bar");
  CHECK(*m->epoch == 0);
  CHECK(*m->step == 469);

  // The epoch and the batch within it in words (PaddlePaddle v2's "Pass N, Batch M"; many scripts' "Epoch N, Batch M").
  m = match_progress("[INFO 2019-01-16 12:49:48,651 train.py:110] Pass 11, Batch 140, Cost 1.168355, {'err': 0.26}");
  REQUIRE(m);
  CHECK(m->pattern == "epoch_batch_words");
  CHECK(*m->epoch == 11);
  CHECK(*m->step == 140);
  m = match_progress("Epoch 3/10, Batch 20/469, loss 0.41");
  REQUIRE(m);
  CHECK(*m->epoch == 3);
  CHECK(*m->step == 20);
  CHECK(*m->step_total == 469);
  CHECK(m->steps_done() == 3 * 469 + 20);
  CHECK(!match_progress("Batch size 32, shuffling the pass 2 cache"));
}

TEST_CASE("a tqdm bar redrawn with carriage returns is read at its newest state") {
  auto m = match_progress("  1%|          | 5/469 [00:01<01:30]\r 10%|#         | 47/469 [00:09<01:20]\r");
  REQUIRE(m);
  CHECK(m->pattern == "tqdm");
  CHECK(*m->step == 47);
  CHECK(*m->step_total == 469);
}

TEST_CASE("a library's other tqdm bars (loading, dataset maps, downloads, evaluation) are not training steps") {
  // Verbatim shapes from transformers 5.24 / datasets 5.2 / TRL 1.16 stderr.
  for (const char* line :
       {"Loading weights: 100%|\xe2\x96\x88\xe2\x96\x88| 28/28 [00:00<00:00, 30322.88it/s]",
        "Tokenizing train dataset: 100%|\xe2\x96\x88\xe2\x96\x88| 400/400 [00:00<00:00, 4609.44 examples/s]",
        "Map: 100%|##########| 400/400 [00:00<00:00, 9855.27 examples/s]",
        "Writing model shards: 100%|##########| 1/1 [00:00<00:00, 129.01it/s]",
        "Validation DataLoader 0:  50%|#####     | 2/4 [00:00<00:00, 20.1it/s]",
        " 30%|###       | 300M/1.00G [00:10<00:20, 30.0MB/s]",
        "Downloading: 45%|####5     | 212/469 [00:10<00:12, 20.10it/s]"}) {
    INFO(line);
    CHECK(!match_progress(line));
  }
  // The training loop's own bars still count, tagged or described as training.
  for (const char* line : {"  8%|\xe2\x96\x8a         | 5/60 [00:00<00:03, 14.66it/s]",
                           "[rank 0]: 45%|####5     | 212/469 [00:10<00:12, 20.10it/s]",
                           "Training:  45%|####5     | 212/469 [00:10<00:12,  1.20s/it]",
                           "Iteration: 10%|#         | 47/469 [00:09<01:20]"}) {
    INFO(line);
    auto m = match_progress(line);
    REQUIRE(m);
    CHECK(m->pattern == "tqdm");
  }
}

TEST_CASE("prose, errors and paths are not progress") {
  for (const char* line : {"RuntimeError: [rank 1] injected failure at step 7",
                           "Traceback (most recent call last):",
                           "  File \"/opt/train.py\", line 148, in step_fn",
                           "saving checkpoint to /ckpt/epoch_3/model.pt",
                           "OSError: [Errno 5] Input/output error: '/run/ckpt/checkpoints/epoch=130-step=4192.ckpt'",
                           "Saving /ckpt/step=300/model.pt",
                           "the next epoch 4 will use a new seed",
                           "[E ProcessGroupGloo.cpp:138] Rank 1 successfully reached monitoredBarrier",
                           "Steps: 22", "{\"loss\": 0.1}", "{not json, step: 3"}) {
    INFO(line);
    CHECK(!match_progress(line));
  }
}

TEST_CASE("steps done over the run: run-wide counters as they are, per-epoch counters times the epoch") {
  auto steps = [](const char* line) { return match_progress(line).value().steps_done(); };
  CHECK(steps(" 45%|####5     | 212/469 [00:10<00:12, 20.10it/s]") == 212);
  CHECK(steps("Epoch 3:  45%|####5     | 212/469 [00:10<00:12, 20.10it/s, v_num=0]") == 3 * 469 + 212);
  CHECK(steps("[1/5][20/469] Loss_D: 0.6517 Loss_G: 2.8713") == 469 + 20);
  // Lightning 2.6's RichProgressBar, verbatim from a run (max_epochs = -1 prints "/-2").
  CHECK(steps("Epoch 111/-2 \xe2\x94\x81\xe2\x94\x81\xe2\x94\x81\xe2\x95\xb8               17/32 0:00:01 "
              "\xe2\x80\xa2 0:00:01 325.13it/s") == 111 * 32 + 17);
  CHECK(steps("Epoch: [2][ 10/5005]\tTime  0.512 ( 0.640)") == 2 * 5005 + 10);
  CHECK(steps("train: loss=0.3125 iter=120 lr=0.001") == 120);
  CHECK(steps(" iteration       20/  500000 | consumed samples:        10240 |") == 20);
  // Counts that are not steps: samples, batches per epoch, an epoch alone.
  CHECK(!steps("Train Epoch: 1 [640/60000 (1%)]\tLoss: 2.283364"));
  CHECK(!steps("[GPU1] Epoch 12 | Batchsize: 32 | Steps: 22"));
  CHECK(!steps("Epoch 3/10 - loss: 0.2211 - accuracy: 0.9312"));
}

TEST_CASE("mmengine's iteration header: training mode counts steps, val/test count no training") {
  // mmengine/runner/log_processor.py get_log_after_iter: f'Epoch({mode}){cur_epoch_str}[{cur_iter_str}/{dataloader_len}]  '
  auto m = match_progress("10/26 11:20:02 - mmengine - INFO - Epoch(train)   [9][100/270]  lr: 1.0e-04  loss: 0.31");
  REQUIRE(m);
  CHECK(m->pattern == "mmengine");
  CHECK(*m->epoch == 9);
  CHECK(*m->step == 100);
  CHECK(*m->step_total == 270);
  CHECK(*m->steps_done() == 8 * 270 + 100);  // epochs from 1
  m = match_progress("2024/01/02 10:00:00 - mmengine - INFO - Iter(train) [ 4200/80000]  lr: 1.0e-02  loss: 0.52");
  REQUIRE(m);
  CHECK(m->pattern == "mmengine");
  CHECK(*m->steps_done() == 4200);
  // Evaluation batches: not training progress.
  CHECK(!match_progress("10/26 11:25:41 - mmengine - INFO - Epoch(val)  [2][3400/3402]    eta: 0:00:00  time: 0.1484"));
  CHECK(!match_progress("10/26 11:25:41 - mmengine - INFO - Epoch(test) [100/500]    eta: 0:00:10  time: 0.1484"));
  CHECK(!match_progress("10/26 11:25:41 - mmengine - INFO - Iter(val) [100/500]    eta: 0:00:10  time: 0.1484"));
}

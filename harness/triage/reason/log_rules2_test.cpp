// Unit tests of the plain-log reasoning rules on logs written by the tests, continued (the first
// part is log_rules_test.cpp): mismatches whose side is not provable, NCCL socket errors, launchers'
// and the kernel's notices of a death, DETAIL mode, a rank evaluating alone, phases from tracebacks
// and stacks, chained tracebacks, the launcher's teardown.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "triage/log_test_support.hpp"
#include "triage/logs/parse.hpp"
#include "triage/logs/patterns.hpp"
#include "triage/logs/reader.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

namespace fs = std::filesystem;
using namespace hanglab;
using namespace hanglab::logtest;
using nlohmann::json;

TEST_CASE("two ranks, one stuck and one gone on: a mismatch, but which side skipped is not in the logs",
          "[triage_logs]") {
  TempDir t("two_rank_ahead");
  std::string r0, r1;
  for (int step = 1; step <= 11; ++step) {
    r0 += fmt::format("2026-12-02T04:33:{:02d}.100000Z [rank 0] step {}/12 loss 0.5 dur_ms 100\n", step, step);
    r1 += fmt::format("2026-12-02T04:33:{:02d}.100000Z [rank 1] step {}/12 loss 0.5 dur_ms 100\n", step, step);
  }
  r1 += "2026-12-02T04:33:12.100000Z [rank 1] step 12/12 loss 0.5 dur_ms 100\n"
        "2026-12-02T04:33:12.200000Z [rank 1] lingering after the training loop until killed\n";
  r0 += "2026-12-02T04:33:17.200000Z [rank 0] ERROR (timeout) in backward at step 12: Timed out waiting 5000ms "
        "for recv operation to complete (in allreduce seq 24, numel 4225)\n";
  write_file(t.dir / "rank0.log", r0);
  write_file(t.dir / "rank1.log", r1);
  TriageOptions o;
  o.world_size = 2;
  const auto r = triage_logs({t.dir}, o);
  INFO(render_text(r));
  CHECK(r.category == "collective_mismatch");
  CHECK(r.missing_ranks.empty());
  bool says = false;
  for (const auto& n : r.notes) says |= n.find("undecidable from these logs") != std::string::npos;
  CHECK(says);
}

TEST_CASE("an NCCL socket that timed out is the link, one reset or closed is a peer gone (undecided)", "[triage_logs]") {
  // ETIMEDOUT: the peer's host never answered; the proxy's error trace that follows is its echo.
  TempDir t("sock_timeout");
  write_file(t.dir / "nccl.log",
             "w-2:83:2526 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from 10.0.0.9<41468> failed : Connection "
             "timed out\n"
             "w-2:83:2526 [0] NCCL INFO misc/socket.cc:520 -> 2\n"
             "w-2:83:2526 [0] transport/net_socket.cc:219 NCCL WARN NET/Socket : socket progress error\n"
             "w-2:83:2520 [0] NCCL INFO proxy.cc:614 -> 2 [Proxy Thread]\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "network");
  CHECK(r.cause == "connection_timeout");
  CHECK(r.missing_ranks.empty());
  // A reset alone: a dead peer and a reset link look the same from this side.
  TempDir t2("sock_reset");
  write_file(t2.dir / "nccl.log",
             "w-2:15:91 [3] include/socket.h 398 NCCL WARN Call to recv failed : Connection reset by peer.\n"
             "w-2:15:91 [3] transport.cu:153 NCCL WARN transport.cu:153 ->2 [Proxy thread error]\n");
  r = triage_logs({t2.dir});
  CHECK(r.category == "unknown");
  CHECK(r.missing_ranks.empty());
  // The EFA provider's "invalid receiver QPN" is a crashed peer's echo, not an EFA fault.
  TempDir t3("efa_qpn");
  write_file(t3.dir / "nccl.log",
             "w-0:199:263 [2] process_err_completion:1562 NCCL WARN NET/OFI Request 0x7f08c0001d30 completed with "
             "error. RC: 5. Error: Invalid receiver queue pair number (QPN) My EFA addr: fi_addr_efa://[fe80::1]:0:1\n");
  r = triage_logs({t3.dir});
  CHECK(r.category != "network");
  CHECK(r.missing_ranks.empty());
}

TEST_CASE("torch.distributed.launch's CalledProcessError: the worker that died, and of what", "[triage_logs]") {
  TempDir t("called_process");
  write_file(t.dir / "launch.log",
             "Traceback (most recent call last):\n"
             "  File \"/opt/conda/lib/python3.7/site-packages/torch/distributed/launch.py\", line 259, in main\n"
             "    cmd=cmd)\n"
             "subprocess.CalledProcessError: Command '['/opt/conda/bin/python3', '-u', 'train.py', '--local_rank=2', "
             "'--epochs', '90']' died with <Signals.SIGSEGV: 11>.\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "segfault");
}

TEST_CASE("the kernel's segfault report of a pid belongs to the rank that pid is", "[triage_logs]") {
  TempDir t("kernel_segv");
  write_file(t.dir / "rank-0.log",
             "2026-12-01T10:00:00Z node1:4241:4300 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init "
             "COMPLETE\n"
             "2026-12-01T10:00:05Z step 1\n");
  write_file(t.dir / "rank-1.log",
             "2026-12-01T10:00:00Z node1:4242:4301 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 busId 2000 - Init "
             "COMPLETE\n"
             "2026-12-01T10:00:05Z step 1\n");
  write_file(t.dir / "dmesg.log",
             "[Tue Dec  1 10:00:06 2026] python3[4242]: segfault at 8 ip 00007f10a6fc1202 sp 00007ffd1c2e8a10 error 4 "
             "in libnccl.so.2[7f10a0000000+9a00000]\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "segfault");
  CHECK(r.missing_ranks == std::vector<int>{1});
}

namespace {
// A DETAIL-mode ProcessGroupWrapper INFO line, as PyTorch 2.x writes it.
std::string entered(int rank, int seq, const char* op, const char* shape, const char* dtype) {
  return fmt::format("[I ProcessGroupWrapper.cpp:562] [Rank {}] Running collective: CollectiveFingerPrint("
                     "SequenceNumber={}, OpType={}, TensorShape=[{}], TensorDtypes={}, TensorDeviceTypes="
                     "TensorOptions(dtype=float (default), device=cuda, layout=Strided (default), requires_grad=false "
                     "(default), pinned_memory=false (default), memory_format=(nullopt)))\n",
                     rank, seq, op, shape, dtype);
}
}  // namespace

TEST_CASE("DETAIL mode: a rank whose last entered collective is behind its peers' never entered theirs",
          "[triage_logs]") {
  TempDir t("detail_lag");
  std::string log;
  for (int seq = 1; seq <= 3; ++seq) {
    for (int r : {0, 1, 2, 3}) log += entered(r, seq, "BROADCAST", "1", "Long");
  }
  SECTION("another op or size than the peers run: mismatched, the lagging rank named") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "73", "Byte");
    write_file(t.dir / "train.log", log);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "collective_mismatch");
    CHECK(r.cause == "mismatched_collective");
    CHECK(r.missing_ranks == std::vector<int>{1});
    REQUIRE(r.first_failure);
    CHECK(r.first_failure->rank == 1);
    CHECK(r.phase == "training");
  }
  SECTION("the same collective one behind: skipped") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "1", "Long");
    write_file(t.dir / "train.log", log);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "collective_mismatch");
    CHECK(r.cause == "skipped_collective");
    CHECK(r.missing_ranks == std::vector<int>{1});
  }
  SECTION("ranks of the world that logged nothing could be on either side: no rank named") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "73", "Byte");
    write_file(t.dir / "train.log", log);
    TriageOptions o;
    o.world_size = 8;
    const auto r = triage_logs({t.dir}, o);
    INFO(render_text(r));
    CHECK(r.missing_ranks.empty());
    CHECK(r.cause != "mismatched_collective");
  }
  SECTION("sequence numbers that count down on a rank are several process groups': not compared") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "73", "Byte");
    log += entered(1, 2, "ALLGATHER", "8", "Float");  // a subgroup's counter, its local rank 1
    write_file(t.dir / "train.log", log);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.missing_ranks.empty());
    CHECK(r.category != "collective_mismatch");
  }
  SECTION("a lagging rank that was killed stopped entering collectives by its death") {
    for (int r : {0, 2, 3}) log += entered(r, 4, "BROADCAST", "73", "Byte");
    log += "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
           "capacity of 79.10 GiB of which 1.06 GiB is free.\n";
    write_file(t.dir / "train.log", log);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category != "collective_mismatch");
  }
}

TEST_CASE("a rank evaluating alone while its peers wait in a collective is a slow rank in eval", "[triage_logs]") {
  TempDir t("eval_alone");
  std::string r0, peers;
  for (int step = 1; step <= 5; ++step) {
    for (int r = 0; r < 4; ++r)
      (r == 0 ? r0 : peers) += fmt::format("2026-12-02T05:00:{:02d}.000000Z [rank{}]: step {} loss 0.5\n", step, r, step);
  }
  r0 += "2026-12-02T05:00:06.000000Z [rank0]: Running validation on 200 prompts\n";
  SECTION("the peers are not evaluating: rank 0 holds them") {
    for (int r = 1; r < 4; ++r)
      peers += fmt::format("2026-12-02T05:30:06.100000Z [rank{0}]:[E1202 05:30:06.100000000 ProcessGroupNCCL.cpp:607] "
                           "[Rank {0}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, "
                           "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800090 "
                           "milliseconds before timing out.\n",
                           r);
    write_file(t.dir / "rank0.log", r0);
    write_file(t.dir / "peers.log", peers);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "straggler");
    CHECK(r.cause == "slow_rank");
    CHECK(r.missing_ranks == std::vector<int>{0});
    CHECK(r.phase == "eval");
  }
  SECTION("its evaluation ended only after the peers had timed out: it came back, slow") {
    r0 += "2026-12-02T05:41:00.000000Z [rank0]: validation finished: accuracy 0.71\n";
    for (int r = 1; r < 4; ++r)
      peers += fmt::format("2026-12-02T05:30:06.100000Z [rank{0}]:[E1202 05:30:06.100000000 ProcessGroupNCCL.cpp:607] "
                           "[Rank {0}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, "
                           "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800090 "
                           "milliseconds before timing out.\n",
                           r);
    write_file(t.dir / "rank0.log", r0);
    write_file(t.dir / "peers.log", peers);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "straggler");
    CHECK(r.cause == "slow_rank");
    CHECK(r.missing_ranks == std::vector<int>{0});
    CHECK(r.phase == "eval");
  }
  SECTION("the peers evaluate too: uneven evaluation batches fit as well, no slow rank is claimed") {
    for (int r = 1; r < 4; ++r) {
      peers += fmt::format("2026-12-02T05:00:06.000000Z [rank{}]: Running validation on 200 prompts\n", r);
      peers += fmt::format("2026-12-02T05:30:06.100000Z [rank{0}]:[E1202 05:30:06.100000000 ProcessGroupNCCL.cpp:607] "
                           "[Rank {0}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, "
                           "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800090 "
                           "milliseconds before timing out.\n",
                           r);
    }
    write_file(t.dir / "rank0.log", r0);
    write_file(t.dir / "peers.log", peers);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.cause != "slow_rank");
  }
}

TEST_CASE("phase from a traceback: its innermost frame that names a phase", "[triage_logs]") {
  // Start-up, although collectives ran (a CUDA-graph capture at server start, the shape of
  // gh-sglang-16237): the frames say init, the fingerprint's sequence number does not say training.
  TempDir t("frame_init");
  write_file(t.dir / "server.log",
             "Traceback (most recent call last):\n"
             "  File \"/w/srt/model_executor/model_runner.py\", line 511, in initialize\n"
             "    self.init_device_graphs()\n"
             "  File \"/w/srt/model_executor/model_runner.py\", line 2448, in init_device_graphs\n"
             "    self.graph_runner = graph_runners[self.device](self)\n"
             "  File \"/w/srt/model_executor/cuda_graph_runner.py\", line 354, in __init__\n"
             "    raise Exception(\n"
             "Exception: Capture cuda graph failed: Detected mismatch between collectives on ranks. Rank 3 is "
             "running collective: CollectiveFingerPrint(SequenceNumber=17OpType=BARRIER), but Rank 0 is running "
             "collective: CollectiveFingerPrint(SequenceNumber=45OpType=BARRIER).\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "collective_mismatch");
  CHECK(r.phase == "init");
  // The same traceback after the job had logged its steps: a start-up frame does not undo them.
  TempDir t2("frame_init_after_steps");
  write_file(t2.dir / "server.log",
             "step 40 loss 1.25\n"
             "Traceback (most recent call last):\n"
             "  File \"/w/srt/model_executor/model_runner.py\", line 511, in initialize\n"
             "Exception: Capture cuda graph failed: Detected mismatch between collectives on ranks. Rank 3 is "
             "running collective: CollectiveFingerPrint(SequenceNumber=17OpType=BARRIER), but Rank 0 is running "
             "collective: CollectiveFingerPrint(SequenceNumber=45OpType=BARRIER).\n");
  r = triage_logs({t2.dir});
  CHECK(r.phase == "training");
  // A rank's own traceback: the save inside the training loop decides (innermost wins).
  TempDir t3("frame_save");
  write_file(t3.dir / "train.log",
             "[rank1]: Traceback (most recent call last):\n"
             "[rank1]:   File \"/w/transformers/trainer.py\", line 1938, in _inner_training_loop\n"
             "[rank1]:   File \"/w/transformers/trainer.py\", line 2390, in _save_checkpoint\n"
             "[rank1]:   File \"/w/transformers/modeling_utils.py\", line 2400, in save_pretrained\n"
             "[rank1]: OSError: [Errno 122] Disk quota exceeded\n");
  r = triage_logs({t3.dir});
  CHECK(r.phase == "checkpoint");
  // ...and evaluation; while the optimizer's _init_group (every step) is no start-up.
  TempDir t4("frame_eval");
  write_file(t4.dir / "train.log",
             "Traceback (most recent call last):\n"
             "  File \"/w/main.py\", line 80, in train\n"
             "  File \"/w/main.py\", line 120, in evaluate\n"
             "  File \"/w/model.py\", line 33, in forward\n"
             "RuntimeError: shape mismatch\n");
  r = triage_logs({t4.dir});
  CHECK(r.phase == "eval");
  TempDir t5("frame_adam");
  write_file(t5.dir / "train.log",
             "Traceback (most recent call last):\n"
             "  File \"/w/main.py\", line 80, in train\n"
             "  File \"/usr/lib/python3.10/site-packages/torch/optim/adam.py\", line 150, in _init_group\n"
             "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n");
  r = triage_logs({t5.dir});
  CHECK(r.phase == "training");
}

TEST_CASE("a platform's quoted copy of the process's last output: its progress lines count", "[triage_logs]") {
  // Kubernetes' termination message keeps the container's output tail with its newlines escaped
  // (the shape of gh-pai-5464): the program's "Start training" banner before the kill, joined in
  // one segment with the runtime's "Killed" (the banner had no newline of its own).
  const std::string head =
      "Pod failed: PodPattern matched: containers: - name: app reason: OOMKilled message: \"(7): Conv1d(256, 7, "
      "kernel_size=(1,), stride=(1,))\\n )\\n)\\n";
  TempDir t("quoted_progress");
  write_file(t.dir / "job-exit.txt",
             head + "2021-04-30 07:10:43,386 INFO *****Start training pv_rcnn(default)***** "
                    "/usr/local/pai/runtime: line 30: 7 Killed ${RUNTIME_SCRIPT_DIR}/runtime_entry.sh\\n\" code: 137\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "oom");
  CHECK(r.phase == "training");
  // Without the banner the same message says nothing of the phase.
  TempDir t2("quoted_no_progress");
  write_file(t2.dir / "job-exit.txt",
             head + "loading model\\n /usr/local/pai/runtime: line 30: 7 Killed ${RUNTIME_SCRIPT_DIR}/runtime_entry.sh\\n\" "
                    "code: 137\n");
  r = triage_logs({t2.dir});
  CHECK(r.cause == "oom");
  CHECK(r.phase == "unknown");
}

TEST_CASE("a hung process's stack with no error names the phase it stopped in", "[triage_logs]") {
  // py-spy/pystack dumped in traceback form (the shape of gh-pytorch-lightning-11267): no error
  // line, no rank; the innermost frame that names a phase is inside the checkpoint callback.
  TempDir t("stack_save");
  write_file(t.dir / "stack.txt",
             "  File \"/w/lightning/loops/epoch/training_epoch_loop.py\", line 298, in on_run_end\n"
             "  File \"/w/lightning/trainer/callback_hook.py\", line 93, in on_train_epoch_end\n"
             "  File \"/w/lightning/callbacks/model_checkpoint.py\", line 390, in save_checkpoint\n"
             "    self._save_none_monitor_checkpoint(trainer, monitor_candidates)\n");
  auto r = triage_logs({t.dir});
  CHECK(r.category == "unknown");
  CHECK(r.phase == "checkpoint");
  // A rank's traceback cut before its exception line: its own frames still say where it was.
  TempDir t2("rank_stack_eval");
  write_file(t2.dir / "train.log",
             "[rank3]: Traceback (most recent call last):\n"
             "[rank3]:   File \"/w/transformers/trainer.py\", line 2589, in _inner_training_loop\n"
             "[rank3]:   File \"/w/transformers/trainer.py\", line 4000, in evaluation_loop\n");
  r = triage_logs({t2.dir});
  CHECK(r.phase == "eval");
  // Step lines after the save: the job went on training, the save says nothing of the stop.
  TempDir t3("stack_then_steps");
  write_file(t3.dir / "train.log",
             "[rank3]:   File \"/w/lightning/callbacks/model_checkpoint.py\", line 390, in save_checkpoint\n"
             "[rank3]: step 41 loss 0.5\n");
  r = triage_logs({t3.dir});
  CHECK(r.phase != "checkpoint");
}

TEST_CASE("a py-spy dump names the phase by its innermost frame, printed first", "[triage_logs]") {
  // The shape of pytorch/torchtitan#1342: the main thread stuck in destroy_process_group.
  TempDir t("pyspy_shutdown");
  write_file(t.dir / "pyspy.txt",
             "Thread 0x7F81445A8440 (active): \"MainThread\"\n"
             "    destroy_process_group (torch/distributed/distributed_c10d.py:2184)\n"
             "    <module> (torchtitan/train.py:554)\n"
             "    _run_code (runpy.py:86)\n"
             "Thread 0x7F7D9CFF9640 (idle): \"Thread-2\"\n"
             "    wait (threading.py:324)\n"
             "    run (tqdm/_monitor.py:60)\n");
  auto r = triage_logs({t.dir});
  CHECK(r.phase == "shutdown");
  // Innermost first: the save, not the training loop printed after it.
  TempDir t2("pyspy_save");
  write_file(t2.dir / "pyspy.txt",
             "Thread 0x7F81445A8440 (active): \"MainThread\"\n"
             "    barrier (torch/distributed/distributed_c10d.py:4159)\n"
             "    save_checkpoint (deepspeed/runtime/engine.py:3049)\n"
             "    _save_checkpoint (transformers/trainer.py:3191)\n"
             "    _inner_training_loop (transformers/trainer.py:2589)\n"
             "    train (transformers/trainer.py:2164)\n"
             "    <module> (train.py:702)\n");
  r = triage_logs({t2.dir});
  CHECK(r.phase == "checkpoint");
}

TEST_CASE("a chained traceback: the exception raised while handling another is the failure", "[triage_logs]") {
  // fsspec's commit: os.rename fails across devices (handled by a copy), the copy hits EIO.
  TempDir t("chained");
  write_file(t.dir / "rank_0.log",
             "[rank0]: Traceback (most recent call last):\n"
             "[rank0]:   File \"/usr/lib/python3.11/shutil.py\", line 825, in move\n"
             "[rank0]:     os.rename(src, real_dst)\n"
             "[rank0]: OSError: [Errno 18] Invalid cross-device link: '/tmp/tmpa4' -> '/ckpt/epoch=1.ckpt'\n"
             "\n"
             "[rank0]: During handling of the above exception, another exception occurred:\n"
             "\n"
             "[rank0]: Traceback (most recent call last):\n"
             "[rank0]:   File \"/usr/lib/python3.11/shutil.py\", line 258, in copyfile\n"
             "[rank0]:     with open(dst, 'wb') as fdst:\n"
             "[rank0]: OSError: [Errno 5] Input/output error: '/ckpt/epoch=1.ckpt'\n");
  auto r = triage_logs({t.dir});
  REQUIRE(r.first_failure);
  CHECK(mentions(r.first_failure->what, "Errno 5"));
  CHECK_FALSE(mentions(r.first_failure->what, "Errno 18"));
  // Explicit chaining ("raise ... from ..."): the first exception is the cause, and stays the failure.
  TempDir u("direct");
  write_file(u.dir / "rank_0.log",
             "[rank0]: Traceback (most recent call last):\n"
             "[rank0]: ValueError: bad shard index 7\n"
             "\n"
             "[rank0]: The above exception was the direct cause of the following exception:\n"
             "\n"
             "[rank0]: Traceback (most recent call last):\n"
             "[rank0]: RuntimeError: could not load the dataset\n");
  r = triage_logs({u.dir});
  REQUIRE(r.first_failure);
  CHECK(mentions(r.first_failure->what, "bad shard index"));
}

TEST_CASE("a peer's connection closed after the launcher began to stop a still job is the teardown, not a death",
          "[triage_logs]") {
  // Two ranks train; rank 1 goes silent at 00:05 (frozen); rank 0 waits. At 00:20 the
  // launcher (hanglab's supervisor, torchrun) sends its closing signals, rank 1 dies first
  // and rank 0 logs the closed connection before its own SIGKILL lands.
  TempDir t("outside_teardown");
  std::string r0, r1;
  for (int step = 1; step <= 5; ++step) {
    r0 += fmt::format("2026-12-02T05:00:{:02d}.000000Z [rank0]: step {} loss 0.5\n", step, step);
    r1 += fmt::format("2026-12-02T05:00:{:02d}.000000Z [rank1]: step {} loss 0.5\n", step, step);
  }
  const std::string echo =
      "2026-12-02T05:00:22.040000Z [rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] "
      "Connection closed by peer [127.0.0.1]:30517\n";
  const auto notice = [](const char* when, int pid, const char* sig) {
    return fmt::format("2026-12-02T05:00:{} hanglab supervisor: Sending process {} closing signal {} (rank {}, "
                       "teardown: hang)\n",
                       when, pid, sig, pid - 100);
  };
  write_file(t.dir / "rank0.log", r0 + echo);
  write_file(t.dir / "rank1.log", r1);
  SECTION("without a notice: rank 1 stopped logging and its peer lost it (a death, as far as the logs tell)") {
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rank_exit");
    CHECK(r.missing_ranks == std::vector<int>{1});
  }
  SECTION("the notice before the echo: the closed connection is the teardown's, no rank is said to have died") {
    write_file(t.dir / "supervisor.log", notice("20.000000Z", 100, "SIGTERM") + notice("20.000100Z", 101, "SIGTERM") +
                                             notice("22.000000Z", 100, "SIGKILL") + notice("22.000100Z", 101, "SIGKILL"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category != "rank_exit");
    CHECK(std::find(r.missing_ranks.begin(), r.missing_ranks.end(), 0) == r.missing_ranks.end());
    CHECK((!r.first_failure || r.first_failure->what.find("died") == std::string::npos));
  }
  SECTION("a failure before the notice: the launcher reacts to it, the echo keeps its meaning") {
    write_file(t.dir / "rank0.log", r0 + echo);
    write_file(t.dir / "supervisor.log", notice("23.000000Z", 100, "SIGTERM"));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rank_exit");
    CHECK(r.missing_ranks == std::vector<int>{1});
  }
}

TEST_CASE("wrappers of another failure are not failures of their own", "[triage_logs]") {
  // std::terminate's "what():" line is the exception's message: the watchdog's abort of a rank
  // that timed out waiting, not a crash.
  TempDir t("terminate_what");
  write_file(t.dir / "train.log",
             "terminate called after throwing an instance of 'std::runtime_error'\n"
             "  what():  [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=806, "
             "OpType=BROADCAST, Timeout(ms)=1800000) ran for 1801027 milliseconds before timing out.\n");
  auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.cause != "crashed");
  CHECK(r.category != "rank_exit");
  // A terminate whose what() is the program's own error stays a crash.
  TempDir c("terminate_own");
  write_file(c.dir / "train.log",
             "terminate called after throwing an instance of 'std::out_of_range'\n"
             "  what():  vector::_M_range_check: __n (which is 5) >= this->size() (which is 5)\n");
  r = triage_logs({c.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "crashed");
  // ... and one whose what() is a CUDA error is that error.
  TempDir g("terminate_cuda");
  write_file(g.dir / "train.log",
             "terminate called after throwing an instance of 'c10::Error'\n"
             "  what():  CUDA error: an illegal memory access was encountered\n");
  r = triage_logs({g.dir});
  CHECK(r.category == "rank_exit");
  CHECK(r.cause == "cuda_error");
  // torch.multiprocessing.spawn re-raises a child's error as ProcessRaisedException: the child's
  // error (here a Gloo send that timed out waiting) is what the logs show, not a new exception.
  TempDir s("spawn_wrapper");
  write_file(s.dir / "train.log",
             "torch.multiprocessing.spawn.ProcessRaisedException: \n\n"
             "-- Process 1 terminated with the following error:\n"
             "RuntimeError: [/opt/conda/conda-bld/pytorch/work/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:136] "
             "Timed out waiting 1800000ms for send operation to complete\n");
  r = triage_logs({s.dir});
  INFO(render_text(r));
  CHECK(r.cause != "exception");
}

TEST_CASE("an init failure's headline always says what happened, also for causes without a phrase of their own",
          "[triage_logs]") {
  // NCCL's init.cc: "Duplicate GPU detected : rank %d and rank %d both on CUDA device %lx".
  TempDir t("duplicate_gpu_headline");
  write_file(t.dir / "job.log",
             "node1:1234:1234 [0] init.cc:900 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
             "device 1d000\n");
  const auto r = triage_logs({t.dir});
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "duplicate_gpu");
  const std::string head = "rendezvous (duplicate_gpu): ";
  REQUIRE(r.summary.rfind(head, 0) == 0);
  CHECK(r.summary.size() > head.size() + 10);
}

TEST_CASE("ProcessGroupNCCL's warning at exit is the writer's normal end, in its shutdown -- not where another failed",
          "[triage_logs]") {
  // torch 2.4-2.6 (~ProcessGroupNCCL) and 2.7 on: printed by the destructor at interpreter exit.
  const std::string w26 =
      "[rank{0}]:[W227 10:54:51.986111855 ProcessGroupNCCL.cpp:1374] Warning: WARNING: process group has NOT been "
      "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
      "destroy_process_group to ensure that any pending NCCL operations have finished in this process. (function "
      "operator())\n";
  const std::string w27 =
      "[rank{0}]:[W1019 08:16:22.397556647 ProcessGroupNCCL.cpp:1477] Warning: WARNING: destroy_process_group() was "
      "not called before program exit, which can leak resources. (function operator())\n";
  {
    TempDir t("exit_warning_only");
    write_file(t.dir / "train.log", fmt::format(fmt::runtime(w26), 0));
    const auto r = triage_logs({t.dir});
    CHECK(r.category == "none");
    CHECK(r.phase == "shutdown");
  }
  {
    TempDir t("exit_warning_both");
    write_file(t.dir / "train.log", fmt::format(fmt::runtime(w27), 0) + fmt::format(fmt::runtime(w27), 1));
    TriageOptions o;
    o.world_size = 2;
    const auto r = triage_logs({t.dir}, o);
    CHECK(r.category == "none");
  }
  {
    // Rank 1 silent in a world of 2: its end is not in the logs.
    TempDir t("exit_warning_one_of_two");
    write_file(t.dir / "train.log", fmt::format(fmt::runtime(w27), 0));
    TriageOptions o;
    o.world_size = 2;
    const auto r = triage_logs({t.dir}, o);
    CHECK(r.category != "none");
  }
  {
    // A crash after the warning (gh-megatron-lm-1874's shape): the crash decides.
    TempDir t("exit_warning_then_crash");
    write_file(t.dir / "train.log", fmt::format(fmt::runtime(w27), 0) +
                                        "terminate called without an active exception\n"
                                        "E1019 08:21:39.599000 3036 torch/distributed/elastic/multiprocessing/api.py:874] "
                                        "failed (exitcode: -6) local_rank: 0 (pid: 3042) of binary: /usr/bin/python\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.category == "rank_exit");
  }
}

TEST_CASE("Slurm's time limit ends the job even where srun names the tasks it then terminated", "[triage_logs]") {
  const std::string limit = "slurmstepd: error: *** STEP 32233190.0 ON nid01934 CANCELLED AT 2020-07-03T02:59:56 DUE "
                            "TO TIME LIMIT ***\n";
  const std::string tasks = "srun: error: nid01934: tasks 2,4-5,7: Terminated\n"
                            "srun: error: nid01935: tasks 8-15: Terminated\n"
                            "srun: error: nid01934: tasks 0-1,3,6: Terminated\n";
  {
    TempDir t("slurm_limit_tasks");
    write_file(t.dir / "srun.log", "srun: Force Terminated job 32233190\n" + limit + tasks);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "resource_limit");
    CHECK(r.cause == "time_limit");
    CHECK(r.scope == "all");
    CHECK(r.missing_ranks.empty());
    CHECK(r.world_size == 16);  // "tasks 8-15" names tasks up to 15
  }
  {
    // A rank that failed of its own before the limit: the job may have hung on it; the limit does not decide.
    TempDir t("slurm_limit_after_failure");
    write_file(t.dir / "srun.log", "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered\n" +
                                       limit + tasks);
    const auto r = triage_logs({t.dir});
    CHECK(r.cause != "time_limit");
  }
}

TEST_CASE("HF Trainer's end-of-training summary: what fails after it fails in the program's end", "[triage_logs]") {
  // trainer.py logs speed_metrics("train", ...) once, after its loop; tqdm's close redraws the bar at its total.
  const std::string summary =
      "{'train_runtime': 125460.4448, 'train_samples_per_second': 0.623, 'train_steps_per_second': 0.078, "
      "'train_loss': 0.3584188134920852, 'epoch': 1.0}\n"
      "100%|##########| 9771/9771 [34:51:00<00:00, 12.84s/it]\n";
  const auto killed = [](int code) {
    return fmt::format("[2025-05-09 11:39:06,552] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
                       "(exitcode: {}) local_rank: 0 (pid: 3831415) of binary: /usr/bin/python3.10\n",
                       code);
  };
  {
    TempDir t("hf_summary_then_kill");
    write_file(t.dir / "train.log", summary + killed(-9));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "killed");
    CHECK(r.phase == "shutdown");
    CHECK(r.missing_ranks == std::vector<int>{0});  // killed from outside: the rank the failure is about
  }
  {
    // Its own crash in the exit path: the work was done, no rank is missing from it.
    TempDir t("hf_summary_then_crash");
    write_file(t.dir / "train.log", summary + killed(-11));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase == "shutdown");
    CHECK(r.missing_ranks.empty());
  }
  {
    // Steps after it (a second train() call): training again.
    TempDir t("hf_summary_then_steps");
    write_file(t.dir / "train.log", summary + " 10%|#         | 12/120 [00:30<04:30,  2.50s/it]\n" + killed(-9));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase == "training");
  }
  {
    // An evaluation's summary ('eval_runtime') is no end of training.
    TempDir t("hf_eval_summary_then_kill");
    write_file(t.dir / "train.log",
               " 50%|#####     | 60/120 [02:30<02:30,  2.50s/it]\n"
               "{'eval_loss': 0.41, 'eval_runtime': 12.5, 'eval_samples_per_second': 8.0, 'epoch': 0.5}\n" +
                   killed(-9));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase != "shutdown");
  }
}

TEST_CASE("JAX's and TensorFlow's start-up waits, MaxText's and Orbax's saves: the phase a paste stopped in",
          "[triage_logs]") {
  // jax/_src/xla_bridge.py:129-146@jax-v0.5.3: a timer around the TPU client's creation warns while it waits.
  const std::string tpu =
      "UserWarning: TPU backend initialization is taking more than 60.0 seconds. Did you run your code on all TPU "
      "hosts? See https://jax.readthedocs.io/en/latest/multi_process.html for more information.\n";
  // MaxText's step line (metric_logger.py:82@7d23752).
  const auto step = [](int n) {
    return fmt::format("completed step: {}, seconds: 64.453, TFLOP/s/device: 424.123, Tokens/s/device: 889.699, "
                       "total_weights: 7304679, loss: 6.548\n",
                       n);
  };
  {
    TempDir t("jax_tpu_startup");
    write_file(t.dir / "train.log", tpu);
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase == "init");
  }
  {
    // TF's MultiWorkerMirroredStrategy constructor (collective_all_reduce_strategy.py:470/857/873@v2.6.0):
    // the cluster barrier's wait; "Cluster is ready." ends it, the job has not trained yet.
    TempDir t("tf_cluster_wait");
    write_file(t.dir / "worker.log",
               "INFO:tensorflow:Enabled multi-worker collective ops with available devices: "
               "['/job:worker/replica:0/task:1/device:CPU:0']\n"
               "INFO:tensorflow:Waiting for the cluster, timeout = inf\n"
               "INFO:tensorflow:Cluster is ready.\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase == "init");
  }
  {
    // MaxText's save_checkpoint (train.py:142/146@7d23752), then Orbax's wait for the running finalize thread
    // (checkpoint_manager.py:1809@v0.11.5), nothing after it: the save.
    TempDir t("maxtext_save");
    write_file(t.dir / "train.log",
               step(46) + step(47) + step(48) +
                   "Waiting for step 50 to finish before checkpoint...\n"
                   "Waited 0.00076 seconds for step 50 to finish before starting checkpointing.\n"
                   "I0320 20:56:05.504896 140582565907968 checkpoint_manager.py:1682] [process=15][thread=MainThread]"
                   "[step=0][wait_until_finished] Waiting for Save Finalize thread (save_finalize) to complete.\n");
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase == "checkpoint");
    CHECK(r.missing_ranks.empty());
  }
  {
    // Steps after the start-up warning and after the save: the job went on training.
    TempDir t("jax_steps_after");
    write_file(t.dir / "train.log",
               tpu + step(1) + "Waiting for step 50 to finish before checkpoint...\n" + step(50) + step(51));
    const auto r = triage_logs({t.dir});
    INFO(render_text(r));
    CHECK(r.phase == "training");
  }
}

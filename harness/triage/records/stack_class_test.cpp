// Stacks as evidence: py-spy and gdb stacks in the shapes the tools print, classified.
#include "triage/records/stack_class.hpp"

#include <catch2/catch.hpp>
#include <string>

#include "triage/records/run_dir.hpp"

using namespace hanglab;

namespace {

StackFrameInfo parsed(const std::string& text) {
  auto s = parse_stack_text(text);
  REQUIRE(s);
  return *s;
}

}  // namespace

TEST_CASE("py-spy: rank 0 inside torch.save on slow storage is in I/O (a checkpoint)") {
  const auto s = parsed(R"(# py-spy of rank 0 (pid 4242) at 2026-12-02T03:10:11.500000Z
# state: D wchan: request_wait_answer
Process 4242: /work/main/.venv/bin/python3 train.py --epochs 50 --save-every 3
Python v3.11.2 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    __exit__ (torch/serialization.py:499)
    save (torch/serialization.py:850)
    _save_snapshot (train.py:61)
    train (train.py:77)
    main (train.py:96)
    <module> (train.py:104)
Thread 4301 (idle): "Thread-1"
    wait (threading.py:320)
)");
  CHECK(s.tool == "py-spy");
  CHECK(s.state == "D");
  CHECK(s.wchan == "request_wait_answer");
  REQUIRE(s.t);
  CHECK(s.klass == "io");
  CHECK(s.klass_what == "a checkpoint save");
  CHECK(s.frames.size() == 6);
  CHECK(s.frames.front() == "__exit__ (torch/serialization.py:499)");
  // Typed for the reasoner: torch.save's own frames decided, and the program's _save_snapshot names
  // the phase (logs/frames.cpp's table; the bare "save" of torch/serialization.py names none).
  CHECK(s.torch_save);
  CHECK(s.phase == "checkpoint");
}

TEST_CASE("py-spy: a library's own save is no torch.save -- a stack without a phase frame names none") {
  StackFrameInfo s;
  s.tool = "py-spy";
  s.state = "D";
  s.frames = {"write (safetensors/torch.py:286)", "save_pretrained (transformers/modeling_utils.py:2563)",
              "Trainer._save_checkpoint (transformers/trainer.py:2390)",
              "Trainer.train (transformers/trainer.py:1938)"};
  classify_stack(s);
  CHECK_FALSE(s.torch_save);
  CHECK(s.phase == "checkpoint");
  s.frames = {"wait (threading.py:320)", "main (train.py:96)", "<module> (train.py:104)"};
  classify_stack(s);
  CHECK(s.phase.empty());
  CHECK_FALSE(s.torch_save);
}

TEST_CASE("py-spy: a DDP rank blocked in backward waits for the gradient allreduce") {
  const auto s = parsed(R"(# py-spy of rank 1 (pid 4243) at 2026-12-02T03:10:11.500000Z
# state: S wchan: futex_wait_queue
Process 4243: python3 train.py
Python v3.11.2 (/usr/bin/python3.11)

Thread 4243 (idle): "MainThread"
    _engine_run_backward (torch/autograd/graph.py:768)
    backward (torch/autograd/__init__.py:289)
    backward (torch/_tensor.py:521)
    _run_batch (train.py:44)
    _run_epoch (train.py:53)
)");
  CHECK(s.klass == "collective");
}

TEST_CASE("py-spy: the same backward on CPU is compute") {
  const auto s = parsed(R"(Process 4243: python3 train.py
Python v3.11.2 (/usr/bin/python3.11)

Thread 4243 (active): "MainThread"
    _engine_run_backward (torch/autograd/graph.py:768)
    backward (torch/_tensor.py:521)
    _run_batch (train.py:44)
)");
  CHECK(s.klass == "compute");
}

TEST_CASE("py-spy: explicit collectives, DataLoader and init") {
  CHECK(parsed("Process 1: python3 t.py\nPython v3.11.2\n\nThread 1 (idle): \"MainThread\"\n"
               "    barrier (torch/distributed/distributed_c10d.py:4166)\n    train (t.py:20)\n")
            .klass == "collective");
  CHECK(parsed("Process 1: python3 t.py\nPython v3.11.2\n\nThread 1 (idle): \"MainThread\"\n"
               "    wait (threading.py:324)\n    get (queue.py:180)\n"
               "    _try_get_data (torch/utils/data/dataloader.py:1133)\n"
               "    __next__ (torch/utils/data/dataloader.py:631)\n    train (t.py:20)\n")
            .klass == "data");
  CHECK(parsed("Process 1: python3 t.py\nPython v3.11.2\n\nThread 1 (idle): \"MainThread\"\n"
               "    _store_based_barrier (torch/distributed/distributed_c10d.py:1200)\n"
               "    init_process_group (torch/distributed/distributed_c10d.py:1580)\n    main (t.py:9)\n")
            .klass == "init");
  // A dataset's __getitem__ is data by the DataLoader frames that call it; any other class's is not.
  CHECK(parsed("Process 1: python3 t.py\nPython v3.11.2\n\nThread 1 (active): \"MainThread\"\n"
               "    __getitem__ (my_dataset.py:40)\n    fetch (torch/utils/data/_utils/fetch.py:52)\n"
               "    _next_data (torch/utils/data/dataloader.py:674)\n    train (t.py:20)\n")
            .klass == "data");
  CHECK(parsed("Process 1: python3 t.py\nPython v3.11.2\n\nThread 1 (active): \"MainThread\"\n"
               "    __getitem__ (jsonargparse/_namespace.py:180)\n    fit (lightning/pytorch/trainer/trainer.py:538)\n"
               "    main (t.py:20)\n")
            .klass != "data");
  const auto own = parsed("Process 1: python3 t.py\nPython v3.11.2\n\nThread 1 (idle): \"MainThread\"\n"
                          "    main (train.py:148)\n    <module> (train.py:164)\n");
  CHECK(own.klass == "compute");
  CHECK(own.klass_frame == "main (train.py:148)");
}

TEST_CASE("a stopped process is stopped whatever its frames") {
  const auto s = parsed(R"(# py-spy of rank 2 (pid 15172) at 2026-12-02T00:37:39.608053Z
# state: T wchan: do_signal_stop
Process 15172: /usr/bin/python3 train.py --steps 200
Python v3.11.2 (/usr/bin/python3.11)

Thread 15172 (idle): "MainThread"
    main (train.py:148)
    <module> (train.py:164)
)");
  CHECK(s.klass == "stopped");
  CHECK(s.state == "T");
}

TEST_CASE("gdb: a native rank waiting on Gloo work is in a collective, not in its socket write") {
  const auto s = parsed(R"(# gdb of rank 3 (pid 4100) at 2026-12-02T03:10:11.500000Z
# state: S wchan: futex_wait_queue
[Thread debugging using libthread_db enabled]

Thread 1 (Thread 0x7f3a6f0b4740 (LWP 4100) "torch_ddp"):
#0  0x00007f3a6f2e57c5 in __GI___libc_write (fd=5, buf=0x55d0c3b1e0a8, nbytes=4096) at ../sysdeps/unix/sysv/linux/write.c:26
#1  0x00007f3a71c3e2d9 in gloo::transport::tcp::Pair::write(gloo::transport::tcp::Op&) () from /lib/x86_64-linux-gnu/libgloo.so.0
#2  0x00007f3a7a2b7c10 in c10d::ProcessGroupGloo::AsyncWork::wait(std::chrono::duration<long, std::ratio<1l, 1000l> >) () from /lib/x86_64-linux-gnu/libtorch_cpu.so.1.13
#3  0x000055d0c1a4b2f1 in hanglab::GlooCollectives::allreduce (this=0x7ffd0a8c1e40) at /work/main/workloads/backends/c10d_gloo/gloo.cpp:88
#4  0x000055d0c1a4b2f1 in main (argc=9, argv=0x7ffd0a8c2068) at /work/main/workloads/torch_ddp/main.cpp:40
)");
  CHECK(s.tool == "gdb");
  CHECK(s.klass == "collective");
  CHECK(s.frames.size() == 5);
}

TEST_CASE("gdb: a native rank in fsync is in I/O -- in its own loop it computes") {
  CHECK(parsed("Thread 1 (Thread 0x7f (LWP 1) \"w\"):\n"
               "#0  0x00007f in fsync (fd=7) at ../sysdeps/unix/sysv/linux/fsync.c:27\n"
               "#1  0x000055 in hanglab::save_checkpoint (path=...) at /src/ckpt.cpp:40\n"
               "#2  0x000055 in main () at /src/main.cpp:10\n")
            .klass == "io");
  CHECK(parsed("Thread 1 (Thread 0x7f (LWP 1) \"w\"):\n"
               "#0  0x000055 in matmul_kernel (n=64) at /src/model.cpp:12\n"
               "#1  0x000055 in main () at /src/main.cpp:10\n")
            .klass == "compute");
}

TEST_CASE("every stack rule's example frame is classified by its rule") {
  for (const auto& rule : stack_class_rules()) {
    StackFrameInfo s;
    s.frames = {rule.example};
    classify_stack(s);
    INFO(rule.example);
    CHECK(s.klass == rule.klass);
  }
}

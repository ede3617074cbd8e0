// What a run record's message says (records/message_facts.cpp): the typed facts the run-record
// reasoner reads instead of the text, on the texts the stack's emitters and the workloads print.
#include "triage/records/message_facts.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "triage/logs/parse.hpp"
#include "triage/records/run_dir.hpp"

using namespace hanglab;

TEST_CASE("message facts: out of memory, from the plain-log classifier and the allocators' words", "[records]") {
  // The CUDA caching allocator's text (c10/cuda/CUDACachingAllocator.cpp), read by classify_text.
  CHECK(read_message_facts("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB "
                           "total capacity)")
            .cause == "cuda_oom");
  CHECK(read_message_facts("CUDA out of memory. Tried to allocate 20.00 MiB").cause == "cuda_oom");
  // The kernel's OOM kill (classify_host.cpp kOomKill).
  CHECK(read_message_facts("Memory cgroup out of memory: Killed process 4242 (python3) total-vm:1000kB").cause ==
        "oom");
  // libstdc++'s what() of a failed operator new, as a C++ rank's handler writes it, and CPython's MemoryError:
  // the classifier's host-memory exhaustion (kHostOom).
  CHECK(read_message_facts("std::bad_alloc").cause == "oom");
  CHECK(read_message_facts("std::bad_alloc").read.kind == LogKind::kHostOom);
  CHECK(read_message_facts("[rank 1] ERROR (other) in forward at step 3: std::bad_alloc").cause == "oom");
  CHECK(read_message_facts("MemoryError").cause == "oom");
  // The words alone prove nothing the classifier reads: no emitter of the stack prints this.
  CHECK(read_message_facts("rank 2 killed by SIGKILL (OOM killer)").cause.empty());
  // Not an OOM: a word that contains the letters, a timeout.
  CHECK(read_message_facts("no room left in the bucket view").cause.empty());
  CHECK(read_message_facts("[/build/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 5000ms for recv "
                           "operation to complete")
            .cause.empty());
}

TEST_CASE("message facts: a full /dev/shm, not a full disk", "[records]") {
  // PyTorch's DataLoader report of a worker's SIGBUS (torch/csrc/DataLoader.cpp) ...
  CHECK(read_message_facts("DataLoader worker (pid 27960) is killed by signal: Bus error. It is possible that "
                           "dataloader's workers are out of shared memory. Please try to raise your shared memory "
                           "limit.")
            .cause == "shm_exhausted");
  // The same text inside hanglab's own error line (stdout.log): its <what> is read on its own.
  CHECK(read_message_facts("[rank 1] ERROR (data) in data at step 1: DataLoader worker (pid 27960) is killed by "
                           "signal: Bus error. It is possible that dataloader's workers are out of shared memory. "
                           "Please try to raise your shared memory limit.")
            .cause == "shm_exhausted");
  // ... but not of another signal.
  CHECK(read_message_facts("DataLoader worker (pid 27960) is killed by signal: Segmentation fault.").cause.empty());
  // The worker's own SIGBUS handler (torch/utils/data/_utils/signal_handling.py, DataLoader.cpp).
  CHECK(read_message_facts("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
                           "shared memory (shm).")
            .cause == "shm_exhausted");
  // ENOSPC on a shared-memory segment (PyTorch's MapAllocator, hanglab's loader) ...
  CHECK(read_message_facts("unable to write to file </torch_311_1030151126>: No space left on device (28)").cause ==
        "shm_exhausted");
  CHECK(read_message_facts("unable to write to file </hanglab-dl-0>: No space left on device (28)").cause ==
        "shm_exhausted");
  // ... not on a checkpoint file: that disk is full.
  CHECK(read_message_facts("OSError: [Errno 28] No space left on device: '/ckpt/step_100.pt'").cause.empty());
}

TEST_CASE("message facts: timeouts, interfaces, addresses and missing ranks", "[records]") {
  CHECK(read_message_facts("Socket Timeout: wait timeout after 10000ms, keys: /default_pg/0//cpu//rank_3").timeout);
  CHECK(read_message_facts("Timed out after 10 seconds waiting for clients. 3/4 clients joined.").timeout);
  CHECK_FALSE(read_message_facts("Connection closed by peer [127.0.0.1]:41631").timeout);

  CHECK(read_message_facts("[enforce fail at /build/pytorch/third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != "
                           "nullptr. Unable to find address for: eth7")
            .no_interface);
  CHECK(read_message_facts("NCCL WARN Bootstrap : no socket interface found").no_interface);
  CHECK(read_message_facts("setsockopt SO_BINDTODEVICE eth9: No such device").no_interface);
  CHECK_FALSE(read_message_facts("Connection refused").no_interface);
  // ENODEV of another device is no interface's (an RDMA device file, a GPU).
  CHECK_FALSE(read_message_facts("open /dev/infiniband/uverbs0: No such device").no_interface);

  const auto u = read_message_facts(
      "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] timed out connecting: SO_ERROR: No route to host, "
      "remote=[10.230.7.2]:33193");
  CHECK(u.unreachable);
  CHECK(u.remote == "10.230.7.2");
  CHECK(u.read.category == "network");
  CHECK(u.read.cause == "host_unreachable");
  // A peer that answered and refused is reachable.
  CHECK_FALSE(read_message_facts("[../third_party/gloo/gloo/transport/tcp/pair.cc:144] timed out connecting: "
                                 "SO_ERROR: Connection refused, remote=[10.230.7.2]:33193")
                  .unreachable);
  const auto closed = read_message_facts("Connection closed by peer [127.0.0.1]:41631");
  CHECK_FALSE(closed.unreachable);
  CHECK(closed.remote.empty());

  CHECK(read_message_facts("rendezvous timed out after 4000 ms: 2/4 ranks joined (missing ranks: 1,3)").missing_ranks ==
        std::vector<int>{1, 3});
  CHECK(read_message_facts("rendezvous timed out after 4000 ms: 3/4 ranks joined (missing ranks: 2) (reported by "
                           "rank 0)")
            .missing_ranks == std::vector<int>{2});
  CHECK(read_message_facts("Timed out after 10 seconds waiting for clients. 3/4 clients joined.")
            .missing_ranks.empty());

  CHECK(read_message_facts("The client socket has timed out after 4s while trying to connect to (127.0.0.2, 40287).")
            .master == "127.0.0.2");
  CHECK(read_message_facts("[rank 3] torch_ddp starting: world_size 4, backend gloo, steps 12, master "
                           "127.0.0.1:40287, hooks 0")
            .master == "127.0.0.1");
  CHECK(read_message_facts("Connection closed by peer [127.0.0.1]:41631").master.empty());
}

TEST_CASE("message facts: the classifier's reading of the message, its role and what it proves", "[records]") {
  const auto shm = read_message_facts(
      "RuntimeError: unable to write to file </torch_3345_2361545085_0>: No space "
      "left on device (28)");
  CHECK(shm.read.kind == LogKind::kShmBusError);
  CHECK(shm.read.role == Role::kRoot);
  CHECK(shm.read.category == "data_loading");
  CHECK(shm.cause == "shm_exhausted");
  const auto disk = read_message_facts("OSError: [Errno 28] No space left on device: '/ckpt/step_100.pt'");
  CHECK(disk.read.kind == LogKind::kDiskFull);
  CHECK(disk.read.cause == "disk_full");
  const auto closed =
      read_message_facts("[../gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:9611");
  CHECK(closed.read.kind == LogKind::kCommClosed);
  CHECK(closed.read.role == Role::kEcho);
  // A workload's error whose text the classifier does not read is the workload's error of its class.
  CHECK(read_message_facts("[rank 1] ERROR (data) in data at step 1: shard 3 is empty").read.kind ==
        LogKind::kDataError);
  // Progress is not a failure.
  CHECK(read_message_facts("[rank 0] step 3/12 loss 2.1 dur_ms 40").read.role == Role::kInfo);
}

// records/run_dir.cpp keeps the stdout/stderr lines the classifier reads as failures, typed by that
// reading; the workload's own start line gives the store address it was given.
TEST_CASE("run records: the log lines kept are the classifier's failures, with its reading", "[records]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "hanglab_message_facts_run_dir";
  fs::remove_all(dir);
  fs::create_directories(dir / "ranks/1");
  std::ofstream(dir / "ranks/1/events.jsonl") << R"({"t":1000.0,"ev":"start","pid":42,"rank":1})"
                                              << "\n";
  std::ofstream(dir / "ranks/1/stdout.log")
      << "2026-11-29T11:17:00.100000Z [rank 1] torch_ddp starting: world_size 4, backend gloo, steps 8, master "
         "10.0.0.5:29500, hooks 0\n"
      << "2026-11-29T11:17:00.150000Z [rank 1] data loader: 2 worker process(es) (pids 7,8), prefetch 2 per worker, "
         "batches of 2.00 MiB through /dev/shm (write)\n"
      << "2026-11-29T11:17:00.200000Z [rank 1] step 1/8 loss 2.7 dur_ms 40\n";
  std::ofstream(dir / "ranks/1/stderr.log")
      << "2026-11-29T11:17:01.000000Z [rank1]: RuntimeError: unable to write to file </torch_3345_2361545085_0>: "
         "No space left on device (28)\n"
      << "2026-11-29T11:17:01.100000Z terminate called after throwing an instance of 'std::bad_alloc'\n";
  const RunObservations run = load_run_observations(dir);
  const RankObservations& r = run.ranks.at(1);
  CHECK(r.start_master == "10.0.0.5");
  REQUIRE(r.log_hits.size() == 2);  // not the start line, the loader's banner that names /dev/shm, a step
  CHECK(r.log_hits[0].file == "stderr.log");
  CHECK(r.log_hits[0].line == 1);
  CHECK(r.log_hits[0].says.read.kind == LogKind::kShmBusError);
  CHECK(r.log_hits[0].says.cause == "shm_exhausted");
  CHECK(r.log_hits[1].says.read.kind == LogKind::kTerminate);
  CHECK(r.log_hits[1].says.cause == "oom");
  fs::remove_all(dir);
}

// What a run record's message says (records/message_facts.cpp): the typed facts the run-record
// reasoner reads instead of the text, on the texts the stack's emitters and the workloads print.
#include "triage/records/message_facts.hpp"

#include <catch2/catch.hpp>

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
  // libstdc++'s what() of a failed operator new, as a C++ rank's handler writes it.
  CHECK(read_message_facts("std::bad_alloc").cause == "oom");
  CHECK(read_message_facts("rank 2 killed by SIGKILL (OOM killer)").cause == "oom");
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

  const auto u = read_message_facts(
      "[../third_party/gloo/gloo/transport/tcp/pair.cc:144] timed out connecting: SO_ERROR: No route to host, "
      "remote=[10.230.7.2]:33193");
  CHECK(u.unreachable);
  CHECK(u.remote == "10.230.7.2");
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

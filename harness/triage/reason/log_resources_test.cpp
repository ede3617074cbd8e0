// One reading of the resource lines both triage paths read (issue 24, "one model"): a full /dev/shm behind
// ENOSPC on a shared-memory object, a host allocation that failed (std::bad_alloc, MemoryError, ATen's CPU
// allocator), a socket bound to an interface that does not exist. The plain-log classifier reads them
// (logs/classify_host.cpp, classify_text.cpp, meaning.cpp line_meaning), and the run records read their
// messages through it (records/message_facts.cpp).
#include <catch2/catch.hpp>

#include "triage/log_test_support.hpp"
#include "triage/logs/parse.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

// ENOSPC writing a POSIX shared-memory object is a full /dev/shm: ATen's MapAllocator names the
// segment it extends ("unable to write to file <NAME>", aten/src/ATen/MapAllocator.cpp:310@9de0cafe),
// NAME a shm_open name "/torch_<pid>_<rand>_<n>" (NewProcessWideShmHandle). A file path is a disk.
TEST_CASE("ENOSPC on a shared-memory object is a full /dev/shm, on a file path a full disk", "[triage_logs]") {
  CHECK(parse("[rank1]: RuntimeError: unable to write to file </torch_3345_2361545085_0>: No space left on device "
              "(28)")
            .kind == LogKind::kShmBusError);
  CHECK(parse("unable to write to file </torch_311_1030151126>: No space left on device (28)").kind ==
        LogKind::kShmBusError);
  CHECK(parse("OSError: [Errno 28] No space left on device: '/dev/shm/batch_7.npy'").kind == LogKind::kShmBusError);
  CHECK(parse("RuntimeError: unable to write to file </mnt/data/cache.bin>: No space left on device (28)").kind ==
        LogKind::kDiskFull);
  CHECK(parse("OSError: [Errno 28] No space left on device: '/ckpt/step_100.pt'").kind == LogKind::kDiskFull);
  // MapAllocator's other failures on the same object are not ENOSPC.
  CHECK(parse("RuntimeError: unable to write to file </torch_311_1030151126>: Bad file descriptor (9)").kind !=
        LogKind::kShmBusError);
}

// A host allocation of the process's own that failed: libstdc++'s std::bad_alloc (its what() and the
// terminate handler's line naming it), CPython's MemoryError, ATen's CPU allocator (c10/core/impl/alloc_cpu.cpp).
TEST_CASE("a failed host allocation is host memory exhaustion, not a crash", "[triage_logs]") {
  const auto t = parse("terminate called after throwing an instance of 'std::bad_alloc'");
  CHECK(t.kind == LogKind::kTerminate);
  CHECK(t.word == "std::bad_alloc");
  CHECK(parse("  what():  std::bad_alloc").kind == LogKind::kHostOom);
  CHECK(parse("[rank2]: MemoryError").kind == LogKind::kHostOom);
  CHECK(parse("RuntimeError: [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't allocate "
              "memory: you tried to allocate 2359296 bytes. Error code 12 (Cannot allocate memory)")
            .kind == LogKind::kHostOom);
  // What each means on its own (the run-record reader's reading): rank_exit/oom, as the run records say.
  for (const char* s :
       {"terminate called after throwing an instance of 'std::bad_alloc'", "  what():  std::bad_alloc"}) {
    const LineReading r = line_meaning(parse(s));
    CHECK(r.role == Role::kRoot);
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "oom");
  }
  // Another exception's terminate stays a crash.
  CHECK(line_meaning(parse("terminate called after throwing an instance of 'std::runtime_error'")).cause == "crashed");
}

// setsockopt(SO_BINDTODEVICE) fails with ENODEV when the interface it names does not exist (socket(7)).
TEST_CASE("binding a socket to an interface that does not exist is a wrong interface name", "[triage_logs]") {
  CHECK(parse("setsockopt SO_BINDTODEVICE eth9: No such device").kind == LogKind::kWrongIfname);
  CHECK(parse("RuntimeError: open /dev/infiniband/uverbs0: No such device").kind != LogKind::kWrongIfname);
}

// The lines the run records read the same way (records/message_facts.cpp reads them through this
// classifier): a full /dev/shm behind MapAllocator's ENOSPC, a host allocation failure behind bad_alloc.
TEST_CASE("plain logs: /dev/shm ENOSPC is shm_exhausted and std::bad_alloc is oom, as in the run records",
          "[triage_logs]") {
  {
    TempDir t("shm_enospc");
    write_file(t.dir / "rank-1.log",
               "[rank1]: Traceback (most recent call last):\n"
               "[rank1]:   File \"train.py\", line 12, in <module>\n"
               "[rank1]: RuntimeError: unable to write to file </torch_3345_2361545085_0>: No space left on device "
               "(28)\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.category == "data_loading");
    CHECK(r.cause == "shm_exhausted");
  }
  {
    TempDir t("bad_alloc");
    write_file(t.dir / "rank-1.log",
               "terminate called after throwing an instance of 'std::bad_alloc'\n"
               "  what():  std::bad_alloc\n");
    const auto r = triage_logs({t.dir});
    CHECK(r.category == "rank_exit");
    CHECK(r.cause == "oom");
  }
}

// Unit tests of ShmLoader (the worker/shared-memory data loader): batches arrive
// unchanged and in order, segments never stay behind in /dev/shm, and every way a worker
// can fail (SIGBUS on a full /dev/shm, ENOSPC, an error in the worker, a kill) becomes a
// DataError with PyTorch's text instead of a hang; workers die with their rank.
// The tiny-/dev/shm cases run in a child in a private mount namespace (root only); they
// are skipped with a message where unshare(CLONE_NEWNS) is not allowed.
#include "loader.hpp"

#include <dirent.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "exit_codes.hpp"

using namespace hanglab;

namespace {

// A fresh directory under /tmp, removed when the test process exits.
std::string temp_dir() {
  static struct Cleanup {
    pid_t owner = ::getpid();
    std::vector<std::string> dirs;
    ~Cleanup() {
      if (::getpid() != owner) return;  // a forked child exiting normally must not remove them
      for (const auto& d : dirs) std::system(("rm -rf '" + d + "'").c_str());
    }
  } cleanup;
  char tmpl[] = "/tmp/hanglab_loader_test.XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  REQUIRE(dir != nullptr);
  cleanup.dirs.push_back(dir);
  return dir;
}

ShardedDataset make_dataset(const std::string& root, int dim = 8, int64_t size = 256, int shards = 4) {
  ShardedDataset ds(DatasetSpec{root, dim, size, shards, 3});
  ds.ensure_files();
  return ds;
}

// Names in /dev/shm that start with `prefix` (without the leading slash).
std::vector<std::string> segments_with(const std::string& prefix) {
  std::vector<std::string> out;
  DIR* d = ::opendir("/dev/shm");
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) == 0) out.push_back(name);
  }
  ::closedir(d);
  return out;
}

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  // A zombie left for init to reap is gone as far as running goes.
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (f == nullptr) return true;
  int p = 0;
  char comm[64] = {}, state = 0;
  const int n = std::fscanf(f, "%d %63s %c", &p, comm, &state);
  std::fclose(f);
  return n == 3 && (state == 'Z' || state == 'X');
}

bool wait_gone(pid_t pid, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int>(seconds * 1000));
  while (std::chrono::steady_clock::now() < end) {
    if (process_gone(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return process_gone(pid);
}

// Runs `fn` in a forked child and returns what it returned (or "child failed ...").
std::string in_child(const std::function<std::string()>& fn) {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(p[0]);
    std::string out;
    try {
      out = fn();
    } catch (const std::exception& e) {
      out = std::string("exception: ") + e.what();
    }
    (void)!::write(p[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(p[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(p[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(p[0]);
  int st = 0;
  ::waitpid(pid, &st, 0);
  if (!WIFEXITED(st)) out += " [child killed by signal " + std::to_string(WTERMSIG(st)) + "]";
  return out;
}

// In a child: a private mount namespace whose /dev/shm is a tmpfs of `kb` KiB, then `fn`.
// Returns "SKIP: ..." where mount namespaces are not available.
std::string with_tiny_shm(int kb, const std::function<std::string()>& fn) {
  return in_child([&]() -> std::string {
    if (::unshare(CLONE_NEWNS) != 0) return std::string("SKIP: unshare(CLONE_NEWNS): ") + std::strerror(errno);
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
      return std::string("SKIP: make / private: ") + std::strerror(errno);
    }
    const std::string opts = "size=" + std::to_string(kb) + "k";
    if (::mount("hanglab-test-shm", "/dev/shm", "tmpfs", 0, opts.c_str()) != 0) {
      return std::string("SKIP: mount tmpfs on /dev/shm: ") + std::strerror(errno);
    }
    return fn();
  });
}

std::string prefix_for(const char* what) {
  return "/hanglab-lt-" + std::to_string(::getpid()) + "-" + what;
}

}  // namespace

TEST_CASE("workers deliver every batch unchanged and in order, across epochs", "[loader]") {
  const std::string root = temp_dir();
  const ShardedDataset ds = make_dataset(root);
  const DistributedSampler sampler(256, 2, 1, 9, false);
  for (int workers : {1, 3}) {
    for (int prefetch : {1, 2, 4}) {
      INFO("workers " << workers << ", prefetch " << prefetch);
      LoaderOptions o;
      o.num_workers = workers;
      o.prefetch = prefetch;
      o.shm_prefix = prefix_for("order");
      ShmLoader loader(ds, o);
      CHECK(loader.worker_pids().size() == static_cast<size_t>(workers));
      for (int epoch = 0; epoch < 2; ++epoch) {
        const auto batches = sampler.batches(epoch, 7);
        loader.start_epoch(batches);
        for (const auto& idx : batches) {
          REQUIRE(loader.has_next());
          const Batch got = loader.next();
          const Batch want = ds.read_train(idx);
          CHECK(got.x == want.x);
          CHECK(got.y == want.y);
        }
        CHECK_FALSE(loader.has_next());
      }
      CHECK(segments_with(o.shm_prefix.substr(1)).empty());
      loader.shutdown();
      for (pid_t p : loader.worker_pids()) CHECK(process_gone(p));
    }
  }
}

TEST_CASE("breaking out of an epoch and shutting down leave no segment and no worker", "[loader]") {
  const std::string root = temp_dir();
  const ShardedDataset ds = make_dataset(root);
  LoaderOptions o;
  o.num_workers = 2;
  o.prefetch = 3;
  o.shm_prefix = prefix_for("break");
  ShmLoader loader(ds, o);
  const DistributedSampler sampler(256, 1, 0, 1, false);
  loader.start_epoch(sampler.batches(0, 4));
  (void)loader.next();
  // Let the workers fill their prefetch window: segments exist now.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK_FALSE(segments_with(o.shm_prefix.substr(1)).empty());
  // A new epoch drops what the last one prefetched.
  const auto e1 = sampler.batches(1, 4);
  loader.start_epoch(e1);
  CHECK(loader.next().y == ds.read_train(e1[0]).y);
  loader.shutdown();
  CHECK(segments_with(o.shm_prefix.substr(1)).empty());
  for (pid_t p : loader.worker_pids()) CHECK(process_gone(p));
  CHECK_THROWS_AS(loader.next(), DataError);
}

TEST_CASE("an error inside a worker is re-raised in the rank, PyTorch style", "[loader]") {
  const std::string root = temp_dir();
  const ShardedDataset ds = make_dataset(root);
  REQUIRE(::unlink(ds.shard_path(2).c_str()) == 0);
  LoaderOptions o;
  o.num_workers = 1;
  o.shm_prefix = prefix_for("err");
  ShmLoader loader(ds, o);
  loader.start_epoch({{0, 1}, {2 * ds.samples_per_shard()}});
  CHECK(loader.next().rows() == 2);
  try {
    (void)loader.next();
    FAIL("no error");
  } catch (const DataError& e) {
    const std::string what = e.what();
    CHECK_THAT(what, Catch::Contains("Caught DataError in DataLoader worker process 0 (pid " +
                                     std::to_string(loader.worker_pids()[0]) + ")"));
    CHECK_THAT(what, Catch::Contains("shard file missing"));
  }
  loader.shutdown();
  CHECK(segments_with(o.shm_prefix.substr(1)).empty());
}

TEST_CASE("a worker killed from outside fails the rank with its pid and signal", "[loader]") {
  const std::string root = temp_dir();
  const ShardedDataset ds = make_dataset(root);
  LoaderOptions o;
  o.num_workers = 2;
  o.shm_prefix = prefix_for("kill");
  ShmLoader loader(ds, o);
  const DistributedSampler sampler(256, 1, 0, 1, false);
  loader.start_epoch(sampler.batches(0, 4));
  (void)loader.next();
  const pid_t victim = loader.worker_pids()[1];
  REQUIRE(::kill(victim, SIGKILL) == 0);
  std::string what;
  try {
    for (int i = 0; i < 10; ++i) (void)loader.next();
  } catch (const DataError& e) {
    what = e.what();
  }
  CHECK(what == "DataLoader worker (pid " + std::to_string(victim) + ") is killed by signal: Killed.");
  loader.shutdown();
  CHECK(segments_with(o.shm_prefix.substr(1)).empty());
}

TEST_CASE("the SIGBUS message is PyTorch's", "[loader]") {
  CHECK(worker_killed_message(42, SIGBUS) ==
        "DataLoader worker (pid 42) is killed by signal: Bus error. It is possible that dataloader's workers are out "
        "of shared memory. Please try to raise your shared memory limit.");
}

TEST_CASE("a /dev/shm too small for a batch kills the worker with SIGBUS, reported, not hung", "[loader][shm]") {
  const std::string root = temp_dir();
  // 512 samples x 65 floats = 133 KiB per batch, the tmpfs holds 64 KiB.
  const ShardedDataset ds = make_dataset(root, 64, 2048, 4);
  const std::string out = with_tiny_shm(64, [&]() -> std::string {
    LoaderOptions o;
    o.num_workers = 2;
    o.shm_prefix = "/hanglab-lt-bus";
    std::string r = "no error";
    {
      // Under load the worker may die while the epoch is still being set up, so the
      // error can surface from start_epoch() as well as from next().
      ShmLoader loader(ds, o);
      const DistributedSampler sampler(2048, 1, 0, 1, false);
      try {
        loader.start_epoch(sampler.batches(0, 512));
        (void)loader.next();
      } catch (const DataError& e) {
        r = e.what();
      }
      try {
        loader.shutdown();
      } catch (const DataError& e) {
        if (r == "no error") r = e.what();
      }
    }
    r += "|left=" + std::to_string(segments_with("hanglab-lt-bus").size());
    return r;
  });
  if (out.rfind("SKIP", 0) == 0) {
    WARN(out);
    return;
  }
  CHECK_THAT(out, Catch::Matches("DataLoader worker \\(pid [0-9]+\\) is killed by signal: Bus error\\. It is "
                                 "possible that dataloader's workers are out of shared memory\\. Please try to raise "
                                 "your shared memory limit\\.\\|left=0"));
}

TEST_CASE("with shm_alloc=fallocate a full /dev/shm is ENOSPC from the worker", "[loader][shm]") {
  const std::string root = temp_dir();
  const ShardedDataset ds = make_dataset(root, 64, 2048, 4);
  const std::string out = with_tiny_shm(64, [&]() -> std::string {
    LoaderOptions o;
    o.num_workers = 1;
    o.shm_alloc = "fallocate";
    o.shm_prefix = "/hanglab-lt-nospc";
    ShmLoader loader(ds, o);
    const DistributedSampler sampler(2048, 1, 0, 1, false);
    loader.start_epoch(sampler.batches(0, 512));
    std::string r;
    try {
      (void)loader.next();
      r = "no error";
    } catch (const DataError& e) {
      r = e.what();
    }
    loader.shutdown();
    r += "|left=" + std::to_string(segments_with("hanglab-lt-nospc").size());
    return r;
  });
  if (out.rfind("SKIP", 0) == 0) {
    WARN(out);
    return;
  }
  CHECK_THAT(out, Catch::Contains("Caught DataError in DataLoader worker process 0"));
  CHECK_THAT(out, Catch::Contains("unable to write to file </hanglab-lt-nospc-0>: No space left on device (28)"));
  CHECK_THAT(out, Catch::EndsWith("|left=0"));
}

TEST_CASE("workers die with their rank and take their segments with them", "[loader]") {
  const std::string root = temp_dir();
  const ShardedDataset ds = make_dataset(root);
  const std::string prefix = prefix_for("orphan");
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const pid_t rank = ::fork();
  REQUIRE(rank >= 0);
  if (rank == 0) {
    ::close(p[0]);
    LoaderOptions o;
    o.num_workers = 2;
    o.prefetch = 2;
    o.shm_prefix = prefix;
    ShmLoader loader(ds, o);
    const DistributedSampler sampler(256, 1, 0, 1, false);
    loader.start_epoch(sampler.batches(0, 4));
    (void)loader.next();
    const pid_t pids[2] = {loader.worker_pids()[0], loader.worker_pids()[1]};
    (void)!::write(p[1], pids, sizeof pids);
    for (;;) ::pause();  // killed by the test, never shut down
  }
  ::close(p[1]);
  pid_t workers[2] = {0, 0};
  REQUIRE(::read(p[0], workers, sizeof workers) == static_cast<ssize_t>(sizeof workers));
  ::close(p[0]);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // prefetched segments exist now
  CHECK_FALSE(segments_with(prefix.substr(1)).empty());
  REQUIRE(::kill(rank, SIGKILL) == 0);
  ::waitpid(rank, nullptr, 0);
  CHECK(wait_gone(workers[0], 5));
  CHECK(wait_gone(workers[1], 5));
  CHECK(segments_with(prefix.substr(1)).empty());
}

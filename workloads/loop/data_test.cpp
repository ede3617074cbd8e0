// Unit tests of the training loop's data path: DistributedSampler semantics and the shard files.
#include "data.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include "exit_codes.hpp"

using hanglab::DataError;
using hanglab::DatasetSpec;
using hanglab::DistributedSampler;
using hanglab::ShardedDataset;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/hanglab_data_test.XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  REQUIRE(dir != nullptr);
  return dir;
}

std::string read_error(const ShardedDataset& ds, const std::vector<int64_t>& indices) {
  try {
    ds.read_train(indices);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("sampler pads by repeating indices when not drop_last", "[sampler]") {
  std::map<int64_t, int> seen;
  for (int rank = 0; rank < 4; ++rank) {
    const DistributedSampler s(10, 4, rank, 7, false);
    CHECK(s.num_samples() == 3);
    const auto idx = s.indices(0);
    CHECK(idx.size() == 3);
    for (auto i : idx) ++seen[i];
  }
  CHECK(seen.size() == 10);  // every sample is covered
  int repeats = 0;
  for (auto& [i, n] : seen) repeats += n - 1;
  CHECK(repeats == 2);  // 12 slots for 10 samples
}

TEST_CASE("sampler truncates with drop_last and ranks are disjoint", "[sampler]") {
  std::set<int64_t> seen;
  for (int rank = 0; rank < 4; ++rank) {
    const DistributedSampler s(10, 4, rank, 7, true);
    CHECK(s.num_samples() == 2);
    for (auto i : s.indices(0)) CHECK(seen.insert(i).second);
  }
  CHECK(seen.size() == 8);
  // Divisible size: drop_last changes nothing.
  CHECK(DistributedSampler(12, 4, 0, 7, true).num_samples() == DistributedSampler(12, 4, 0, 7, false).num_samples());
}

TEST_CASE("sampler shuffles per epoch, deterministically", "[sampler]") {
  const DistributedSampler a(1000, 4, 1, 3, false);
  const DistributedSampler b(1000, 4, 1, 3, false);
  CHECK(a.indices(0) == b.indices(0));
  CHECK(a.indices(0) != a.indices(1));
  CHECK(a.indices(0) != DistributedSampler(1000, 4, 1, 4, false).indices(0));  // seed matters
  auto sorted = a.indices(0);
  CHECK_FALSE(std::is_sorted(sorted.begin(), sorted.end()));
}

TEST_CASE("batches: last partial batch kept unless drop_last", "[sampler]") {
  // 1026 samples on 4 ranks: 257 per rank padded, 256 with drop_last.
  const DistributedSampler pad(1026, 4, 0, 1, false);
  const DistributedSampler drop(1026, 4, 0, 1, true);
  CHECK(pad.batches_per_epoch(8) == 33);
  CHECK(drop.batches_per_epoch(8) == 32);
  const auto pb = pad.batches(0, 8);
  REQUIRE(pb.size() == 33);
  CHECK(pb.back().size() == 1);
  const auto db = drop.batches(0, 8);
  REQUIRE(db.size() == 32);
  for (const auto& b : db) CHECK(b.size() == 8);
}

TEST_CASE("shards are generated once, deterministic, and read back by index", "[dataset]") {
  const std::string root = temp_dir();
  const ShardedDataset ds(DatasetSpec{root, 4, 100, 3, 9});
  ds.ensure_files();
  CHECK(ds.samples_per_shard() == 34);
  const auto batch = ds.read_train({0, 99, 50, 34, 33});
  CHECK(batch.rows() == 5);
  CHECK(batch.x.size() == 20);
  // Same spec in another root generates byte-identical data.
  const ShardedDataset again(DatasetSpec{temp_dir(), 4, 100, 3, 9});
  again.ensure_files();
  const auto batch2 = again.read_train({0, 99, 50, 34, 33});
  CHECK(batch.x == batch2.x);
  CHECK(batch.y == batch2.y);
  // A different seed gives different data.
  const ShardedDataset other(DatasetSpec{temp_dir(), 4, 100, 3, 10});
  other.ensure_files();
  CHECK(other.read_train({0}).x != ds.read_train({0}).x);
  // Held-out samples are not training samples and wrap around.
  const auto held = ds.read_held_out({0, ShardedDataset::kHeldOutSize});
  CHECK(held.rows() == 2);
  CHECK(held.y[0] == held.y[1]);
  CHECK(held.x != ds.read_train({0, 0}).x);
}

TEST_CASE("concurrent generation by several processes yields complete files", "[dataset]") {
  const std::string root = temp_dir();
  const DatasetSpec spec{root, 16, 4000, 4, 1};
  std::vector<pid_t> kids;
  for (int k = 0; k < 4; ++k) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      try {
        ShardedDataset(spec).ensure_files();
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  }
  const ShardedDataset ds(spec);
  std::vector<int64_t> all(4000);
  for (int64_t i = 0; i < 4000; ++i) all[i] = i;
  CHECK(ds.read_train(all).rows() == 4000);
  // No temp files are left behind.
  CHECK(std::system(("ls " + ds.dir() + " | grep -q tmp").c_str()) != 0);
}

TEST_CASE("missing, truncated and corrupt shards raise DataError", "[dataset]") {
  const std::string root = temp_dir();
  const ShardedDataset ds(DatasetSpec{root, 4, 100, 4, 1});
  ds.ensure_files();
  REQUIRE(read_error(ds, {10}).empty());

  ::unlink(ds.shard_path(1).c_str());
  CHECK_THAT(read_error(ds, {30}), Catch::Contains("shard file missing") && Catch::Contains("shard-00001.bin"));
  CHECK(read_error(ds, {10}).empty());  // other shards still fine

  REQUIRE(::truncate(ds.shard_path(2).c_str(), 100) == 0);
  CHECK_THAT(read_error(ds, {74}), Catch::Contains("short read") && Catch::Contains("shard-00002.bin"));

  {
    std::fstream f(ds.shard_path(3), std::ios::in | std::ios::out | std::ios::binary);
    f.write("XXXX", 4);
  }
  CHECK_THAT(read_error(ds, {80}), Catch::Contains("corrupt shard header"));

  // ensure_files repairs what is missing or the wrong size.
  ds.ensure_files();
  CHECK(read_error(ds, {30, 74}).empty());
}

TEST_CASE("an unwritable data dir raises DataError", "[dataset]") {
  const ShardedDataset ds(DatasetSpec{"/proc/hanglab-no-such/data", 4, 10, 1, 1});
  CHECK_THROWS_AS(ds.ensure_files(), DataError);
}

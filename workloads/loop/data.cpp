#include "data.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <map>
#include <utility>

#include "exit_codes.hpp"

namespace hanglab {

namespace {

constexpr char kMagic[8] = {'H', 'L', 'S', 'H', 'A', 'R', 'D', '1'};

// Fixed-layout file header; native endianness (the files never leave the host).
struct ShardHeader {
  char magic[8];
  uint32_t input_dim;
  uint32_t reserved;
  int64_t first_index;
  int64_t count;
};
static_assert(sizeof(ShardHeader) == 32, "shard header layout");

// splitmix64: tiny, and identical on every platform, unlike std::normal_distribution.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return (static_cast<double>(next() >> 11) + 1.0) / 9007199254740993.0; }  // (0, 1]
  double gaussian() {
    const double u1 = uniform();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

uint64_t mix(uint64_t a, uint64_t b) {
  SplitMix64 r{a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL)};
  return r.next();
}

std::string errno_text(int err) { return std::string(std::strerror(err)); }

}  // namespace

void make_dirs(const std::string& dir) {
  for (size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    const std::string part = pos == std::string::npos ? dir : dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
      throw DataError("cannot create directory " + part + ": mkdir: " + errno_text(errno));
    }
    if (pos == std::string::npos) break;
  }
}

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// pread exactly `len` bytes or throw a DataError that says what came back.
void pread_exact(int fd, const std::string& path, void* buf, size_t len, off_t offset) {
  size_t done = 0;
  while (done < len) {
    const ssize_t n = ::pread(fd, static_cast<char*>(buf) + done, len - done, offset + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw DataError("read error on shard " + path + " at offset " + std::to_string(offset) + ": pread: " +
                      errno_text(errno));
    }
    if (n == 0) {
      throw DataError("short read from shard " + path + " at offset " + std::to_string(offset) + ": got " +
                      std::to_string(done) + " of " + std::to_string(len) + " bytes (truncated shard?)");
    }
    done += static_cast<size_t>(n);
  }
}

}  // namespace

ShardedDataset::ShardedDataset(DatasetSpec spec) : spec_(std::move(spec)) {
  per_shard_ = (spec_.size + spec_.shards - 1) / spec_.shards;
  dir_ = spec_.root + "/synth-d" + std::to_string(spec_.input_dim) + "-n" + std::to_string(spec_.size) + "-k" +
         std::to_string(spec_.shards) + "-seed" + std::to_string(spec_.seed);
}

std::string ShardedDataset::shard_path(int shard) const {
  char name[32];
  std::snprintf(name, sizeof name, "/shard-%05d.bin", shard);
  return dir_ + name;
}

std::string ShardedDataset::held_out_path() const { return dir_ + "/heldout.bin"; }

ShardedDataset::FileLayout ShardedDataset::shard_layout(int shard) const {
  const int64_t first = shard * per_shard_;
  const int64_t count = std::max<int64_t>(0, std::min(per_shard_, spec_.size - first));
  return {shard_path(shard), first, count};
}

ShardedDataset::FileLayout ShardedDataset::held_out_layout() const {
  // Held-out samples continue the global index range, so they are fresh draws from the
  // same teacher, never seen in training.
  return {held_out_path(), spec_.size, kHeldOutSize};
}

int64_t ShardedDataset::file_bytes(int64_t count) const {
  return static_cast<int64_t>(sizeof(ShardHeader)) + count * (spec_.input_dim + 1) * static_cast<int64_t>(sizeof(float));
}

void ShardedDataset::ensure_files() const {
  make_dirs(dir_);
  for (int s = 0; s < spec_.shards; ++s) ensure_file(shard_layout(s));
  ensure_file(held_out_layout());
}

void ShardedDataset::ensure_file(const FileLayout& layout) const {
  struct stat st {};
  if (::stat(layout.path.c_str(), &st) == 0 && st.st_size == file_bytes(layout.count)) return;

  const int d = spec_.input_dim;
  // Teacher: y = w.x + b + noise, scaled so y has unit-order variance whatever input_dim is.
  SplitMix64 teacher_rng{mix(spec_.seed, 0x7eac4e7ULL)};
  std::vector<double> w(d);
  for (double& wi : w) wi = teacher_rng.gaussian() / std::sqrt(static_cast<double>(d));
  const double b = 0.5 * teacher_rng.gaussian();

  std::vector<char> bytes(static_cast<size_t>(file_bytes(layout.count)));
  ShardHeader header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.input_dim = static_cast<uint32_t>(d);
  header.first_index = layout.first_index;
  header.count = layout.count;
  std::memcpy(bytes.data(), &header, sizeof header);
  float* rec = reinterpret_cast<float*>(bytes.data() + sizeof header);
  for (int64_t k = 0; k < layout.count; ++k) {
    // Each sample depends only on (seed, global index), so any shard can be made alone.
    SplitMix64 rng{mix(spec_.seed, static_cast<uint64_t>(layout.first_index + k) + 1)};
    double y = b;
    for (int j = 0; j < d; ++j) {
      const double xj = rng.gaussian();
      rec[j] = static_cast<float>(xj);
      y += w[j] * xj;
    }
    rec[d] = static_cast<float>(y + 0.1 * rng.gaussian());
    rec += d + 1;
  }

  // Temp name unique per process; rename(2) is atomic, so concurrent ranks race only on
  // which identical copy lands last, and no reader ever sees a partial file.
  const std::string tmp = layout.path + ".tmp." + std::to_string(::getpid());
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) throw DataError("cannot create shard " + tmp + ": open: " + errno_text(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::unlink(tmp.c_str());
      throw DataError("cannot write shard " + tmp + ": write: " + errno_text(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::rename(tmp.c_str(), layout.path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw DataError("cannot publish shard " + layout.path + ": rename: " + errno_text(err));
  }
}

void ShardedDataset::read_from(const FileLayout& layout, const std::vector<int64_t>& global_indices,
                               Batch& batch) const {
  Fd fd(::open(layout.path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    throw DataError(std::string(err == ENOENT ? "shard file missing: " : "cannot open shard: ") + layout.path +
                    ": open: " + errno_text(err));
  }
  ShardHeader header{};
  pread_exact(fd.get(), layout.path, &header, sizeof header, 0);
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0 || header.input_dim != static_cast<uint32_t>(spec_.input_dim) ||
      header.first_index != layout.first_index || header.count != layout.count) {
    throw DataError("corrupt shard header in " + layout.path + " (expected input_dim " +
                    std::to_string(spec_.input_dim) + ", first " + std::to_string(layout.first_index) + ", count " +
                    std::to_string(layout.count) + ")");
  }
  const int d = spec_.input_dim;
  std::vector<float> rec(d + 1);
  const off_t rec_bytes = static_cast<off_t>(rec.size() * sizeof(float));
  for (int64_t index : global_indices) {
    const off_t offset = static_cast<off_t>(sizeof header) + (index - layout.first_index) * rec_bytes;
    pread_exact(fd.get(), layout.path, rec.data(), static_cast<size_t>(rec_bytes), offset);
    batch.x.insert(batch.x.end(), rec.begin(), rec.begin() + d);
    batch.y.push_back(rec[d]);
  }
}

Batch ShardedDataset::read_train(const std::vector<int64_t>& indices) const {
  Batch batch;
  batch.x.reserve(indices.size() * spec_.input_dim);
  // Keep batch order; consecutive indices of the same shard share one open().
  size_t i = 0;
  while (i < indices.size()) {
    const int shard = static_cast<int>(indices[i] / per_shard_);
    std::vector<int64_t> run;
    while (i < indices.size() && indices[i] / per_shard_ == shard) run.push_back(indices[i++]);
    read_from(shard_layout(shard), run, batch);
  }
  return batch;
}

Batch ShardedDataset::read_held_out(const std::vector<int64_t>& indices) const {
  const FileLayout layout = held_out_layout();
  std::vector<int64_t> global;
  global.reserve(indices.size());
  for (int64_t i : indices) global.push_back(layout.first_index + (i % kHeldOutSize));
  Batch batch;
  read_from(layout, global, batch);
  return batch;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, int world_size, int rank, uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size), world_size_(world_size), rank_(rank), seed_(seed), drop_last_(drop_last) {
  if (drop_last_ && dataset_size_ % world_size_ != 0) {
    num_samples_ = (dataset_size_ - world_size_ + world_size_ - 1) / world_size_;  // ceil((n - ws) / ws)
  } else {
    num_samples_ = (dataset_size_ + world_size_ - 1) / world_size_;
  }
}

std::vector<int64_t> DistributedSampler::indices(int epoch) const {
  std::vector<int64_t> all(static_cast<size_t>(dataset_size_));
  for (int64_t i = 0; i < dataset_size_; ++i) all[i] = i;
  SplitMix64 rng{mix(seed_ + static_cast<uint64_t>(epoch), 0x5a3b1e5ULL)};
  for (int64_t i = dataset_size_ - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.next() % static_cast<uint64_t>(i + 1));
    std::swap(all[i], all[j]);
  }
  const int64_t total = num_samples_ * world_size_;
  if (total > dataset_size_) {
    // Pad by repeating the head (wrapping as often as needed), as torch does.
    for (int64_t k = 0; static_cast<int64_t>(all.size()) < total; ++k) all.push_back(all[k % dataset_size_]);
  } else {
    all.resize(static_cast<size_t>(total));
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (int64_t i = rank_; i < total; i += world_size_) mine.push_back(all[i]);
  return mine;
}

int64_t DistributedSampler::batches_per_epoch(int batch_size) const {
  return drop_last_ ? num_samples_ / batch_size : (num_samples_ + batch_size - 1) / batch_size;
}

std::vector<std::vector<int64_t>> DistributedSampler::batches(int epoch, int batch_size) const {
  const std::vector<int64_t> mine = indices(epoch);
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < mine.size(); i += static_cast<size_t>(batch_size)) {
    const size_t end = std::min(mine.size(), i + static_cast<size_t>(batch_size));
    if (drop_last_ && end - i < static_cast<size_t>(batch_size)) break;
    out.emplace_back(mine.begin() + static_cast<std::ptrdiff_t>(i), mine.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

}  // namespace hanglab

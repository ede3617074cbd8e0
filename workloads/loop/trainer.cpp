// The one training loop of the built-in workloads; see trainer.hpp. A scenario reads
// the same on every backend because every backend runs this code.
#include "trainer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>

#include "data.hpp"
#include "hooks.hpp"
#include "loader.hpp"
#include "mlp.hpp"
#include "options.hpp"
#include "runtime.hpp"
#include "signals.hpp"
#include "trace.hpp"
#include "workload_args.hpp"

namespace hanglab {
namespace {

std::string env_str(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

int64_t env_int(const char* name, std::optional<int64_t> fallback, int64_t min_value, int64_t max_value) {
  const std::string text = env_str(name);
  if (text.empty()) {
    if (!fallback) throw UsageError(std::string("environment variable ") + name + " is not set");
    return *fallback;
  }
  const std::optional<int64_t> v = parse_whole_int(text);
  if (!v || *v < min_value || *v > max_value) {
    throw UsageError(std::string(name) + "=" + text + ": expected an integer in [" + std::to_string(min_value) + ", " +
                     std::to_string(max_value) + "]");
  }
  return *v;
}

std::string host_name() {
  // A hanglab node ([topology] nodes > 1) shares this host's UTS name: it says which node it is.
  if (const char* h = std::getenv("HANGLAB_HOST"); h != nullptr && *h != '\0') return h;
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// ---------------------------------------------------------------------------------------
// Collectives, traced: every one gets a per-communicator sequence number counted at issue,
// so ranks that diverge (a skipped or extra collective) show different seqs for the same
// step in their traces.

class TracedComm {
 public:
  explicit TracedComm(std::unique_ptr<Collectives> c) : c_(std::move(c)) {}

  int64_t next_seq() const { return seq_ + 1; }
  Collectives& backend() { return *c_; }

  void allreduce(float* data, int64_t n, int step) {
    run("allreduce", n, step, [&] { c_->allreduce_sum(data, n); });
  }
  void allreduce(double* data, int64_t n, int step) {
    run("allreduce", n, step, [&] { c_->allreduce_sum(data, n); });
  }
  void broadcast(float* data, int64_t n, int root, int step) {
    run("broadcast", n, step, [&] { c_->broadcast(data, n, root); });
  }
  void barrier(int step) {
    run("barrier", 0, step, [&] { c_->barrier(); });
  }

 private:
  template <class Issue>
  void run(const char* op, int64_t numel, int step, Issue issue) {
    const int64_t seq = ++seq_;
    c_->current_seq = seq;
    c_->current_step = step;
    progress_enter_collective(seq, op, numel);
    emit("coll", {{"edge", "begin"}, {"seq", seq}, {"op", op}, {"numel", numel}, {"step", step}});
    issue();
    emit("coll", {{"edge", "end"}, {"seq", seq}, {"op", op}, {"numel", numel}, {"step", step}});
    progress_leave_collective();
  }

  std::unique_ptr<Collectives> c_;
  int64_t seq_ = 0;
};

struct Bucket {
  std::vector<size_t> params;  // indices into the model's parameter list
  int64_t numel = 0;
};

// DDP's bucketing: parameters in reverse registration order (gradients become ready
// roughly back to front), a bucket closes once it reaches the byte cap.
std::vector<Bucket> make_buckets(const Mlp& model, int64_t cap_bytes) {
  std::vector<Bucket> buckets;
  Bucket cur;
  for (size_t k = model.num_tensors(); k-- > 0;) {
    cur.params.push_back(k);
    cur.numel += static_cast<int64_t>(model.param(k).size());
    if (cur.numel * static_cast<int64_t>(sizeof(float)) >= cap_bytes) {
      buckets.push_back(std::move(cur));
      cur = Bucket{};
    }
  }
  if (!cur.params.empty()) buckets.push_back(std::move(cur));
  return buckets;
}

// The checkpoint goes to disk with plain open/write/close, like torch.save through a
// Python file object: every write(2) is an I/O the storage can delay or fail.
void write_checkpoint_file(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw DataError("checkpoint write failed: " + path + ": open: " + std::strerror(errno));
  constexpr size_t kChunk = 256 * 1024;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, std::min(kChunk, bytes.size() - done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(path.c_str());
      throw DataError("checkpoint write failed: " + path + ": write: " + std::strerror(err) + " (wrote " +
                      std::to_string(done) + " of " + std::to_string(bytes.size()) + " bytes)");
    }
    done += static_cast<size_t>(n);
  }
  // close(2) reports errors of network and FUSE file systems (their flush).
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    throw DataError("checkpoint write failed: " + path + ": close: " + std::strerror(err));
  }
}

// ---------------------------------------------------------------------------------------
// Training.

class Trainer {
 public:
  Trainer(const Options& o, const RankEnv& env, Hooks& hooks, const BackendSpec& spec)
      : o_(o), env_(env), hooks_(hooks), spec_(spec), jitter_rng_(static_cast<uint32_t>(o.seed * 7919 + env.rank)) {}

  void run() {
    const auto t_start = Clock::now();
    const std::string master = env_.master_addr.empty()
                                   ? std::string("none (the launcher wires the ranks)")
                                   : env_.master_addr + ":" + std::to_string(env_.master_port);
    log_info("%s starting: world_size %d, backend %s, steps %d, master %s, hooks %zu", spec_.workload.c_str(),
             env_.world_size, o_.backend.c_str(), o_.steps, master.c_str(), hooks_.hooks().size());
    {
      PhaseScope phase("init", 0);
      const auto t0 = Clock::now();
      comm_ = std::make_unique<TracedComm>(spec_.connect(env_));
      log_info("process group ready in %.0f ms (%s)", ms_since(t0), comm_->backend().describe().c_str());
    }
    build_model();
    prepare_data();
    train_loop();
    runtime_pause_trace(false);
    step_times_.end();
    step_times_.write();  // HANGLAB_STEP_TIMES (trace.hpp), for `hanglab bench`
    stop_loader();  // the epoch iterator is done: its workers exit, as PyTorch's do
    PhaseScope phase("shutdown", last_step_);
    after_loop();
    // The parameter checksum is equal on every rank exactly when gradient sync kept the
    // replicas identical; a silently mis-paired collective shows up here.
    log_info("done: %d/%d steps in %.1f s, last loss %.4f, parameter checksum %.9g", last_step_, o_.steps,
             ms_since(t_start) / 1000.0, last_loss_, model_->checksum());
    comm_->backend().finalize();
  }

 private:
  void build_model() {
    // Ranks start from different weights on purpose: the broadcast below is what makes
    // them equal, as in DDP's constructor.
    model_ = std::make_unique<Mlp>(o_.input_dim, o_.hidden, o_.layers,
                                   static_cast<uint64_t>(o_.seed) * 1000003ULL + static_cast<uint64_t>(env_.rank));
    buckets_ = make_buckets(*model_, static_cast<int64_t>(o_.bucket_kb) * 1024);
    std::vector<float> flat;
    for (size_t k = 0; k < model_->num_tensors(); ++k) {
      flat.insert(flat.end(), model_->param(k).begin(), model_->param(k).end());
    }
    comm_->broadcast(flat.data(), static_cast<int64_t>(flat.size()), 0, 0);
    size_t offset = 0;
    for (size_t k = 0; k < model_->num_tensors(); ++k) {
      auto& p = model_->param(k);
      std::copy(flat.begin() + static_cast<std::ptrdiff_t>(offset),
                flat.begin() + static_cast<std::ptrdiff_t>(offset + p.size()), p.begin());
      offset += p.size();
    }
    std::string sizes;
    for (const auto& b : buckets_) sizes += (sizes.empty() ? "" : ",") + std::to_string(b.numel);
    log_info("model: MLP %d->%dx%d->1, %lld parameters, %zu gradient buckets [%s], initial parameters broadcast from "
             "rank 0",
             o_.input_dim, o_.hidden, o_.layers, static_cast<long long>(flat.size()), buckets_.size(), sizes.c_str());
  }

  void prepare_data() {
    PhaseScope phase("data", 0);
    dataset_ = std::make_unique<ShardedDataset>(
        DatasetSpec{env_.data_dir, o_.input_dim, o_.dataset_size, o_.shards, static_cast<uint64_t>(o_.seed)});
    dataset_->ensure_files();
    const bool drop_last = o_.drop_last != hooks_.flip_drop_last();
    sampler_ = std::make_unique<DistributedSampler>(o_.dataset_size, env_.world_size, env_.rank,
                                                    static_cast<uint64_t>(o_.seed), drop_last);
    // Epochs come from the configured sampler, which every healthy rank shares; a rank
    // whose own sampler is shorter runs out of batches before `steps`.
    const DistributedSampler configured(o_.dataset_size, env_.world_size, env_.rank, static_cast<uint64_t>(o_.seed),
                                        o_.drop_last);
    const int64_t per_epoch = configured.batches_per_epoch(o_.batch_size);
    if (per_epoch == 0) {
      throw UsageError("--batch_size=" + std::to_string(o_.batch_size) + " exceeds the " +
                       std::to_string(configured.num_samples()) + " samples per rank with drop_last: no batches");
    }
    epochs_ = static_cast<int>((o_.steps + per_epoch - 1) / per_epoch);
    if (hooks_.flip_drop_last()) {
      report_fault(HookKind::kUnevenBatches, 0,
                   std::string("drop_last_mismatch: this rank uses drop_last=") + (drop_last ? "true" : "false") +
                       " (configured " + (o_.drop_last ? "true" : "false") + "): " +
                       std::to_string(sampler_->num_samples()) + " samples, " +
                       std::to_string(sampler_->batches_per_epoch(o_.batch_size)) + " batches/epoch vs " +
                       std::to_string(configured.num_samples()) + " samples, " + std::to_string(per_epoch) +
                       " batches/epoch on peers");
    }
    log_info("dataset ready: %s (%lld samples in %d shards), %lld samples/rank, %lld batches/epoch, %d epoch(s)",
             dataset_->dir().c_str(), static_cast<long long>(o_.dataset_size), o_.shards,
             static_cast<long long>(sampler_->num_samples()),
             static_cast<long long>(sampler_->batches_per_epoch(o_.batch_size)), epochs_);
    if (o_.num_workers > 0) start_loader();
  }

  void start_loader() {
    LoaderOptions lo;
    lo.num_workers = o_.num_workers;
    lo.prefetch = o_.prefetch;
    lo.shm_alloc = o_.shm_alloc;
    lo.log_prefix = "[rank " + std::to_string(env_.rank) + "] ";
    loader_ = std::make_unique<ShmLoader>(*dataset_, lo);
    runtime_set_loader(loader_.get());
    std::string pids;
    for (pid_t p : loader_->worker_pids()) pids += (pids.empty() ? "" : ",") + std::to_string(p);
    const double batch_kib = static_cast<double>(o_.batch_size) * (o_.input_dim + 1) * sizeof(float) / 1024.0;
    char size[32];
    if (batch_kib >= 1024) {
      std::snprintf(size, sizeof size, "%.2f MiB", batch_kib / 1024.0);
    } else {
      std::snprintf(size, sizeof size, "%.1f KiB", batch_kib);
    }
    log_info("data loader: %d worker process(es) (pids %s), prefetch %d per worker, batches of %s through /dev/shm "
             "(%s)",
             o_.num_workers, pids.c_str(), o_.prefetch, size, o_.shm_alloc.c_str());
  }

  void stop_loader() {
    if (!loader_) return;
    loader_->shutdown();
    runtime_set_loader(nullptr);
  }

  void train_loop() {
    for (int epoch = 0; epoch < epochs_ && last_step_ < o_.steps; ++epoch) {
      const auto batches = sampler_->batches(epoch, o_.batch_size);
      if (loader_) loader_->start_epoch(batches);
      for (const auto& batch : batches) {
        if (last_step_ == o_.steps) break;
        const int step = last_step_ + 1;
        const bool traced = !trace_ab_ || trace_step_traced(step);
        if (trace_ab_) runtime_pause_trace(!traced);  // HANGLAB_TRACE_OFF=ab
        step_times_.begin_step(step, traced);
        hooks_.begin_step(step, unix_time_now());
        if (hooks_.sampler_exhausted(step)) {
          report_fault(HookKind::kUnevenBatches, step,
                       "fewer: sampler exhausted after " + std::to_string(step - 1) +
                           " batches; leaving the training loop before step " + std::to_string(step));
          return;
        }
        train_step(step, batch);
        last_step_ = step;
        if (o_.eval_every > 0 && step % o_.eval_every == 0) run_eval(step);
        if (o_.checkpoint_every > 0 && step % o_.checkpoint_every == 0) run_checkpoint(step);
      }
    }
    if (last_step_ < o_.steps) {
      log_info("data exhausted after %d of %d steps (%d epoch(s))", last_step_, o_.steps, epochs_);
    }
  }

  void train_step(int step, const std::vector<int64_t>& indices) {
    const auto t0 = Clock::now();
    const int64_t compute_ms =
        o_.step_ms +
        (o_.step_jitter_ms > 0 ? std::uniform_int_distribution<int>(0, o_.step_jitter_ms)(jitter_rng_) : 0);
    Batch b;
    {
      PhaseScope phase("data", step);
      b = loader_ ? loader_->next() : dataset_->read_train(indices);
    }
    double loss_value = 0;
    {
      PhaseScope phase("forward", step);
      grow_memory(step);
      spend(compute_ms / 3);  // forward is about a third of a step
      if (const Hook* h = hooks_.exception_at(step)) {
        report_fault(HookKind::kException, step, "throwing std::runtime_error(\"" + h->message + "\") in forward");
        throw std::runtime_error(h->message);
      }
      loss_value = model_->forward_loss(b.x.data(), b.y.data(), b.rows());
      if (hooks_.nan_loss_at(step) != nullptr) {
        loss_value = std::numeric_limits<double>::quiet_NaN();
        report_fault(HookKind::kNanSkip, step,
                     "loss forced to NaN; skipping backward, " + std::to_string(buckets_.size()) +
                         " gradient allreduce(s) (next seq " + std::to_string(comm_->next_seq()) +
                         ") and the optimizer step");
      }
    }
    if (!std::isfinite(loss_value)) {
      // What training scripts do on a non-finite loss: skip the update. Under DDP this is
      // the classic hang, because the peers do enter this step's allreduces.
      log_info("WARNING: non-finite loss (%f) at step %d; skipping backward and the optimizer step", loss_value,
               step);
      model_->zero_grad();
    } else {
      {
        PhaseScope phase("backward", step);
        model_->backward();
        spend(compute_ms - compute_ms / 3);
        sync_gradients(step);
      }
      {
        PhaseScope phase("optimizer", step);
        model_->sgd_step(static_cast<float>(o_.lr));
      }
    }
    last_loss_ = loss_value;
    const double dur_ms = ms_since(t0);
    emit("step", {{"step", step}, {"dur_ms", std::round(dur_ms * 10) / 10}, {"loss", loss_value}});
    log_info("step %d/%d loss %.4f dur_ms %.0f", step, o_.steps, loss_value, dur_ms);
  }

  void spend(int64_t ms) const {
    if (o_.compute == "burn") {
      burn_cpu_ms(ms);
    } else {
      sleep_ms(ms);
    }
  }

  void grow_memory(int step) {
    const int64_t mb = hooks_.alloc_growth_mb(step);
    if (mb <= 0) return;
    const size_t bytes = static_cast<size_t>(mb) << 20;
    std::unique_ptr<char[]> block(new char[bytes]);
    // Touch every page so the memory is resident and counts against a cgroup limit.
    for (size_t off = 0; off < bytes; off += 4096) block[off] = static_cast<char>(off);
    ballast_.push_back(std::move(block));
    ballast_mb_ += mb;
    report_fault(HookKind::kAllocGrowth, step,
                 "allocated and touched " + std::to_string(mb) + " MiB (holding " + std::to_string(ballast_mb_) +
                     " MiB)");
  }

  // DDP's reducer, done by hand: one allreduce (sum) per bucket, then divide by the world
  // size and copy back into the gradients.
  void sync_gradients(int step) {
    const bool skip = hooks_.should_skip_grad_allreduce(step);
    const Hook* mismatch = hooks_.mismatched_collective_at(step);
    int64_t skipped = 0;  // a skipped collective takes no seq here, but does on the peers
    for (size_t b = 0; b < buckets_.size(); ++b) {
      const Bucket& bucket = buckets_[b];
      if (first_grad_collective_) {
        first_grad_collective_ = false;
        if (o_.first_collective_delay_ms > 0) {
          log_info("first gradient allreduce: warming up for %d ms", o_.first_collective_delay_ms);
          sleep_ms(o_.first_collective_delay_ms);
        }
      }
      if (skip) {
        report_fault(HookKind::kSkipCollective, step,
                     "skipped gradient allreduce of bucket " + std::to_string(b) + "/" +
                         std::to_string(buckets_.size()) + " (numel " + std::to_string(bucket.numel) +
                         "); peers enter it as seq " + std::to_string(comm_->next_seq() + skipped));
        ++skipped;
        continue;
      }
      std::vector<float> flat;
      flat.reserve(static_cast<size_t>(bucket.numel));
      for (size_t k : bucket.params) flat.insert(flat.end(), model_->grad(k).begin(), model_->grad(k).end());
      if (mismatch != nullptr && b == 0) {
        mismatched_collective(step, *mismatch, flat);
      } else {
        comm_->allreduce(flat.data(), static_cast<int64_t>(flat.size()), step);
        for (float& v : flat) v /= static_cast<float>(env_.world_size);
      }
      size_t offset = 0;
      for (size_t k : bucket.params) {
        auto& g = model_->grad(k);
        std::copy(flat.begin() + static_cast<std::ptrdiff_t>(offset),
                  flat.begin() + static_cast<std::ptrdiff_t>(offset + g.size()), g.begin());
        offset += g.size();
      }
    }
    if (const Hook* extra = hooks_.extra_collective_at(step)) {
      report_fault(HookKind::kExtraCollective, step,
                   "extra allreduce of numel " + std::to_string(*extra->numel) + " as seq " +
                       std::to_string(comm_->next_seq()) + " (peers do not issue it)");
      std::vector<float> t(static_cast<size_t>(*extra->numel), 1.0f);
      comm_->allreduce(t.data(), static_cast<int64_t>(t.size()), step);
    }
  }

  void mismatched_collective(int step, const Hook& h, std::vector<float>& flat) {
    const int64_t n = static_cast<int64_t>(flat.size());
    if (h.op == "broadcast") {
      report_fault(HookKind::kMismatchedCollective, step,
                   "bucket 0 (numel " + std::to_string(n) + ") as broadcast from rank 0 instead of allreduce, seq " +
                       std::to_string(comm_->next_seq()));
      comm_->broadcast(flat.data(), n, 0, step);
      return;
    }
    const int64_t numel = h.numel.value_or(n + 1);
    report_fault(HookKind::kMismatchedCollective, step,
                 "bucket 0 allreduce with numel " + std::to_string(numel) + " instead of " + std::to_string(n) +
                     ", seq " + std::to_string(comm_->next_seq()));
    std::vector<float> t(static_cast<size_t>(numel), 0.0f);
    const int64_t common = std::min(numel, n);
    std::copy(flat.begin(), flat.begin() + common, t.begin());
    comm_->allreduce(t.data(), numel, step);
    for (int64_t i = 0; i < common; ++i) flat[i] = t[i] / static_cast<float>(env_.world_size);
  }

  void run_eval(int step) {
    PhaseScope phase("eval", step);
    const auto t0 = Clock::now();
    double totals[2] = {0, 0};  // sum of squared errors, samples
    for (int b = 0; b < o_.eval_batches; ++b) {
      std::vector<int64_t> idx;
      for (int j = 0; j < o_.batch_size; ++j) {
        idx.push_back((static_cast<int64_t>(b) * env_.world_size + env_.rank) * o_.batch_size + j);
      }
      const Batch batch = dataset_->read_held_out(idx);
      totals[0] += model_->sum_squared_error(batch.x.data(), batch.y.data(), batch.rows());
      totals[1] += static_cast<double>(batch.rows());
    }
    comm_->allreduce(totals, 2, step);
    const double global_loss = totals[0] / std::max(1.0, totals[1]);
    log_info("eval at step %d: loss %.4f over %.0f held-out samples (%.0f ms)", step, global_loss, totals[1],
             ms_since(t0));
  }

  void run_checkpoint(int step) {
    PhaseScope phase("checkpoint", step);
    const auto t0 = Clock::now();
    if (env_.rank == 0 || o_.checkpoint_ranks == "all") {
      make_dirs(env_.ckpt_dir);
      char name[64];
      if (o_.checkpoint_ranks == "all") {
        std::snprintf(name, sizeof name, "/step-%06d-rank%d.bin", step, env_.rank);
      } else {
        std::snprintf(name, sizeof name, "/step-%06d.bin", step);
      }
      const std::string path = env_.ckpt_dir + name;
      const std::string tmp = path + ".tmp." + std::to_string(::getpid());
      // A raw dump: a small header, then every parameter tensor in registration order.
      std::string bytes = "hanglab-mlp v1 " + std::to_string(model_->num_parameters()) + "\n";
      for (size_t k = 0; k < model_->num_tensors(); ++k) {
        const auto& p = model_->param(k);
        bytes.append(reinterpret_cast<const char*>(p.data()), p.size() * sizeof(float));
      }
      write_checkpoint_file(tmp, bytes);
      sleep_ms(o_.checkpoint_delay_ms);  // slow storage stand-in, inside the save
      if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int err = errno;
        ::unlink(tmp.c_str());
        throw DataError("checkpoint publish failed: rename " + tmp + " -> " + path + ": " + std::strerror(err));
      }
      log_info("checkpoint at step %d saved to %s (%.0f ms)", step, path.c_str(), ms_since(t0));
    }
    if (hooks_.take_skip_checkpoint_barrier(step)) {
      report_fault(HookKind::kSkipCollective, step,
                   "skipped the checkpoint barrier; peers enter it as seq " + std::to_string(comm_->next_seq()));
      return;
    }
    comm_->barrier(step);
  }

  void after_loop() {
    if (o_.after_loop == "barrier") {
      log_info("final barrier");
      comm_->barrier(last_step_);
    } else if (o_.after_loop == "linger") {
      log_info("lingering after the training loop until killed");
      for (;;) ::pause();
    }
  }

  const Options& o_;
  const RankEnv& env_;
  Hooks& hooks_;
  const BackendSpec& spec_;
  std::mt19937 jitter_rng_;
  std::unique_ptr<TracedComm> comm_;
  std::unique_ptr<Mlp> model_;
  std::vector<Bucket> buckets_;
  std::unique_ptr<ShardedDataset> dataset_;
  std::unique_ptr<DistributedSampler> sampler_;
  std::unique_ptr<ShmLoader> loader_;
  int epochs_ = 1;
  int last_step_ = 0;
  StepTimes step_times_ = StepTimes::from_env(env_.rank);
  const bool trace_ab_ = trace_alternating();
  double last_loss_ = std::nan("");
  bool first_grad_collective_ = true;
  std::vector<std::unique_ptr<char[]>> ballast_;
  int64_t ballast_mb_ = 0;
};

}  // namespace

std::string trace_path_for_rank(const std::string& pattern, int rank) {
  std::string out = pattern;
  const std::string r = std::to_string(rank);
  for (size_t pos = 0; (pos = out.find("%r", pos)) != std::string::npos; pos += r.size()) out.replace(pos, 2, r);
  return out;
}

RankEnv read_rank_env(const BackendSpec& spec) {
  RankEnv e;
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  const bool have_rank = !env_str("RANK").empty();
  const bool have_world = !env_str("WORLD_SIZE").empty();
  if (have_rank != have_world) {
    throw UsageError(std::string("environment variable ") + (have_rank ? "WORLD_SIZE" : "RANK") +
                     " is not set (RANK and WORLD_SIZE go together)");
  }
  // Unset local identity = the whole world on one host, unless the launcher says more.
  e.local_rank = -1;
  e.local_world_size = 0;
  if (have_rank || !spec.launcher_identity) {
    e.world_size = static_cast<int>(env_int("WORLD_SIZE", std::nullopt, 1, kMaxInt));
    e.rank = static_cast<int>(env_int("RANK", std::nullopt, 0, e.world_size - 1));
  } else {
    spec.launcher_identity(e);
  }
  e.local_rank = static_cast<int>(env_int("LOCAL_RANK", e.local_rank >= 0 ? e.local_rank : e.rank, 0, kMaxInt));
  e.local_world_size = static_cast<int>(
      env_int("LOCAL_WORLD_SIZE", e.local_world_size > 0 ? e.local_world_size : e.world_size, 1, kMaxInt));
  e.master_addr = env_str("MASTER_ADDR");
  if (spec.needs_master) {
    if (e.master_addr.empty()) throw UsageError("environment variable MASTER_ADDR is not set");
    e.master_port = static_cast<int>(env_int("MASTER_PORT", std::nullopt, 1, 65535));
  } else {
    e.master_port = static_cast<int>(env_int("MASTER_PORT", 0, 0, 65535));
  }
  e.run_dir = env_str("HANGLAB_RUN_DIR");
  e.data_dir = env_str("HANGLAB_DATA_DIR", e.run_dir.empty() ? "./hanglab-data" : e.run_dir + "/data");
  e.ckpt_dir = env_str("HANGLAB_CKPT_DIR", e.run_dir.empty() ? "./hanglab-ckpt" : e.run_dir + "/ckpt");
  e.heartbeat = Ms(env_int("HANGLAB_HEARTBEAT_MS", 1000, 1, kMaxInt));
  e.init_timeout = Ms(env_int("HANGLAB_INIT_TIMEOUT_MS", 30000, 1, kMaxInt));
  e.collective_timeout = Ms(env_int("HANGLAB_COLLECTIVE_TIMEOUT_MS", 5000, 1, kMaxInt));
  return e;
}

int workload_main(int argc, char** argv, const BackendSpec& spec) {
  // Every backend's main() is a call of this: signal hygiene for mpi_ddp, nccl_ddp and any later one.
  init_rank_signals();
  const Options options = parse_command_line(argc, argv, spec);
  RankEnv env;
  try {
    env = read_rank_env(spec);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "[rank ?] ERROR (usage) in startup at step 0: %s\n", e.what());
    return kExitUsage;
  }
  runtime_set_rank(env.rank);
  Trace trace;
  const std::string trace_pattern = env_str("HANGLAB_TRACE");
  try {
    if (!trace_pattern.empty() && !trace_switched_off())
      trace = Trace(trace_path_for_rank(trace_pattern, env.rank), env.rank);
  } catch (const std::exception& e) {
    log_error("ERROR (usage) in startup at step 0: cannot open HANGLAB_TRACE: %s", e.what());
    return kExitUsage;
  }
  runtime_set_trace(&trace);
  TraceFields start{{"pid", ::getpid()},
                    {"host", host_name()},
                    {"world_size", env.world_size},
                    {"backend", options.backend},
                    {"workload", spec.workload}};
  if (!spec.built_with.empty()) start["built_with"] = spec.built_with;
  emit("start", start);
  // Before the first thread (the heartbeat's, then the backend's): they inherit the mask.
  fr_arm(spec.fr_dumper);
  // Started before the backend's init so that a rank stuck in MPI_Init or NCCL's
  // bootstrap still shows as alive-but-blocked. The heartbeat thread never calls into
  // the backend (MPI is initialised for FUNNELED use: only the training thread calls it).
  Heartbeat heartbeat(trace, env.heartbeat);
  runtime_set_heartbeat(&heartbeat);

  try {
    Hooks hooks = Hooks::from_env();
    Trainer trainer(options, env, hooks, spec);
    trainer.run();
    fr_dump("end of training", /*final=*/true);
    // Leave from inside this scope so the Trainer (and its communicator) is never
    // destroyed: see fail().
    heartbeat.stop();
    emit("exit", {{"code", kExitOk}});
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(kExitOk);
  } catch (const UsageError& e) {
    fail(ErrorClass::kUsage, e.what());
  } catch (const DataError& e) {
    fail(ErrorClass::kData, e.what());
  } catch (const CollectiveError& e) {
    fail(e.error_class(), e.what());
  } catch (const std::exception& e) {
    const Progress p = progress_snapshot();
    if (p.in_collective) fail(classify_collective_error(e.what()), e.what());
    if (p.phase == "init") fail(ErrorClass::kRendezvous, e.what());
    fail(ErrorClass::kOther, e.what());
  } catch (...) {
    fail(ErrorClass::kOther, "unknown exception");
  }
}  // every path above ends in _exit

}  // namespace hanglab

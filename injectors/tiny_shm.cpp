// tiny_shm: the chosen ranks see a /dev/shm of only `size_mb` — the container default of
// 64 MiB (docker run without --shm-size) or a node whose /dev/shm is full. Data-loader
// workers hand batches to the rank through /dev/shm segments; when a segment does not
// fit, the worker dies of SIGBUS writing into it (or gets ENOSPC from posix_fallocate)
// and the rank fails with PyTorch's "DataLoader worker (pid N) is killed by signal: Bus
// error. It is possible that dataloader's workers are out of shared memory." A rank that
// loads in-process (num_workers = 0) does not notice.
//
// Mechanism: an argv wrapper starts the rank in a private mount namespace
// (`unshare -m --propagation private`) where a tmpfs of size_mb covers /dev/shm. The
// host's /dev/shm is never touched; the namespace and its tmpfs die with the rank's last
// process, so revert has nothing to undo. The fault acts from exec: fire() (at the
// trigger, or at launch without one) only records what the rank's /dev/shm is.
//
// Needs shm traffic: data-loader workers whose batches do not fit. On a built-in workload
// it turns the workers on (num_workers = 2 where left out; 0 given is refused) and, when
// one batch segment (batch_size x (input_dim + 1) floats) would fit the tmpfs, widens the
// samples (input_dim, where left out) so a batch is twice the tmpfs; explicit settings
// whose batches all fit, even with every prefetched segment in flight, are refused. A
// bring-your-own command is run as given (its loader is its own). Manifested when a
// targeted rank reports the failed shm allocation: "shared memory" (PyTorch's "out of
// shared memory", "unable to open shared memory object"), "Bus error" or "No space left
// on device" in its trace error or logs.
#include <chrono>
#include <cmath>
#include <thread>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "storage_common.hpp"

namespace hanglab {

namespace {

const char* const kShmSource = "hanglab-tiny-shm";

std::vector<KeyDoc> tiny_shm_keys() {
  return {{"size_mb", "float", "0.0625",
           "size of the rank's private /dev/shm in MiB (a tmpfs, at least one 4 KiB page; 64 = docker's default "
           "--shm-size; the default 64 KiB is that scaled to the built-in workload's small batches)"}};
}

class TinyShm : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    const auto keys = tiny_shm_keys();
    reject_unknown_keys(spec, file, keys);
    ranks_ = spec.ranks;
    size_mb_ = read_fault_key(spec, file, keys[0]).get<double>();
    if (!(size_mb_ > 0) || size_mb_ > 1024 * 1024) {
      const toml::node* n = spec.table.get("size_mb");
      throw config_error_at(file, n ? n->source() : spec.table.source(), spec.key_prefix() + ".size_mb",
                            "must be > 0 and at most 1048576 (1 TiB)");
    }
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    std::vector<std::string> notes;
    if (!ctx.builtin) return notes;
    const bool no_effect_ok = ctx.expects_no_effect();
    if (!ctx.has_arg("num_workers")) {
      if (no_effect_ok) return notes;
      throw ctx.refuse("kind", "tiny_shm starves data-loader workers of /dev/shm, but workload " +
                                   ctx.scenario.workload.name + " has no data loader");
    }
    auto num = [&](const std::string& k) {
      try {
        return std::stoll(ctx.arg(k));
      } catch (const std::exception&) {
        return 0LL;
      }
    };
    if (!ctx.arg_given("num_workers")) {
      notes.push_back(ctx.set_default_arg("num_workers", "2",
                                          "tiny_shm acts on the /dev/shm segments of data-loader workers"));
    } else if (num("num_workers") < 1) {
      if (no_effect_ok) return notes;
      throw ctx.refuse("kind", "tiny_shm acts on the /dev/shm segments of data-loader workers, but [workload.args] "
                               "num_workers = 0 loads in-process: the rank never touches /dev/shm");
    }
    const long long kPage = 4096;
    const long long shm = tmpfs_size_kib(size_mb_) * 1024;
    const long long bs = std::max(1LL, num("batch_size"));
    auto pages = [&](long long bytes) { return (bytes + kPage - 1) / kPage * kPage; };
    long long batch = bs * (num("input_dim") + 1) * 4;
    if (pages(batch) <= shm && !ctx.arg_given("input_dim")) {
      const long long dim = (2 * shm + 4 * bs - 1) / (4 * bs) - 1;
      const long long data = std::max(1LL, num("dataset_size")) * (dim + 1) * 4;
      if (data <= 64LL << 20) {
        notes.push_back(ctx.set_default_arg(
            "input_dim", std::to_string(dim),
            fmt::format("a batch of {} samples is {} KiB, twice the {} KiB /dev/shm", bs, bs * (dim + 1) * 4 / 1024,
                        shm / 1024)));
        batch = bs * (dim + 1) * 4;
      }
    }
    const long long in_flight = std::max(1LL, num("num_workers")) * std::max(1LL, num("prefetch")) * pages(batch);
    if (in_flight <= shm && !no_effect_ok) {
      throw ctx.refuse(ctx.spec.table.get("size_mb") ? "size_mb" : "kind",
                       fmt::format("tiny_shm cannot bite: the loader has at most {} KiB in flight ({} worker(s) x "
                                   "prefetch {} x a {} KiB batch), which fits the {} KiB /dev/shm; lower size_mb or "
                                   "raise batch_size/input_dim",
                                   in_flight / 1024, num("num_workers"), num("prefetch"), pages(batch) / 1024,
                                   shm / 1024));
    }
    return notes;
  }

  Manifest manifested(const RunFactsView& run) const override {
    for (int r : ranks_)
      for (const char* needle : {"shared memory", "Bus error", "bus error", "No space left on device"})
        if (std::string line = run.log_line(r, needle); !line.empty())
          return {true, fmt::format("rank {}'s shm allocation failed: {}", r, line)};
    return {false, fmt::format("no targeted rank reported a failed shm allocation (no \"shared memory\", \"Bus "
                               "error\" or ENOSPC in its trace or logs){}",
                               mounted_.empty() ? std::string(" and the tmpfs was never seen in place")
                                                : "; the " + fmt::format("{}", size_mb_) +
                                                      " MiB tmpfs was in place on rank(s) " + mounted_)};
  }

  std::string unsupported_reason(const HostInfo& host) const override {
    if (!host.mount_namespaces) return "needs mount namespaces (unshare(CLONE_NEWNS); root or CAP_SYS_ADMIN)";
    return {};
  }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    if (!rank_targeted(ranks_, rank)) return;
    const auto w = private_tmpfs_wrapper("/dev/shm", size_mb_, kShmSource, false,
                                         fmt::format("hanglab tiny_shm: rank {}", rank));
    spec.wrapper.insert(spec.wrapper.end(), w.begin(), w.end());
  }

  std::string fire(Job& job) override {
    std::string detail;
    for (int r : ranks_) detail += (detail.empty() ? "" : "; ") + describe(job, r);
    return detail;
  }

 private:
  std::string describe(Job& job, int rank) {
    const pid_t pid = job.pid_of(rank);
    if (!job.alive(rank) || pid <= 0) return fmt::format("rank {} not running", rank);
    // Fired at launch the wrapper may not have mounted yet: it takes milliseconds.
    std::optional<MountEntry> m;
    for (int i = 0; i < 50; ++i) {
      m = mount_at(pid, "/dev/shm");
      if (m && m->source == kShmSource) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!m || m->source != kShmSource) {
      return fmt::format("rank {} (pid {}): its /dev/shm is not the hanglab tmpfs yet ({})", rank, pid,
                         m ? m->fs_type + " " + m->source : std::string("no mount seen"));
    }
    mounted_ += (mounted_.empty() ? "" : ",") + std::to_string(rank);
    double total = 0, free = 0;
    std::string space = fs_space_mib(pid, "/dev/shm", total, free)
                            ? fmt::format("{:.2f} MiB, {:.2f} MiB free", total, free)
                            : std::string("size unreadable");
    return fmt::format("rank {} (pid {}): /dev/shm is a {} tmpfs of {} ({}) in its own mount namespace; the host's "
                       "/dev/shm is untouched",
                       rank, pid, m->source, space, m->options);
  }

  std::vector<int> ranks_;
  double size_mb_ = 0.0625;
  std::string mounted_;  // ranks whose /dev/shm fire() saw covered by the hanglab tmpfs
};

}  // namespace

InjectorInfo tiny_shm_info() {
  return {"tiny_shm",
          "the chosen ranks get a /dev/shm of only size_mb: data-loader workers die of SIGBUS (out of shared memory)",
          "argv wrapper: the rank starts in a private mount namespace (unshare -m --propagation private) where a tmpfs "
          "of size_mb covers /dev/shm; the host's /dev/shm is untouched and the namespace dies with the rank "
          "(acts from exec: at_step/at_s only time the record; built-in workloads get loader workers, see adapt)",
          tiny_shm_keys(), [] { return std::make_unique<TinyShm>(); }};
}

}  // namespace hanglab

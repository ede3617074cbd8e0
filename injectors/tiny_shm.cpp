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
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "storage_common.hpp"

namespace hanglab {

namespace {

const char* const kShmSource = "hanglab-tiny-shm";

std::vector<KeyDoc> tiny_shm_keys() {
  return {{"size_mb", "float", "1",
           "size of the rank's private /dev/shm in MiB (a tmpfs; 64 = docker's default --shm-size)"}};
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
  std::string describe(Job& job, int rank) const {
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
    double total = 0, free = 0;
    std::string space = fs_space_mib(pid, "/dev/shm", total, free)
                            ? fmt::format("{:.2f} MiB, {:.2f} MiB free", total, free)
                            : std::string("size unreadable");
    return fmt::format("rank {} (pid {}): /dev/shm is a {} tmpfs of {} ({}) in its own mount namespace; the host's "
                       "/dev/shm is untouched",
                       rank, pid, m->source, space, m->options);
  }

  std::vector<int> ranks_;
  double size_mb_ = 1;
};

}  // namespace

InjectorInfo tiny_shm_info() {
  return {"tiny_shm",
          "the chosen ranks get a /dev/shm of only size_mb: data-loader workers die of SIGBUS (out of shared memory)",
          "argv wrapper: the rank starts in a private mount namespace (unshare -m --propagation private) where a tmpfs "
          "of size_mb covers /dev/shm; the host's /dev/shm is untouched and the namespace dies with the rank "
          "(acts from exec: at_step/at_s only time the record; needs workload args num_workers > 0 to matter)",
          tiny_shm_keys(), [] { return std::make_unique<TinyShm>(); }};
}

}  // namespace hanglab

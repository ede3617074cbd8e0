// disk_full: the checkpoint file system of the chosen ranks fills up — a shared volume
// another job filled with logs, a quota reached, a local scratch disk of a node. The next
// save fails with ENOSPC ("No space left on device"), the rank exits 13 (data error) in
// the checkpoint phase, and its peers are left in the checkpoint barrier.
//
// Mechanism: an argv wrapper starts the rank in a private mount namespace where a tmpfs
// of `size_mb` covers its checkpoint directory (HANGLAB_CKPT_DIR). At the trigger (at
// launch without one) fire() fills the free space of that tmpfs with a ballast file,
// reaching it through /proc/<pid>/root so the write lands in the rank's namespace only,
// and only after /proc/<pid>/mountinfo confirms the hanglab tmpfs is what covers the
// directory there (never the real disk). With fill = false the tmpfs is only small: saves
// larger than size_mb fail. Checkpoints written into the tmpfs vanish with the rank; the
// host's directory stays as it was (created empty if missing). revert() has nothing to
// undo once the rank is gone; a ballast in a still-running rank's namespace is removed.
//
// Needs a checkpoint save on a targeted rank at or after the trigger: on a built-in
// workload it sets checkpoint_every (= at_step, else 1) and checkpoint_ranks = "all" where
// the scenario leaves them out, and refuses settings that save nothing there. Manifested
// when a targeted rank's write was refused: "No space left on device" in its trace error
// or logs.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "hook_injector.hpp"
#include "storage_common.hpp"

namespace hanglab {

namespace {

const char* const kSource = "hanglab-disk-full";
const char* const kBallast = ".hanglab-disk-full-ballast";

std::vector<KeyDoc> disk_full_keys() {
  return {{"size_mb", "float", "1", "size of the tmpfs over the rank's checkpoint directory in MiB"},
          {"fill", "bool", "true",
           "at the trigger (at launch without one) fill the free space with a ballast file, so the next save fails "
           "whatever its size; false = the tmpfs is only small"}};
}

class DiskFull : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    const auto keys = disk_full_keys();
    reject_unknown_keys(spec, file, keys);
    ranks_ = spec.ranks;
    at_step_ = spec.at_step.value_or(1);
    size_mb_ = read_fault_key(spec, file, keys[0]).get<double>();
    fill_ = read_fault_key(spec, file, keys[1]).get<bool>();
    if (!(size_mb_ > 0) || size_mb_ > 1024 * 1024) {
      const toml::node* n = spec.table.get("size_mb");
      throw config_error_at(file, n ? n->source() : spec.table.source(), spec.key_prefix() + ".size_mb",
                            "must be > 0 and at most 1048576 (1 TiB)");
    }
  }

  std::vector<std::string> adapt(AdaptContext& ctx) override {
    return require_checkpoint(ctx, ranks_, at_step_, "kind", "disk_full fills the checkpoint directory");
  }

  Manifest manifested(const RunFactsView& run) const override {
    for (int r : ranks_)
      for (const char* needle : {"No space left on device", "ENOSPC"})
        if (std::string line = run.log_line(r, needle); !line.empty())
          return {true, fmt::format("rank {}'s write was refused: {}", r, line)};
    std::string filled;
    for (const auto& t : targets_)
      if (t.done) filled += (filled.empty() ? "" : ", ") + std::to_string(t.rank);
    return {false, filled.empty() ? std::string("the tmpfs was never filled or verified on a targeted rank")
                                  : "rank(s) " + filled + " had the full tmpfs, but no write was refused (no "
                                                          "\"No space left on device\" in their trace or logs)"};
  }

  std::string unsupported_reason(const HostInfo& host) const override {
    if (!host.mount_namespaces) return "needs mount namespaces (unshare(CLONE_NEWNS); root or CAP_SYS_ADMIN)";
    return {};
  }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    if (!rank_targeted(ranks_, rank)) return;
    auto it = spec.env.find("HANGLAB_CKPT_DIR");
    if (it == spec.env.end() || it->second.empty()) return;  // no checkpoint directory to fill
    Target t;
    t.rank = rank;
    t.dir = it->second;
    const auto w =
        private_tmpfs_wrapper(t.dir, size_mb_, kSource, true, fmt::format("hanglab disk_full: rank {}", rank));
    spec.wrapper.insert(spec.wrapper.end(), w.begin(), w.end());
    targets_.push_back(t);
  }

  std::string fire(Job& job) override {
    std::string detail;
    for (auto& t : targets_) detail += (detail.empty() ? "" : "; ") + act(job, t, true);
    if (targets_.empty()) detail = "no targeted rank has a checkpoint directory (HANGLAB_CKPT_DIR)";
    return detail;
  }

  // A rank whose wrapper had not mounted yet when fire() ran is filled as soon as it has.
  std::string tick(Job& job, double /*since_fire_s*/) override {
    std::string detail;
    for (auto& t : targets_) {
      if (t.done || !job.alive(t.rank)) continue;
      const std::string d = act(job, t, false);
      if (t.done) detail += (detail.empty() ? "" : "; ") + d;
    }
    return detail;
  }

  void revert(Job& job) override {
    for (auto& t : targets_) {
      if (!t.filled || !job.alive(t.rank)) continue;
      const pid_t pid = job.pid_of(t.rank);
      const auto m = mount_at(pid, t.dir);
      if (m && m->source == kSource) ::unlink(ballast_path(pid, t.dir).c_str());
    }
  }

 private:
  struct Target {
    int rank = 0;
    std::string dir;
    bool done = false;    // verified (and filled when fill_)
    bool filled = false;
  };

  static std::string ballast_path(pid_t pid, const std::string& dir) {
    return fmt::format("/proc/{}/root{}/{}", pid, dir, kBallast);
  }

  // Verifies the rank's checkpoint directory is our tmpfs, then fills it. `wait` allows
  // the wrapper a moment to mount when fired at launch.
  std::string act(Job& job, Target& t, bool wait) {
    const pid_t pid = job.pid_of(t.rank);
    if (!job.alive(t.rank) || pid <= 0) return fmt::format("rank {} not running", t.rank);
    std::optional<MountEntry> m;
    for (int i = 0; i < (wait ? 50 : 1); ++i) {
      m = mount_at(pid, t.dir);
      if (m && m->source == kSource) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!m || m->source != kSource) {
      return fmt::format("rank {} (pid {}): {} is not covered by the hanglab tmpfs yet; filling when it is", t.rank,
                         pid, t.dir);
    }
    t.done = true;
    double total = 0, free_before = 0, free_after = 0;
    fs_space_mib(pid, t.dir, total, free_before);
    if (!fill_) {
      return fmt::format("rank {} (pid {}): {} is a {:.2f} MiB tmpfs ({:.2f} MiB free) in its own mount namespace",
                         t.rank, pid, t.dir, total, free_before);
    }
    const std::string path = ballast_path(pid, t.dir);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      return fmt::format("rank {} (pid {}): cannot create the ballast {}: {}", t.rank, pid, path, std::strerror(errno));
    }
    t.filled = true;
    static const std::string kZeros(64 * 1024, '\0');
    long long written = 0;
    int err = 0;
    for (;;) {
      const ssize_t n = ::write(fd, kZeros.data(), kZeros.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        err = n < 0 ? errno : 0;
        break;
      }
      written += n;
    }
    ::close(fd);
    fs_space_mib(pid, t.dir, total, free_after);
    return fmt::format("rank {} (pid {}): filled {} ({:.2f} MiB tmpfs in its own mount namespace) with a {:.2f} MiB "
                       "ballast until {}: {:.2f} MiB free now (was {:.2f})",
                       t.rank, pid, t.dir, total, written / (1024.0 * 1024.0),
                       err == ENOSPC ? "ENOSPC" : std::string(err ? std::strerror(err) : "EOF"), free_after,
                       free_before);
  }

  std::vector<int> ranks_;
  int at_step_ = 1;
  double size_mb_ = 1;
  bool fill_ = true;
  std::vector<Target> targets_;
};

}  // namespace

InjectorInfo disk_full_info() {
  return {"disk_full",
          "the checkpoint directory of the chosen ranks runs out of space: the next save fails with ENOSPC (exit 13)",
          "argv wrapper: the rank starts in a private mount namespace where a tmpfs of size_mb covers "
          "HANGLAB_CKPT_DIR; at the trigger its free space is filled with a ballast file (through /proc/<pid>/root, "
          "after checking the rank's mountinfo); the host's directory and disk are untouched",
          disk_full_keys(), [] { return std::make_unique<DiskFull>(); }};
}

}  // namespace hanglab

// Pieces shared by the storage and shared-memory faults (tiny_shm, disk_full,
// slow_storage): the argv wrapper that starts a rank in a private mount namespace with a
// small tmpfs of its own, reading another process's mount table, and small helpers.
//
// The private-namespace wrapper is what keeps these faults from touching the host: the
// tmpfs exists only in the rank's namespace (propagation private, so nothing leaks back),
// and the namespace dies with the rank's last process. Nothing needs unmounting.
#pragma once

#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace hanglab {

// 'text' with single quotes, safe inside a /bin/sh -c script.
std::string sh_quote(const std::string& text);

// Size in KiB for a tmpfs `size=` option: size_mb rounded, at least one 4 KiB page.
long long tmpfs_size_kib(double size_mb);

// The wrapper that runs the rest of the rank's argv in a private mount namespace where
// `mountpoint` is covered by a tmpfs of `size_mb` named `source` (what `mount` and
// /proc/<pid>/mountinfo show). With `make_dir` the mount point is created first
// (mkdir -p). When the mount fails the rank exits 126 with `who: ...` on stderr, before
// the program starts. Append it to LaunchSpec::wrapper: it execs "$0" "$@".
std::vector<std::string> private_tmpfs_wrapper(const std::string& mountpoint, double size_mb,
                                               const std::string& source, bool make_dir, const std::string& who);

// One line of /proc/<pid>/mountinfo.
struct MountEntry {
  std::string mount_point;
  std::string fs_type;
  std::string source;
  std::string options;  // super options, e.g. "rw,size=1024k"
};

// The top-most mount at `path` as process `pid` sees it (0 = this process), or nullopt.
std::optional<MountEntry> mount_at(pid_t pid, const std::string& path);

// Size and free space of the file system at /proc/<pid>/root/<path> in MiB; false when
// it cannot be read.
bool fs_space_mib(pid_t pid, const std::string& path, double& total_mib, double& free_mib);

// adapt() of the faults that act on checkpoint saves (disk_full, slow_storage with ckpt):
// on a built-in workload, make sure every targeted rank saves a checkpoint at or after
// step `from`: sets checkpoint_every (default: `from`) and checkpoint_ranks = "all" (when
// a targeted rank is not rank 0) where the scenario leaves them out; refuses (ConfigError
// at `key`) settings that save nothing the fault could act on. `what` names the fault's
// need in the messages. Returns the record lines of what it set.
struct AdaptContext;
std::vector<std::string> require_checkpoint(AdaptContext& ctx, const std::vector<int>& ranks, int from,
                                            const std::string& key, const std::string& what);

// Whether `rank` is in `ranks`.
bool rank_targeted(const std::vector<int>& ranks, int rank);

}  // namespace hanglab

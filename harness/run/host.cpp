// Host capability detection for injectors' unsupported_reason(). Probes only; creates
// nothing that outlives the probe.
#include <filesystem>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "injector.hpp"

namespace hanglab {

namespace fs = std::filesystem;

namespace {
bool writable_dir(const char* p) { return fs::is_directory(p) && ::access(p, W_OK) == 0; }

// unshare(CLONE_NEWNS) in a throwaway child so the harness itself stays in the host's namespace.
bool can_unshare_mounts() {
  pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) _exit(::unshare(CLONE_NEWNS) == 0 ? 0 : 1);
  int st = 0;
  while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
}  // namespace

HostInfo detect_host() {
  HostInfo h;
  h.is_root = ::geteuid() == 0;
  h.cgroup_v2 = fs::exists("/sys/fs/cgroup/cgroup.controllers");
  h.cgroup_v1_cpu = !h.cgroup_v2 && writable_dir("/sys/fs/cgroup/cpu");
  h.cgroup_v1_memory = !h.cgroup_v2 && writable_dir("/sys/fs/cgroup/memory");
  h.mount_namespaces = can_unshare_mounts();
  h.fuse = fs::exists("/dev/fuse");
  h.gpu = fs::exists("/dev/nvidia0") || fs::exists("/dev/nvidiactl");
  return h;
}

}  // namespace hanglab

// Shared pieces of the storage faults; see storage_common.hpp.
#include "storage_common.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "injector.hpp"

namespace hanglab {

std::vector<std::string> require_checkpoint(AdaptContext& ctx, const std::vector<int>& ranks, int from,
                                            const std::string& key, const std::string& what) {
  std::vector<std::string> notes;
  if (!ctx.builtin) return notes;  // a bring-your-own command: its saves are its own
  if (!ctx.has_arg("checkpoint_every")) {
    if (ctx.expects_no_effect()) return notes;
    throw ctx.refuse(key, fmt::format("{}, but workload {} saves no checkpoints", what, ctx.scenario.workload.name));
  }
  const int steps = ctx.scenario.workload.steps;
  from = std::max(1, std::min(from, steps));
  if (!ctx.arg_given("checkpoint_every")) {
    notes.push_back(ctx.set_default_arg("checkpoint_every", std::to_string(from),
                                        fmt::format("{}: a save at step {}", what, from)));
  } else {
    long long every = 0;
    try {
      every = std::stoll(ctx.arg("checkpoint_every"));
    } catch (const std::exception&) {
    }
    if ((every <= 0 || (steps / every) * every < from) && !ctx.expects_no_effect())
      throw ctx.refuse(key, fmt::format("{}, but [workload.args] checkpoint_every = {} saves none in steps {}..{}",
                                        what, every, from, steps));
  }
  const bool non_zero = std::none_of(ranks.begin(), ranks.end(), [](int r) { return r == 0; });
  if (non_zero && !ctx.arg_given("checkpoint_ranks")) {
    notes.push_back(ctx.set_default_arg("checkpoint_ranks", "all", what + ": the targeted ranks save too, not rank 0 only"));
  } else if (non_zero && ctx.arg("checkpoint_ranks") == "rank0" && !ctx.expects_no_effect()) {
    throw ctx.refuse(key, fmt::format("{}, but [workload.args] checkpoint_ranks = \"rank0\": only rank 0 saves and "
                                      "the fault targets other ranks",
                                      what));
  }
  return notes;
}

std::string sh_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

long long tmpfs_size_kib(double size_mb) {
  return std::max<long long>(4, static_cast<long long>(std::llround(size_mb * 1024.0)));
}

std::vector<std::string> private_tmpfs_wrapper(const std::string& mountpoint, double size_mb,
                                               const std::string& source, bool make_dir, const std::string& who) {
  const std::string q = sh_quote(mountpoint);
  std::string script;
  if (make_dir) script += "mkdir -p " + q + " && ";
  script += "mount -t tmpfs -o size=" + std::to_string(tmpfs_size_kib(size_mb)) + "k,mode=1777,nosuid,nodev " +
            sh_quote(source) + " " + q + " || { echo " +
            sh_quote(who + ": cannot mount a tmpfs on " + mountpoint + " in the rank's private mount namespace") +
            " >&2; exit 126; }; exec \"$0\" \"$@\"";
  // --propagation private: the tmpfs must not propagate back into the host's namespace
  // (where / is usually shared), and host mounts made later do not matter to the rank.
  return {"unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script};
}

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_mountinfo(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const std::string oct = s.substr(i + 1, 3);
      if (oct.size() == 3 && std::all_of(oct.begin(), oct.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>(std::stoi(oct, nullptr, 8));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

std::optional<MountEntry> mount_at(pid_t pid, const std::string& path) {
  std::ifstream in(pid > 0 ? "/proc/" + std::to_string(pid) + "/mountinfo" : std::string("/proc/self/mountinfo"));
  std::optional<MountEntry> found;
  for (std::string line; std::getline(in, line);) {
    // id parent major:minor root mount_point options [optional...] - fstype source super_options
    std::istringstream ss(line);
    std::string id, parent, dev, root, mp, opts;
    ss >> id >> parent >> dev >> root >> mp >> opts;
    if (unescape_mountinfo(mp) != path) continue;
    std::string tok;
    while (ss >> tok && tok != "-") {
    }
    MountEntry e;
    e.mount_point = path;
    ss >> e.fs_type >> e.source >> e.options;
    e.source = unescape_mountinfo(e.source);
    found = e;  // later lines are mounted on top of earlier ones
  }
  return found;
}

bool fs_space_mib(pid_t pid, const std::string& path, double& total_mib, double& free_mib) {
  const std::string p = pid > 0 ? "/proc/" + std::to_string(pid) + "/root" + path : path;
  struct statvfs v {};
  if (::statvfs(p.c_str(), &v) != 0) return false;
  total_mib = static_cast<double>(v.f_blocks) * v.f_frsize / (1024.0 * 1024.0);
  free_mib = static_cast<double>(v.f_bavail) * v.f_frsize / (1024.0 * 1024.0);
  return true;
}

bool rank_targeted(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

}  // namespace hanglab

#include "preflight/python_probe.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "util.hpp"

extern char** environ;

namespace hanglab::preflight {

using nlohmann::json;

ChildRun::~ChildRun() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (out_ >= 0) ::close(out_);
  if (err_ >= 0) ::close(err_);
}

bool ChildRun::start(const std::vector<std::string>& argv, std::string& error) {
  int o[2], e[2];
  if (::pipe2(o, O_CLOEXEC) != 0 || ::pipe2(e, O_CLOEXEC) != 0) {
    error = std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_adddup2(&fa, o[1], 1);
  ::posix_spawn_file_actions_adddup2(&fa, e[1], 2);
  ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = ::posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&fa);
  ::close(o[1]);
  ::close(e[1]);
  out_ = o[0];
  err_ = e[0];
  if (rc != 0) {
    pid_ = 0;
    error = fmt::format("cannot run {}: {}", argv[0], std::strerror(rc));
    return false;
  }
  return true;
}

std::string ChildRun::finish(double deadline, int& status, std::string* err_text) {
  status = 127;
  if (pid_ <= 0) return {};
  bool out_open = true, err_open = true;
  while (out_open || err_open) {
    const double left = std::max(0.0, deadline - mono_now());
    if (left <= 0) break;
    pollfd p[2] = {{out_open ? out_ : -1, POLLIN, 0}, {err_open ? err_ : -1, POLLIN, 0}};
    if (::poll(p, 2, static_cast<int>(std::ceil(std::min(left, 0.2) * 1000))) <= 0) continue;
    char buf[4096];
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = ::read(i == 0 ? out_ : err_, buf, sizeof buf);
      if (n > 0) (i == 0 ? out_buf_ : err_buf_).append(buf, static_cast<size_t>(n));
      else (i == 0 ? out_open : err_open) = false;
    }
  }
  int ws = 0;
  pid_t got = ::waitpid(pid_, &ws, WNOHANG);
  while (got == 0 && mono_now() < deadline) {
    ::usleep(10000);
    got = ::waitpid(pid_, &ws, WNOHANG);
  }
  if (got == 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    status = -1;
  } else {
    status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
  }
  pid_ = 0;
  if (err_text) *err_text = err_buf_;
  return out_buf_;
}

std::vector<std::string> versions_argv(const std::string& python) {
  // importlib.metadata reads the installed distributions' METADATA: no torch import, no CUDA init.
  return {python, "-c",
          "import sys, json, importlib.metadata as m\n"
          "v = {'python': '%d.%d.%d' % sys.version_info[:3]}\n"
          "try:\n    v['torch'] = m.version('torch')\nexcept Exception:\n    v['torch'] = '(not installed)'\n"
          "n = sorted('%s %s' % (d.metadata['Name'], d.version) for d in m.distributions()\n"
          "           if (d.metadata['Name'] or '').lower().startswith('nvidia-nccl'))\n"
          "v['nccl'] = ', '.join(n) or '(no nvidia-nccl wheel)'\n"
          "print(json.dumps(v))\n"};
}

json parse_versions(const std::string& out, int status, const std::string& python, const std::string& err) {
  json j = json::parse(out, nullptr, false);
  if (status == 0 && j.is_object()) return j;
  std::string why = status == -1 ? "no answer in time" : status == 127 ? "not found" : fmt::format("exit {}", status);
  if (!err.empty()) why += ": " + err.substr(0, err.find('\n'));
  return json{{"unavailable", fmt::format("{}: {}", python, why)}};
}

std::vector<std::string> smoke_argv(const std::string& python, const std::string& backend, const std::string& addr,
                                    int port, int rank, int world, double timeout_s) {
  return {python, "-c",
          fmt::format("import datetime, json, sys, time\n"
                      "t0 = time.time()\n"
                      "import torch, torch.distributed as dist\n"
                      "dev = torch.device('cuda', 0) if '{0}' == 'nccl' else torch.device('cpu')\n"
                      "dist.init_process_group('{0}', init_method='tcp://{1}:{2}', rank={3}, world_size={4},\n"
                      "                        timeout=datetime.timedelta(seconds={5:.1f}))\n"
                      "t1 = time.time()\n"
                      "x = torch.ones(1, device=dev); dist.all_reduce(x)\n"
                      "y = torch.ones(1 << 18, device=dev); dist.all_reduce(y)\n"
                      "dist.barrier()\n"
                      "ok = x.item() == {4} and float(y[0]) == {4}\n"
                      "dist.destroy_process_group()\n"
                      "print(json.dumps({{'ok': ok, 'import_s': t1 - t0, 'collective_s': time.time() - t1, "
                      "'torch': torch.__version__}}))\n",
                      backend, addr.find(':') != std::string::npos ? "[" + addr + "]" : addr, port, rank, world,
                      std::max(1.0, timeout_s))};
}

}  // namespace hanglab::preflight

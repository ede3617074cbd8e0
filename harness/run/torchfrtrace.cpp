#include "run/torchfrtrace.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "run/rank_env.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;

TorchFrTraceResult judge_torchfrtrace_output(const std::string& text, int exit_code) {
  TorchFrTraceResult r;
  r.exit_code = exit_code;
  // A Python traceback: the exception is its last non-indented line after the header.
  const size_t tb = text.rfind("Traceback (most recent call last):");
  if (tb != std::string::npos) {
    std::istringstream in(text.substr(tb));
    std::string line, last;
    while (std::getline(in, line))
      if (!line.empty() && line[0] != ' ' && line.rfind("Traceback", 0) != 0) last = line;
    r.status = "crashed";
    r.detail = last.empty() ? "a Python traceback" : last;
    return r;
  }
  // torch/distributed/flight_recorder/components/types.py logs "missing ranks: {1, 3}" for a
  // collective some ranks of its group never entered.
  static const std::regex kMissing(R"(missing ranks: \{([0-9, ]+)\})");
  std::set<int> named;
  for (std::sregex_iterator it(text.begin(), text.end(), kMissing), end; it != end; ++it) {
    std::istringstream nums((*it)[1].str());
    std::string tok;
    while (std::getline(nums, tok, ',')) {
      tok.erase(std::remove(tok.begin(), tok.end(), ' '), tok.end());
      if (!tok.empty() && tok.size() < 9) named.insert(std::stoi(tok));
    }
  }
  r.named_ranks.assign(named.begin(), named.end());
  if (exit_code != 0) {
    r.status = "crashed";
    r.detail = fmt::format("exit status {}", exit_code);
  } else if (!named.empty()) {
    r.status = "named_ranks";
    r.detail = fmt::format("missing ranks: {}", rank_ranges(r.named_ranks));
  } else {
    r.status = "no_culprit";
    r.detail = "exit 0, no rank named";
  }
  return r;
}

TorchFrTraceResult run_torchfrtrace(const fs::path& run_dir, int world_size, const fs::path& exe, double timeout_s) {
  TorchFrTraceResult r;
  const fs::path out_dir = run_dir / "flight_recorder";
  const fs::path copies = out_dir / "dumps";
  std::error_code ec;
  for (int k = 0; k < world_size; ++k) {
    const fs::path dump = rank_fr_dump(run_dir, k);
    if (!fs::is_regular_file(dump, ec)) {
      r.undumped_ranks.push_back(k);
      continue;
    }
    fs::create_directories(copies);
    fs::copy_file(dump, copies / ("rank_" + std::to_string(k)), fs::copy_options::overwrite_existing);
    r.dumped_ranks.push_back(k);
  }
  if (r.dumped_ranks.empty()) {
    r.status = "no_dumps";
    r.detail = "no rank left a Flight Recorder dump";
    return r;
  }
  if (::access(exe.c_str(), X_OK) != 0) {
    r.status = "not_installed";
    r.detail = exe.string() + " is not there (ci/install-deps.sh installs torch into the venv)";
    return r;
  }
  const fs::path out_file = out_dir / "torchfrtrace.txt";
  r.output = fs::relative(out_file, run_dir).string();
  std::vector<std::string> argv = {exe.string(), "--prefix", "rank_"};
  // What a user does when a dump is missing; without it torchfrtrace refuses at once.
  if (!r.undumped_ranks.empty()) argv.push_back("--allow-incomplete-ranks");
  argv.push_back(copies.string());
  std::string cmdline;
  for (const auto& a : argv) cmdline += (cmdline.empty() ? "" : " ") + a;
  write_file(out_file, "$ " + cmdline + "\n");

  const double t0 = mono_now();
  const pid_t pid = ::fork();
  if (pid < 0) throw_system_error("fork", "starting torchfrtrace");
  if (pid == 0) {
    ::setpgid(0, 0);
    int fd = ::open(out_file.c_str(), O_WRONLY | O_APPEND);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (fd < 0 || devnull < 0) ::_exit(127);
    ::dup2(devnull, 0), ::dup2(fd, 1), ::dup2(fd, 2);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  int st = 0;
  bool timed_out = false;
  for (;;) {
    pid_t w = ::waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (mono_now() - t0 > timeout_s) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
      }
      timed_out = true;
      break;
    }
    ::usleep(50 * 1000);
  }
  r.duration_s = mono_now() - t0;
  std::string text;
  try {
    text = read_file(out_file);
  } catch (const std::exception&) {
  }
  const int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  TorchFrTraceResult j = judge_torchfrtrace_output(text, code);
  r.status = j.status, r.detail = j.detail, r.named_ranks = j.named_ranks, r.exit_code = j.exit_code;
  if (timed_out) {
    r.status = "timed_out";
    r.detail = fmt::format("killed after {:.0f} s", timeout_s);
    r.exit_code.reset();
  }
  return r;
}

json to_json(const TorchFrTraceResult& r) {
  return {{"torchfrtrace",
           {{"status", r.status},
            {"detail", r.detail},
            {"named_ranks", r.named_ranks},
            {"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
            {"duration_s", r.duration_s},
            {"output", r.output}}},
          {"dumped_ranks", r.dumped_ranks},
          {"undumped_ranks", r.undumped_ranks}};
}

}  // namespace hanglab

// hanglab_rank_exec RUN_DIR: the worker a launcher that gives every rank the same command
// line (torchrun, srun) starts; it becomes rank $RANK (torchrun), else $SLURM_PROCID (srun's
// task id) (see launchers/torchrun.cpp, launchers/srun.cpp).
//
//  1. reads RUN_DIR/ranks/<rank>/launch.json: {"rank", "argv" (wrapper + program), "env"};
//  2. appends {"t", "ev": "exec", "pid", "rank", "restart_count", "error_file"} to
//     RUN_DIR/ranks/$RANK/exec.jsonl: the supervisor learns this incarnation's pid there;
//  3. opens RUN_DIR/ranks/$RANK/stdout.fifo and stderr.fifo (the supervisor holds their read
//     ends) as its stdout and stderr;
//  4. sets the rank's environment over the launcher's and execs argv: the rank keeps this
//     pid, and stays the launcher's child.
// Exit 127 (the shell's "cannot run"), with one line on stderr, when any step fails.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "hanglab_rank_exec: %s\n", msg.c_str());
  std::exit(127);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) die("usage: hanglab_rank_exec RUN_DIR (run by a launcher, with RANK set)");
  const std::string run_dir = argv[1];
  const char* rank_s = std::getenv("RANK");
  if (!rank_s || !*rank_s) rank_s = std::getenv("SLURM_PROCID");
  if (!rank_s || !*rank_s) die("neither RANK nor SLURM_PROCID is set: run me under a launcher (torchrun, srun)");
  const std::string rdir = run_dir + "/ranks/" + rank_s;
  std::ifstream in(rdir + "/launch.json");
  if (!in) die("cannot read " + rdir + "/launch.json: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json spec = nlohmann::json::parse(text.str(), nullptr, false);
  if (!spec.is_object() || !spec.contains("argv") || !spec["argv"].is_array() || spec["argv"].empty())
    die(rdir + "/launch.json: expected {\"argv\": [...], \"env\": {...}}");

  const char* restart = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const char* error_file = std::getenv("TORCHELASTIC_ERROR_FILE");
  const double t = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  nlohmann::json rec = {{"t", t},
                        {"ev", "exec"},
                        {"pid", ::getpid()},
                        {"rank", std::atoi(rank_s)},
                        {"restart_count", restart ? std::atoi(restart) : 0},
                        {"error_file", error_file ? error_file : ""}};
  const std::string line = rec.dump() + "\n";
  // One O_APPEND write: the record is whole or absent for the reader.
  int fd = ::open((rdir + "/exec.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
    die("cannot write " + rdir + "/exec.jsonl: " + std::strerror(errno));
  ::close(fd);

  for (const auto& [name, target] : {std::pair{"stdout", 1}, std::pair{"stderr", 2}}) {
    const std::string fifo = rdir + "/" + name + ".fifo";
    // The supervisor holds the read end: this open does not block.
    int f = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (f < 0) die("cannot open " + fifo + ": " + std::strerror(errno));
    if (::dup2(f, target) < 0) die("dup2 " + fifo + ": " + std::strerror(errno));
    ::close(f);
  }
  if (spec.contains("env") && spec["env"].is_object())
    for (const auto& [k, v] : spec["env"].items())
      if (v.is_string()) ::setenv(k.c_str(), v.get<std::string>().c_str(), 1);
  std::vector<std::string> args;
  for (const auto& a : spec["argv"]) args.push_back(a.is_string() ? a.get<std::string>() : a.dump());
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  ::execvp(cargv[0], cargv.data());
  die("exec " + args[0] + ": " + std::strerror(errno));
}

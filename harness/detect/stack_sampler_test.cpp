// Sampled stacks: a Python process is read without being stopped, a native one is never
// sampled, a request comes first; the sample parses as a captured stack does.
#include "detect/stack_sampler.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "util.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

pid_t spawn(const std::vector<std::string>& argv) {
  pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ::execvp(a[0], a.data());
    _exit(127);
  }
  return pid;
}

void end(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace

TEST_CASE("a Python rank's stack is sampled without stopping it -- a native one is not sampled") {
  if (::system("command -v py-spy >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1") != 0) {
    WARN("py-spy or python3 missing: skipped");
    return;
  }
  const fs::path dir = fs::path(HANGLAB_BINARY_DIR) / "test-stack-sampler";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const pid_t py = spawn({"python3", "-c", "import time\ndef waiting_here():\n    time.sleep(60)\nwaiting_here()"});
  const pid_t native = spawn({"sleep", "60"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the interpreter is up
  StackSamplerOptions o;
  o.run_dir = dir;
  o.period_s = 0;  // on request only
  std::vector<pid_t> spawned;
  o.on_spawn = [&](pid_t p, const std::string&) { spawned.push_back(p); };
  StackSampler s(o);
  REQUIRE(s.available());
  RankWatch a, b;
  a.rank = 0, a.pid = py, a.alive = true;
  b.rank = 1, b.pid = native, b.alive = true;
  const std::vector<const RankWatch*> ranks = {&a, &b};
  s.tick(ranks, mono_now());
  CHECK(spawned.empty());  // nothing asked, no period
  s.request(0);
  s.request(1);
  for (int i = 0; i < 100 && !s.latest(0); ++i) {
    s.tick(ranks, mono_now());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const StackSample* sample = s.latest(0);
  REQUIRE(sample != nullptr);
  CHECK(sample->pid == py);
  CHECK(sample->text.find("waiting_here") != std::string::npos);
  REQUIRE(sample->info);
  CHECK(sample->info->tool == "py-spy");
  CHECK(sample->info->state == "S");
  CHECK(fs::exists(dir / "ranks" / "0" / "stack.sample.txt"));
  CHECK(s.latest(1) == nullptr);
  CHECK(spawned.size() == 1);
  // The sampled process ran on: py-spy --nonblocking never stopped it.
  char st = 0;
  std::string stat = read_file("/proc/" + std::to_string(py) + "/stat");
  st = stat[stat.rfind(')') + 2];
  CHECK(st == 'S');
  s.stop();
  end(py);
  end(native);
}

// Unit tests of the rank's Flight Recorder dump triggers (flight_recorder.hpp), with a fake
// dumper in place of torch's: arming is process-wide (signal mask, one signal thread), so each
// case runs in a forked child of this single-threaded test process and reports by exit status
// and by the files it leaves.
#include "flight_recorder.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace fs = std::filesystem;

namespace {

// This process's scratch folder, removed at its exit (the forked children leave with _exit).
const fs::path& scratch() {
  struct Scratch {
    fs::path dir = fs::temp_directory_path() / ("hanglab_fr_test_" + std::to_string(::getpid()));
    ~Scratch() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  };
  static const Scratch s;
  return s.dir;
}

fs::path fresh_dir(const std::string& name) {
  fs::path d = scratch() / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `body` in a child with HANGLAB_FR_DUMP=`dump` (unset when empty); returns its wait status.
int in_child(const fs::path& dump, const std::function<int()>& body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // A rank's dispositions, not Catch's handlers (inherited across fork).
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGUSR1, SIG_DFL);
    if (dump.empty())
      ::unsetenv("HANGLAB_FR_DUMP");
    else
      ::setenv("HANGLAB_FR_DUMP", dump.c_str(), 1);
    ::_exit(body());
  }
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  return st;
}

bool wait_for_file(const fs::path& p, const std::string& content) {
  for (int i = 0; i < 500; ++i) {
    if (fs::exists(p) && slurp(p) == content) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

int leftovers(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename().string().find(".tmp.") != std::string::npos;
  return n;
}

}  // namespace

TEST_CASE("without HANGLAB_FR_DUMP nothing is armed and a dump is a no-op", "[flight_recorder]") {
  const fs::path d = fresh_dir("off");
  const int st = in_child({}, [&] {
    if (hanglab::fr_arm([] { return std::string("x"); })) return 1;
    hanglab::fr_dump("end of training", true);
    return hanglab::fr_dump_path().empty() ? 0 : 2;
  });
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK(fs::is_empty(d));
}

TEST_CASE("a backend without a dumper is not armed", "[flight_recorder]") {
  const fs::path d = fresh_dir("nodumper");
  const int st = in_child(d / "flight_recorder.pkl", [] { return hanglab::fr_arm(nullptr) ? 1 : 0; });
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK_FALSE(fs::exists(d / "flight_recorder.pkl.armed"));
}

TEST_CASE("armed: <dump>.armed holds the pid, a dump writes the dumper's bytes, nothing half-written",
          "[flight_recorder]") {
  const fs::path d = fresh_dir("armed");
  const fs::path dump = d / "flight_recorder.pkl";
  const int st = in_child(dump, [&] {
    int calls = 0;
    if (!hanglab::fr_arm([&] { return "dump " + std::to_string(++calls); })) return 1;
    if (slurp(dump.string() + ".armed") != std::to_string(::getpid())) return 2;
    hanglab::fr_dump("first");
    if (slurp(dump) != "dump 1") return 3;
    hanglab::fr_dump_write("torch's own", "written by torch");
    if (slurp(dump) != "torch's own") return 4;
    hanglab::fr_dump("end of training", /*final=*/true);
    return slurp(dump) == "dump 2" ? 0 : 5;
  });
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
  CHECK(leftovers(d) == 0);
}

TEST_CASE("a dumper that throws leaves no dump and the rank goes on", "[flight_recorder]") {
  const fs::path d = fresh_dir("throws");
  const fs::path dump = d / "flight_recorder.pkl";
  const int st = in_child(dump, [&] {
    hanglab::fr_arm([]() -> std::string { throw std::runtime_error("recorder is off"); });
    hanglab::fr_dump("dump request");
    return 7;
  });
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 7);
  CHECK_FALSE(fs::exists(dump));
  CHECK(leftovers(d) == 0);
}

TEST_CASE("SIGUSR1 dumps and the rank goes on", "[flight_recorder]") {
  const fs::path d = fresh_dir("usr1");
  const fs::path dump = d / "flight_recorder.pkl";
  const int st = in_child(dump, [&] {
    hanglab::fr_arm([] { return std::string("on request"); });
    ::kill(::getpid(), SIGUSR1);
    return wait_for_file(dump, "on request") ? 0 : 1;
  });
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

TEST_CASE("SIGTERM dumps, then the rank dies of SIGTERM as it would have without the recorder",
          "[flight_recorder]") {
  const fs::path d = fresh_dir("term");
  const fs::path dump = d / "flight_recorder.pkl";
  const int st = in_child(dump, [&] {
    hanglab::fr_arm([] { return std::string("at teardown"); });
    ::kill(::getpid(), SIGTERM);
    for (int i = 0; i < 500; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return 1;  // not reached: the signal thread ends the process
  });
  REQUIRE(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGTERM);
  CHECK(slurp(dump) == "at teardown");
  CHECK(leftovers(d) == 0);
}

TEST_CASE("a child forked after arming gets the signal mask it had before (SIGTERM ends it)",
          "[flight_recorder]") {
  const fs::path d = fresh_dir("fork");
  const int st = in_child(d / "flight_recorder.pkl", [&] {
    hanglab::fr_arm([] { return std::string("parent's"); });
    const pid_t worker = ::fork();
    if (worker == 0) {
      for (;;) ::pause();
    }
    ::kill(worker, SIGTERM);
    int wst = 0;
    for (int i = 0; i < 500 && ::waitpid(worker, &wst, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::kill(worker, 0) == 0) {  // SIGTERM blocked in it: leave nothing behind
      ::kill(worker, SIGKILL);
      ::waitpid(worker, &wst, 0);
      return 1;
    }
    return WIFSIGNALED(wst) && WTERMSIG(wst) == SIGTERM ? 0 : 2;
  });
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

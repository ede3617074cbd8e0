// Unit tests of the loop's command line (options.hpp): whole-string integers, and a bad
// `--name=value` refused with exit 2 and one line naming the key (in a forked child:
// parse_command_line leaves with exit).
#include "options.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

TEST_CASE("parse_whole_int takes a whole decimal integer and nothing else") {
  CHECK(hanglab::parse_whole_int("42") == 42);
  CHECK(hanglab::parse_whole_int("-7") == -7);
  CHECK_FALSE(hanglab::parse_whole_int(""));
  CHECK_FALSE(hanglab::parse_whole_int("12ms"));
  CHECK_FALSE(hanglab::parse_whole_int("1.5"));
  CHECK_FALSE(hanglab::parse_whole_int("99999999999999999999"));  // out of int64 range
}

namespace {

// Exit status of parse_command_line on `args` in a child; its stderr in `err`.
int parse_in_child(std::vector<std::string> args, std::string& err) {
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::dup2(pipefd[1], 2);
    std::vector<char*> argv;
    args.insert(args.begin(), "test_ddp");
    for (auto& a : args) argv.push_back(a.data());
    hanglab::BackendSpec spec;
    spec.workload = "test_ddp";
    spec.backend = "loop";
    spec.summary = "test";
    hanglab::parse_command_line(static_cast<int>(argv.size()), argv.data(), spec);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) err.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST_CASE("a bad value or a foreign backend is a usage error naming the key") {
  std::string err;
  CHECK(parse_in_child({"--steps=12", "--backend=loop"}, err) == 0);
  err.clear();
  CHECK(parse_in_child({"--step_ms=fast"}, err) == 2);
  CHECK(err.find("--step_ms=fast: expected an integer") != std::string::npos);
  err.clear();
  CHECK(parse_in_child({"--backend=gloo"}, err) == 2);
  CHECK(err.find("--backend=gloo") != std::string::npos);
}

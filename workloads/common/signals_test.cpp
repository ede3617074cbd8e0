// Unit tests of the rank programs' signal hygiene: a write to a socket whose peer is gone
// is an EPIPE error the rank can report, not a silent death by SIGPIPE.
#include "signals.hpp"

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <csignal>

namespace {

// In a child (dispositions are process-wide): optionally init_rank_signals(), then write
// to a socket whose peer has closed. Returns the child's wait status.
int write_to_dead_peer(bool hygiene) {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::signal(SIGPIPE, SIG_DFL);
    if (hygiene) hanglab::init_rank_signals();
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) ::_exit(90);
    ::close(sv[1]);
    const char byte = 'x';
    ssize_t n = ::write(sv[0], &byte, 1);
    ::_exit(n < 0 && errno == EPIPE ? 0 : 91);
  }
  int st = 0;
  REQUIRE(::waitpid(pid, &st, 0) == pid);
  return st;
}

}  // namespace

TEST_CASE("without signal hygiene a write to a dead peer kills the rank by SIGPIPE", "[signals]") {
  int st = write_to_dead_peer(false);
  REQUIRE(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGPIPE);
}

TEST_CASE("init_rank_signals: a write to a dead peer is EPIPE, as in Python", "[signals]") {
  int st = write_to_dead_peer(true);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 0);
}

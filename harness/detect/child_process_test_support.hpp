#pragma once
// Test support for the detectors' tests on real processes: a forked child running a body (killed
// and reaped at scope exit, even when stopped) and the bodies that stand for a rank's states:
// computing, polling like Gloo's transport loop, blocked on a read.
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace hanglab::testsupport {

// A child process running `body`, killed and reaped at scope exit.
struct Child {
  pid_t pid = 0;
  template <class F>
  explicit Child(F body) {
    pid = ::fork();
    if (pid == 0) {
      body();
      _exit(0);
    }
  }
  ~Child() {
    ::kill(pid, SIGKILL);
    ::kill(pid, SIGCONT);
    ::waitpid(pid, nullptr, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
};

inline void spin_forever() {
  volatile unsigned long x = 0;
  for (;;) ++x;
}

// Wakes 100 times a second for a few microseconds of work, as Gloo's transport loop does.
inline void poll_forever() {
  for (;;) {
    volatile unsigned long x = 0;
    for (int i = 0; i < 200; ++i) ++x;
    ::usleep(10000);
  }
}

inline void block_forever() {
  int p[2];
  if (::pipe(p) != 0) _exit(1);
  char c;
  for (;;) (void)!::read(p[0], &c, 1);
}

}  // namespace hanglab::testsupport

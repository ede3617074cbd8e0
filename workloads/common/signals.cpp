#include "signals.hpp"

#include <csignal>

namespace hanglab {

void init_rank_signals() {
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGPIPE, &sa, nullptr);
}

}  // namespace hanglab

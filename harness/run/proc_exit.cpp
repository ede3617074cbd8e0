#include "run/proc_exit.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace hanglab {

int open_pidfd(pid_t pid) {
  if (pid <= 0) return -1;
  // pidfd_open sets O_CLOEXEC on the descriptor itself.
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

ProcExit probe_proc_exit(pid_t pid) {
  ProcExit e;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) {
    e.gone = true;  // reaped already: how it ended is no longer in /proc
    return e;
  }
  // The command name (field 2) may hold spaces and parentheses: fields resume after the last ')'.
  auto rp = stat.rfind(')');
  if (rp == std::string::npos || rp + 2 >= stat.size()) return e;
  std::istringstream fields(stat.substr(rp + 2));
  std::string state;
  fields >> state;
  if (state != "Z" && state != "X") return e;
  e.gone = true;
  // Fields 4..51 lie between the state (3) and exit_code (52, since Linux 3.5).
  std::string f;
  int n = 3;
  long long exit_code = 0;
  while (n < 52 && fields >> f) ++n;
  if (n == 52 && !f.empty()) {
    try {
      exit_code = std::stoll(f);
      e.wait_status = static_cast<int>(exit_code);
    } catch (...) {
    }
  }
  return e;
}

long long process_cpu_ticks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  auto rp = stat.rfind(')');
  if (rp == std::string::npos || rp + 2 >= stat.size()) return -1;
  std::istringstream f(stat.substr(rp + 2));
  std::string skip;
  for (int field = 3; field < 14 && f >> skip; ++field) {
  }
  long long ut = 0, st = 0, cut = 0, cst = 0;
  if (!(f >> ut >> st >> cut >> cst)) return -1;
  return ut + st + cut + cst;
}

ProcState read_proc_state(pid_t pid) {
  ProcState ps;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return ps;
  auto rp = stat.rfind(')');
  if (rp == std::string::npos || rp + 2 >= stat.size()) return ps;
  ps.state = stat.substr(rp + 2, 1);
  std::ifstream wc("/proc/" + std::to_string(pid) + "/wchan");
  std::string w;
  if (std::getline(wc, w) && w != "0") ps.wchan = w;
  return ps;
}

}  // namespace hanglab

#include "triage/reason/phrases.hpp"

#include <fmt/format.h>


#include "util.hpp"

namespace hanglab::reason {

std::string signal_senders(int sig) {
  switch (sig) {
    case 1:
      return "usually the terminal or ssh session that started the job closing (a hang-up; nohup, tmux or the "
             "scheduler keeps it alive)";
    case 2: return "usually Ctrl-C in the terminal that started the job: a person stopped it";
    case 3: return "usually Ctrl-\\ in the terminal, or a debugging tool asking for a core dump";
    case 9:
      return "usually the kernel's OOM killer, or a scheduler's or container runtime's final kill after its grace "
             "period";
    case 15:
      return "usually the scheduler (Slurm's time limit, scancel or a preemption; Kubernetes deleting or evicting "
             "the pod), a kill by hand, or a shutdown of the node";
    case 24: return "the CPU-time limit (ulimit -t, a scheduler's CPU-time limit)";
    default: return "sent from outside the job";
  }
}

std::string ranks_phrase(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", rank_ranges(ranks));
}

std::string ranks_phrase_counted(const std::vector<int>& ranks) {
  std::string s = ranks_phrase(ranks);
  if (ranks.size() > 8) s += fmt::format(" ({} ranks)", ranks.size());
  return s;
}

}  // namespace hanglab::reason

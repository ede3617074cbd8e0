// kill_rank: a rank dies from outside — the OOM killer's SIGKILL, a segfault, an
// eviction's SIGTERM. The signal goes to the rank's own pid (not its process group),
// as the kernel or a node agent would send it.
//
// Needs nothing of the workload. Manifested when a rank the signal was delivered to
// (kill(2) returned 0) then ended by it: killed by that signal, or (a handled SIGTERM/
// SIGINT) exited non-zero after it.
#include <csignal>
#include <map>

#include <fmt/format.h>

#include "injector.hpp"

namespace hanglab {

namespace {

const std::map<std::string, int> kSignals = {
    {"SIGKILL", SIGKILL}, {"SIGTERM", SIGTERM}, {"SIGSEGV", SIGSEGV}, {"SIGBUS", SIGBUS},
    {"SIGABRT", SIGABRT}, {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT}, {"SIGUSR1", SIGUSR1},
};

class KillRank : public Injector {
 public:
  void configure(const FaultSpec& spec, const std::string& file) override {
    reject_unknown_keys(spec, file, keys());
    ranks_ = spec.ranks;
    if (const toml::node* n = spec.table.get("signal")) {
      if (!n->is_string()) throw config_error_at(file, *n, spec.key_prefix() + ".signal", "expected a signal name such as \"SIGKILL\"");
      name_ = n->as_string()->get();
      auto it = kSignals.find(name_);
      if (it == kSignals.end()) {
        std::string known;
        for (const auto& [k, v] : kSignals) known += (known.empty() ? "" : ", ") + k;
        throw config_error_at(file, *n, spec.key_prefix() + ".signal", "unknown signal '" + name_ + "' (known: " + known + ")");
      }
      signo_ = it->second;
    }
  }

  std::string fire(Job& job) override {
    std::string detail;
    for (int r : ranks_) {
      pid_t pid = job.pid_of(r);
      if (!job.alive(r) || pid <= 0) {
        detail += (detail.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r) + " already gone";
        continue;
      }
      job.fault_signalled(r, signo_);
      int rc = ::kill(pid, signo_);
      if (rc == 0) sent_.push_back(r);
      detail += (detail.empty() ? "" : "; ") + std::string("sent ") + name_ + " to rank " + std::to_string(r) +
                " (pid " + std::to_string(pid) + ")" + (rc == 0 ? "" : " failed");
    }
    return detail;
  }

  Manifest manifested(const RunFactsView& run) const override {
    for (int r : sent_) {
      const RankExit* e = run.exit_of(r);
      if (!e) continue;
      if ((e->signal && *e->signal == signo_) || (!e->signal && e->code == 128 + signo_))
        return {true, fmt::format("{} delivered to rank {}; it died of it (status {})", name_, r, e->status())};
      if ((signo_ == SIGTERM || signo_ == SIGINT) && e->status() != 0)
        return {true, fmt::format("{} delivered to rank {}; it exited with status {} (handled the signal)", name_, r,
                                  e->status())};
    }
    if (sent_.empty()) return {false, "no signal was delivered: the fault never fired or every targeted rank was gone"};
    return {false, fmt::format("{} delivered to rank {}, but it did not die of it", name_, sent_.front())};
  }

  static std::vector<KeyDoc> keys() {
    return {{"signal", "string", "SIGKILL", "signal to send: SIGKILL, SIGTERM, SIGSEGV, SIGBUS, SIGABRT, SIGINT, SIGQUIT, SIGUSR1"}};
  }

 private:
  std::vector<int> ranks_;
  std::string name_ = "SIGKILL";
  int signo_ = SIGKILL;
  std::vector<int> sent_;  // ranks kill(2) reached
};

}  // namespace

InjectorInfo kill_rank_info() {
  return {"kill_rank", "send a signal (default SIGKILL) to the chosen ranks: OOM kill, crash, eviction",
          "kill(2) on the rank's pid when the trigger is due", KillRank::keys(),
          [] { return std::make_unique<KillRank>(); }};
}

}  // namespace hanglab

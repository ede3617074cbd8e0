// exception_on_rank: an unhandled exception kills one rank mid-step — a CUDA error
// (illegal memory access, device-side assert), a bad sample in the data pipeline, a
// bug in one rank's branch. Two ways in, one fault:
//   - the built-in training loop: an in-process hook ("exception") of workloads/common;
//     the rank's forward throws at the trigger step, it traces a `fault` event just
//     before, the error reaches the top level (trace `error`) and the rank exits 1;
//   - a bring-your-own Python command (a program hanglab did not write): hanglab's
//     sitecustomize hook (workloads/common/sitecustomize.py, compiled in and written
//     into the run directory) goes first on the rank's PYTHONPATH and arms a SIGUSR2
//     handler in the main thread; at the trigger hanglab sends SIGUSR2 and the handler
//     raises RuntimeError(message) wherever the program's main thread stands. Its peers
//     are left waiting in the step's collectives either way.
#include "hook_injector.hpp"
#include "process_control.hpp"

#include <fmt/format.h>
#include <signal.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace hanglab {
namespace {
// The hook's source, embedded at build time (CMake: generated/python_hook.inc).
constexpr const char* kPythonHook =
#include "python_hook.inc"
    ;
}  // namespace
}  // namespace hanglab

namespace hanglab {

namespace {

std::vector<KeyDoc> exception_keys() {
  return {{"message", "string", "injected RuntimeError: CUDA error: an illegal memory access was encountered",
           "what() of the exception thrown in forward (what the rank's log and trace show)"}};
}

class ExceptionOnRank : public HookInjector {
 public:
  ExceptionOnRank() : HookInjector("exception", exception_keys()) {}

  // The built-in loop takes the hook; a bring-your-own command takes the Python hook (a
  // command that is not Python never arms it, and the run says the fault did not fire).
  std::vector<std::string> adapt(AdaptContext& ctx) override {
    if (ctx.training_loop || ctx.builtin) return HookInjector::adapt(ctx);
    python_ = true;
    return {"bring-your-own command: the exception is raised in the rank's Python main thread by hanglab's "
            "sitecustomize hook (first on PYTHONPATH), on SIGUSR2 at the trigger"};
  }

  bool in_process() const override { return !python_; }

  void prepare_rank(int rank, LaunchSpec& spec) override {
    if (!python_) return HookInjector::prepare_rank(rank, spec);
    bool targeted = false;
    for (int r : ranks_) targeted = targeted || r == rank;
    if (!targeted) return;
    const auto run_dir = spec.env.count("HANGLAB_RUN_DIR") ? std::filesystem::path(spec.env["HANGLAB_RUN_DIR"])
                                                            : std::filesystem::path();
    if (run_dir.empty()) return;
    const auto dir = run_dir / "pyhook";
    std::filesystem::create_directories(dir);
    if (!std::filesystem::exists(dir / "sitecustomize.py")) {
      std::ofstream(dir / "sitecustomize.py") << kPythonHook;
    }
    std::string path = spec.env.count("PYTHONPATH") ? spec.env["PYTHONPATH"] : "";
    if (path.empty())
      if (const char* p = std::getenv("PYTHONPATH")) path = p;
    spec.env["PYTHONPATH"] = dir.string() + (path.empty() ? "" : ":" + path);
    spec.env["HANGLAB_PY_EXCEPTION"] = hook_.value("message", "");
    const auto state = run_dir / "ranks" / std::to_string(rank) / "py_exception";
    std::filesystem::create_directories(state.parent_path());
    spec.env["HANGLAB_PY_HOOK_STATE"] = state.string();
    states_[rank] = state;
  }

  // SIGUSR2 to the process that armed the hook (the rank's first Python process), after
  // checking it is one of the rank's processes (a `sh -c` wrapper's child counts).
  std::string fire(Job& job) override {
    std::string detail;
    auto add = [&detail](const std::string& s) { detail += (detail.empty() ? "" : "; ") + s; };
    for (int r : ranks_) {
      const pid_t leader = job.pid_of(r);
      if (!job.alive(r) || leader <= 0) {
        add(fmt::format("rank {} already gone", r));
        continue;
      }
      auto armed = read_json(states_[r].string() + ".armed");
      const pid_t pid = armed.is_object() ? armed.value("pid", 0) : 0;
      if (pid <= 0) {
        add(fmt::format("rank {} never armed the Python hook (not a Python program, or its PYTHONPATH was replaced): "
                        "nothing raised",
                        r));
        continue;
      }
      bool ours = false;
      for (pid_t p : rank_processes(leader)) ours = ours || p == pid;
      if (!ours) {
        add(fmt::format("rank {}: the process that armed the hook (pid {}) is gone", r, pid));
        continue;
      }
      if (::kill(pid, SIGUSR2) != 0) {
        add(fmt::format("rank {}: kill(SIGUSR2, pid {}) failed: {}", r, pid, std::strerror(errno)));
        continue;
      }
      signalled_.push_back(r);
      add(fmt::format("SIGUSR2 rank {} (pid {}): the hook raises RuntimeError(\"{}\") in its main thread", r, pid,
                      hook_.value("message", "")));
    }
    return detail;
  }

  // Built-in loop: the rank traced the hook's `fault` event and the exception ended it (a
  // trace `error` or a non-zero exit; a rank that caught it and went on was not killed by
  // it). Python hook: the handler wrote <state>.raised and the rank then exited non-zero.
  Manifest manifested(const RunFactsView& run) const override {
    if (python_) return python_manifested(run);
    Manifest m = hook_acted(run);
    if (!m.exercised) return m;
    for (int r : ranks_) {
      const RankExit* e = run.exit_of(r);
      const auto errors = run.events(r, "error");
      if (!errors.empty()) return {true, m.evidence + "; the rank's trace `error`: " + errors.front()->value("msg", "")};
      if (e && e->status() != 0) return {true, m.evidence + "; the rank exited with status " + std::to_string(e->status())};
    }
    return {false, m.evidence + "; but no targeted rank died of it (no trace `error`, no non-zero exit)"};
  }

 protected:
  void validate(const nlohmann::json& hook, const FaultSpec& spec, const std::string& file) override {
    if (hook.value("message", "").empty())
      throw config_error_at(file, *spec.table.get("message"), spec.key_prefix() + ".message", "must not be empty");
  }

 private:
  static nlohmann::json read_json(const std::string& path) {
    std::ifstream in(path);
    if (!in) return nullptr;
    return nlohmann::json::parse(in, nullptr, false);
  }

  Manifest python_manifested(const RunFactsView& run) const {
    if (signalled_.empty()) return {false, "no targeted rank was signalled (the hook never armed, or the rank was gone)"};
    for (int r : signalled_) {
      auto it = states_.find(r);
      if (it == states_.end()) continue;
      auto raised = read_json(it->second.string() + ".raised");
      if (!raised.is_object()) continue;
      const std::string where = raised.value("where", "?");
      const RankExit* e = run.exit_of(r);
      if (e && e->status() != 0)
        return {true, fmt::format("rank {}'s hook raised RuntimeError in {}; the rank exited with status {}", r, where,
                                  e->status())};
      return {false, fmt::format("rank {}'s hook raised RuntimeError in {}, but the rank did not die of it (the program "
                                 "caught it, or it was still running at teardown)",
                                 r, where)};
    }
    return {false, "SIGUSR2 was sent but no hook wrote that it raised (the program replaced the SIGUSR2 handler?)"};
  }

  bool python_ = false;
  std::map<int, std::filesystem::path> states_;
  std::vector<int> signalled_;
};

}  // namespace

InjectorInfo exception_on_rank_info() {
  InjectorInfo i{"exception_on_rank",
                 "the chosen ranks throw an unhandled exception in forward (CUDA error, bad sample): exit 1",
                 "built-in loop: in-process hook \"exception\" (HANGLAB_HOOKS) in workloads/common; the rank traces a `fault` "
                 "event, throws std::runtime_error(message) in forward of the trigger step and exits with code 1. "
                 "Bring-your-own Python command: hanglab's sitecustomize hook (PYTHONPATH) raises "
                 "RuntimeError(message) in the main thread on SIGUSR2, sent at the trigger",
                 exception_keys(), [] { return std::make_unique<ExceptionOnRank>(); }};
  i.default_trigger = "at_step = 1";
  return i;
}

}  // namespace hanglab

// The mpirun launcher: one `mpirun` process starts every rank (see launchers.hpp).
#include "run/launchers/launchers.hpp"

namespace hanglab {

namespace fs = std::filesystem;

// One mpirun, one MPMD app context per rank (`-np 1 ... : -np 1 ...`), so every rank keeps
// its own environment (trace path, hooks) and wrapper, exactly as under the local launcher.
// --tag-output lets the supervisor split the output per rank.
LaunchSpec mpirun_launch_spec(const std::vector<LaunchSpec>& specs, const fs::path& run_dir) {
  LaunchSpec l;
  l.rank = -1;
  l.argv = {"mpirun", "--oversubscribe", "--bind-to", "none", "--tag-output", "--mca", "mpi_yield_when_idle", "1"};
  for (const auto& s : specs) {
    if (s.rank > 0) l.argv.push_back(":");
    l.argv.insert(l.argv.end(), {"-np", "1"});
    for (const auto& [k, v] : s.env) l.argv.insert(l.argv.end(), {"-x", k + "=" + v});
    l.argv.insert(l.argv.end(),
                  {"-x", "HANGLAB_TRACE=" + fs::absolute(run_dir / "ranks" / std::to_string(s.rank) / "events.jsonl").string()});
    if (!s.hooks.empty()) l.argv.insert(l.argv.end(), {"-x", "HANGLAB_HOOKS=" + s.hooks.dump()});
    l.argv.insert(l.argv.end(), s.wrapper.begin(), s.wrapper.end());
    l.argv.insert(l.argv.end(), s.argv.begin(), s.argv.end());
  }
  l.env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
           {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"}};
  return l;
}

}  // namespace hanglab

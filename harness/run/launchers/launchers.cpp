// The launcher registry: one line per launcher that starts all ranks from one process.
#include "run/launchers/launchers.hpp"

#include <stdexcept>

namespace hanglab {

std::optional<LaunchSpec> launcher_spec(const std::string& name, const std::vector<LaunchSpec>& specs,
                                        const std::filesystem::path& run_dir) {
  if (name.empty() || name == "local") return std::nullopt;
  if (name == "mpirun") return mpirun_launch_spec(specs, run_dir);
  throw std::invalid_argument("unknown launcher '" + name + "'");
}

}  // namespace hanglab

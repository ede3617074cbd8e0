// The explicit registry: adding a fault = one file in injectors/ + one line here.
#include "injector.hpp"

namespace hanglab {

InjectorInfo kill_rank_info();
InjectorInfo skip_collective_info();
InjectorInfo uneven_batches_info();
InjectorInfo freeze_rank_info();
InjectorInfo throttle_cpu_info();
InjectorInfo exception_on_rank_info();
InjectorInfo oom_rank_info();

const std::vector<InjectorInfo>& injector_registry() {
  static const std::vector<InjectorInfo> kRegistry = {
      kill_rank_info(),
      skip_collective_info(),
      uneven_batches_info(),
      freeze_rank_info(),
      throttle_cpu_info(),
      exception_on_rank_info(),
      oom_rank_info(),
  };
  return kRegistry;
}

}  // namespace hanglab

// The explicit registry: adding a fault = one file in injectors/ + one line here.
#include "injector.hpp"

namespace hanglab {

InjectorInfo kill_rank_info();
InjectorInfo skip_collective_info();
InjectorInfo uneven_batches_info();

const std::vector<InjectorInfo>& injector_registry() {
  static const std::vector<InjectorInfo> kRegistry = {
      kill_rank_info(),
      skip_collective_info(),
      uneven_batches_info(),
  };
  return kRegistry;
}

}  // namespace hanglab

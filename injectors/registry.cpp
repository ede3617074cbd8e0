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
InjectorInfo extra_collective_info();
InjectorInfo nan_skip_info();
InjectorInfo mismatched_collective_info();
InjectorInfo wrong_socket_ifname_info();
InjectorInfo wrong_master_addr_info();
InjectorInfo port_in_use_info();
InjectorInfo duplicate_rank_info();
InjectorInfo late_joiner_info();
InjectorInfo tiny_shm_info();
InjectorInfo slow_storage_info();
InjectorInfo disk_full_info();
InjectorInfo kill_node_info();
InjectorInfo freeze_node_info();
InjectorInfo partition_info();
InjectorInfo packet_loss_info();
InjectorInfo bandwidth_info();
InjectorInfo link_flap_info();
InjectorInfo mtu_mismatch_info();
InjectorInfo store_unreachable_info();
InjectorInfo dns_failure_info();
InjectorInfo env_skew_info();

const std::vector<InjectorInfo>& injector_registry() {
  static const std::vector<InjectorInfo> kRegistry = {
      kill_rank_info(),
      skip_collective_info(),
      uneven_batches_info(),
      freeze_rank_info(),
      throttle_cpu_info(),
      exception_on_rank_info(),
      oom_rank_info(),
      extra_collective_info(),
      nan_skip_info(),
      mismatched_collective_info(),
      wrong_socket_ifname_info(),
      wrong_master_addr_info(),
      port_in_use_info(),
      duplicate_rank_info(),
      late_joiner_info(),
      tiny_shm_info(),
      slow_storage_info(),
      disk_full_info(),
      kill_node_info(),
      freeze_node_info(),
      partition_info(),
      packet_loss_info(),
      bandwidth_info(),
      link_flap_info(),
      mtu_mismatch_info(),
      store_unreachable_info(),
      dns_failure_info(),
      env_skew_info(),
  };
  return kRegistry;
}

}  // namespace hanglab

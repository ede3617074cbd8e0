// A TCP port on 127.0.0.1 that no other hanglab run on this host holds: the rendezvous
// port of a run (runner.cpp), the slurmctld and slurmd ports of a run's Slurm cluster
// (launchers/slurm_cluster.cpp). The kernel picks a free port; an abstract unix socket
// named after it (hanglab-port-N) is the lock, released by the kernel when the holder
// exits, so a lease never leaks a file and a SIGKILLed hanglab frees its ports.
#pragma once

namespace hanglab {

class PortLease {
 public:
  // Throws std::system_error (bind) or std::runtime_error after 64 taken candidates.
  PortLease();
  ~PortLease();
  PortLease(const PortLease&) = delete;
  PortLease& operator=(const PortLease&) = delete;
  PortLease(PortLease&& o) noexcept : port_(o.port_), lock_fd_(o.lock_fd_) { o.port_ = 0, o.lock_fd_ = -1; }
  int port() const { return port_; }

 private:
  int port_ = 0;
  int lock_fd_ = -1;
};

}  // namespace hanglab

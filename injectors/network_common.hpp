// Pieces shared by the network-configuration and rendezvous injectors (wrong_socket_ifname,
// wrong_master_addr, port_in_use, duplicate_rank, late_joiner): rank targeting, argv
// wrappers that run a rank late or in a private network namespace, and PortHolder, the
// "other process" that already listens on a port.
//
// Everything here acts on one host and keeps traffic on it: a private network namespace
// has only its own loopback, and the port holder listens on this host's wildcard address.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

#include "injector.hpp"

namespace hanglab {

class RunState;  // run/state.hpp

bool is_targeted(const std::vector<int>& ranks, int rank);

// Absolute path of `tool` found in $PATH, or "" when it is not there.
std::string find_in_path(const std::string& tool);

// Why a rank cannot be run in a private network namespace here ("" = it can): needs
// root (CAP_SYS_ADMIN for unshare(CLONE_NEWNET)) and the `unshare` and `ip` tools.
std::string netns_unsupported_reason(const HostInfo& host);

// The wrapper that runs the rest of argv in a fresh, anonymous network namespace whose
// only interface is loopback (brought up). unshare(1) execs its command, so the rank's
// pid stays the process the supervisor started; the namespace dies with the rank's
// last process, so there is nothing to remove afterwards.
std::vector<std::string> private_netns_wrapper();

// The wrapper that starts the rest of argv `delay_s` seconds late: sh sleeps, then execs
// it (same pid), so signals, stacks and the exit status are the rank's own.
std::vector<std::string> delayed_start_wrapper(double delay_s);

// Puts `wrapper` in front of the spec's existing wrapper: each wrapper ends by exec'ing
// the rest of the command line, so they compose in any order.
void prepend_wrapper(LaunchSpec& spec, const std::vector<std::string>& wrapper);

// manifested() of the faults that keep a rank out of the process group: whether `rank`
// ran (traced `start`, or a log line mentions `clue`) and never completed init (no
// `phase init end`). Returns the evidence, or "" when it did join (or never ran at all).
std::string rank_kept_out_of_init(const RunFactsView& run, int rank, const std::string& clue);

// The integer value of spec.env[key]; throws std::runtime_error naming the rank when it
// is missing or not a number (a harness bug: the runner sets these for every rank).
int env_int_of(const LaunchSpec& spec, const std::string& key);

// A child process that listens on TCP `port` on 0.0.0.0 and [::] (IPv6-only, so the two
// sockets do not collide) and never accepts: any later bind of that port fails with
// EADDRINUSE, and clients that connect complete the handshake and then wait for an
// answer that never comes — a stale server from an earlier job. The child is killed
// with the harness (PR_SET_PDEATHSIG) and by stop(). Not copyable: one owner stops it.
class PortHolder {
 public:
  PortHolder() = default;
  PortHolder(const PortHolder&) = delete;
  PortHolder& operator=(const PortHolder&) = delete;
  ~PortHolder() { stop(); }

  // Forks the holder and returns once it listens. Throws std::runtime_error with the
  // failing call and errno when it cannot bind (the port is taken already) or listen.
  // With a run state the holder is recorded there at once, and released by stop(). With
  // `netns` (a name under /run/netns: a [topology] node) it holds the port in that namespace.
  void start(int port, RunState* state = nullptr, const std::string& netns = "");
  // SIGKILLs and reaps the holder if it is still ours; idempotent. Safe after someone
  // else (the supervisor's waitpid(-1)) reaped it: then it only forgets the pid.
  void stop();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  int port() const { return port_; }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  RunState* state_ = nullptr;
  int state_id_ = 0;
};

}  // namespace hanglab

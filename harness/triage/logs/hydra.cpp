// The error lines of MPICH's process manager Hydra (mpiexec.hydra and its per-host proxy), which Intel MPI's
// mpiexec/mpirun is built on and whose line shape it keeps:
//   "[mpiexec@HOST] FUNC (FILE:LINE): <message>"        mpiexec itself (the launcher)
//   "[proxy:PGID:ID@HOST] FUNC (FILE:LINE): <message>"  a host's proxy (it forks and execs the ranks there)
// HYDU_error_printf prints HYD_dbg_prefix ("mpiexec@HOST" / "proxy:PGID:ID@HOST", lib/utils/dbg.c:24), then
// "%s (%s:%d): " with __func__, __FILE__, __LINE__, then the message (lib/hydra.h:393-417@v4.3.2, the same in
// v3.x). What the messages of MPICH's own source mean is in the catalogue (emitter mpich-hydra); parse.cpp asks
// it first for every line of this shape, so that a word of the message ("exit code 256") is not read by the
// generic tables.
//
// One hand-written reading, because its text is not in any public source: Intel MPI's own report that a proxy
// could not be started (Intel's i_hydra is closed; MPICH's hydra, its open ancestor, reports the same event as
// "Launch proxy failed." from the SIGCHLD handler, mpiexec/pmiserv_pmci.c:40-53@v4.3.2: a bootstrap child, the
// ssh/rsh/srun that runs a host's proxy, ended before the proxy connected back). Intel's wording across its
// releases, as its users' logs show it: "unable to run proxy on HOST (pid N)" (2019), "unable to run
// bstrap_proxy on HOST (pid N, exit code C)" (2021.x, from check_exit_codes in hydra_demux_poll.c), "Error:
// Unable to run bstrap_proxy on HOST (pid N, exit code C)" (2021.10 on). The pid is mpiexec's bootstrap child's
// and C that child's raw wait status (256 = exit 1, 65280 = exit 255, ssh's own failure): no rank's. Read only
// from mpiexec's own line (the launcher's tag), as a launch failure at init: no rank ran.
#include "triage/logs/parse_parts.hpp"

namespace hanglab::logparse {

// The message of a Hydra line (after the tag and, when present, "FUNC (FILE:LINE): "); empty when `m` is not
// of Hydra's shape. `launcher`: the writer is mpiexec (not a proxy).
sv hydra_message(sv m, bool* launcher) {
  bool mpiexec = starts(m, "[mpiexec@");
  if (!mpiexec && !starts(m, "[proxy:")) return {};
  const size_t close = m.find(']');
  if (close == npos || close > 200 || m.substr(0, close).find('@') == npos || m.substr(0, close).find(' ') != npos)
    return {};
  sv rest = m.substr(skip_sp(m, close + 1));
  // "FUNC (FILE:LINE): ": a C identifier, then the location in parentheses.
  size_t i = 0;
  while (i < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[i])) || rest[i] == '_')) ++i;
  if (i > 0 && i + 1 < rest.size() && rest[i] == ' ' && rest[i + 1] == '(') {
    const size_t loc_end = rest.find("): ", i);
    if (loc_end != npos && rest.substr(i, loc_end - i).find(':') != npos) rest = rest.substr(loc_end + 3);
  }
  if (launcher) *launcher = mpiexec;
  return rest;
}

// Intel MPI's "unable to run [bstrap_]proxy on HOST (pid N[, exit code C])" on mpiexec's own line (see the top).
bool hydra_proxy_not_run(sv m, LogLine& o) {
  bool launcher = false;
  sv msg = hydra_message(m, &launcher);
  if (!launcher) return false;
  if (istarts(msg, "error: ")) msg = msg.substr(7);
  if (!istarts(msg, "unable to run ")) return false;
  msg = msg.substr(14);
  const size_t on = msg.find(" on ");
  if (on == npos || on > 40) return false;
  const sv what = msg.substr(0, on);  // "proxy", "bstrap_proxy"
  if (what.size() < 5 || what.substr(what.size() - 5) != "proxy" || what.find(' ') != npos) return false;
  o.kind = LogKind::kRendezvousError;
  o.category = "rendezvous";
  o.cause = "launch_error";
  o.phase = "init";
  o.role = "root";
  const sv host = msg.substr(on + 4, msg.find_first_of(" (", on + 4) - (on + 4));
  if (!host.empty() && o.host.empty()) o.host = host;
  return true;
}

}  // namespace hanglab::logparse

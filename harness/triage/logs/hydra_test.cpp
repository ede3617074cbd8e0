// Unit tests of MPICH Hydra's (and Intel MPI's) launcher lines (logs/hydra.cpp, the catalogue's mpich-hydra): the
// line shape "[mpiexec@HOST] FUNC (FILE:LINE): <message>" (lib/hydra.h:393-417@v4.3.2), a process that could not
// be exec'd (lib/utils/launch.c:73), a proxy that could not be started (MPICH's "Launch proxy failed.",
// mpiexec/pmiserv_pmci.c:51; Intel MPI's "unable to run bstrap_proxy on HOST (pid N, exit code C)"): a launch
// error at init of the whole job, whose BAD TERMINATION banner after it names no failed rank.
#include <catch2/catch.hpp>

#include "triage/log_test_support.hpp"
#include "triage/logs/catalogue.hpp"
#include "triage/logs/parse.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

using namespace hanglab;
using namespace hanglab::logtest;

namespace {
bool from_hydra(const LogLine& l) { return l.catalogue && l.catalogue->emitter == "mpich-hydra"; }
}  // namespace

TEST_CASE("Hydra: execvp of a process the launcher starts failed is a launch error at init", "[triage_logs]") {
  // HYDU_create_process's child (launch.c:73): HYDU_error_printf("execvp error on file %s (%s)\n", ...), printed
  // after the proxy's tag and the function's location.
  auto l = parse("[proxy:0:1@gpu-n7] HYDU_create_process (lib/utils/launch.c:73): execvp error on file ./train.sh "
                 "(Permission denied)");
  CHECK(l.kind == LogKind::kRendezvousError);
  CHECK(l.cause == "launch_error");
  CHECK(l.phase == "init");
  CHECK(from_hydra(l));
  // The same message from a function of another name and path (Intel MPI's HYD_spawn keeps MPICH's text).
  l = parse("[proxy:2:0@gpu-n9] HYD_spawn (../src/pm/i_hydra/libhydra/spawn/hydra_spawn.c:90): execvp error on "
            "file /opt/app/bin/worker (No such file or directory)");
  CHECK(l.cause == "launch_error");

  TempDir t("hydra_execvp");
  write_file(t.dir / "mpiexec.log",
             "[proxy:0:1@gpu-n7] HYDU_create_process (lib/utils/launch.c:73): execvp error on file ./train.sh "
             "(Permission denied)\n"
             "[mpiexec@gpu-n1] HYDU_sock_write (lib/utils/sock.c:250): write error (Broken pipe)\n"
             "\n"
             "===================================================================================\n"
             "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
             "=   RANK 3 PID 4242 RUNNING AT gpu-n7\n"
             "=   KILLED BY SIGNAL: 9 (Killed)\n"
             "===================================================================================\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "launch_error");
  CHECK(r.phase == "init");
  CHECK(r.scope == "all");
  // The banner after the launcher's own failure is its cleanup (SIGKILL to every process left): no rank failed.
  CHECK(r.missing_ranks.empty());
  CHECK((!r.first_failure || r.first_failure->rank < 0));
}

TEST_CASE("Hydra: a proxy the launcher could not start is a launch error of the whole job, not a rank's exit",
          "[triage_logs]") {
  // Intel MPI's wording (no public source; see hydra.cpp), in the shape of Hydra's HYDU_error_printf.
  for (const char* line :
       {"[mpiexec@login1] check_exit_codes (../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:117): unable to "
        "run bstrap_proxy on node-b (pid 5120, exit code 65280)",
        "[mpiexec@login1] Error: Unable to run bstrap_proxy on node-b (pid 5120, exit code 256)",
        "[mpiexec@login1] check_exit_codes (../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:114): unable to "
        "run proxy on node-b (pid 5120)"}) {
    const auto l = parse(line);
    INFO(line);
    CHECK(l.kind == LogKind::kRendezvousError);
    CHECK(l.cause == "launch_error");
    CHECK(l.code == kNoCode);  // the bootstrap child's wait status is no rank's exit code
    CHECK(l.host == "node-b");
  }
  // Only the launcher's own line: a proxy's tag is no launcher's.
  CHECK(parse("[proxy:0:0@node-a] foo (x.c:1): unable to run proxy on node-b (pid 1)").kind !=
        LogKind::kRendezvousError);
  // MPICH's own report of the same event (pmiserv_pmci.c:51).
  const auto m = parse("[mpiexec@login1] HYD_pmcd_pmiserv_proxy_init_cb (mpiexec/pmiserv_pmci.c:51): Launch proxy "
                       "failed.");
  CHECK(m.cause == "launch_error");
  CHECK(from_hydra(m));

  TempDir t("hydra_bstrap");
  write_file(t.dir / "job.log",
             "[mpiexec@login1] check_exit_codes (../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:117): unable "
             "to run bstrap_proxy on node-b (pid 5120, exit code 256)\n"
             "[mpiexec@login1] poll_for_event (../../src/pm/i_hydra/libhydra/demux/hydra_demux_poll.c:159): check "
             "exit codes error\n"
             "[mpiexec@login1] HYD_bstrap_setup (../../src/pm/i_hydra/libhydra/bstrap/src/hydra_bstrap.c:1000): error "
             "waiting for event\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "rendezvous");
  CHECK(r.cause == "launch_error");
  CHECK(r.phase == "init");
  CHECK(r.scope == "all");
  CHECK(r.missing_ranks.empty());
}

// Unit tests of the line pattern table: every entry's example line parses to that entry,
// and the fields its lines carry.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "triage/log_test_support.hpp"
#include "triage/logs/parse.hpp"
#include "triage/logs/patterns.hpp"
#include "triage/logs/reader.hpp"
#include "triage/reason/log.hpp"
#include "triage/triage.hpp"

namespace fs = std::filesystem;
using namespace hanglab;
using namespace hanglab::logtest;
using nlohmann::json;

TEST_CASE("pattern table: every entry's example line parses to that entry", "[triage_logs]") {
  for (const auto& p : line_patterns()) {
    INFO(p.example);
    const auto l = parse(std::string(p.example));
    CHECK(l.kind == p.kind);
    CHECK(l.cause == p.cause);
    CHECK(l.category == p.category);
  }
}

TEST_CASE("pattern table: the fields its lines carry", "[triage_logs]") {
  auto l = parse("RuntimeError: Timed out initializing process group in store based barrier on rank: 7, for key: "
                 "store_based_barrier_key:32 (world_size=8, worker_count=4, timeout=0:00:30)");
  CHECK(l.kind == LogKind::kStoreTimeout);
  CHECK(l.world == 8);
  CHECK(l.joined == 4);
  CHECK(l.rank == 7);  // "on rank: 7" is the writer's own rank (torch raises it on the rank that waited)
  CHECK(l.rank_src == RankSource::kMessage);
  l = parse("[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', "
            "'main.py', '--local_rank=3'] exits with return code = -9");
  CHECK(l.kind == LogKind::kLauncherExit);
  CHECK(l.signal == 9);
  // The launcher quotes the last command it built (launch.py sigkill_handler's `cmd`): --local_rank=3 is the
  // fourth of four processes, not the one that failed.
  CHECK(l.local_rank == -1);
  l = parse("[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', "
            "'main.py', '--local_rank=0'] exits with return code = -9");
  CHECK(l.local_rank == 0);  // one process per node: the only one
  l = parse("subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', '--local_rank=7', "
            "'--epochs', '3']' returned non-zero exit status 1.");
  CHECK(l.kind == LogKind::kLauncherExit);
  CHECK(l.code == 1);
  CHECK(l.local_rank == -1);
  l = parse("[node-0:391803] Signal: Aborted (6)");
  CHECK(l.kind == LogKind::kCrash);
  CHECK(l.signal == 6);
  l = parse("[HOST:03599] Signal: Segmentation fault (11)");
  CHECK(l.signal == 11);
  l = parse("[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)");
  CHECK(l.kind == LogKind::kCrash);
  CHECK(l.signal == 7);
  // "retreiving" as PyTorch 1.12 spelled it.
  l = parse("RuntimeError: [2] is setting up NCCL communicator and retreiving ncclUniqueId from [0] via c10d key-value "
            "store by key '0', but store->get('0') got error: Socket Timeout");
  CHECK(l.cause == "unique_id_exchange");
  // An NCCL WARN about an IB completion with an error status, but an INFO line is not one.
  CHECK(parse("mycl-g2:353236:353423 [6] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer "
              "192.168.3.5<53908> with status=12 opcode=129 len=1048576 vendor err 129 (Recv)")
            .kind == LogKind::kIbError);
  CHECK(parse("node:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.1<0>").kind != LogKind::kIbError);
}

TEST_CASE("pattern table: NCCL socket errno families and the launchers' worker deaths", "[triage_logs]") {
  // ETIMEDOUT as each NCCL generation prints it: a link fault; the INFO "retrying" line is not one yet.
  for (const char* line :
       {"h:1:2 [0] misc/socket.cc:503 NCCL WARN Net : Call to recv from 10.0.0.2<41468> failed : Connection timed out",
        "h:1:2 [0] include/socket.h:403 NCCL WARN Connect to 10.0.0.2<46681> failed : Connection timed out",
        "h:1:2 [6] misc/socket.cc:533 NCCL WARN socketPollConnect: Connect to 10.0.0.4<56849> returned 110(Connection "
        "timed out) errno 115(Operation now in progress)",
        "h:1:2 [0] misc/socket.cc:476 NCCL WARN socketStartConnect: exceeded timeouts (20)",
        // NCCL 2.2 and older: "WARN" without "NCCL".
        "gpu-bql-144-103:18553:18611 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out"}) {
    INFO(line);
    const auto l = parse(line);
    CHECK(l.kind == LogKind::kSocketError);
    CHECK(l.category == "network");
    CHECK(l.cause == "connection_timeout");
  }
  CHECK(parse("h:1:2 [0] NCCL INFO Call to connect returned Connection timed out, retrying").cause.empty());
  auto l = parse("h:1:2 [0] os/linux.cc:288 NCCL WARN ncclSocketConnect: connect to 10.0.0.4<5> returned No route to "
                 "host, exceeded error retry count after 35 attempts");
  CHECK(l.kind == LogKind::kSocketError);
  CHECK(l.cause == "host_unreachable");
  CHECK(parse("h:1:2 [0] NCCL WARN socketStartConnect: Connect to 10.0.0.4<5> failed : Network is unreachable").cause ==
        "host_unreachable");
  // A reset or closed connection is a peer that went away (or a link): an echo, no network claim.
  l = parse("h:1:2 [3] include/socket.h 398 NCCL WARN Call to recv failed : Connection reset by peer.");
  CHECK(l.category.empty());
  // EFA: the peer's queue pair is gone (a crashed peer), like a closed socket.
  CHECK(parse("[1,2]<stdout>:w-0:199:263 [2] process_err_completion:1562 NCCL WARN NET/OFI Request 0x7f completed with "
              "error. RC: 5. Error: Invalid receiver queue pair number (QPN) My EFA addr: x")
            .kind == LogKind::kNcclRemoteError);
  // torch.distributed.launch's CalledProcessError names a worker's death, and the command of the last worker it
  // started (its `cmd`), not the failed one's: the local rank is not known.
  l = parse("subprocess.CalledProcessError: Command '['/usr/bin/python3', '-u', 'train.py', '--local_rank=3', '--bs', "
            "'8']' died with <Signals.SIGKILL: 9>.");
  CHECK(l.kind == LogKind::kLauncherExit);
  CHECK(l.signal == 9);
  CHECK(l.local_rank == -1);
  l = parse("subprocess.CalledProcessError: Command '['/usr/bin/python3', '-u', 'train.py', '--local_rank=1']' returned "
            "non-zero exit status 1.");
  CHECK(l.kind == LogKind::kLauncherExit);
  CHECK(l.signal == 0);
  CHECK(l.code == 1);
  CHECK(l.local_rank == -1);  // the last command the launcher built, not the failed process's
  // A redacted command still died of its signal; its local rank is not known.
  l = parse("subprocess.CalledProcessError: Command XXXXX (my script params) died with <Signals.SIGSEGV: 11>.");
  CHECK(l.kind == LogKind::kLauncherExit);
  CHECK(l.signal == 11);
  CHECK(l.local_rank == -1);
  // A build step's CalledProcessError is the process's own exception, no worker's death.
  CHECK(parse("subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.").kind !=
        LogKind::kLauncherExit);
}

TEST_CASE("pattern table: c10d's store connect failures by errno", "[triage_logs]") {
  auto l = parse("[W socket.cpp:697] [c10d] The client socket has failed to connect to 10.0.0.1:29500 (errno: 110 - "
                 "Connection timed out).");
  CHECK(l.kind == LogKind::kStoreTimeout);
  CHECK(l.cause == "store_timeout");
  l = parse("[E socket.cpp:753] [c10d] The client socket has failed to connect to any network address of (node-0, "
            "29500).");
  CHECK(l.cause == "store_unreachable");
  // The errno in the exception's text decides over its generic first sentence.
  l = parse("torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of "
            "(m-0, 23456). The client socket has failed to connect to 10.1.2.3:23456 (errno: 113 - No route to host).");
  CHECK(l.cause == "store_unreachable");
  l = parse("torch.distributed.DistNetworkError: The client socket has failed to connect to any network address of "
            "(m-0, 23456). The client socket has failed to connect to 10.1.2.3:23456 (errno: 110 - Connection timed "
            "out).");
  CHECK(l.cause == "store_timeout");
}

TEST_CASE("pattern table: the kernel's segfault report and NCCL's failed QP transition", "[triage_logs]") {
  auto l = parse("[Mon Dec  1 10:00:01 2026] python3[4242]: segfault at 8 ip 00007f10a6fc1202 sp 00007ffd1c2e8a10 "
                 "error 4 in libnccl.so.2[7f10a0000000+9a00000]");
  CHECK(l.kind == LogKind::kCrash);
  CHECK(l.signal == 11);
  CHECK(l.pid == 4242);
  CHECK(l.word == "python3");
  // Prose about a segfault is not the kernel's report.
  CHECK(parse("the job hit a segfault at step 10").kind != LogKind::kCrash);
  l = parse("h:1:2 [0] ibvwrap.c:160 NCCL WARN Call to ibv_modify_qp failed with error Connection timed out errno 110");
  CHECK(l.kind == LogKind::kIbError);
  // A queue pair that cannot be brought up is the IB/RoCE set-up (NCCL's own hint after it: cross-rail
  // NICs, a wrong GID index), not a transfer failing on a working link.
  CHECK(l.cause == "ib_config");
}

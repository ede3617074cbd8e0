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
  CHECK(l.rank == -1);  // "on rank: 7" is the writer's own rank, but not a prefix: not used to attribute
  l = parse("[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', "
            "'main.py', '--local_rank=3'] exits with return code = -9");
  CHECK(l.kind == LogKind::kLauncherExit);
  CHECK(l.signal == 9);
  CHECK(l.local_rank == 3);
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

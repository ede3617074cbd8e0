// The message catalogue in C++ (logs/catalogue.hpp): the format splitter, the loader's checks, the
// matcher (shapes, specificity, weak and unclassified entries, holes and named values) on a small
// fixture in the contract's format (catalogue_test_data/fixture.jsonl), the built-in catalogue
// embedded at build time, and a catalogue hit read into a line's meaning.
#include "triage/logs/catalogue.hpp"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "triage/log_test_support.hpp"
#include "triage/logs/parse.hpp"
#include "triage/triage.hpp"

namespace fs = std::filesystem;
using namespace hanglab;

namespace {

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Catalogue& fixture() {
  static const Catalogue c = [] {
    Catalogue cat;
    const fs::path p = fs::path(HANGLAB_SOURCE_DIR) / "harness/triage/logs/catalogue_test_data/fixture.jsonl";
    cat.add_jsonl(read(p), "fixture.jsonl");
    cat.build_index();
    return cat;
  }();
  return c;
}

std::string where_of(const std::optional<CatalogueHit>& h) { return h ? h->entry->where : "(no match)"; }

}  // namespace

TEST_CASE("catalogue: a canonical format splits into its literal segments", "[catalogue]") {
  CatalogueEntry e;
  split_format("rank {} of {{world}} {}", e);
  REQUIRE(e.segments == std::vector<std::string>{"rank ", " of {world} "});
  CHECK(e.holes == 2);
  CHECK_FALSE(e.lead_hole);
  CHECK(e.trail_hole);
  CHECK(e.literal_chars == 17);
  split_format("{} got signal: {}", e);
  CHECK(e.lead_hole);
  CHECK(e.segments == std::vector<std::string>{" got signal: "});
  split_format("{}{} -> {}", e);
  CHECK(e.holes == 3);
  CHECK(e.segments == std::vector<std::string>{" -> "});
  CHECK_THROWS(split_format("bad { brace", e));
  CHECK_THROWS(split_format("bad } brace", e));
}

TEST_CASE("catalogue: the loader names the file, the line and what is wrong", "[catalogue]") {
  const auto fails_with = [](const std::string& jsonl, const std::string& what) {
    Catalogue c;
    try {
      c.add_jsonl(jsonl, "x.jsonl");
    } catch (const std::runtime_error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).rfind("x.jsonl:2: ", 0) == 0);
      CHECK(std::string(e.what()).find(what) != std::string::npos);
      return;
    }
    FAIL("no error for " << jsonl);
  };
  const std::string ok =
      R"({"emitter":"e","version":"1","where":"a.c:1","part":0,"call":"WARN","level":"warn","format":"x {}","meaning":null})";
  const std::string head = ok + "\n";
  const auto entry = [](const std::string& meaning) {
    return R"({"emitter":"e","version":"1","where":"a.c:2","part":0,"call":"WARN","level":"warn","format":"y {} z","meaning":)" +
           meaning + "}";
  };
  fails_with(head + "{not json", "not JSON");
  fails_with(head + R"({"emitter":"e"})", "not an entry");
  fails_with(head + entry(R"({"kind":"NcclError","role":"guilty"})"), "meaning.role");
  fails_with(head + entry(R"({"kind":"Nonsense","role":"root"})"), "meaning.kind");
  fails_with(head + entry(R"({"kind":"NcclError","role":"root","category":"weather"})"), "meaning.category");
  fails_with(head + entry(R"({"kind":"NcclError","role":"root","phase":"lunch"})"), "meaning.phase");
  fails_with(head + entry(R"({"kind":"NcclError","role":"root","names":{"rank":1}})"), "meaning.names.rank = 1");
  fails_with(head + entry(R"({"kind":"NcclError","role":"root","names":{"mood":0}})"), "meaning.names.mood");
  fails_with(head + R"({"emitter":"e","version":"1","where":"a.c:3","format":"a { b","meaning":null})", "unbalanced");
  Catalogue c;
  c.add_jsonl(head + "\n" + entry(R"({"kind":"NcclError","role":"root","names":{"rank":0}})") + "\n", "x.jsonl");
  CHECK(c.entries().size() == 2);
}

TEST_CASE("catalogue: a line matches inside its emitter's line shape", "[catalogue]") {
  const Catalogue& c = fixture();
  CHECK(c.entries().size() == 10);
  CHECK(c.indexed() == 9);  // the weak one is not indexed
  const std::string nccl =
      "node-1:2101:2101 [1] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000";
  const auto hit = c.match(nccl);
  REQUIRE(hit);
  CHECK(hit->entry->where == "src/init.cc:795");
  REQUIRE(hit->holes.size() == 3);
  CHECK(hit->holes[0] == "1");
  CHECK(hit->named_int("rank") == 1);
  CHECK(hit->named_int("peer_rank") == 0);
  CHECK(hit->named_int("device") == 1000);
  CHECK_FALSE(hit->named_int("host"));
  // NCCL's formats are NCCL's after its "NCCL WARN|INFO" marker, where a message begins.
  CHECK_FALSE(c.match("node-1:2101:2101 [1] NCCL WARN some prefix Duplicate GPU detected : rank 1 and rank 0 both"));
  // Its last WARN also travels bare (c10d prints it after "Last error:", a paste keeps that line
  // alone): a long warning is read where a message begins; a short one, or an INFO, is not.
  CHECK(where_of(c.match("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000")) == "src/init.cc:795");
  CHECK(where_of(c.match("RuntimeError: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000")) ==
        "src/init.cc:795");
  CHECK_FALSE(c.match("the launcher said Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000"));
  CHECK(where_of(c.match("node:1:1 [0] include/alloc.h:125 NCCL WARN Cuda failure 500 'named symbol not found'")) ==
        "src/include/cudawrap.h:1");
  CHECK_FALSE(c.match("Cuda failure 500 'named symbol not found'"));
  CHECK_FALSE(c.match("Using network IB", /*meaning_only=*/false));
  // ... or where the caller knows the line to be NCCL's text (after c10d's "Last error:").
  CHECK(where_of(c.match("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000", true, "nccl")) ==
        "src/init.cc:795");
  CHECK_FALSE(c.match("Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000", true, "ucx"));
  // Slurm's only after "srun: " / "slurmstepd...".
  CHECK(where_of(c.match("srun: forcing job termination")) == "src/srun/signals.c:167");
  CHECK_FALSE(c.match("the test harness is forcing job termination"));
}

TEST_CASE("catalogue: the most specific entry wins -- holes and named values", "[catalogue]") {
  const Catalogue& c = fixture();
  const auto closed = c.match(
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.2]:4021");
  REQUIRE(closed);
  CHECK(closed->entry->format == "Connection closed by peer {}");
  CHECK(closed->named("peer_host") == "[10.0.0.2]:4021");
  CHECK(where_of(c.match("RuntimeError: Connection closed")) == "gloo/transport/tcp/pair.cc:2");
  // A leading hole also holds the line's prefix: its number is the last one in it.
  const auto sig =
      c.match("torch.distributed.elastic.multiprocessing.api.SignalException: Process 792735 got signal: 1");
  REQUIRE(sig);
  CHECK(sig->named_int("pid") == 792735);
  CHECK(sig->named_int("signal") == 1);
  const auto recv = c.match(
      "W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/agent/server/api.py:688] "
      "Received Signals.SIGTERM death signal, shutting down workers");
  REQUIRE(recv);
  CHECK(recv->named_int("signal") == 15);  // by name
  CHECK(c.match("Received 2 death signal, shutting down workers")->named_int("signal") == 2);
  // UCX's text inside UCX's shape only; the host is the hole the meaning names.
  const auto ucx =
      c.match("[1683045447.123456] [gpu-7:2231:0]  mm_posix.c:233 UCX  ERROR shared segment out of memory on gpu-7");
  REQUIRE(ucx);
  CHECK(ucx->named("host") == "gpu-7");
  CHECK_FALSE(c.match("kernel: shared segment out of memory on gpu-7"));
  // Weak formats never match alone; unclassified ones only when asked for.
  CHECK_FALSE(c.match("node:1:1 [0] NCCL INFO init.cc:12 -> 3"));
  CHECK_FALSE(c.match("node:1:1 [0] NCCL INFO Using network IB"));
  CHECK(where_of(c.match("node:1:1 [0] NCCL INFO Using network IB", /*meaning_only=*/false)) == "src/misc.cc:2");
  CHECK_FALSE(c.match(""));
  CHECK_FALSE(c.match("abc"));
}

TEST_CASE("catalogue: the built-in catalogue is the data files, embedded", "[catalogue]") {
  const auto& blobs = builtin_catalogue_blobs();
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(fs::path(HANGLAB_SOURCE_DIR) / "harness/triage/logs/catalogue/data"))
    files += e.path().extension() == ".jsonl";
  REQUIRE(blobs.size() == files);
  size_t lines = 0;
  for (const auto& b : blobs) {
    INFO(b.name);
    const std::string on_disk = read(fs::path(HANGLAB_SOURCE_DIR) / "harness/triage/logs/catalogue" / b.name);
    CHECK(on_disk == b.text);  // the build embedded the current data
    for (char ch : b.text) lines += ch == '\n';
  }
  const Catalogue& c = builtin_catalogue();
  CHECK(c.entries().size() == lines);
  if (lines > 0) CHECK(c.indexed() > 0);
}

TEST_CASE("catalogue: a hit gives a line its meaning where the hand-written checks read nothing", "[catalogue]") {
  // A line of an emitter's source that no pattern and no check of classify_text reads: its meaning
  // comes from the built-in catalogue (data/nccl-2.18.3.jsonl), with the ranks and device it names.
  const Catalogue& c = builtin_catalogue();
  const std::string line =
      "node-1:2101:2101 [1] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000";
  const auto hit = c.match(line);
  if (!hit) {
    WARN("the built-in catalogue has no entry for NCCL's duplicate-GPU warning");
    return;
  }
  const LogLine l = logtest::parse(line);
  REQUIRE(l.catalogue == hit->entry);
  CHECK(l.kind == log_kind_from_name(hit->entry->meaning->kind));
  CHECK(l.role == hit->entry->meaning->role);
  CHECK(l.phase == hit->entry->meaning->phase);
  CHECK(l.nccl_dev == 1);  // NCCL's own "[dev]" prefix comes first
  // A line the hand-written checks read keeps their meaning (first pass: they have precedence).
  const LogLine w = logtest::parse(
      "[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=10, NumelOut=10, Timeout(ms)=600000) "
      "ran for 600023 milliseconds before timing out.");
  CHECK(w.kind == LogKind::kWatchdogTimeout);
  CHECK(w.catalogue == nullptr);
}

TEST_CASE("catalogue: NCCL's last warning quoted without its prefix keeps its meaning", "[catalogue]") {
  // shmutils.cc: WARN("Error while %s shared memory segment %s (size %ld)", "creating", path, size),
  // the line c10d's exception prints after "Last error:"; a paste that keeps that line alone.
  const LogLine l = logtest::parse("Error while creating shared memory segment /dev/shm/nccl-Ab12Cd (size 4194304)");
  REQUIRE(l.catalogue != nullptr);
  CHECK(l.catalogue->emitter == "nccl");
  CHECK(l.kind == LogKind::kShmError);
  CHECK(l.category == "resource_limit");
  CHECK(l.cause == "nccl_shm");
  CHECK(l.phase == "init");
}

TEST_CASE("catalogue: kinds are named as the meanings name them", "[catalogue]") {
  CHECK(log_kind_from_name("NcclError") == LogKind::kNcclError);
  CHECK(log_kind_from_name("DataLoaderKilled") == LogKind::kDataLoaderKilled);
  CHECK(log_kind_from_name("SummaryEnd") == LogKind::kSummaryEnd);
  CHECK(log_kind_from_name("nccl_error") == LogKind::kNone);
  CHECK(log_kind_from_name("Info") == LogKind::kNone);
  // Every kind but kNone has its name (none forgotten in the table).
  for (int k = 1; k <= static_cast<int>(LogKind::kSummaryEnd); ++k) {
    const auto kind = static_cast<LogKind>(k);
    INFO(log_kind_name(kind));
    std::string snake = log_kind_name(kind), camel;
    bool up = true;
    for (char ch : snake) {
      if (ch == '_') {
        up = true;
        continue;
      }
      camel += up ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
      up = false;
    }
    if (kind == LogKind::kDataLoaderKilled) camel = "DataLoaderKilled";  // "dataloader_killed"
    CHECK(log_kind_from_name(camel) == kind);
  }
}

TEST_CASE("catalogue: a line only the catalogue reads decides the answer, with its origin cited", "[catalogue]") {
  // NCCL's bootstrap finding no interface in the remote address's subnet (src/misc/socket.cc: WARN
  // "Net : No interface found in the same subnet as remote address %s"): no hand-written check reads
  // it; its meaning (data/nccl-2.18.3.jsonl) is a root of network/wrong_ifname in init.
  const std::string line =
      "node-7:1791:1791 [0] misc/socket.cc:237 NCCL WARN Net : No interface found in the same "
      "subnet as remote address 10.1.2.3<1778>";
  const auto hit = builtin_catalogue().match(line);
  if (!hit || hit->entry->meaning->cause != "wrong_ifname") {
    WARN("the built-in catalogue does not read NCCL's no-interface-in-subnet warning as wrong_ifname");
    return;
  }
  logtest::TempDir t("catalogue_decides");
  logtest::write_file(t.dir / "rank-0.log", line + "\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "network");
  CHECK(r.cause == "wrong_ifname");
  CHECK(r.phase == "init");
  REQUIRE(r.first_failure);
  CHECK(r.first_failure->what.find("[catalogue: nccl ") != std::string::npos);
  // The same line with the catalogue's meaning withheld (an unlisted answer) would be unread: a line
  // the catalogue does not know, in the same shape, says nothing.
  logtest::write_file(t.dir / "rank-0.log",
                      "node-7:1791:1791 [0] misc/socket.cc:237 NCCL WARN Net : something no emitter prints\n");
  const auto q = triage_logs({t.dir});
  CHECK(q.cause != "wrong_ifname");
}

TEST_CASE("catalogue: torch's FSDP, DataLoader and DCP lines match their torch-training entries", "[catalogue]") {
  // data/torch-training-2.15.0.jsonl (the venv's torch: fsdp/, utils/data/, distributed/checkpoint/).
  const Catalogue& c = builtin_catalogue();
  // FSDP's first-iteration execution-order check (fsdp/_exec_order_utils.py): the f-string's
  // leading {msg_prefix} is "Forward order differs across ranks:", read as the leading hole.
  const std::string fsdp =
      "RuntimeError: Forward order differs across ranks: rank 0 is all-gathering 1 parameters while "
      "rank 1 is all-gathering 0 parameters";
  const auto f = c.match(fsdp);
  REQUIRE(f);
  CHECK(f->entry->emitter == "torch-training");
  CHECK(f->entry->where.rfind("torch/distributed/fsdp/_exec_order_utils.py:", 0) == 0);
  CHECK(f->entry->meaning->category == "collective_mismatch");
  CHECK(f->entry->meaning->cause == "mismatched_collective");
  CHECK(f->named_int("rank") == 0);
  CHECK(f->named_int("peer_rank") == 1);
  // The variant naming the parameters: the same meaning, the ranks named.
  const auto g = c.match(
      "RuntimeError: Forward order differs across ranks: rank 2 is all-gathering parameters for "
      "['layers.0.weight'] while rank 3 is all-gathering parameters for ['layers.1.weight']");
  REQUIRE(g);
  CHECK(g->entry->meaning->cause == "mismatched_collective");
  CHECK(g->named_int("rank") == 2);
  CHECK(g->named_int("peer_rank") == 3);
  // (The reader still reads the FSDP line as classify_text's generic exception: the hand-written
  // checks keep precedence over the catalogue until the migration pass; see apply_catalogue.)

  // The DataLoader's main process finding a worker dead (utils/data/dataloader.py).
  const std::string worker = "RuntimeError: DataLoader worker (pid(s) 40213, 40214) exited unexpectedly";
  const auto w = c.match(worker);
  REQUIRE(w);
  CHECK(w->entry->where.rfind("torch/utils/data/dataloader.py:", 0) == 0);
  CHECK(w->entry->meaning->kind == "DataLoaderKilled");
  CHECK(w->entry->meaning->cause == "data_loader_crash");
  CHECK(w->named_int("pid") == 40213);
  // DataLoader(timeout=N) running out. As the traceback's last line ("RuntimeError: ...") it is read
  // by classify_text's generic exception first (the hand-written checks keep precedence); the
  // message itself, as a script that logs str(e) prints it, is read by the catalogue's meaning: a
  // stall of the input pipeline, in the data phase.
  const std::string timeout = "DataLoader timed out after 30 seconds";
  const auto t = c.match("RuntimeError: " + timeout);
  REQUIRE(t);
  CHECK(t->entry->meaning->cause == "data_loader_stall");
  CHECK(c.match(timeout)->entry == t->entry);
  const LogLine tl = logtest::parse(timeout);
  CHECK(tl.catalogue == t->entry);
  CHECK(tl.category == "data_loading");
  CHECK(tl.cause == "data_loader_stall");
  CHECK(tl.phase == "data");
  // DCP's CheckpointException (checkpoint/api.py __str__): the first failed rank is named.
  const std::string dcp =
      "torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([3])";
  const auto d = c.match(dcp);
  REQUIRE(d);
  CHECK(d->entry->meaning->phase == "checkpoint");
  CHECK(d->named_int("rank") == 3);
}

TEST_CASE("catalogue: DDP's reducer reads ranks that built different models as a collective mismatch", "[catalogue]") {
  // torch-c10d-2.15.0, torch/csrc/distributed/c10d/reducer.cpp verify_params_across_processes.
  const auto h = builtin_catalogue().match(
      "RuntimeError: DDP expects same model across all ranks, but Rank 1 has 4 params, while rank 0 has "
      "inconsistent 6 params.");
  REQUIRE(h);
  CHECK(h->entry->where.rfind("torch/csrc/distributed/c10d/reducer.cpp:", 0) == 0);
  CHECK(h->entry->meaning->category == "collective_mismatch");
  CHECK(h->named_int("rank") == 1);
  CHECK(h->named_int("peer_rank") == 0);
  // The unused-parameter error of the next iteration: the rank that got no gradients is named.
  const auto u = builtin_catalogue().match("Parameter indices which did not receive grad for rank 3: 7 8");
  REQUIRE(u);
  CHECK(u->entry->meaning->cause == "usage_error");
  CHECK(u->named_int("rank") == 3);
}

TEST_CASE("catalogue: UCX's fatal form carries its formats too", "[catalogue]") {
  // ucs_fatal_error_message() prints "[host:pid:thread:tid] %13s:%-4u msg" (no "UCX  ERROR"): ucs_fatal()
  // and any message at the trigger level, then aborts. uct_ib_mlx5_completion_with_err() logs the
  // completion's error reason, the device and the syndromes.
  const Catalogue& c = builtin_catalogue();
  const auto retry = c.match("[gpu-4:30211:0:30211] ib_mlx5_log.c:171  Transport retry count exceeded on mlx5_2:1/RoCE "
                             "(synd 0x15 vend 0x81 hw_synd 0/0)");
  REQUIRE(retry);
  REQUIRE(retry->entry->meaning);
  CHECK(retry->entry->emitter == "ucx");
  CHECK(retry->entry->meaning->cause == "ib_error");
  CHECK(retry->entry->meaning->role == "root");
  CHECK(retry->named("reason") == std::optional<std::string_view>("Transport retry count exceeded"));
  const auto ud = c.match("[cn-12:4410 :0:4410]       ud_ep.c:278  Fatal: UD endpoint 0x1c2d3e0 to <no debug data>: "
                          "unhandled timeout error");
  REQUIRE(ud);
  CHECK(ud->entry->where.find("ud_ep.c") != std::string::npos);
  // The normal form still matches (level word), and a line of neither form does not: UCX's short
  // status texts stay inside UCX's shapes.
  CHECK(c.match("[1712.123456] [gpu-4:30211:0]  ib_mlx5_log.c:171  UCX  ERROR Transport retry count exceeded on "
                "mlx5_2:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)"));
  CHECK_FALSE(c.match("[gpu-4] ib_mlx5_log.c:171  Transport retry count exceeded on mlx5_2:1/RoCE (synd 0x15 vend "
                      "0x81 hw_synd 0/0)"));
  CHECK_FALSE(c.match("[a:1:0:1] notes.txt:12  Transport retry count exceeded on mlx5_2:1/RoCE (synd 0x15 vend 0x81 "
                      "hw_synd 0/0)"));
  // Through the reader: a root IB error of the line's process.
  const LogLine l = logtest::parse("[gpu-4:30211:0:30211] ib_mlx5_log.c:171  Transport retry count exceeded on "
                                   "mlx5_2:1/RoCE (synd 0x15 vend 0x81 hw_synd 0/0)");
  CHECK(l.kind == LogKind::kIbError);
  CHECK(l.cause == "ib_error");
}

TEST_CASE("catalogue: aws-ofi-nccl's WARNs read as EFA/libfabric transport failures", "[catalogue]") {
  // The plugin's NCCL_OFI_WARN hands "NET/OFI <format>" to NCCL's logger (include/nccl_ofi_log.h).
  const Catalogue& c = builtin_catalogue();
  const auto av = c.match("ip-10-0-1-7:4410:4410 [0] NCCL WARN NET/OFI Couldn't open AV. RC: -12, ERROR: Cannot allocate memory");
  REQUIRE(av);
  REQUIRE(av->entry->meaning);
  CHECK(av->entry->emitter == "aws-ofi-nccl");
  CHECK(av->entry->meaning->cause == "efa_error");
  CHECK(av->entry->meaning->phase == "init");
  const auto cq = c.match("ip-10-0-1-7:4410:4502 [3] NCCL WARN NET/OFI Unable to retrieve completion queue entries. RC: -5, "
                          "ERROR: Input/output error");
  REQUIRE(cq);
  CHECK(cq->entry->meaning->cause == "efa_error");
  CHECK(cq->entry->meaning->phase.empty());
  // A configuration check of the plugin is no transport failure.
  const auto cfg = c.match("ip-10-0-1-7:4410:4410 [0] NCCL WARN NET/OFI Invalid value for EAGER_MAX_SIZE");
  REQUIRE(cfg);
  CHECK(cfg->entry->meaning->cause == "usage_error");
  // Through triage: both ranks fail to bring the transport up, at start-up.
  logtest::TempDir t("ofi_av");
  logtest::write_file(t.dir / "rank-0.log",
                      "ip-10-0-1-7:4410:4410 [0] NCCL WARN NET/OFI Couldn't open AV. RC: -12, ERROR: Cannot allocate memory\n");
  logtest::write_file(t.dir / "rank-1.log",
                      "ip-10-0-1-9:5120:5120 [0] NCCL WARN NET/OFI Couldn't open AV. RC: -12, ERROR: Cannot allocate memory\n");
  const auto r = triage_logs({t.dir});
  INFO(render_text(r));
  CHECK(r.category == "network");
  CHECK(r.cause == "efa_error");
}

TEST_CASE("catalogue: torch 2.0's wording of a c10d/torchelastic line reads as its 2.15 counterpart", "[catalogue]") {
  // data/torch-distributed-{1.13.1,2.0.1,2.4.1}.jsonl (the released wheels' torch/distributed/): most
  // incident logs come from older releases, whose lines 2.15 no longer prints in the same words.
  const Catalogue& c = builtin_catalogue();
  // distributed_c10d.py's _store_based_barrier, 2.0.1 ("on rank: {}", "worker_count={}") and 2.15
  // ("on rank {}", "num_workers_joined={}", an "error=" field).
  const auto old_hit = c.match(
      "RuntimeError: Timed out initializing process group in store based barrier on rank: 11, for key: "
      "store_based_barrier_key:37 (world_size=16, worker_count=8, timeout=0:30:00)");
  const auto new_hit = c.match(
      "torch.distributed.DistStoreError: Timed out initializing process group in store based barrier on "
      "rank 11, for key: store_based_barrier_key:37 (world_size=16, num_workers_joined=8, timeout=0:30:00 "
      "error=Socket Timeout)");
  REQUIRE(old_hit);
  REQUIRE(new_hit);
  // 1.13.1, 2.0.1 and 2.4.1 print it with the same text: any of the older entries may answer.
  CHECK(old_hit->entry->emitter == "torch-distributed");
  CHECK(old_hit->entry->version != "2.15.0");
  CHECK(old_hit->entry->where.rfind("torch/distributed/distributed_c10d.py:", 0) == 0);
  CHECK(new_hit->entry->version == "2.15.0");
  REQUIRE(old_hit->entry->meaning);
  REQUIRE(new_hit->entry->meaning);
  const CatalogueMeaning& o = *old_hit->entry->meaning;
  const CatalogueMeaning& n = *new_hit->entry->meaning;
  CHECK(o.kind == n.kind);
  CHECK(o.role == n.role);
  CHECK(o.category == n.category);
  CHECK(o.cause == n.cause);
  CHECK(o.phase == n.phase);
  for (const char* name : {"rank", "world", "joined"}) {
    INFO(name);
    CHECK(old_hit->named_int(name) == new_hit->named_int(name));
  }
  CHECK(old_hit->named_int("joined") == 8);
  // The failure summary's exit code field: 1.13-2.4 print no signal name after the pid.
  const auto exit_old = c.match("  exitcode  : -9 (pid: 2875)");
  REQUIRE(exit_old);
  CHECK(exit_old->entry->emitter == "torch-distributed");
  CHECK(exit_old->entry->version != "2.15.0");
  REQUIRE(exit_old->entry->meaning);
  CHECK(exit_old->entry->meaning->kind == "SummaryField");
  CHECK(exit_old->named_int("code") == -9);
  CHECK(exit_old->named_int("pid") == 2875);
}

TEST_CASE("catalogue: a line several versions print alike is cited from the newest of them", "[catalogue]") {
  // distributed_c10d.py raises this in 1.13.1, 2.0.1, 2.4.1 and 2.15.0 with the same text: every
  // version's entry matches equally well, and the pinned release is the one to cite, not whichever
  // data file loaded first (the older ones sort ahead by name).
  const Catalogue& c = builtin_catalogue();
  const auto hit = c.match(
      "ValueError: Group 3 is not registered, please create group with torch.distributed.new_group API");
  REQUIRE(hit);
  CHECK(hit->entry->emitter == "torch-distributed");
  CHECK(hit->entry->version == "2.15.0");
  // Of the older wordings only (2.15 changed this one), the newest that still prints it answers.
  const auto old_hit = c.match(
      "RuntimeError: Timed out initializing process group in store based barrier on rank: 11, for key: "
      "store_based_barrier_key:37 (world_size=16, worker_count=8, timeout=0:30:00)");
  REQUIRE(old_hit);
  CHECK(old_hit->entry->version != "2.15.0");
  CHECK(old_hit->entry->version != "1.13.1");
}

// The over-claim audit (branch t24-audit): a meaning names a category/cause only where the line's text, read
// with the code that prints it, proves it. Each CHECK below is a line whose meaning named more than that.
namespace {
struct Said {
  std::string category, cause, phase, role;
};
Said said(const std::string& line) {
  // The built-in catalogue's meaning for the line (what the meanings files say), whether or not a
  // hand-written check of the reader reads the line first.
  const auto hit = builtin_catalogue().match(line);
  INFO(line);
  REQUIRE(hit);
  REQUIRE(hit->entry->meaning);
  const CatalogueMeaning& m = *hit->entry->meaning;
  return {m.category, m.cause, m.phase, m.role};
}
}  // namespace

TEST_CASE("catalogue audit: a text that names several causes, or a lost link, decides none", "[catalogue]") {
  // orte_quit.c:299-302@v4.1.4: [proc-comm-failed] is ORTE_JOB_STATE_COMM_FAILED, the state of [node-died]
  // (errmgr_default_hnp.c:448-455): mpirun's OOB link to a daemon closed; its node died, or the link did.
  Said s = said("A critical communication path was lost to:");
  CHECK(s.category == "unknown");
  CHECK(s.cause == "unknown");
  s = said("  Remote daemon: [[5140,0],1] on node node-2");
  CHECK(s.category == "unknown");
  CHECK(s.cause == "unknown");
  s = said("mpirun failed to receive scheduled heartbeat communications from a remote");
  CHECK(s.category == "unknown");
  // help-mpi-btl-tcp.txt [accept failed] lists out-of-descriptors and out-of-memory itself: no peer's connect.
  s = said("WARNING: The accept(3) system call failed on a TCP socket.  While this");
  CHECK(s.category == "unknown");
  CHECK(s.cause == "unknown");
  // A Slurm step FAILED "(non-zero exit code or other failure mode)": two causes in its own words.
  s = said("slurmstepd: error: *** STEP 7.0 ON node-3 FAILED (non-zero exit code or other failure mode) ***");
  CHECK(s.cause == "unknown");
  CHECK(s.role == "exit");
}

TEST_CASE("catalogue audit: a line whose hole carries the error names no cause of its own", "[catalogue]") {
  // c10d_rendezvous_backend.py:112-118@2.15.0: every store op of the rendezvous (keep-alive included) raises
  // this on any store error; the inner exception says which, and it is not only init.
  Said s = said(
      "torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has "
      "failed. See inner exception for details.");
  CHECK(s.category == "unknown");
  CHECK(s.cause == "unknown");
  CHECK(s.phase.empty());
  // btl_vader_get.c:95-99@v4.1.4: a CMA read of a peer's memory during a transfer; errno 1 is ptrace denied.
  s = said("Read -1, expected 65536, errno = 1");
  CHECK(s.cause != "shm_exhausted");
  CHECK(s.phase.empty());
  // socket.cpp:313-341@2.15.0: the TCPStore server's accept() failed; its errno, not a port in use.
  s = said("[W socket.cpp:329] The server socket on [::]:29500 has failed to accept a connection "
           "(errno: 24 - Too many open files).");
  CHECK(s.cause != "address_in_use");
  CHECK(s.phase.empty());
  // DeepSpeed engine.py:3430-3438@v0.16.4: a bare except around making the checkpoint's directory.
  s = said("[ERROR] [engine.py:3437:_create_checkpoint_file] Failed saving model checkpoint to /ckpt with tag "
           "global_step100");
  CHECK(s.category == "unknown");
  CHECK(s.phase == "checkpoint");  // Gloo's uv transport: libuv's error event on the listener, at any time (uv/device.cc:195-199@70dc360).
  s = said("[gloo/transport/uv/device.cc:199] Error on listener socket: connection reset by peer");
  CHECK(s.cause != "address_in_use");
  CHECK(s.phase.empty());
}

TEST_CASE("catalogue audit: a failed system call is a system call, not the network it was filed under", "[catalogue]") {
  // Slurm's fcntl/sched_setaffinity/getcwd failures and slurmstepd's task set-up were network/slurm_rpc_error.
  Said s = said("slurmstepd: error: fcntl(F_SETFL) failed: Bad file descriptor");
  CHECK(s.category == "rank_exit");
  CHECK(s.cause == "system_error");
  s = said("slurmstepd: error: sched_setaffinity(12345,128,0x1) failed: Invalid argument");
  CHECK(s.cause == "system_error");
  s = said("slurmstepd: error: _become_user failed: Operation not permitted");
  CHECK(s.cause == "launch_error");
  // A launcher's ssh check failing is a launch that could not start (runner.py:461-474@v0.16.4), not a link.
  s = said("RuntimeError: Using hostfile at /job/hostfile but host=worker-1 was not reachable via ssh. If you are "
           "running with a single node please remove /job/hostfile or setup passwordless ssh.");
  CHECK(s.category == "rendezvous");
  CHECK(s.cause == "launch_error");
}

TEST_CASE("catalogue audit: a line that reports another component's failure is an echo", "[catalogue]") {
  // horovod registration.py:157-160@v0.28.1: a host is blacklisted after a worker on it exited non-zero.
  Said s = said("blacklist failing host: node-3");
  CHECK(s.role == "echo");
  CHECK(s.cause != "node_failure");
}

// The Paddle fleet launcher's watcher (fleet/launch_utils.py:641-683@2.6.2, catalogue paddle-launch-2.6.2) names
// in "rank=[...]" every local trainer (by its global rank, PADDLE_TRAINER_ID) that it found exited non-zero in
// one 3-second poll: a Python list. One element is that rank; several, or none (its bare-except path), no rank.
TEST_CASE("catalogue: a rank printed as a Python list names it only when the list holds one", "[catalogue]") {
  const Catalogue& c = builtin_catalogue();
  const std::string head = "ERROR 2022-06-01 10:05:00,001 launch_utils.py:669] ABORT!!! Out of all 16 trainers, ";
  // A hit views the line it matched: each line lives as long as its hit.
  const std::string l1 = head + "the trainer process with rank=[11] was aborted. Please check its log.";
  const auto one = c.match(l1);
  REQUIRE(one);
  CHECK(one->entry->emitter == "paddle-launch");
  REQUIRE(one->entry->meaning);
  CHECK(one->entry->meaning->role == "exit");
  CHECK(one->named_int("rank") == 11);
  CHECK(one->named_int("world") == 16);
  const std::string l2 = head + "the trainer process with rank=[11, 3] was aborted. Please check its log.";
  const auto two = c.match(l2);
  REQUIRE(two);
  CHECK_FALSE(two->named_int("rank"));
  const std::string l3 = head + "the trainer process with rank=[] was aborted. Please check its log.";
  const auto none = c.match(l3);
  REQUIRE(none);
  CHECK_FALSE(none->named_int("rank"));
  // The newer launcher's failed container: its index in this node's pod, a local rank, never the global one.
  const auto cont = c.match("Container rank 1 status failed cmd ['/usr/bin/python', '-u', 'train.py'] code 1 "
                            "log log/workerlog.1");
  REQUIRE(cont);
  CHECK(cont->named_int("local_rank") == 1);
  CHECK(cont->named_int("code") == 1);
  CHECK_FALSE(cont->named_int("rank"));
}

TEST_CASE("catalogue: Ray's worker-death report names the dead worker's pid", "[catalogue]") {
  // node_manager.cc DisconnectClient@ray-2.40.0: the raylet's job error for a worker lost with SYSTEM_ERROR, as the
  // driver prints it ("(raylet) " before it): that process died; no status, so no cause of its own.
  const LogLine d = logtest::parse(
      "(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the "
      "problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff0a1b2c3d4e5f60718293a4b502000000 "
      "Worker ID: 5e0c1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809a1b Node ID: "
      "7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d Worker IP address: 10.0.3.17 Worker port: 10233 "
      "Worker PID: 51234 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a "
      "connection error code 2. End of file. There are some potential root causes. (1) The process is killed by "
      "SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed "
      "unexpectedly due to SIGSEGV or other unexpected errors.");
  REQUIRE(d.catalogue != nullptr);
  CHECK(d.catalogue->emitter == "ray-core");
  CHECK(d.role == "exit");
  CHECK(d.pid == 51234);
  CHECK(d.signal == 0);
  CHECK(d.code == kNoCode);
}

TEST_CASE("Ray's log monitor prefix names the writing worker's pid and host", "[catalogue]") {
  // worker.py print_worker_logs@ray-2.40.0: "(" [name " "] "pid=" PID [", ip=" IP] ") " or "(raylet[, ip=IP]) ".
  const LogLine w = logtest::parse("(RayWorkerWrapper pid=92234, ip=10.0.3.17) mlx5: host_unknown: got completion with "
                                   "error:");
  CHECK(w.pid == 92234);
  CHECK(w.host == "10.0.3.17");
  CHECK(w.msg.substr(0, 5) == "mlx5:");
  const LogLine l = logtest::parse("(pid=4101) Segmentation fault (core dumped)");
  CHECK(l.pid == 4101);
  // CreateMemoryUsageRefreshCallback (node_manager.cc@ray-2.40.0): the memory monitor's kill, host memory.
  const LogLine r = logtest::parse("(raylet, ip=10.0.3.18) Task was killed due to the node running low on memory.");
  CHECK(r.pid == -1);
  CHECK(r.host == "10.0.3.18");
  CHECK(r.kind == LogKind::kOomKill);
  // Not Ray's: a shell prompt's environment name.
  const LogLine c = logtest::parse("(base) user@node:~$ python train.py");
  CHECK(c.pid == -1);
}

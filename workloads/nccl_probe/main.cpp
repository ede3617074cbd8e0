// nccl_probe: a small real NCCL program for the bootstrap faults (wrong
// NCCL_SOCKET_IFNAME, no usable interface). It runs the part of NCCL's communicator set-up
// that needs no GPU: every rank calls ncclGetUniqueId(), which initialises NCCL and runs
// its bootstrap network selection — the interface choice that honours NCCL_SOCKET_IFNAME
// and that ncclCommInitRank() would run on every rank before touching a device. Rank 0's
// id is the one a real job broadcasts (torch does it through the TCPStore); here rank 0
// publishes it in $HANGLAB_RUN_DIR/nccl_probe/unique_id and the other ranks wait for it
// until the init timeout, as they would wait for the store key.
//
// Contract (DESIGN.md workload contract): torchrun environment (RANK, WORLD_SIZE) plus
// HANGLAB_TRACE, HANGLAB_RUN_DIR, HANGLAB_HEARTBEAT_MS, HANGLAB_INIT_TIMEOUT_MS; the trace
// holds start, phase init begin/end, error (class rendezvous) and exit; exit codes 0 ok,
// 2 usage, 12 rendezvous failure (NCCL's error text, with ncclGetLastError(), on stderr;
// run with NCCL_DEBUG=WARN to also get NCCL's own "NCCL WARN" lines on stdout).
// `--steps` and `--backend` are accepted for the harness's built-in workload argv and
// ignored: there is no training here.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <nccl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "exit_codes.hpp"
#include "signals.hpp"
#include "trace.hpp"

namespace hanglab {
namespace {

constexpr const char* kWorkloadName = "nccl_probe";

int g_rank = -1;

void log_line(FILE* stream, const std::string& text) {
  // One line per write: the harness time-stamps lines as they arrive.
  std::string line = "[rank " + (g_rank >= 0 ? std::to_string(g_rank) : std::string("?")) + "] " + text + "\n";
  std::fputs(line.c_str(), stream);
  std::fflush(stream);
}

std::string env_str(const char* name, const std::string& fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

long env_long(const char* name, long fallback) {
  const std::string text = env_str(name);
  if (text.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < 0) throw UsageError(std::string(name) + "=" + text + ": expected an integer >= 0");
  return v;
}

std::string describe_json() {
  nlohmann::ordered_json d;
  d["name"] = kWorkloadName;
  d["backends"] = {"nccl"};
  d["hooks"] = nlohmann::ordered_json::array();
  d["args"] = nlohmann::ordered_json::array();
  int version = 0;
  ncclGetVersion(&version);
  d["nccl_version"] = version;
  d["env"] = {"RANK", "WORLD_SIZE", "NCCL_SOCKET_IFNAME", "NCCL_DEBUG", "HANGLAB_TRACE", "HANGLAB_RUN_DIR",
              "HANGLAB_HEARTBEAT_MS", "HANGLAB_INIT_TIMEOUT_MS"};
  nlohmann::ordered_json codes = nlohmann::ordered_json::array();
  for (const auto& c : exit_code_table()) codes.push_back({{"code", c.code}, {"name", c.name}, {"meaning", c.meaning}});
  d["exit_codes"] = codes;
  return d.dump();
}

// The bootstrap root's address inside the opaque id: NCCL's ncclBootstrapHandle is a
// 64-bit magic followed by the socket address the root listens on. Read defensively:
// anything unexpected is shown as "opaque".
std::string root_address(const ncclUniqueId& id) {
  sockaddr_storage ss{};
  std::memcpy(&ss, id.internal + 8, std::min(sizeof ss, sizeof id.internal - 8));
  char host[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(a->sin_port));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  return "opaque";
}

std::string to_hex(const ncclUniqueId& id) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (char c : id.internal) {
    auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

bool from_hex(const std::string& text, ncclUniqueId& id) {
  if (text.size() != 2 * sizeof id.internal) return false;
  for (size_t i = 0; i < sizeof id.internal; ++i) {
    unsigned v = 0;
    if (std::sscanf(text.c_str() + 2 * i, "%2x", &v) != 1) return false;
    id.internal[i] = static_cast<char>(v);
  }
  return true;
}

class Probe {
 public:
  Probe(const Trace& trace, int rank, int world_size) : trace_(trace), rank_(rank), world_size_(world_size) {}

  [[noreturn]] void fail(const std::string& what) {
    trace_.emit("error", {{"msg", what}, {"where", "init"}, {"class", "rendezvous"}, {"step", 0}});
    trace_.emit("exit", {{"code", kExitRendezvous}});
    log_line(stderr, "ERROR (rendezvous) in init at step 0: " + what);
    std::fflush(stdout);
    // _exit: NCCL's bootstrap root thread may still be listening; nothing to flush or
    // destroy that matters, and a clean exit must not block on it.
    ::_exit(kExitRendezvous);
  }

  void run(Heartbeat& hb) {
    const std::string ifname = env_str("NCCL_SOCKET_IFNAME", "(unset: NCCL chooses)");
    int v = 0;
    ncclGetVersion(&v);  // major*10000 + minor*100 + patch since NCCL 2.9
    const std::string version =
        std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
    log_line(stdout, "nccl_probe starting: world_size " + std::to_string(world_size_) + ", NCCL " + version +
                         ", NCCL_SOCKET_IFNAME=" + ifname);
    trace_.emit("phase", {{"name", "init"}, {"edge", "begin"}, {"step", 0}});
    ncclUniqueId id;
    // ncclGetUniqueId runs ncclInit() (bootstrap interface selection) on every rank, then
    // opens the bootstrap root listener; only rank 0's id is used below.
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) {
      const char* last = ncclGetLastError(nullptr);
      hb.stop();
      fail(std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(r) + " (ncclResult " + std::to_string(r) +
           ")" + (last && *last ? std::string(": ") + last : std::string()) + " [NCCL_SOCKET_IFNAME=" + ifname + "]");
    }
    log_line(stdout, "NCCL bootstrap ok: this rank's root listener would be " + root_address(id));
    if (world_size_ > 1) exchange(id, hb);
    trace_.emit("phase", {{"name", "init"}, {"edge", "end"}, {"step", 0}});
    log_line(stdout, "unique id of rank 0: bootstrap root at " + root_address(id));
  }

 private:
  // Rank 0 publishes its id (write + rename, so readers never see half a file); the
  // others wait for it as they would for the store key, bounded by the init timeout.
  void exchange(ncclUniqueId& id, Heartbeat& hb) {
    const std::string run_dir = env_str("HANGLAB_RUN_DIR");
    if (run_dir.empty()) {
      hb.stop();
      fail("world_size > 1 needs HANGLAB_RUN_DIR to exchange rank 0's unique id");
    }
    const std::string dir = run_dir + "/nccl_probe";
    const std::string path = dir + "/unique_id";
    if (rank_ == 0) {
      ::mkdir(dir.c_str(), 0755);
      const std::string tmp = path + ".tmp";
      {
        std::ofstream out(tmp, std::ios::trunc);
        out << to_hex(id) << "\n";
        if (!out) {
          hb.stop();
          fail("cannot write " + tmp + ": " + std::strerror(errno));
        }
      }
      if (::rename(tmp.c_str(), path.c_str()) != 0) {
        hb.stop();
        fail("cannot publish " + path + ": " + std::strerror(errno));
      }
      return;
    }
    const long timeout_ms = env_long("HANGLAB_INIT_TIMEOUT_MS", 30000);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      std::ifstream in(path);
      std::string text;
      if (in && std::getline(in, text) && from_hex(text, id)) return;
      if (std::chrono::steady_clock::now() >= deadline) {
        hb.stop();
        fail("timed out after " + std::to_string(timeout_ms) + " ms waiting for rank 0's NCCL unique id (" + path +
             "): rank 0 never published it");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  const Trace& trace_;
  int rank_;
  int world_size_;
};

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--describe") {
      std::printf("%s\n", describe_json().c_str());
      return kExitOk;
    }
    if (a == "--help" || a == "-h") {
      std::printf("usage: nccl_probe [--describe] [--steps=N] [--backend=nccl]\n"
                  "Runs NCCL's CPU-side bootstrap (ncclGetUniqueId) on every rank; rank 0's id is shared.\n");
      return kExitOk;
    }
    if (a.rfind("--steps=", 0) == 0) continue;
    if (a == "--backend=nccl") continue;
    std::fprintf(stderr, "[rank ?] ERROR (usage) in startup at step 0: unknown argument %s (see --help)\n", a.c_str());
    return kExitUsage;
  }
  int rank = 0, world_size = 1;
  long heartbeat_ms = 1000;
  try {
    world_size = static_cast<int>(env_long("WORLD_SIZE", 1));
    rank = static_cast<int>(env_long("RANK", 0));
    heartbeat_ms = env_long("HANGLAB_HEARTBEAT_MS", 1000);
    if (world_size < 1 || rank >= world_size) throw UsageError("RANK must be in [0, WORLD_SIZE)");
    if (heartbeat_ms < 1) throw UsageError("HANGLAB_HEARTBEAT_MS must be >= 1");
  } catch (const UsageError& e) {
    std::fprintf(stderr, "[rank ?] ERROR (usage) in startup at step 0: %s\n", e.what());
    return kExitUsage;
  }
  g_rank = rank;
  Trace trace;
  try {
    trace = Trace::from_env(rank);
  } catch (const std::exception& e) {
    log_line(stderr, std::string("ERROR (usage) in startup at step 0: cannot open HANGLAB_TRACE: ") + e.what());
    return kExitUsage;
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  trace.emit("start", {{"pid", ::getpid()},
                       {"host", host},
                       {"world_size", world_size},
                       {"backend", "nccl"},
                       {"workload", kWorkloadName}});
  Heartbeat hb(trace, std::chrono::milliseconds(heartbeat_ms));
  Probe probe(trace, rank, world_size);
  try {
    probe.run(hb);
  } catch (const std::exception& e) {
    hb.stop();
    probe.fail(e.what());
  }
  hb.stop();
  trace.emit("exit", {{"code", kExitOk}});
  std::fflush(stdout);
  ::_exit(kExitOk);
}

}  // namespace
}  // namespace hanglab

int main(int argc, char** argv) {
  hanglab::init_rank_signals();
  return hanglab::run(argc, argv);
}

// mpi_ddp: hanglab's data-parallel training workload on MPI (Open MPI), without LibTorch.
// The training program is the one loop of every workload (workloads/loop: its hooks,
// log lines, trace and exit codes); this file supplies its collectives:
// MPI_Allreduce per gradient bucket, MPI_Bcast of the initial parameters, MPI_Barrier
// after the checkpoint, MPI_Allreduce of the eval sums.
//
// What makes it worth a workload of its own is MPI's failure model: there is no
// collective timeout. A rank that skips a collective, freezes or never arrives leaves
// its peers blocked in MPI_Allreduce forever (hb in the trace, no progress) — only an
// outside watchdog (hanglab's harness_watchdog) or the launcher notices. MPI_COMM_WORLD
// gets MPI_ERRORS_RETURN, so the errors Open MPI does report (a peer's TCP connection
// reset, a truncated message) come back as exit codes instead of MPI_Abort.
//
// Rank identity: RANK/WORLD_SIZE when set (the harness sets them; under mpirun they must
// agree with MPI_COMM_WORLD), else Open MPI's OMPI_COMM_WORLD_RANK/SIZE, else a singleton
// (rank 0 of 1). Open MPI forms a multi-rank world only under mpirun: started by
// hanglab's local launcher every process is its own singleton world, so world_size 1 runs
// and world_size > 1 fails at init with exit 12 and a message saying so.
// HANGLAB_TRACE may contain `%r` (replaced by the rank), so one `mpirun -x` serves all
// ranks; per-rank app contexts (`mpirun -np 1 -x HANGLAB_TRACE=... prog : ...`) work too.
#define OMPI_SKIP_MPICXX 1  // the C API only: the C++ bindings are deprecated and slow to compile
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <string>

#include "exit_codes.hpp"
#include "trainer.hpp"

namespace hanglab {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::string(v) : std::string();
}

int env_rank_value(const char* name) {
  const std::string text = env_or_empty(name);
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0 || v > INT_MAX) {
    throw UsageError(std::string(name) + "=" + text + ": expected a non-negative integer");
  }
  return static_cast<int>(v);
}

// Who this process is before MPI_Init, from what the launcher exported: Open MPI's
// mpirun (OMPI_COMM_WORLD_*), then PMIx/PMI (other launchers), else a singleton.
void launcher_identity(RankEnv& e) {
  if (!env_or_empty("OMPI_COMM_WORLD_RANK").empty()) {
    e.rank = env_rank_value("OMPI_COMM_WORLD_RANK");
    e.world_size = env_rank_value("OMPI_COMM_WORLD_SIZE");
    if (!env_or_empty("OMPI_COMM_WORLD_LOCAL_RANK").empty()) {
      e.local_rank = env_rank_value("OMPI_COMM_WORLD_LOCAL_RANK");
    }
    if (!env_or_empty("OMPI_COMM_WORLD_LOCAL_SIZE").empty()) {
      e.local_world_size = env_rank_value("OMPI_COMM_WORLD_LOCAL_SIZE");
    }
  } else if (!env_or_empty("PMI_RANK").empty() && !env_or_empty("PMI_SIZE").empty()) {
    e.rank = env_rank_value("PMI_RANK");
    e.world_size = env_rank_value("PMI_SIZE");
  } else {
    e.rank = 0;
    e.world_size = 1;
  }
  if (e.world_size < 1 || e.rank >= e.world_size) {
    throw UsageError("launcher identity: rank " + std::to_string(e.rank) + " of world size " +
                     std::to_string(e.world_size));
  }
}

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  int cls = 0;
  MPI_Error_class(rc, &cls);
  return std::string(text, static_cast<size_t>(len)) + " (MPI error code " + std::to_string(rc) + ", class " +
         std::to_string(cls) + ")";
}

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, static_cast<size_t>(len));
  const size_t comma = v.find(',');  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
  if (comma != std::string::npos) v.resize(comma);
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return v;
}

class MpiCollectives : public Collectives {
 public:
  MpiCollectives(int world_size, int thread_level) : world_size_(world_size), thread_level_(thread_level) {}

  void allreduce_sum(float* data, int64_t n) override {
    check(MPI_Allreduce(MPI_IN_PLACE, data, count(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }
  void allreduce_sum(double* data, int64_t n) override {
    check(MPI_Allreduce(MPI_IN_PLACE, data, count(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }
  void broadcast(float* data, int64_t n, int root) override {
    check(MPI_Bcast(data, count(n), MPI_FLOAT, root, MPI_COMM_WORLD), "MPI_Bcast");
  }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

  std::string describe() const override {
    const char* level = thread_level_ == MPI_THREAD_MULTIPLE     ? "MULTIPLE"
                        : thread_level_ == MPI_THREAD_SERIALIZED ? "SERIALIZED"
                        : thread_level_ == MPI_THREAD_FUNNELED   ? "FUNNELED"
                                                                 : "SINGLE";
    return "mpi, world_size " + std::to_string(world_size_) + ", " + library_version() + ", MPI_THREAD_" + level +
           ", no collective timeout: MPI has none, a missing peer blocks its partners forever";
  }

  // MPI_Finalize is collective in practice (Open MPI fences all processes), so a rank
  // whose peers are still blocked in a collective waits here: the trace shows it in
  // phase shutdown with heartbeats.
  void finalize() override {
    const int rc = MPI_Finalize();
    if (rc != MPI_SUCCESS) throw CollectiveError(ErrorClass::kComm, "MPI_Finalize failed: " + mpi_error_text(rc));
  }

 private:
  static int count(int64_t n) {
    if (n > INT_MAX) throw CollectiveError(ErrorClass::kOther, "collective of " + std::to_string(n) + " elements");
    return static_cast<int>(n);
  }

  // Only reached for errors Open MPI reports (MPI_ERRORS_RETURN); a peer that simply
  // never arrives produces no error at all.
  static void check(int rc, const char* call) {
    if (rc == MPI_SUCCESS) return;
    const std::string text = std::string(call) + " failed: " + mpi_error_text(rc);
    throw CollectiveError(classify_collective_error(text), text);
  }

  int world_size_;
  int thread_level_;
};

std::unique_ptr<Collectives> connect(const RankEnv& env) {
  // FUNNELED is exact: only the training thread calls MPI; the heartbeat thread writes
  // the trace with write(2) and never touches MPI.
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) {
    throw CollectiveError(ErrorClass::kRendezvous, "MPI_Init_thread failed (code " + std::to_string(rc) + ")");
  }
  if (provided < MPI_THREAD_FUNNELED) {
    throw CollectiveError(ErrorClass::kRendezvous,
                          "MPI_Init_thread: MPI_THREAD_FUNNELED requested, the library provides only level " +
                              std::to_string(provided));
  }
  // Without this Open MPI aborts the whole job (MPI_ERRORS_ARE_FATAL) on the first
  // reported error, and the rank's error never reaches the trace.
  rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (rc != MPI_SUCCESS) {
    throw CollectiveError(ErrorClass::kRendezvous, "MPI_Comm_set_errhandler: " + mpi_error_text(rc));
  }
  int rank = -1;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != env.world_size || rank != env.rank) {
    std::string why = "MPI_COMM_WORLD has " + std::to_string(size) + " process(es) and this is rank " +
                      std::to_string(rank) + ", but the environment says rank " + std::to_string(env.rank) +
                      " of WORLD_SIZE=" + std::to_string(env.world_size);
    if (size == 1 && env.world_size > 1) {
      why += ": Open MPI forms a multi-rank world only when the processes are started by mpirun (each process "
             "started on its own is a singleton world); use launcher = \"mpirun\", or world_size 1";
    }
    throw CollectiveError(ErrorClass::kRendezvous, why);
  }
  return std::make_unique<MpiCollectives>(size, provided);
}

}  // namespace
}  // namespace hanglab

int main(int argc, char** argv) {
  hanglab::BackendSpec spec;
  spec.workload = "mpi_ddp";
  spec.backend = "mpi";
  spec.summary = "hanglab's MPI data-parallel training workload (plain C++ MLP, MPI_Allreduce per gradient bucket)";
  spec.extra_env = {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"};
  spec.notes =
      "MPI has no collective timeout: HANGLAB_COLLECTIVE_TIMEOUT_MS is ignored and a skipped or missing collective "
      "blocks the peers forever. Launch with mpirun (rank identity from OMPI_COMM_WORLD_RANK, or RANK/WORLD_SIZE "
      "that must agree with it); a process started on its own is a singleton: world_size 1 only, else exit 12. "
      "HANGLAB_TRACE may contain %r (the rank).";
  spec.needs_master = false;
  spec.launcher_identity = hanglab::launcher_identity;
  spec.connect = hanglab::connect;
  return hanglab::workload_main(argc, argv, spec);
}

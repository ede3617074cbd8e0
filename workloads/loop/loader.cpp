// ShmLoader: see loader.hpp. The worker side runs in a forked copy of a multi-threaded
// LibTorch process, so it sticks to syscalls, the torch-free data path and plain heap
// allocation (glibc's malloc is fork-safe), and always leaves with _exit: exit() would
// run LibTorch's static destructors in a process that never owned their threads.
#include "loader.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "exit_codes.hpp"

namespace hanglab {

namespace {

constexpr char kSegMagic[8] = {'H', 'L', 'B', 'A', 'T', 'C', 'H', '1'};

// What a segment starts with; the rank checks it before trusting the sizes.
struct SegHeader {
  char magic[8];
  int64_t seq;
  int64_t rows;
  int64_t dim;
};

struct RequestHeader {
  int64_t seq;
  int64_t count;  // indices that follow
};

enum : uint32_t { kReplyOk = 1, kReplyError = 2 };

struct ReplyHeader {
  uint32_t kind;
  uint32_t text_len;  // segment name (ok) or error message (error) that follows
  int64_t seq;
  uint64_t bytes;     // segment size (ok)
};

// Replies stay below PIPE_BUF so each is one atomic write.
constexpr size_t kMaxReplyText = 3500;

std::string errno_text(int err) { return std::string(std::strerror(err)) + " (" + std::to_string(err) + ")"; }

// Returns bytes read: len, or fewer only at EOF. -1 with errno on error.
ssize_t read_full(int fd, void* buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    const ssize_t n = ::read(fd, static_cast<char*>(buf) + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(done);
}

bool write_full(int fd, const void* buf, size_t len) {
  size_t done = 0;
  while (done < len) {
    const ssize_t n = ::write(fd, static_cast<const char*>(buf) + done, len - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

void write_stderr(const std::string& line) { (void)write_full(2, line.data(), line.size()); }

// ---- worker side ------------------------------------------------------------------
//
// The names of the segments a worker created and the rank may not have unlinked yet,
// kept where a signal handler can reach them without allocating. The rank keeps at most
// `prefetch` (<= 64) requests in flight per worker, so any segment older than the last
// 64 it made has been taken and unlinked already.
constexpr int kRing = 80;
constexpr int kNameMax = 96;
char g_ring[kRing][kNameMax];
volatile sig_atomic_t g_ring_count = 0;
char g_bus_message[512];
size_t g_bus_message_len = 0;

void remember_segment(const std::string& name) {
  const int slot = g_ring_count % kRing;
  std::snprintf(g_ring[slot], kNameMax, "%s", name.c_str());
  g_ring_count = g_ring_count + 1;
}

// Async-signal-safe: shm_unlink is unlink(2) on /dev/shm/<name>. Unlinking a name the
// rank already unlinked fails with ENOENT, which is fine: names are never reused.
void unlink_remembered() {
  const int count = g_ring_count;
  const int n = count < kRing ? count : kRing;
  for (int i = 0; i < n; ++i) ::shm_unlink(g_ring[i]);
}

// PR_SET_PDEATHSIG and the supervisor's teardown both send SIGTERM: clean up, leave.
void on_worker_sigterm(int) {
  unlink_remembered();
  ::_exit(0);
}

// What PyTorch's worker SIGBUS handler prints, then death by the same signal so the
// rank sees "killed by signal: Bus error". Returning re-runs the faulting store with the
// default action in place.
void on_worker_sigbus(int) {
  if (g_bus_message_len > 0) (void)!::write(2, g_bus_message, g_bus_message_len);
  ::signal(SIGBUS, SIG_DFL);
}

// Closes every descriptor the worker inherited except stdio and its two pipe ends: Gloo
// sockets, the store connection and the trace must not be held open by a worker.
void close_inherited_fds(int keep_a, int keep_b) {
  int keep[] = {2, keep_a, keep_b};
  std::sort(std::begin(keep), std::end(keep));
  unsigned int from = 3;
  for (int k : keep) {
    if (k >= static_cast<int>(from)) {
      if (static_cast<unsigned int>(k) > from) ::close_range(from, static_cast<unsigned int>(k) - 1, 0);
      from = static_cast<unsigned int>(k) + 1;
    }
  }
  ::close_range(from, ~0U, 0);
}

bool send_reply(int fd, uint32_t kind, int64_t seq, uint64_t bytes, std::string text) {
  if (text.size() > kMaxReplyText) text.resize(kMaxReplyText);
  ReplyHeader h{kind, static_cast<uint32_t>(text.size()), seq, bytes};
  std::string buf(reinterpret_cast<const char*>(&h), sizeof h);
  buf += text;
  return write_full(fd, buf.data(), buf.size());
}

// Creates the segment for one batch and fills it. Returns "" or the error text (in
// PyTorch's words); a full tmpfs in mmap mode does not return at all: the store through
// the mapping raises SIGBUS.
std::string write_segment(const std::string& name, const std::string& shm_alloc, int64_t seq, const Batch& b,
                          int64_t dim, uint64_t bytes) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    return "unable to open shared memory object <" + name + "> in read-write mode: " + errno_text(errno);
  }
  remember_segment(name);
  if (shm_alloc == "fallocate") {
    // posix_fallocate returns the error number instead of setting errno.
    if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); err != 0) {
      ::close(fd);
      ::shm_unlink(name.c_str());
      return "unable to write to file <" + name + ">: " + errno_text(err);
    }
  } else if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return "unable to resize file <" + name + "> to the right size: " + errno_text(err);
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return "unable to mmap " + std::to_string(bytes) + " bytes from file <" + name + ">: " + errno_text(err);
  }
  ::close(fd);
  char* out = static_cast<char*>(p);
  SegHeader h{};
  std::memcpy(h.magic, kSegMagic, sizeof kSegMagic);
  h.seq = seq;
  h.rows = b.rows();
  h.dim = dim;
  std::memcpy(out, &h, sizeof h);
  std::memcpy(out + sizeof h, b.x.data(), b.x.size() * sizeof(float));
  std::memcpy(out + sizeof h + b.x.size() * sizeof(float), b.y.data(), b.y.size() * sizeof(float));
  ::munmap(p, bytes);
  return "";
}

[[noreturn]] void worker_main(const ShardedDataset& dataset, const LoaderOptions& o, int id, pid_t parent,
                              int req_fd, int res_fd, const std::string& prefix) {
  // Die with the rank. Checked after prctl: the rank may have died before it took effect.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) ::_exit(0);
  char comm[16];
  std::snprintf(comm, sizeof comm, "dl_worker_%d", id);
  ::prctl(PR_SET_NAME, comm);
  close_inherited_fds(req_fd, res_fd);
  g_ring_count = 0;
  std::snprintf(g_bus_message, sizeof g_bus_message,
                "%sERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared "
                "memory (shm).\n",
                o.log_prefix.c_str());
  g_bus_message_len = std::strlen(g_bus_message);
  struct sigaction sa {};
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_worker_sigterm;
  ::sigaction(SIGTERM, &sa, nullptr);
  sa.sa_handler = on_worker_sigbus;
  ::sigaction(SIGBUS, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a gone rank is EPIPE, handled below
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);

  const int64_t dim = dataset.input_dim();
  for (;;) {
    RequestHeader req{};
    const ssize_t n = read_full(req_fd, &req, sizeof req);
    if (n != static_cast<ssize_t>(sizeof req)) break;  // EOF: the rank is done (or gone)
    std::vector<int64_t> indices(static_cast<size_t>(std::max<int64_t>(0, req.count)));
    const size_t want = indices.size() * sizeof(int64_t);
    if (read_full(req_fd, indices.data(), want) != static_cast<ssize_t>(want)) break;
    std::string error;
    std::string name;
    uint64_t bytes = 0;
    try {
      const Batch b = dataset.read_train(indices);
      name = prefix + "-" + std::to_string(req.seq);
      bytes = sizeof(SegHeader) + (b.x.size() + b.y.size()) * sizeof(float);
      error = write_segment(name, o.shm_alloc, req.seq, b, dim, bytes);
    } catch (const std::exception& e) {
      error = e.what();
    }
    const bool sent = error.empty() ? send_reply(res_fd, kReplyOk, req.seq, bytes, name)
                                    : send_reply(res_fd, kReplyError, req.seq, 0, error);
    if (!sent) break;
  }
  unlink_remembered();
  ::_exit(0);
}

std::string mib_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

std::string worker_killed_message(pid_t pid, int signo) {
  std::string msg =
      "DataLoader worker (pid " + std::to_string(pid) + ") is killed by signal: " + strsignal(signo) + ". ";
  if (signo == SIGBUS) {
    msg +=
        "It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory "
        "limit.";
  }
  while (!msg.empty() && msg.back() == ' ') msg.pop_back();
  return msg;
}

ShmLoader::ShmLoader(const ShardedDataset& dataset, LoaderOptions options)
    : dataset_(dataset), options_(std::move(options)) {
  if (options_.num_workers < 1) throw UsageError("ShmLoader: num_workers must be >= 1");
  if (options_.prefetch < 1 || options_.prefetch > 64) throw UsageError("ShmLoader: prefetch must be in [1, 64]");
  if (options_.shm_alloc != "mmap" && options_.shm_alloc != "fallocate") {
    throw UsageError("ShmLoader: shm_alloc must be mmap or fallocate");
  }
  if (options_.shm_prefix.empty()) options_.shm_prefix = "/hanglab-dl-" + std::to_string(::getpid());
  // Python ignores SIGPIPE, so a PyTorch rank writing to a dead worker's pipe gets EPIPE
  // and reports the worker instead of dying silently; do the same.
  ::signal(SIGPIPE, SIG_IGN);
  const pid_t parent = ::getpid();
  for (int w = 0; w < options_.num_workers; ++w) {
    int req[2];
    int res[2];
    if (::pipe2(req, O_CLOEXEC) != 0) {
      const int err = errno;
      shutdown();
      throw DataError("DataLoader: pipe2 failed: " + errno_text(err));
    }
    if (::pipe2(res, O_CLOEXEC) != 0) {
      const int err = errno;
      ::close(req[0]);
      ::close(req[1]);
      shutdown();
      throw DataError("DataLoader: pipe2 failed: " + errno_text(err));
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int err = errno;
      for (int fd : {req[0], req[1], res[0], res[1]}) ::close(fd);
      shutdown();
      throw DataError("DataLoader: fork of worker " + std::to_string(w) + " failed: " + errno_text(err));
    }
    if (pid == 0) worker_main(dataset_, options_, w, parent, req[0], res[1], options_.shm_prefix);
    ::close(req[0]);
    ::close(res[1]);
    workers_.push_back({pid, req[1], res[0], false});
    pids_.push_back(pid);
  }
}

ShmLoader::~ShmLoader() { shutdown(); }

std::string ShmLoader::segment_name(int64_t seq) const { return options_.shm_prefix + "-" + std::to_string(seq); }

void ShmLoader::start_epoch(const std::vector<std::vector<int64_t>>& batches) {
  if (shut_down_) throw DataError("DataLoader: used after shutdown");
  // Drop what the previous epoch prefetched but nobody took.
  while (next_reply_ < next_request_) {
    (void)receive(next_reply_);
    ++next_reply_;
  }
  pending_.assign(batches.begin(), batches.end());
  taken_ = next_request_;
  epoch_end_ = next_request_ + static_cast<int64_t>(batches.size());
  fill_window();
}

void ShmLoader::fill_window() {
  const int64_t window = static_cast<int64_t>(options_.num_workers) * options_.prefetch;
  while (!pending_.empty() && next_request_ - next_reply_ < window) send_request(next_request_++);
}

void ShmLoader::send_request(int64_t seq) {
  const std::vector<int64_t> indices = std::move(pending_.front());
  pending_.pop_front();
  const size_t w = static_cast<size_t>(seq % options_.num_workers);
  RequestHeader h{seq, static_cast<int64_t>(indices.size())};
  std::string buf(reinterpret_cast<const char*>(&h), sizeof h);
  buf.append(reinterpret_cast<const char*>(indices.data()), indices.size() * sizeof(int64_t));
  // A request larger than the pipe buffer blocks until the worker reads it; EPIPE means
  // the worker is gone.
  if (!write_full(workers_[w].req_fd, buf.data(), buf.size())) worker_died(w, seq);
}

Batch ShmLoader::next() {
  if (shut_down_) throw DataError("DataLoader: used after shutdown");
  if (!has_next()) throw DataError("DataLoader: next() past the end of the epoch");
  fill_window();
  Batch b = receive(taken_);
  ++next_reply_;
  ++taken_;
  fill_window();
  return b;
}

Batch ShmLoader::receive(int64_t seq) {
  const size_t w = static_cast<size_t>(seq % options_.num_workers);
  Worker& wk = workers_[w];
  for (;;) {
    pollfd p{wk.res_fd, POLLIN, 0};
    const int r = ::poll(&p, 1, 100);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      // Like PyTorch's SIGCHLD check: any worker's death fails the iteration at once,
      // not only the death of the one this batch waits for.
      check_workers_alive();
      continue;
    }
    ReplyHeader h{};
    const ssize_t n = read_full(wk.res_fd, &h, sizeof h);
    if (n != static_cast<ssize_t>(sizeof h)) worker_died(w, seq);
    std::string text(h.text_len, '\0');
    if (read_full(wk.res_fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) worker_died(w, seq);
    if (h.seq != seq) {
      throw DataError("DataLoader: worker " + std::to_string(w) + " answered batch " + std::to_string(h.seq) +
                      " while batch " + std::to_string(seq) + " was expected");
    }
    if (h.kind == kReplyError) {
      ::shm_unlink(segment_name(seq).c_str());
      throw DataError("Caught DataError in DataLoader worker process " + std::to_string(w) + " (pid " +
                      std::to_string(wk.pid) + "): " + text);
    }
    return map_segment(seq, text, h.bytes);
  }
}

Batch ShmLoader::map_segment(int64_t seq, const std::string& name, uint64_t bytes) {
  // Unlink on every path: once the worker has answered, the segment is the rank's.
  struct Unlink {
    const std::string& name;
    ~Unlink() { ::shm_unlink(name.c_str()); }
  } unlink_guard{name};
  const int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) {
    throw DataError("DataLoader: shm_open(" + name + ") of batch " + std::to_string(seq) + ": " + errno_text(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != bytes || bytes < sizeof(SegHeader)) {
    ::close(fd);
    throw DataError("DataLoader: segment " + name + " has " + std::to_string(st.st_size) + " bytes, worker said " +
                    std::to_string(bytes));
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw DataError("DataLoader: mmap of " + name + ": " + errno_text(err));
  const char* in = static_cast<const char*>(p);
  SegHeader h{};
  std::memcpy(&h, in, sizeof h);
  const uint64_t want = sizeof h + static_cast<uint64_t>(h.rows) * (h.dim + 1) * sizeof(float);
  if (std::memcmp(h.magic, kSegMagic, sizeof kSegMagic) != 0 || h.seq != seq || h.rows < 0 ||
      h.dim != dataset_.input_dim() || want != bytes) {
    ::munmap(p, bytes);
    throw DataError("DataLoader: corrupt segment " + name + " for batch " + std::to_string(seq));
  }
  Batch b;
  const size_t nx = static_cast<size_t>(h.rows * h.dim);
  b.x.resize(nx);
  b.y.resize(static_cast<size_t>(h.rows));
  std::memcpy(b.x.data(), in + sizeof h, nx * sizeof(float));
  std::memcpy(b.y.data(), in + sizeof h + nx * sizeof(float), b.y.size() * sizeof(float));
  ::munmap(p, bytes);
  return b;
}

void ShmLoader::check_workers_alive() {
  for (size_t w = 0; w < workers_.size(); ++w) {
    Worker& wk = workers_[w];
    if (wk.reaped) continue;
    int st = 0;
    if (::waitpid(wk.pid, &st, WNOHANG) != wk.pid) continue;
    wk.reaped = true;
    wk.status = st;
    wk.have_status = true;
    // The batch it was preparing: its oldest request still in flight.
    int64_t seq = next_reply_;
    while (seq < next_request_ && static_cast<size_t>(seq % options_.num_workers) != w) ++seq;
    worker_died(w, seq);
  }
}

void ShmLoader::worker_died(size_t w, int64_t seq) {
  Worker& wk = workers_[w];
  const pid_t pid = wk.pid;
  if (!wk.reaped) {
    // EOF on its pipe: it is exiting; its status follows within moments.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      int st = 0;
      const pid_t r = ::waitpid(pid, &st, WNOHANG);
      if (r == pid) {
        wk.reaped = wk.have_status = true;
        wk.status = st;
        break;
      }
      if (r < 0 && errno != EINTR) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  const bool have_status = wk.have_status;
  const int st = wk.status;
  std::string msg;
  if (have_status && WIFSIGNALED(st)) {
    msg = worker_killed_message(pid, WTERMSIG(st));
  } else if (have_status && WIFEXITED(st)) {
    msg = "DataLoader worker (pid " + std::to_string(pid) + ") exited unexpectedly with exit code " +
          std::to_string(WEXITSTATUS(st)) + ".";
  } else {
    msg = "DataLoader worker (pid(s) " + std::to_string(pid) + ") exited unexpectedly";
  }
  // What an engineer checks next (`df -h /dev/shm`), on its own line so a log scanner
  // sees the shared-memory context apart from the signal text.
  struct statvfs vfs {};
  std::string context = options_.log_prefix + "DataLoader: worker " + std::to_string(w) + " (pid " +
                        std::to_string(pid) + ") died while preparing batch " + std::to_string(seq) +
                        " (segment /dev/shm" + segment_name(seq) + ")";
  if (::statvfs("/dev/shm", &vfs) == 0) {
    context += "; /dev/shm: " + mib_text(static_cast<double>(vfs.f_blocks) * vfs.f_frsize) + " total, " +
               mib_text(static_cast<double>(vfs.f_bavail) * vfs.f_frsize) + " free";
  }
  write_stderr(context + "\n");
  unlink_outstanding();
  throw DataError(msg);
}

void ShmLoader::unlink_outstanding() noexcept {
  for (int64_t s = next_reply_; s < next_request_; ++s) ::shm_unlink(segment_name(s).c_str());
}

void ShmLoader::shutdown(double grace_s) noexcept {
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& wk : workers_) {
    if (wk.req_fd >= 0) ::close(wk.req_fd), wk.req_fd = -1;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(grace_s * 1000));
  for (;;) {
    bool left = false;
    for (auto& wk : workers_) {
      if (wk.reaped || wk.pid <= 0) continue;
      int st = 0;
      const pid_t r = ::waitpid(wk.pid, &st, WNOHANG);
      if (r == wk.pid || (r < 0 && errno == ECHILD)) {
        wk.reaped = true;
      } else {
        left = true;
      }
    }
    if (!left || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& wk : workers_) {
    if (wk.reaped || wk.pid <= 0) continue;
    ::kill(wk.pid, SIGKILL);
    while (::waitpid(wk.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    wk.reaped = true;
  }
  for (auto& wk : workers_) {
    if (wk.res_fd >= 0) ::close(wk.res_fd), wk.res_fd = -1;
  }
  unlink_outstanding();
}

}  // namespace hanglab

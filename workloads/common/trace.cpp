#include "trace.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace hanglab {

namespace {

void make_parent_dirs(const std::string& path) {
  for (size_t pos = path.find('/', 1); pos != std::string::npos; pos = path.find('/', pos + 1)) {
    const std::string dir = path.substr(0, pos);
    // EEXIST is the common case (harness made the run dir); other errors surface at open().
    ::mkdir(dir.c_str(), 0755);
  }
}

}  // namespace

double unix_time_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec / 1000) / 1e6;
}

Trace::Trace(const std::string& path, int rank) : rank_(rank) {
  make_parent_dirs(path);
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::system_error(errno, std::generic_category(),
                            "rank " + std::to_string(rank) + ": open(" + path + ") for the trace");
  }
}

bool trace_switched_off() {
  const char* off = std::getenv("HANGLAB_TRACE_OFF");
  return off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0 && std::strcmp(off, "ab") != 0;
}

bool trace_alternating() {
  const char* off = std::getenv("HANGLAB_TRACE_OFF");
  return off != nullptr && std::strcmp(off, "ab") == 0;
}

Trace Trace::from_env(int rank) {
  const char* path = std::getenv("HANGLAB_TRACE");
  if (path == nullptr || *path == '\0' || trace_switched_off()) {
    Trace disabled;
    disabled.rank_ = rank;
    return disabled;
  }
  return Trace(path, rank);
}

Trace::Trace(Trace&& other) noexcept
    : fd_(other.fd_), rank_(other.rank_), warned_(other.warned_.load()) {
  other.fd_ = -1;
}

Trace& Trace::operator=(Trace&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    rank_ = other.rank_;
    warned_ = other.warned_.load();
    other.fd_ = -1;
  }
  return *this;
}

Trace::~Trace() {
  if (fd_ >= 0) ::close(fd_);
}

std::string Trace::format_line(double t, int rank, std::string_view ev, const TraceFields& fields) {
  // `t` is formatted by hand: a double printed by the JSON library carries 17 significant
  // digits (1718000000.1234560013), noise below the microsecond the clock gives us.
  char head[64];
  std::snprintf(head, sizeof head, "{\"t\":%.6f,\"rank\":%d,\"ev\":", t, rank);
  std::string line = head;
  line += TraceFields(std::string(ev)).dump();
  if (fields.is_object()) {
    for (const auto& [key, value] : fields.items()) {
      if (key == "t" || key == "rank" || key == "ev") continue;
      line += ',';
      line += TraceFields(key).dump();
      line += ':';
      // NaN/inf (a NaN loss) dump as null; replace invalid UTF-8 rather than throw.
      line += value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    }
  }
  line += "}\n";
  return line;
}

void Trace::emit(std::string_view ev, const TraceFields& fields) const noexcept {
  if (fd_ < 0 || paused_) return;
  std::string line;
  try {
    line = format_line(unix_time_now(), rank_, ev, fields);
  } catch (...) {
    return;  // bad_alloc while formatting: drop the line rather than die in the tracer
  }
  // One write(2): O_APPEND makes seek+write atomic against every other appender of this
  // file, so lines never interleave. A regular-file write only comes back short on disk
  // full or a signal; retrying the tail could then split a line, so we report instead.
  ssize_t n;
  do {
    n = ::write(fd_, line.data(), line.size());
  } while (n < 0 && errno == EINTR);
  const int err = errno;
  if (n != static_cast<ssize_t>(line.size()) && !warned_.exchange(true)) {
    std::fprintf(stderr, "[rank %d] hanglab: trace write failed (%s); later trace lines may be lost\n",
                 rank_, n < 0 ? std::strerror(err) : "short write");
    std::fflush(stderr);
  }
}

StepTimes StepTimes::from_env(int rank) {
  StepTimes st;
  const char* path = std::getenv("HANGLAB_STEP_TIMES");
  if (path == nullptr || *path == '\0') return st;
  st.path_ = path;
  const std::string r = std::to_string(rank);
  for (size_t pos = 0; (pos = st.path_.find("%r", pos)) != std::string::npos; pos += r.size())
    st.path_.replace(pos, 2, r);
  st.starts_.reserve(4096);
  return st;
}

void StepTimes::begin_step(int step, bool traced) {
  if (path_.empty()) return;
  starts_.push_back({step, traced, std::chrono::steady_clock::now()});
}

void StepTimes::end() {
  if (!path_.empty()) end_ = std::chrono::steady_clock::now();
}

void StepTimes::write() const noexcept {
  if (path_.empty()) return;
  try {
    make_parent_dirs(path_);
    FILE* f = std::fopen(path_.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "hanglab: cannot write HANGLAB_STEP_TIMES %s: %s\n", path_.c_str(), std::strerror(errno));
      return;
    }
    for (size_t i = 0; i < starts_.size(); ++i) {
      const auto next = i + 1 < starts_.size() ? starts_[i + 1].t : end_;
      if (next < starts_[i].t) break;  // end() never called: the last step has no end
      std::fprintf(f, "%d %.3f %d\n", starts_[i].step,
                   std::chrono::duration<double, std::milli>(next - starts_[i].t).count(), starts_[i].traced ? 1 : 0);
    }
    std::fclose(f);
  } catch (...) {
  }
}

Heartbeat::Heartbeat(const Trace& trace, std::chrono::milliseconds period)
    : trace_(trace), period_(period.count() > 0 ? period : std::chrono::milliseconds(1000)) {
  thread_ = std::thread([this] { run(); });
}

Heartbeat::~Heartbeat() { stop(); }

void Heartbeat::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Heartbeat::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  // Deadline-based so a slow write does not stretch the period.
  auto next = std::chrono::steady_clock::now();
  while (!stopping_) {
    lock.unlock();
    trace_.emit("hb");
    lock.lock();
    // After a SIGSTOP/SIGCONT the deadline lies in the past: write one hb on resume,
    // not a burst catching up on the missed periods.
    next += period_;
    const auto now = std::chrono::steady_clock::now();
    if (next <= now) next = now + period_;
    wake_.wait_until(lock, next, [this] { return stopping_; });
  }
}

}  // namespace hanglab

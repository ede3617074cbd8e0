// The rank's Flight Recorder dump: see flight_recorder.hpp.
#include "flight_recorder.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "runtime.hpp"

namespace hanglab {
namespace {

std::string g_path;
FrDumper g_dumper;
std::atomic<bool> g_armed{false};
// One dump at a time (the signal thread, the fatal path and torch's own writer can meet).
// A final dump keeps it: nothing starts after it that _exit would cut off.
std::timed_mutex g_mutex;
sigset_t g_signals;
sigset_t g_mask_before;
constexpr auto kLockWait = std::chrono::seconds(10);

std::string errno_text(int err) { return std::strerror(err); }

// tmp + rename in the dump's directory: a reader never sees half a dump.
bool write_atomically(const std::string& path, const std::string& bytes, std::string& error) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    error = "cannot create " + tmp + ": " + errno_text(errno);
    return false;
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = "cannot write " + tmp + ": " + errno_text(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot write " + path + ": " + errno_text(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

// The caller holds g_mutex. `bytes` null: ask torch for the dump now.
void dump_locked(const std::string* bytes, const char* why) {
  const auto t0 = Clock::now();
  try {
    const std::string data = bytes != nullptr ? *bytes : g_dumper();
    std::string error;
    if (!write_atomically(g_path, data, error)) {
      log_error("flight recorder: no dump (%s): %s", why, error.c_str());
      return;
    }
    // The duration (torch's dump plus the write) is what `hanglab validate` compares with the
    // launchers' SIGTERM -> SIGKILL grace periods; the line is the Python ranks' too.
    log_error("flight recorder: %zu bytes written to %s in %.0f ms (%s)", data.size(), g_path.c_str(), ms_since(t0),
              why);
  } catch (const std::exception& e) {
    log_error("flight recorder: no dump (%s): %s", why, e.what());
  }
}

bool lock_for_dump(const char* why) {
  if (g_mutex.try_lock_for(kLockWait)) return true;
  log_error("flight recorder: no dump (%s): another dump still runs, or the rank is ending", why);
  return false;
}

void signal_loop() {
  for (;;) {
    int sig = 0;
    if (::sigwait(&g_signals, &sig) != 0) continue;
    const bool teardown = sig == SIGTERM;
    fr_dump(teardown ? "teardown request" : "dump request", teardown);
    if (teardown) {
      // End as the rank would have without the recorder: killed by SIGTERM.
      ::signal(SIGTERM, SIG_DFL);
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      ::pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
      ::pthread_kill(::pthread_self(), SIGTERM);
      ::_exit(128 + SIGTERM);
    }
  }
}

void restore_mask_in_child() { ::pthread_sigmask(SIG_SETMASK, &g_mask_before, nullptr); }

int thread_count() {
  DIR* d = ::opendir("/proc/self/task");
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

}  // namespace

bool fr_arm(FrDumper dumper) {
  const char* path = std::getenv("HANGLAB_FR_DUMP");
  if (path == nullptr || *path == '\0' || g_armed.load()) return g_armed.load();
  if (!dumper) {
    log_error("flight recorder: HANGLAB_FR_DUMP is set, but this backend has no Flight Recorder to dump: ignored");
    return false;
  }
  // A thread started before this one (by a library's static initialiser) keeps SIGTERM
  // unblocked: the kernel may hand it the signal, which then ends the rank without a dump.
  if (const int n = thread_count(); n > 1)
    log_error("flight recorder: %d threads ran before the recorder armed; a SIGTERM one of them takes ends the rank "
              "without a dump", n);
  g_path = path;
  g_dumper = std::move(dumper);
  sigemptyset(&g_signals);
  sigaddset(&g_signals, SIGTERM);
  sigaddset(&g_signals, SIGUSR1);
  ::pthread_sigmask(SIG_BLOCK, &g_signals, &g_mask_before);
  ::pthread_atfork(nullptr, nullptr, restore_mask_in_child);
  std::thread(signal_loop).detach();
  g_armed = true;
  const std::string armed = g_path + ".armed";
  const std::string pid = std::to_string(::getpid());
  std::string error;
  if (!write_atomically(armed, pid, error)) log_error("flight recorder: cannot write %s: %s", armed.c_str(), error.c_str());
  return true;
}

const std::string& fr_dump_path() {
  static const std::string kNone;
  return g_armed.load() ? g_path : kNone;
}

void fr_dump(const char* why, bool final) {
  if (!g_armed.load() || !lock_for_dump(why)) return;
  dump_locked(nullptr, why);
  if (!final) g_mutex.unlock();
}

void fr_dump_write(const std::string& bytes, const char* why) {
  if (!g_armed.load() || !lock_for_dump(why)) return;
  dump_locked(&bytes, why);
  g_mutex.unlock();
}

}  // namespace hanglab

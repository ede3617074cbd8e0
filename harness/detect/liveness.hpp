// Per-rank liveness from what the kernel shows, whether or not the rank ever printed a word:
// every thread of the rank's process and of its descendants (DataLoader workers, a wrapper's
// child), sampled from /proc twice a second:
//   - /proc/P/task/T/stat      the thread's state: R running, S sleeping, D disk wait, T stopped
//   - /proc/P/task/T/schedstat the nanoseconds it ran on a CPU and waited for one, and its runs
//   - /proc/P/task/T/wchan     where the main thread sleeps in the kernel (futex, socket, ...)
//   - /proc/P/io               bytes it made the storage layer read and write
//   - /proc/P/task/T/children  its child processes
// A thread is busy over a window when it wanted a CPU (ran or waited on a run queue) for at
// least 30 % of it, in runs of at least 0.2 ms each. Counting the run-queue wait makes the test
// independent of the host's load: a computing thread on a host with ten runnable threads per
// core still wants its CPU the whole time. The run length tells a computing thread from a
// polling one: Gloo's transport loop wakes a hundred times a second for ~35 us, and on a
// loaded host each of those wakes can wait milliseconds for a CPU.
// A rank is busy (some thread busy), waiting on storage (a thread in D, or 64 KiB or more read
// or written in the window), stopped (its main thread in T), or blocked (none of these).
// Reading /proc costs ~4 small reads per thread per sample: a few hundred microseconds for a
// 40-thread rank; a larger job can sample less often (interval_s).
#pragma once

#include <sys/types.h>

#include <array>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab {

enum class Activity { kUnknown, kBusy, kDisk, kBlocked, kStopped, kGone };
const char* activity_name(Activity a);  // unknown | busy | disk | blocked | stopped | gone

struct ThreadActivity {
  pid_t pid = 0, tid = 0;
  char state = '?';
  std::string comm;
  double demand = 0;    // share of one core it wanted: (on CPU + waiting for a CPU) / window
  double cpu = 0;       // share of one core it ran
  double run_ms = 0;    // mean on-CPU time per run in the window (0: did not run)
};

struct RankLiveness {
  Activity activity = Activity::kUnknown;
  double sampled_mono = 0;  // end of the window
  double window_s = 0;
  // The main thread of the rank's own process: state, kernel wait channel, and what that
  // wait is (where_of_wchan).
  char state = '?';
  std::string wchan;
  std::string where;
  bool main_ran = false;   // a main thread of the rank's processes ran >= 1 ms in the window
  int processes = 0, threads = 0;
  std::vector<ThreadActivity> busy;  // its busy threads, the most demanding first (at most 4)
  int disk_threads = 0;              // threads in state D at the sample
  long long io_bytes = 0;            // storage bytes read + written in the window
  double last_active_mono = 0;       // end of the last window it was busy or waiting on storage
  double blocked_since_mono = 0;     // start of its current run of blocked/stopped windows; 0: none
  nlohmann::json to_json(double mono_to_unix) const;
};

struct LivenessOptions {
  double interval_s = 0.5;
  double busy_demand = 0.3;
  double busy_run_ms = 0.2;
  long long io_bytes = 64 * 1024;
  double main_ran_ms = 1.0;
};

class LivenessSampler {
 public:
  explicit LivenessSampler(LivenessOptions o = {}) : o_(o) {}

  // One sampling target: the rank (or -1 for a launcher), its pid, and whether its child
  // processes count (a launcher's children are the ranks: they are watched on their own).
  struct Target {
    int key = 0;
    pid_t pid = 0;
    bool tree = true;
  };
  // Samples every target when interval_s has passed since the last sample; returns whether it
  // did. A target's first sample only starts its window (activity stays unknown).
  bool sample(const std::vector<Target>& targets, double now_mono);
  const RankLiveness* get(int key) const;
  // Forgets a target (its process was replaced: a restarted rank).
  void reset(int key) { state_.erase(key); }
  const LivenessOptions& options() const { return o_; }

 private:
  struct ThreadCounters {
    unsigned long long run_ns = 0, wait_ns = 0, runs = 0;
  };
  struct State {
    pid_t pid = 0;
    double mono = 0;
    std::map<pid_t, ThreadCounters> threads;
    std::map<pid_t, long long> io;      // per process
    std::map<pid_t, long long> reaped;  // per process: its reaped children's CPU ticks
    RankLiveness live;
  };
  void sample_one(const Target& t, double now_mono);

  LivenessOptions o_;
  double last_mono_ = 0;
  std::map<int, State> state_;
};

// ---- /proc parsing (pure, unit-tested) ---------------------------------------------------

// State letter (field 3) and comm (field 2) of a /proc/.../stat line; nullopt when malformed.
struct StatFields {
  char state = '?';
  std::string comm;
};
std::optional<StatFields> parse_stat_line(std::string_view line);
// "run_ns wait_ns runs" of /proc/.../schedstat.
std::optional<std::array<unsigned long long, 3>> parse_schedstat(std::string_view text);
// cutime + cstime (fields 16, 17) of a /proc/P/stat line: CPU ticks of its reaped children.
std::optional<long long> parse_reaped_children_ticks(std::string_view line);
// read_bytes + write_bytes of /proc/P/io; nullopt when absent.
std::optional<long long> parse_io_bytes(std::string_view text);
// What a sleeping thread waits for, from its state and kernel wait channel: running, stopped,
// disk, fs (FUSE / NFS), futex (a lock, a condition variable: a collective's wait), socket,
// poll (epoll / poll / select), sleep (a timed sleep), pipe, child (waits for a child process),
// or "other:<wchan>".
std::string where_of_wchan(char state, std::string_view wchan);

}  // namespace hanglab

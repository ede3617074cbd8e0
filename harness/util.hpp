// Small system helpers shared by the harness: clocks, time stamps, whole-file I/O,
// an O_APPEND JSON-lines writer, errno-carrying system errors, and rank lists for humans.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace hanglab {

double unix_now();                      // Unix seconds, microsecond precision
double mono_now();                      // CLOCK_MONOTONIC seconds
std::string utc_stamp(double unix_t);   // 20261129T082659Z
std::string iso_time(double unix_t);    // 2026-11-29T08:26:59.123456Z

std::string read_file(const std::filesystem::path& p);  // throws SystemError
void write_file(const std::filesystem::path& p, const std::string& data);  // temp + rename

// A rank list as people read it: sorted, duplicates dropped, runs of three or more
// consecutive ranks as ranges: {0,1,2,5} -> "0-2,5", {0..36,38..63} -> "0-36,38-63",
// {4,5} -> "4,5", {} -> "". Every rank list printed for humans goes through it (a 16k-rank
// job's missing ranks stay one short line); JSON keeps arrays of ints.
std::string rank_ranges(std::vector<int> ranks);

// The first at most max_bytes bytes of s, never ending inside a UTF-8 sequence (a cut
// multi-byte character would make the JSON that carries it invalid).
std::string utf8_prefix(const std::string& s, size_t max_bytes);

// Runs a system tool (ip, nft, tc) to its end: argv[0] from $PATH, stdin /dev/null,
// stdout and stderr together in `output`. status: the exit status, 128+signal when it died
// of one, 127 when it could not be started. Waits for that child only (waitpid on its pid).
struct ToolResult {
  int status = 127;
  std::string output;
  bool ok() const { return status == 0; }
};
ToolResult run_tool(const std::vector<std::string>& argv);
// run_tool, and a std::runtime_error "`ip link add ...` failed (status N): <output>" unless ok.
std::string run_tool_checked(const std::vector<std::string>& argv);

// In a child right after fork(2), before exec (async-signal-safe calls only): a process
// group of its own (Ctrl-C on the terminal reaches hanglab alone), SIGKILL when hanglab
// dies (and _exit(127) if it died already), no blocked signals, default dispositions.
void child_after_fork(pid_t parent);

// A std::runtime_error naming the syscall, errno text and context.
[[noreturn]] void throw_system_error(const std::string& call, const std::string& context);

// Appends one JSON object per line with a single write(2) on an O_APPEND fd.
class JsonlWriter {
 public:
  JsonlWriter() = default;
  explicit JsonlWriter(const std::filesystem::path& p);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;
  void write(const nlohmann::json& obj);

 private:
  int fd_ = -1;
};

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil);
// avoids timegm() and the process time zone, so parsing stays pure. One copy for the
// log clocks and the run records.
inline long long days_from_civil(long long y, unsigned m, unsigned d) {
  y -= m <= 2;
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<long long>(doe) - 719468;
}

}  // namespace hanglab

// Flight Recorder dumps -> the facts triage reasons about (reason/fr_analyze.cpp).
//
// torch's Flight Recorder (FR) keeps the last TORCH_FR_BUFFER_SIZE collectives of each process
// group and dumps them per rank as a pickle (what _dump_fr_trace and the dump-on-timeout of
// ProcessGroupNCCL write, what torchfrtrace reads) or as JSON (_dump_fr_trace_json). Files are
// named `<prefix><rank>` (rank_0, nccl_trace_rank_3, rank_1.json) or, in a hanglab run
// directory, ranks/<r>/flight_recorder.{pkl,json}.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hanglab::fr {

struct FrEntry {
  long long seq = -1;          // collective_seq_id (p2p_seq_id for point-to-point)
  bool p2p = false;
  long long record_id = -1;
  std::string pg;              // process_group[0]: the group's name ("0", "1", ...)
  std::string pg_desc;         // process_group[1]: "default_pg", "undefined", a user's name
  std::string op;              // profiling_name without the backend: all_reduce, broadcast, ...
  std::string backend;         // nccl | gloo | ... (profiling_name's prefix)
  std::string sizes;           // input_sizes as written, e.g. [[1000]] (what must match across ranks)
  std::string dtypes;          // input_dtypes, e.g. [Float]
  std::string state;           // scheduled | started | completed
  bool retired = false;
  double created_s = 0;        // time_created_ns, Unix seconds
  double started_s = 0;        // time_discovered_started_ns (0 = not seen)
  double completed_s = 0;      // time_discovered_completed_ns (0 = not seen)
  long long timeout_ms = 0;
  std::vector<std::string> frames;  // innermost first: "all_reduce (torch/.../distributed_c10d.py:4174)"
  std::string call_site;  // where the program made the call: the innermost frame outside torch itself
  std::string phase;      // the phase the frames name (logs/frames.hpp stack_phase), "" when none
  size_t index = 0;                 // position in the dump's entries
};

struct FrGroupStatus {
  long long last_enqueued = -1, last_started = -1, last_completed = -1;
};

struct FrDump {
  int rank = -1;
  std::string file;     // as given (relative to the directory given)
  std::string version;  // the dump format's version, e.g. 2.10
  std::string comm_lib_version;
  std::map<std::string, std::vector<int>> pg_ranks;   // pg_config: group name -> its global ranks
  std::map<std::string, std::string> pg_desc;         // pg_config: group name -> desc
  std::map<std::string, FrGroupStatus> pg_status;     // by group name
  std::vector<FrEntry> entries;                       // in record order
};

// True when the file is a Flight Recorder dump (a pickle or a JSON object with entries and
// pg_config), judged from its first bytes (and, for JSON, its keys).
bool looks_like_fr_dump(const std::filesystem::path& file);

// Reads one dump. `rank` is the rank its name gives (-1: none). Throws std::runtime_error
// "<file>:0:0: ..." on a file that is not a readable dump.
FrDump read_fr_dump(const std::filesystem::path& file, const std::string& shown_name, int rank);

// The rank a dump's name gives: trailing digits of `<prefix><rank>` (extensions .pkl, .pickle,
// .json dropped), or ranks/<r>/flight_recorder.*; -1 when neither.
int fr_rank_from_path(const std::filesystem::path& file);

// Every FR dump among `paths` (files, or directories searched recursively); empty when one of
// them is not a dump (then the input is logs). Sorted by rank.
std::vector<std::filesystem::path> list_fr_dumps(const std::vector<std::filesystem::path>& paths);

}  // namespace hanglab::fr

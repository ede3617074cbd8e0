// libFuzzer target over plain-log triage: the log reader (logs/reader.cpp, line parser
// logs/parse.cpp, pattern table logs/patterns.cpp) and the analyzer (logs/timeline.cpp, reason/log_*.cpp), end to end;
// and over Flight Recorder input (fr/pickle.cpp, fr/dump.cpp, reason/fr_analyze.cpp) when the parts are dumps.
//
// The input is split into up to four log files at each line "=====" (so the fuzzer can
// build multi-rank incidents): rank-0.log, rank-1.log, ... or, for the odd-numbered
// inputs' first byte, one combined train.log. Any answer or a std::exception is fine; a
// signal (ASan/UBSan report, abort, segfault) or a hang is a bug, and so is an answer whose
// (category, cause) or phase is not in the cause list (model/causes.hpp): it traps.
//
// Built by ci/fuzz.sh with clang (-fsanitize=fuzzer,address,undefined) into build-fuzz/;
// seeded from harness/testdata/logs and harness/testdata/reallogs.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "triage/model/causes.hpp"
#include "triage/triage.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path& work_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("hanglab-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  const bool combined = size > 0 && (data[0] & 1);
  if (combined) {
    parts.push_back(in);
  } else {
    size_t start = 0;
    while (parts.size() < 3) {
      size_t at = in.find("\n=====\n", start);
      if (at == std::string_view::npos) break;
      parts.push_back(in.substr(start, at - start));
      start = at + 7;
    }
    parts.push_back(in.substr(start));
  }
  const fs::path& dir = work_dir();
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove(e.path(), ec);
  for (size_t i = 0; i < parts.size(); ++i) {
    // A JSON object is named as a Flight Recorder dump would be (a pickle's 0x80 splits like a log).
    const bool json_dump = !parts[i].empty() && parts[i][0] == '{';
    fs::path f = dir / (json_dump ? "rank_" + std::to_string(i) + ".json"
                        : combined ? std::string("train.log")
                                   : "rank-" + std::to_string(i) + ".log");
    std::ofstream(f, std::ios::binary).write(parts[i].data(), static_cast<std::streamsize>(parts[i].size()));
  }
  try {
    // triage_paths: Flight Recorder dumps (pickle or JSON) go to fr/, anything else to logs/.
    hanglab::TriageResult r = hanglab::triage_paths({dir});
    if (!hanglab::listed_cause(r.category, r.cause) || !hanglab::listed_phase(r.phase)) {
      std::fprintf(stderr, "unlisted answer: %s/%s phase %s\n", r.category.c_str(), r.cause.c_str(), r.phase.c_str());
      __builtin_trap();
    }
    (void)hanglab::to_json(r).dump();
    (void)hanglab::render_text(r);
  } catch (const std::exception&) {
    // a clear error is an acceptable answer
  }
  return 0;
}

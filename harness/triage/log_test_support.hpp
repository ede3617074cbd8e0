// Shared helpers of the plain-log triage tests (logs/*_test.cpp, reason/log_*_test.cpp):
// the fixture corpus in harness/testdata/logs/<case>/, parsing one line, temporary log
// directories, checking that evidence references name lines that exist.
#pragma once

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "triage/logs/parse.hpp"
#include "triage/logs/reader.hpp"
#include "triage/triage.hpp"

namespace hanglab::logtest {

namespace fs = std::filesystem;
using nlohmann::json;

inline fs::path logs_dir() { return fs::path(HANGLAB_SOURCE_DIR) / "harness/testdata/logs"; }

// The views of a LogLine point into the line: keep every parsed line alive.
inline LogLine parse(const std::string& s, int year = 2026) {
  static std::deque<std::string> keep;
  keep.push_back(s);
  LogLineContext ctx;
  ctx.year = year;
  LogLine l;
  parse_log_line(keep.back(), ctx, l);
  return l;
}

inline double utc(int y, int mo, int d, int h, int mi, double s) {
  std::string iso = std::to_string(y) + "-" + (mo < 10 ? "0" : "") + std::to_string(mo) + "-" + (d < 10 ? "0" : "") +
                    std::to_string(d) + "T00:00:00Z";
  double t = 0, res = 0;
  REQUIRE(parse_iso_time(iso, &t, &res));
  return t + h * 3600 + mi * 60 + s;
}

inline bool mentions(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

inline void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

struct TempDir {
  fs::path dir;
  explicit TempDir(const std::string& name) {
    dir = fs::temp_directory_path() /
          ("hanglab_triage_log_test_" + name + "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

inline std::vector<std::string> cases() {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(logs_dir())) {
    if (e.is_directory() && fs::exists(e.path() / "expected.json")) v.push_back(e.path().filename().string());
  }
  std::sort(v.begin(), v.end());
  return v;
}

inline TriageOptions options_from(const json& args) {
  TriageOptions o;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--world-size") o.world_size = std::stoi(args[i + 1].get<std::string>());
  }
  return o;
}

// Every evidence reference names a file of the case and a line that exists.
inline void check_refs(const fs::path& dir, const TriageResult& r) {
  for (const auto& e : r.evidence) {
    INFO(e.ref << "  " << e.text);
    if (e.ref.rfind("(no log of rank", 0) == 0 || e.ref == "--world-size") continue;
    const auto colon = e.ref.rfind(':');
    REQUIRE(colon != std::string::npos);
    const fs::path file = dir / e.ref.substr(0, colon);
    REQUIRE(fs::exists(file));
    const int line = std::stoi(e.ref.substr(colon + 1));
    std::ifstream in(file);
    std::string l;
    int n = 0;
    while (n < line && std::getline(in, l)) ++n;
    CHECK(n == line);
  }
}

}  // namespace hanglab::logtest

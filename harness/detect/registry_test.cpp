// The registry is the one list of detectors: every entry is complete, and no detector name is
// used anywhere in the sources (C++, scenarios, scripts, fixtures, the README) without an entry.
#include "detect/registry.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "detect/backend_error.hpp"
#include "detect/backend_timeout.hpp"

using namespace hanglab;
namespace fs = std::filesystem;

namespace {

// Where a detector is named, in every form the sources use: a detection raised or compared
// by name, a run record's or fixture's "detector" field, a scenario's (or an embedded
// scenario's) detected_by / not_detected_by list, a row of the README's detector table.
struct Use {
  std::string file;
  int line = 0;
  std::string name;
};

std::vector<Use> detector_uses(const std::string& file, const std::string& text) {
  static const std::vector<std::regex> kSingle = {
      std::regex(R"re(\bdetect\(\s*"([a-z_]+)")re"),
      std::regex(R"re(\b(?:detector|det)\s*[!=]=\s*"([a-z_]+)")re"),
      std::regex(R"re("([a-z_]+)"\s*[!=]=\s*(?:d\.|d->)?detector\b)re"),
      std::regex(R"re(\.detector\s*=\s*"([a-z_]+)")re"),
      std::regex(R"re(\{\s*"detector"\s*,\s*"([a-z_]+)"\s*\})re"),
      std::regex(R"re(\\?"detector\\?"\s*:\s*\\?"([a-z_]+)\\?")re"),
  };
  static const std::regex kList(R"re(detected_by\s*=\s*[\[{]([^\]}]*)[\]}])re");
  static const std::regex kQuoted(R"re(\\?"([a-z_]+)\\?")re");
  static const std::regex kReadmeRow(R"re(^\| `([a-z_]+)` \|)re");
  std::vector<Use> out;
  std::istringstream in(text);
  std::string line;
  int ln = 0;
  bool readme_detectors = false;
  while (std::getline(in, line)) {
    ++ln;
    // A test of the "unknown detector" error names one on purpose.
    if (line.find("unknown detector") != std::string::npos) continue;
    for (const auto& re : kSingle)
      for (std::sregex_iterator it(line.begin(), line.end(), re), end; it != end; ++it)
        out.push_back({file, ln, (*it)[1]});
    for (std::sregex_iterator it(line.begin(), line.end(), kList), end; it != end; ++it) {
      const std::string items = (*it)[1];
      for (std::sregex_iterator q(items.begin(), items.end(), kQuoted); q != end; ++q)
        out.push_back({file, ln, (*q)[1]});
    }
    if (file.size() >= 9 && file.compare(file.size() - 9, 9, "README.md") == 0) {
      if (line.rfind("## ", 0) == 0) readme_detectors = line == "## Detectors";
      std::smatch m;
      if (readme_detectors && std::regex_search(line, m, kReadmeRow)) out.push_back({file, ln, m[1]});
    }
  }
  return out;
}

bool scanned(const fs::path& p) {
  static const std::set<std::string> kExt = {".cpp", ".hpp", ".h", ".py", ".sh", ".toml", ".json", ".jsonl", ".md",
                                             ".txt", ".yml", ".yaml", ".cmake"};
  return kExt.count(p.extension().string()) > 0;
}

std::vector<Use> all_uses() {
  const fs::path root = HANGLAB_SOURCE_DIR;
  std::vector<Use> uses;
  std::vector<fs::path> files = {root / "README.md"};
  for (const char* dir : {"harness", "injectors", "workloads", "scenarios", "ci", ".ci"}) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(root / dir, ec), end; !ec && it != end; it.increment(ec))
      // This test's own fixtures name made-up detectors on purpose.
      if (it->is_regular_file() && scanned(it->path()) && it->path().filename() != "registry_test.cpp")
        files.push_back(it->path());
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    for (auto& u : detector_uses(fs::relative(f, root).string(), text)) uses.push_back(std::move(u));
  }
  return uses;
}

}  // namespace

TEST_CASE("every registry entry is complete and names are unique") {
  std::set<std::string> names;
  const std::set<std::string> settings = {"init_s", "collective_s", "progress_s", "heartbeat_s", "checkpoint_s",
                                          "eval_s"};
  REQUIRE(detector_registry().size() >= 7);
  for (const DetectorInfo* d : detector_registry()) {
    INFO(d->name);
    CHECK(std::regex_match(std::string(d->name), std::regex("[a-z]+(_[a-z]+)*")));
    CHECK(names.insert(std::string(d->name)).second);
    CHECK(std::regex_match(std::string(d->colour), std::regex("#[0-9a-f]{6}")));
    CHECK(!d->description.empty());
    CHECK(!d->bound.empty());
    CHECK(!d->clock.empty());
    if (d->factor > 0) CHECK(settings.count(std::string(d->setting)) == 1);
    if (d->timed && d->source != DetectorSource::kAnalyzer) CHECK(d->clock_start != ClockStart::kNone);
    for (const auto& [phase, setting] : d->phase_settings)
      if (!phase.empty()) CHECK(settings.count(std::string(setting)) == 1);
    CHECK(find_detector(d->name) == d);
  }
  CHECK(find_detector("nccl_watchdog") == nullptr);
  // Colours tell detectors apart in the reports.
  std::set<std::string> colours;
  for (const DetectorInfo* d : detector_registry()) CHECK(colours.insert(std::string(d->colour)).second);
  CHECK(detector_colour("nccl_watchdog") == "#555");
}

TEST_CASE("no detector is named anywhere in the sources without a registry entry") {
  const auto uses = all_uses();
  // The scan finds the names where they are used (scenarios, the supervisor's records, the
  // reports' fixtures): a scan that finds nothing checks nothing.
  REQUIRE(uses.size() > 200);
  std::map<std::string, int> count;
  for (const auto& u : uses) {
    ++count[u.name];
    INFO(u.file << ":" << u.line << ": detector " << u.name);
    CHECK(find_detector(u.name) != nullptr);
  }
  for (const DetectorInfo* d : detector_registry())
    if (d->expectable) CHECK(count[std::string(d->name)] > 0);
}

TEST_CASE("the scan recognises every form a detector name takes") {
  const std::string text =
      "detect(\"a_one\", r, x, t);\n"
      "if (d.detector == \"a_two\") {}\n"
      "if (\"a_three\" != d.detector) {}\n"
      "r.detector = \"a_four\";\n"
      "j = {{\"t\", t}, {\"detector\", \"a_five\"}};\n"
      "{\"t\":1,\"ev\":\"detect\",\"detector\":\"a_six\"}\n"
      "detected_by = [\"a_seven\", \"a_eight\"]\n"
      "sc.expect.not_detected_by = {\"a_nine\"};\n"
      "{\"unknown detector\", \"detected_by = [\\\"skipped\\\"]\"}\n";
  std::set<std::string> names;
  for (const auto& u : detector_uses("x.cpp", text)) names.insert(u.name);
  CHECK(names == std::set<std::string>{"a_one", "a_two", "a_three", "a_four", "a_five", "a_six", "a_seven", "a_eight",
                                       "a_nine"});
  std::set<std::string> readme;
  for (const auto& u : detector_uses("README.md", "## Detectors\n| `x_one` | y |\n## Other\n| `x_two` | z |\n"))
    readme.insert(u.name);
  CHECK(readme == std::set<std::string>{"x_one"});
}

TEST_CASE("the README's detector table lists exactly the registry") {
  std::ifstream in(fs::path(HANGLAB_SOURCE_DIR) / "README.md");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  std::set<std::string> rows;
  for (const auto& u : detector_uses("README.md", text))
    if (text.find("| `" + u.name + "` |") != std::string::npos) rows.insert(u.name);
  std::set<std::string> reg;
  for (const DetectorInfo* d : detector_registry()) reg.insert(std::string(d->name));
  CHECK(rows == reg);
}

TEST_CASE("backend lines map to their detector, timeout first") {
  CHECK(classify_backend_line("RuntimeError: [gloo] Timed out waiting 5000ms for recv") == &kBackendTimeout);
  CHECK(classify_backend_line("Connection closed by peer [127.0.0.1]:1234") == &kBackendError);
  CHECK(classify_backend_line("Epoch 3: 100%") == nullptr);
  CHECK(backend_detector_for_trace_class("timeout") == &kBackendTimeout);
  CHECK(backend_detector_for_trace_class("comm") == &kBackendError);
  CHECK(backend_detector_for_trace_class("data") == nullptr);
}

// Tests for the JUnit writer: well-formed XML (checked by a small strict parser below),
// escaping, and the count attributes CI dashboards read.
#include <unistd.h>

#include <fstream>
#include <regex>
#include <sstream>

#include <catch2/catch.hpp>

#include "report/junit.hpp"

using namespace hanglab;

namespace {

// Minimal well-formedness check: balanced tags, quoted attributes without raw < or ",
// only known entities, a single root element. Returns an empty string when fine.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> stack;
  int roots = 0;
  size_t i = 0;
  auto check_entities = [&](const std::string& text) -> std::string {
    static const std::regex entity(R"(^&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);)");
    for (size_t k = 0; k < text.size(); ++k) {
      if (text[k] != '&') continue;
      if (!std::regex_search(text.substr(k, 12), entity)) return "bad entity at: " + text.substr(k, 12);
    }
    return {};
  };
  while (i < xml.size()) {
    if (xml[i] != '<') {
      size_t next = xml.find('<', i);
      std::string text = xml.substr(i, next == std::string::npos ? std::string::npos : next - i);
      if (stack.empty() && text.find_first_not_of(" \n") != std::string::npos) return "text outside the root";
      if (auto p = check_entities(text); !p.empty()) return p;
      if (text.find('>') != std::string::npos) return "raw > in text";
      i = next == std::string::npos ? xml.size() : next;
      continue;
    }
    if (xml.compare(i, 2, "<?") == 0) {
      size_t end = xml.find("?>", i);
      if (end == std::string::npos || i != 0) return "bad declaration";
      i = end + 2;
      continue;
    }
    if (xml.compare(i, 2, "</") == 0) {
      size_t end = xml.find('>', i);
      std::string name = xml.substr(i + 2, end - i - 2);
      if (stack.empty() || stack.back() != name) return "unbalanced </" + name + ">";
      stack.pop_back();
      i = end + 1;
      continue;
    }
    static const std::regex tag(R"(^<([A-Za-z_][\w.-]*)((\s+[A-Za-z_][\w.-]*="[^<"]*")*)\s*(/?)>)");
    std::smatch m;
    std::string rest = xml.substr(i);
    if (!std::regex_search(rest, m, tag)) return "bad tag at: " + rest.substr(0, 40);
    if (auto p = check_entities(m[2].str()); !p.empty()) return p;
    if (stack.empty() && ++roots > 1) return "more than one root";
    if (m[4].str().empty()) stack.push_back(m[1].str());
    i += m[0].length();
  }
  return stack.empty() ? std::string() : "unclosed <" + stack.back() + ">";
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

Verdict mixed_verdict() {
  Verdict v;
  v.status = "fail";
  v.checks = {
      {"outcome", "pass", "hang", "hang", ""},
      {"detected_by.backend_timeout", "fail", "fired", "not fired", "backend_timeout did not fire"},
      {"triage.category", "unknown", "collective_mismatch", "(no triage answer)", "triage gave no answer"},
  };
  v.first_detection_s["harness_watchdog"] = 8.25;
  return v;
}

}  // namespace

TEST_CASE("a suite per scenario, a testcase per check, counts right", "[junit]") {
  std::vector<JunitSuite> suites = {
      {"skip-allreduce", 12.5, mixed_verdict(), "results/skip-allreduce/20240101T000000Z"},
      {"cgroup-throttle", 0.0, skipped_verdict("needs cgroup v2"), ""},
  };
  Verdict ok;
  ok.status = "pass";
  ok.checks = {{"outcome", "pass", "completed", "completed", ""}};
  suites.push_back({"healthy", 3.0, ok, "results/healthy/x"});

  const std::string xml = junit_xml(suites);
  INFO(xml);
  CHECK(xml_problem(xml).empty());
  CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", 0) == 0);
  CHECK_THAT(xml, Catch::Contains(
                      R"(<testsuites name="hanglab" tests="5" failures="1" errors="1" skipped="1" time="15.500">)"));
  CHECK_THAT(xml, Catch::Contains(
                      R"(<testsuite name="skip-allreduce" tests="3" failures="1" errors="1" skipped="0" time="12.500">)"));
  CHECK_THAT(xml, Catch::Contains(
                      R"(<testsuite name="cgroup-throttle" tests="1" failures="0" errors="0" skipped="1" time="0.000">)"));
  CHECK_THAT(xml, Catch::Contains(
                      R"(<testsuite name="healthy" tests="1" failures="0" errors="0" skipped="0" time="3.000">)"));
  CHECK(count(xml, "<testcase ") == 5);
  CHECK(count(xml, "<failure ") == 1);
  CHECK(count(xml, "<error ") == 1);
  CHECK(count(xml, "<skipped ") == 1);

  CHECK_THAT(xml, Catch::Contains(
                      R"(<testcase name="outcome" classname="hanglab.skip-allreduce" time="0.000"/>)"));
  CHECK_THAT(xml, Catch::Contains(
                      R"(<failure message="backend_timeout did not fire" type="expectation">expected: fired)"
                      "\nactual: not fired\nreason: backend_timeout did not fire\n"
                      "run dir: results/skip-allreduce/20240101T000000Z</failure>"));
  CHECK_THAT(xml, Catch::Contains(R"(<error message="triage gave no answer" type="unknown">)"));
  CHECK_THAT(xml, Catch::Contains(R"(<testcase name="scenario" classname="hanglab.cgroup-throttle" time="0.000">)"));
  CHECK_THAT(xml, Catch::Contains(R"(<skipped message="needs cgroup v2"/>)"));
  CHECK_THAT(xml, Catch::Contains(R"(<property name="run_dir" value="results/healthy/x"/>)"));
  CHECK_THAT(xml, Catch::Contains(R"(<property name="verdict" value="fail"/>)"));
  CHECK_THAT(xml, Catch::Contains(R"(<property name="first_detection_s.harness_watchdog" value="8.250"/>)"));
}

TEST_CASE("text and attributes are escaped", "[junit]") {
  Verdict v;
  v.status = "fail";
  v.checks = {{"triage.cause", "fail", "a<b", "x & \"y\" 'z'", "got <&\"> on\nline 2\x01"}};
  const std::string xml = junit_xml({{"we<ird&\"name\"", 1, v, "dir/<a>"}});
  INFO(xml);
  CHECK(xml_problem(xml).empty());
  CHECK_THAT(xml, Catch::Contains(R"(<testsuite name="we&lt;ird&amp;&quot;name&quot;")"));
  CHECK_THAT(xml, Catch::Contains(R"(message="got &lt;&amp;&quot;&gt; on&#10;line 2)" "\xEF\xBF\xBD\""));
  CHECK_THAT(xml, Catch::Contains("expected: a&lt;b\nactual: x &amp; &quot;y&quot; &apos;z&apos;"));
  CHECK_THAT(xml, Catch::Contains(R"(<property name="run_dir" value="dir/&lt;a&gt;"/>)"));
}

TEST_CASE("xml_escape keeps valid UTF-8 and replaces what XML cannot carry", "[junit]") {
  CHECK(xml_escape("r\xC3\xA9sum\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80") == "r\xC3\xA9sum\xC3\xA9 \xE2\x9C\x93 \xF0\x9F\x98\x80");
  CHECK(xml_escape("bad \xFF byte") == "bad \xEF\xBF\xBD byte");
  CHECK(xml_escape("truncated \xE2\x9C") == "truncated \xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(xml_escape("overlong \xC0\xAF") == "overlong \xEF\xBF\xBD\xEF\xBF\xBD");
  CHECK(xml_escape(std::string("nul \0 here", 10)) == "nul \xEF\xBF\xBD here");
  CHECK(xml_escape("a\tb\r\nc", true) == "a&#9;b&#13;&#10;c");
  CHECK(xml_escape("a\tb\r\nc", false) == "a\tb&#13;\nc");
}

TEST_CASE("a non-pass verdict without checks never reads as green", "[junit]") {
  Verdict v;
  v.status = "unknown";
  const std::string xml = junit_xml({{"s", 0, v, ""}});
  CHECK(xml_problem(xml).empty());
  CHECK_THAT(xml, Catch::Contains(R"(tests="1" failures="0" errors="1" skipped="0")"));
  CHECK(junit_xml({}).find(R"(<testsuites name="hanglab" tests="0")") != std::string::npos);
  CHECK(xml_problem(junit_xml({})).empty());
}

TEST_CASE("write_junit_file writes the combined file atomically", "[junit]") {
  const auto dir = std::filesystem::temp_directory_path() / ("hanglab_junit_test." + std::to_string(::getpid()));
  const auto path = dir / "sub" / "junit.xml";
  std::vector<JunitSuite> suites = {{"a", 1, mixed_verdict(), ""}, {"b", 2, skipped_verdict("no gpu"), ""}};
  write_junit_file(path, suites);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == junit_xml(suites));
  CHECK(std::distance(std::filesystem::directory_iterator(dir / "sub"), {}) == 1);  // no temp file left
  std::filesystem::remove_all(dir);

  CHECK_THROWS_AS(write_junit_file("/proc/hanglab-no-such/junit.xml", suites), std::system_error);
}

// JUnit XML writer. The schema followed is the common denominator that Jenkins, GitLab
// and GitHub test reporters accept: testsuites > testsuite > properties, testcase >
// failure | error | skipped.
#include "report/junit.hpp"

#include <cerrno>
#include <fstream>
#include <system_error>

#include <fmt/format.h>
#include <unistd.h>

namespace hanglab {

namespace {

struct Counts {
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double time_s = 0;
  void add(const Counts& o) {
    tests += o.tests;
    failures += o.failures;
    errors += o.errors;
    skipped += o.skipped;
    time_s += o.time_s;
  }
};

// Length of the valid UTF-8 sequence at s[i], 0 if invalid (overlong forms, surrogates
// and code points above U+10FFFF are invalid).
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((b(i + k) & 0xC0) != 0x80) return 0;
  if (n == 2 && c < 0xC2) return 0;
  if (n == 3) {
    unsigned cp = ((c & 0x0F) << 12) | ((b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
    if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF) || cp == 0xFFFE || cp == 0xFFFF) return 0;
  }
  if (n == 4) {
    unsigned cp = ((c & 0x07) << 18) | ((b(i + 1) & 0x3F) << 12) | ((b(i + 2) & 0x3F) << 6) | (b(i + 3) & 0x3F);
    if (cp < 0x10000 || cp > 0x10FFFF) return 0;
  }
  return n;
}

std::string attr(std::string_view name, std::string_view value) {
  return fmt::format(" {}=\"{}\"", name, xml_escape(value, true));
}

std::string seconds_attr(double s) { return attr("time", fmt::format("{:.3f}", s)); }

std::string counts_attrs(const Counts& c) {
  return attr("tests", std::to_string(c.tests)) + attr("failures", std::to_string(c.failures)) +
         attr("errors", std::to_string(c.errors)) + attr("skipped", std::to_string(c.skipped)) +
         seconds_attr(c.time_s);
}

std::string check_body(const Check& c, const std::string& run_dir) {
  std::string body = "expected: " + c.expected + "\nactual: " + c.actual + "\nreason: " + c.reason;
  if (!run_dir.empty()) body += "\nrun dir: " + run_dir;
  return xml_escape(body, false);
}

std::string testcase(const JunitSuite& s, const std::string& name, const std::string& inner) {
  std::string out = "    <testcase" + attr("name", name) + attr("classname", "hanglab." + s.name) + seconds_attr(0);
  if (inner.empty()) return out + "/>\n";
  return out + ">\n      " + inner + "\n    </testcase>\n";
}

std::string suite_xml(const JunitSuite& s, Counts& counts) {
  std::string cases;
  const Verdict& v = s.verdict;
  const bool skipped = v.status == "skipped";
  if (skipped) {
    const std::string inner = "<skipped" + attr("message", v.skip_reason) + "/>";
    if (v.checks.empty()) {
      cases += testcase(s, "scenario", inner);
      ++counts.tests;
      ++counts.skipped;
    }
    for (const Check& c : v.checks) {
      cases += testcase(s, c.name, inner);
      ++counts.tests;
      ++counts.skipped;
    }
  } else {
    for (const Check& c : v.checks) {
      ++counts.tests;
      std::string inner;
      if (c.status == "fail") {
        ++counts.failures;
        inner = "<failure" + attr("message", c.reason) + attr("type", "expectation") + ">" +
                check_body(c, s.run_dir) + "</failure>";
      } else if (c.status == "observed") {  // no [expect]: a passing case that says what happened
        inner = "<system-out>" + xml_escape("observed: outcome " + c.actual, false) + "</system-out>";
      } else if (c.status != "pass") {  // unknown, or anything unrecognised
        ++counts.errors;
        inner = "<error" + attr("message", c.reason) + attr("type", c.status.empty() ? "unknown" : c.status) + ">" +
                check_body(c, s.run_dir) + "</error>";
      }
      cases += testcase(s, c.name, inner);
    }
    // A verdict that is not a pass must never read as green, even without checks.
    if (v.checks.empty() && v.status != "pass" && v.status != "observed") {
      ++counts.tests;
      ++counts.errors;
      cases += testcase(s, "scenario",
                        "<error" + attr("message", "verdict " + (v.status.empty() ? "missing" : v.status)) +
                            attr("type", "unknown") + "/>");
    }
  }
  counts.time_s = s.time_s;

  std::string out = "  <testsuite" + attr("name", s.name) + counts_attrs(counts) + ">\n";
  out += "    <properties>\n";
  out += "      <property" + attr("name", "verdict") + attr("value", v.status) + "/>\n";
  if (!s.run_dir.empty()) out += "      <property" + attr("name", "run_dir") + attr("value", s.run_dir) + "/>\n";
  for (const auto& [detector, t] : v.first_detection_s)
    out += "      <property" + attr("name", "first_detection_s." + detector) +
           attr("value", fmt::format("{:.3f}", t)) + "/>\n";
  out += "    </properties>\n";
  return out + cases + "  </testsuite>\n";
}

}  // namespace

std::string xml_escape(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\r': out += "&#13;"; break;
      case '\n': out += attribute ? "&#10;" : "\n"; break;
      case '\t': out += attribute ? "&#9;" : "\t"; break;
      default:
        // XML 1.0 forbids the other C0 controls even as character references.
        if (c < 0x20)
          out += "\xEF\xBF\xBD";
        else
          out += static_cast<char>(c);
    }
  }
  return out;
}

std::string junit_xml(const std::vector<JunitSuite>& suites) {
  Counts total;
  std::string body;
  for (const JunitSuite& s : suites) {
    Counts c;
    body += suite_xml(s, c);
    total.add(c);
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites" + attr("name", "hanglab") + counts_attrs(total) +
         ">\n" + body + "</testsuites>\n";
}

void write_junit_file(const std::filesystem::path& path, const std::vector<JunitSuite>& suites) {
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) throw std::system_error(ec, "create_directories " + path.parent_path().string());
  }
  // Write beside the target and rename, so a CI reader never sees a half-written file.
  const std::filesystem::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << junit_xml(suites);
    out.flush();
    if (!out) {
      const int err = errno;
      std::filesystem::remove(tmp, ec);
      throw std::system_error(err ? err : EIO, std::generic_category(), "write " + tmp.string());
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignore;
    std::filesystem::remove(tmp, ignore);
    throw std::system_error(ec, "rename " + tmp.string() + " -> " + path.string());
  }
}

}  // namespace hanglab

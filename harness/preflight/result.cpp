#include "preflight/result.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace hanglab::preflight {

using nlohmann::json;

const char* status_name(Status s) {
  switch (s) {
    case Status::kPass: return "pass";
    case Status::kWarn: return "warn";
    case Status::kFail: return "fail";
    case Status::kSkip: return "skip";
  }
  return "fail";
}

Status status_from_name(const std::string& s) {
  if (s == "pass") return Status::kPass;
  if (s == "warn") return Status::kWarn;
  if (s == "fail") return Status::kFail;
  if (s == "skip") return Status::kSkip;
  throw std::invalid_argument("unknown preflight status '" + s + "'");
}

json to_json(const CheckResult& r) {
  json j = {{"name", r.name},         {"node", r.node},     {"host", r.host},
            {"status", status_name(r.status)}, {"measured", r.measured}, {"rule", r.rule},
            {"detail", r.detail},     {"at_s", std::round(r.at_s * 1000) / 1000}};
  if (!r.needs.empty()) j["needs"] = r.needs;
  return j;
}

CheckResult check_from_json(const json& j) {
  CheckResult r;
  r.name = j.at("name").get<std::string>();
  r.node = j.at("node").get<int>();
  r.host = j.value("host", "");
  try {
    r.status = status_from_name(j.at("status").get<std::string>());
  } catch (const std::invalid_argument& e) {
    throw json::other_error::create(501, e.what(), &j);
  }
  r.measured = j.value("measured", "");
  r.rule = j.value("rule", "");
  r.detail = j.value("detail", "");
  r.needs = j.value("needs", "");
  r.at_s = j.value("at_s", 0.0);
  return r;
}

int Report::failed() const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(), [](auto& c) { return c.status == Status::kFail; }));
}
int Report::warned() const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(), [](auto& c) { return c.status == Status::kWarn; }));
}
int Report::skipped() const {
  return static_cast<int>(std::count_if(checks.begin(), checks.end(), [](auto& c) { return c.status == Status::kSkip; }));
}
int Report::exit_code() const { return failed() > 0 ? 1 : skipped() > 0 ? 4 : 0; }

json to_json(const Report& r) {
  json checks = json::array();
  for (const auto& c : r.checks) checks.push_back(to_json(c));
  json not_run = json::array();
  for (const auto& n : r.not_run) not_run.push_back({{"name", n.name}, {"reason", n.reason}});
  return {{"preflight",
           {{"nodes", r.nodes},
            {"reporting_node", r.reporting_node},
            {"whole_job", r.whole_job},
            {"delivered", r.delivered},
            {"job_exit_code", r.job_exit_code},
            {"master", r.master},
            {"world_size", r.world_size},
            {"ranks_per_node", r.ranks_per_node},
            {"backend", r.backend},
            {"ifname", r.ifname},
            {"launcher", r.launcher},
            {"deadline_s", r.deadline_s},
            {"elapsed_s", std::round(r.elapsed_s * 1000) / 1000},
            {"exit_code", r.exit_code()},
            {"failed", r.failed()},
            {"warnings", r.warned()},
            {"skipped", r.skipped()}}},
          {"checks", checks},
          {"not_run", not_run}};
}

Report report_from_json(const json& j) {
  Report r;
  const json& p = j.at("preflight");
  r.nodes = p.at("nodes").get<int>();
  r.reporting_node = p.value("reporting_node", 0);
  r.whole_job = p.value("whole_job", true);
  r.delivered = p.value("delivered", true);
  r.job_exit_code = p.value("job_exit_code", -1);
  r.master = p.value("master", "");
  r.world_size = p.value("world_size", 1);
  r.ranks_per_node = p.value("ranks_per_node", 1);
  r.backend = p.value("backend", "");
  r.ifname = p.value("ifname", "");
  r.launcher = p.value("launcher", "");
  r.deadline_s = p.value("deadline_s", 0.0);
  r.elapsed_s = p.value("elapsed_s", 0.0);
  for (const auto& c : j.at("checks")) r.checks.push_back(check_from_json(c));
  if (j.contains("not_run"))
    for (const auto& n : j.at("not_run")) r.not_run.push_back({n.value("name", ""), n.value("reason", "")});
  return r;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double v = b;
  while (std::abs(v) >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", v) : fmt::format("{:.1f} {}", v, units[u]);
}

namespace {

std::string node_ranges(std::vector<int> nodes) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::string out;
  for (size_t i = 0; i < nodes.size();) {
    size_t j = i;
    while (j + 1 < nodes.size() && nodes[j + 1] == nodes[j] + 1) ++j;
    out += (out.empty() ? "" : ",") +
           (j >= i + 2 ? fmt::format("{}-{}", nodes[i], nodes[j])
                       : j == i + 1 ? fmt::format("{},{}", nodes[i], nodes[j]) : std::to_string(nodes[i]));
    i = j + 1;
  }
  return out;
}

std::string node_label(const CheckResult& c) {
  return c.host.empty() ? fmt::format("node{}", c.node) : fmt::format("node{} ({})", c.node, c.host);
}

const char* tag(Status s) {
  switch (s) {
    case Status::kPass: return "pass";
    case Status::kWarn: return "WARN";
    case Status::kFail: return "FAIL";
    case Status::kSkip: return "skip";
  }
  return "FAIL";
}

}  // namespace

std::string render_text(const Report& r) {
  std::string out = fmt::format(
      "hanglab preflight: {} node{}, rendezvous {}, WORLD_SIZE {} ({} per node), {}{}, node rank from {}, deadline {} s\n",
      r.nodes, r.nodes == 1 ? "" : "s", r.master, r.world_size, r.ranks_per_node, r.backend,
      r.ifname.empty() ? std::string(" (default interface)") : " on " + r.ifname, r.launcher, r.deadline_s);
  if (!r.whole_job)
    out += fmt::format("  node{}'s own results only: node 0 did not collect them (see the failures below)\n",
                       r.reporting_node);
  // One line per check where every node passed; one line per node that did not.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CheckResult*>> by_name;
  for (const auto& c : r.checks) {
    if (!by_name.count(c.name)) order.push_back(c.name);
    by_name[c.name].push_back(&c);
  }
  size_t w = 8;
  for (const auto& n : order) w = std::max(w, n.size());
  // Passing nodes share a line (measured: node 0's, the first, when they differ); every other
  // verdict has its own, with the rule and the detail under it. The rules of passes are in the JSON.
  struct Line {
    const char* tag;
    std::string name, who, measured;
    const CheckResult* c = nullptr;
  };
  std::vector<Line> lines;
  size_t ww = 4;
  for (const auto& n : order) {
    std::vector<int> passed;
    const CheckResult* first_pass = nullptr;
    bool alike = true;
    for (const auto* c : by_name[n])
      if (c->status == Status::kPass) {
        passed.push_back(c->node);
        if (!first_pass) first_pass = c;
        alike = alike && c->measured == first_pass->measured;
      }
    if (first_pass) {
      Line l{"pass", n, passed.size() == 1 ? node_label(*first_pass) : "nodes " + node_ranges(passed),
             (alike || passed.size() == 1 ? "" : fmt::format("node{}: ", first_pass->node)) + first_pass->measured};
      lines.push_back(l);
    }
    for (const auto* c : by_name[n])
      if (c->status != Status::kPass) lines.push_back(Line{tag(c->status), n, node_label(*c), c->measured, c});
  }
  for (const auto& l : lines) ww = std::max(ww, l.who.size());
  for (const auto& l : lines) {
    out += fmt::format("  {}  {:<{}}  {:<{}}  {}\n", l.tag, l.name, w, l.who, ww, l.measured);
    if (!l.c) continue;
    const std::string pad(8 + w + 2 + ww, ' ');
    if (!l.c->rule.empty()) out += pad + "rule: " + l.c->rule + "\n";
    if (!l.c->detail.empty()) out += pad + l.c->detail + "\n";
    if (!l.c->needs.empty()) out += pad + "needs " + l.c->needs + "\n";
  }
  for (const auto& nr : r.not_run) out += fmt::format("  -     {:<{}}  not run: {}\n", nr.name, w, nr.reason);
  const int f = r.failed(), wn = r.warned(), s = r.skipped();
  const char* verdict = f ? "FAIL" : s ? "SKIPPED" : "PASS";
  out += fmt::format("preflight: {} ({} failed, {} warning{}, {} skipped, {} checks on {} node{}, {:.2f} s)\n", verdict, f,
                     wn, wn == 1 ? "" : "s", s, r.checks.size(), r.nodes, r.nodes == 1 ? "" : "s", r.elapsed_s);
  return out;
}

namespace {
std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default:
        // XML 1.0 forbids most control characters even as references.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') o += ' ';
        else o += c;
    }
  }
  return o;
}
}  // namespace

std::string render_junit(const Report& r) {
  std::string cases;
  for (const auto& c : r.checks) {
    cases += fmt::format("    <testcase classname=\"preflight.node{}\" name=\"{}\" time=\"{:.3f}\">\n", c.node,
                         xml_escape(c.name), c.at_s);
    const std::string msg = c.measured + (c.rule.empty() ? "" : " (rule: " + c.rule + ")");
    if (c.status == Status::kFail)
      cases += fmt::format("      <failure message=\"{}\">{}</failure>\n", xml_escape(msg), xml_escape(c.detail));
    else if (c.status == Status::kSkip)
      cases += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape("needs " + c.needs + ": " + c.detail));
    else if (c.status == Status::kWarn)
      cases += fmt::format("      <system-out>{}</system-out>\n", xml_escape("WARN " + msg + ": " + c.detail));
    cases += "    </testcase>\n";
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"hanglab-preflight\" tests=\"{}\" "
      "failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n{}  </testsuite>\n</testsuites>\n",
      r.checks.size(), r.failed(), r.skipped(), r.elapsed_s, cases);
}

}  // namespace hanglab::preflight

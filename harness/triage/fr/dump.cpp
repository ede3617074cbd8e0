// Flight Recorder dumps: detection, reading (pickle or JSON) and the fields triage uses.
// See dump.hpp. Unknown keys are ignored and missing ones left at their defaults: the format
// has grown keys release by release (version 2.x), and a dump cut short is still read.
#include "triage/fr/dump.hpp"

#include <algorithm>
#include <fstream>
#include <optional>
#include <string_view>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "triage/fr/pickle.hpp"
#include "triage/logs/frames.hpp"
#include "triage/model/result.hpp"

namespace hanglab::fr {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uintmax_t kMaxDumpBytes = uintmax_t{1} << 30;

std::string read_all(const fs::path& file) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(file, ec);
  if (ec) throw std::runtime_error(fmt::format("{}:0:0: cannot read: {}", file.string(), ec.message()));
  if (size > kMaxDumpBytes)
    throw std::runtime_error(fmt::format("{}:0:0: {} bytes is larger than any Flight Recorder dump", file.string(), size));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}:0:0: cannot open", file.string()));
  std::string s(static_cast<size_t>(size), '\0');
  in.read(s.data(), static_cast<std::streamsize>(size));
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

std::string head(const fs::path& file, size_t n) {
  std::ifstream in(file, std::ios::binary);
  std::string s(n, '\0');
  in.read(s.data(), static_cast<std::streamsize>(n));
  s.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  return s;
}

std::string str(const json& j, const char* k) {
  if (!j.is_object() || !j.contains(k)) return "";
  const json& v = j[k];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

long long num(const json& j, const char* k, long long dflt = -1) {
  if (!j.is_object() || !j.contains(k)) return dflt;
  const json& v = j[k];
  if (v.is_number_integer()) return v.get<long long>();
  if (v.is_number_float()) return static_cast<long long>(v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? 1 : 0;
  return dflt;
}

// torch's pg_config ranks "[0, 1, 2]": non-negative integers, commas and blanks in brackets, read
// in one pass; nullopt when the string has another shape (then json::parse judges it). Every
// rank's dump holds the whole group's list: at 1,024 ranks, json::parse of these strings (a
// DOM of 1,024 values per dump) was the largest part of reading the dumps.
std::optional<std::vector<int>> plain_int_list(std::string_view s) {
  size_t p = 0;
  const auto blank = [&] {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r')) ++p;
  };
  blank();
  if (p >= s.size() || s[p] != '[') return std::nullopt;
  ++p;
  blank();
  std::vector<int> out;
  if (p < s.size() && s[p] == ']') {
    ++p;
  } else {
    for (;;) {
      long long v = 0;
      const size_t start = p;
      while (p < s.size() && s[p] >= '0' && s[p] <= '9' && p - start < 10) v = v * 10 + (s[p++] - '0');
      if (p == start || (p < s.size() && s[p] >= '0' && s[p] <= '9')) return std::nullopt;
      if (v < kMaxWorld) out.push_back(static_cast<int>(v));
      blank();
      if (p < s.size() && s[p] == ',') {
        ++p;
        blank();
        continue;
      }
      if (p < s.size() && s[p] == ']') {
        ++p;
        break;
      }
      return std::nullopt;
    }
  }
  blank();
  if (p != s.size()) return std::nullopt;
  return out;
}

// "[0, 1, 2]" (a string in torch's pg_config) or a list.
std::vector<int> rank_list(const json& v) {
  if (v.is_string()) {
    // The same string recurs in every rank's dump: the last one read is kept.
    thread_local std::string last_text;
    thread_local std::vector<int> last_ranks;
    const std::string& text = v.get_ref<const std::string&>();
    if (text == last_text) return last_ranks;
    if (auto plain = plain_int_list(text)) {
      last_text = text;
      last_ranks = *plain;
      return *plain;
    }
  }
  json arr = v;
  if (v.is_string()) {
    arr = json::parse(v.get<std::string>(), nullptr, false);
    if (arr.is_discarded()) return {};
  }
  std::vector<int> out;
  if (!arr.is_array()) return out;
  for (const auto& x : arr)
    if (x.is_number_integer() && x.get<long long>() >= 0 && x.get<long long>() < kMaxWorld)
      out.push_back(x.get<int>());
  return out;
}

FrEntry entry_of(const json& e, size_t index) {
  FrEntry f;
  f.index = index;
  f.p2p = num(e, "is_p2p", 0) != 0;
  f.seq = f.p2p ? num(e, "p2p_seq_id") : num(e, "collective_seq_id");
  f.record_id = num(e, "record_id");
  if (e.contains("process_group") && e["process_group"].is_array()) {
    const json& pg = e["process_group"];
    if (!pg.empty()) f.pg = pg[0].is_string() ? pg[0].get<std::string>() : pg[0].dump();
    if (pg.size() > 1 && pg[1].is_string()) f.pg_desc = pg[1].get<std::string>();
  } else {
    f.pg = std::to_string(num(e, "pg_id", 0));
  }
  const std::string name = str(e, "profiling_name");
  const size_t colon = name.find(':');
  f.backend = colon == std::string::npos ? "" : name.substr(0, colon);
  f.op = colon == std::string::npos ? name : name.substr(colon + 1);
  f.sizes = str(e, "input_sizes");
  if (e.contains("input_dtypes") && e["input_dtypes"].is_array()) {
    for (const auto& t : e["input_dtypes"]) {
      if (!f.dtypes.empty()) f.dtypes += ",";
      f.dtypes += t.is_string() ? t.get<std::string>() : t.dump();
    }
  } else {
    f.dtypes = str(e, "input_dtypes");
  }
  f.state = str(e, "state");
  f.retired = num(e, "retired", 0) != 0;
  f.created_s = static_cast<double>(std::max(0LL, num(e, "time_created_ns", 0))) / 1e9;
  f.started_s = static_cast<double>(std::max(0LL, num(e, "time_discovered_started_ns", 0))) / 1e9;
  f.completed_s = static_cast<double>(std::max(0LL, num(e, "time_discovered_completed_ns", 0))) / 1e9;
  f.timeout_ms = num(e, "timeout_ms", 0);
  if (e.contains("frames") && e["frames"].is_array()) {
    for (const auto& fr : e["frames"]) {
      if (f.frames.size() >= 8) break;
      std::string file = str(fr, "filename");
      const size_t sp = file.rfind("site-packages/");
      if (sp != std::string::npos) file = file.substr(sp + 14);
      f.frames.push_back(fmt::format("{} ({}:{})", str(fr, "name"), file, num(fr, "line", 0)));
      if (f.call_site.empty() && file.rfind("torch/", 0) != 0) f.call_site = f.frames.back();
    }
    if (f.call_site.empty() && !f.frames.empty()) f.call_site = f.frames.back();
    f.phase = stack_phase(f.frames);
  }
  return f;
}

}  // namespace

int fr_rank_from_path(const fs::path& file) {
  std::string stem = file.filename().string();
  for (const char* ext : {".json", ".pkl", ".pickle"}) {
    const std::string e = ext;
    if (stem.size() > e.size() && stem.compare(stem.size() - e.size(), e.size(), e) == 0) {
      stem.resize(stem.size() - e.size());
      break;
    }
  }
  size_t d = stem.size();
  while (d > 0 && stem[d - 1] >= '0' && stem[d - 1] <= '9') --d;
  const auto digits = [](const std::string& s) -> int {
    if (s.empty() || s.size() > 7) return -1;
    const long long v = std::stoll(s);
    return v < kMaxWorld ? static_cast<int>(v) : -1;
  };
  if (d < stem.size()) return digits(stem.substr(d));
  // ranks/<r>/flight_recorder.pkl
  const fs::path parent = file.parent_path();
  const std::string pr = parent.filename().string();
  if (!pr.empty() && std::all_of(pr.begin(), pr.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
      parent.parent_path().filename() == "ranks")
    return digits(pr);
  return -1;
}

bool looks_like_fr_dump(const fs::path& file) {
  const std::string h = head(file, 4096);
  if (h.size() >= 2 && static_cast<unsigned char>(h[0]) == 0x80 && static_cast<unsigned char>(h[1]) >= 2)
    return h.find("entries") != std::string::npos || h.find("pg_config") != std::string::npos ||
           h.find("version") != std::string::npos;
  size_t p = 0;
  while (p < h.size() && (h[p] == ' ' || h[p] == '\n' || h[p] == '\r' || h[p] == '\t')) ++p;
  if (p >= h.size() || h[p] != '{') return false;
  // A JSON dump: its keys appear early (nlohmann writes them sorted; torch too).
  return h.find("\"entries\"") != std::string::npos || h.find("\"pg_config\"") != std::string::npos ||
         h.find("\"comm_lib_version\"") != std::string::npos;
}

FrDump read_fr_dump(const fs::path& file, const std::string& shown_name, int rank) {
  const std::string bytes = read_all(file);
  json j;
  try {
    if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) {
      j = read_pickle(bytes);
    } else {
      j = json::parse(bytes);
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("{}:0:0: not a readable Flight Recorder dump: {}", shown_name, e.what()));
  }
  if (!j.is_object() || !j.contains("entries"))
    throw std::runtime_error(fmt::format("{}:0:0: not a Flight Recorder dump: no \"entries\" key", shown_name));
  FrDump d;
  d.rank = rank;
  d.file = shown_name;
  d.version = str(j, "version");
  d.comm_lib_version = str(j, "comm_lib_version");
  if (j.contains("pg_config") && j["pg_config"].is_object()) {
    for (const auto& [name, cfg] : j["pg_config"].items()) {
      if (!cfg.is_object()) continue;
      d.pg_ranks[name] = cfg.contains("ranks") ? rank_list(cfg["ranks"]) : std::vector<int>{};
      d.pg_desc[name] = str(cfg, "desc");
    }
  }
  if (j.contains("pg_status") && j["pg_status"].is_object()) {
    for (const auto& [name, st] : j["pg_status"].items()) {
      FrGroupStatus s;
      s.last_enqueued = num(st, "last_enqueued_collective");
      s.last_started = num(st, "last_started_collective");
      s.last_completed = num(st, "last_completed_collective");
      d.pg_status[name] = s;
    }
  }
  const json& es = j["entries"];
  if (!es.is_array()) throw std::runtime_error(fmt::format("{}:0:0: \"entries\" is not a list", shown_name));
  d.entries.reserve(es.size());
  for (size_t i = 0; i < es.size(); ++i)
    if (es[i].is_object()) d.entries.push_back(entry_of(es[i], i));
  return d;
}

std::vector<fs::path> list_fr_dumps(const std::vector<fs::path>& paths) {
  std::vector<fs::path> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (fs::recursive_directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const std::string name = it->path().filename().string();
        if (name.empty() || name[0] == '.' || name == "README.md" || name == "expected.json" || name == "source.md")
          continue;
        files.push_back(it->path());
      }
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    }
  }
  if (files.empty()) return {};
  for (const auto& f : files)
    if (!looks_like_fr_dump(f)) return {};
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
    const int ra = fr_rank_from_path(a), rb = fr_rank_from_path(b);
    return ra != rb ? ra < rb : a < b;
  });
  return files;
}

}  // namespace hanglab::fr

// The message catalogue: loader, anchor index, matcher (see catalogue.hpp).
#include "triage/logs/catalogue.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "triage/logs/coordination.hpp"
#include "triage/logs/parse.hpp"
#include "triage/model/causes.hpp"

namespace hanglab {

namespace {

using sv = std::string_view;

// Where an emitter's formats may start in a line (README "Matching"): after one of these markers,
// or anywhere when the emitter has none. The same short text can be printed by several programs
// (UCX's status "Out of memory" and the kernel's OOM line): inside its emitter's line shape only.
struct Shape {
  sv emitter;
  std::vector<sv> markers;
  std::vector<sv> anywhere_calls;  // calls whose text is quoted inside other messages (error strings)
  std::vector<sv> bare_calls;      // calls that print without the emitter's marker: where a message begins
};

const std::vector<Shape>& shapes() {
  static const std::vector<Shape> kShapes = {
      // "host:pid:tid [dev] NCCL WARN <format>" (file:line before NCCL in newer versions); the
      // last WARN is quoted by c10d's exception after "Last error:".
      {"nccl", {"NCCL WARN ", "NCCL INFO ", "Last error:"}, {"ncclGetErrorString"}},
      // "[time] [host:pid:tid]  file.c:123 UCX  ERROR <format>"
      {"ucx",
       {"UCX  ERROR", "UCX  WARN", "UCX  DIAG", "UCX  INFO", "UCX  FATAL", "UCX ERROR", "UCX WARN"},
       {"ucs_status_string"}},
      // The NCCL net plugin over libfabric logs through NCCL's logger ("... NCCL WARN NET/OFI <format>"),
      // quoted after "Last error:" like NCCL's own; its functional tests' logger prints
      // "WARN: Function: f Line: n: NET/OFI <format>" (the reader strips the level word).
      {"aws-ofi-nccl", {"NCCL WARN ", "NCCL INFO ", "Last error:", "Function: "}, {}},
      // "srun: error: <format>", "slurmstepd: error: <format>", "slurmstepd-node1: error: ..."
      {"slurm", {"srun: ", "slurmstepd", "slurmd", "sbatch: ", "salloc: ", "slurmctld"}, {}},
      // The JAX/TSL coordination service (tsl, and XLA's copy of it): its LOG lines begin where a message does;
      // a Status it makes (TSL's errors::X(...), absl's XError(...), the calls "errors::*" / "absl::*") travels
      // inside other messages, wherever a process prints it: "<task> has been set to ERROR in coordination
      // service: UNAVAILABLE: Task <task> heartbeat timeout. ... [type.googleapis.com/...='']", jaxlib's
      // "XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. ...".
      {"tsl", {}, {"errors", "absl"}},
      {"xla", {}, {"errors", "absl"}},
      // MPICH's Hydra (and Intel MPI's mpiexec built on it): HYDU_error_printf and HYDU_dump print the process's
      // tag first, "[mpiexec@HOST] " or "[proxy:PGID:ID@HOST] " (HYD_dbg_prefix, lib/utils/dbg.c:24), then for an
      // error "FUNC (FILE:LINE): <format>" (lib/hydra.h:393-417@v4.3.2). HYDU_dump_noprefix and mpiexec's printf
      // print the bare format (the BAD TERMINATION banner, the exit string): those start where a message does.
      {"mpich-hydra", {"[mpiexec@", "[proxy:"}, {}, {"HYDU_dump_noprefix", "printf", "fprintf"}},
  };
  return kShapes;
}

// UCX's fatal form (ucs_log_fatal_error + ucs_fatal_error_message): "[host:pid:thread:tid] %13s:%-4u msg",
// no level word. ucs_fatal() and any message at or above UCX_LOG_LEVEL_TRIGGER (error by default in
// the versions that abort on a transport error) print it, then the backtrace. Where the message
// begins; npos when the line is not of this form.
size_t ucx_fatal_start(sv line) {
  size_t open = line.find('[');
  for (int tries = 0; open != sv::npos && tries < 3; ++tries, open = line.find('[', open + 1)) {
    const size_t close = line.find(']', open);
    if (close == sv::npos || close - open > 200) return sv::npos;
    const sv id = line.substr(open + 1, close - open - 1);
    if (std::count(id.begin(), id.end(), ':') != 3 || id.front() == ':') continue;
    size_t p = close + 1;
    if (p >= line.size() || line[p] != ' ') continue;
    while (p < line.size() && line[p] == ' ') ++p;
    const size_t tok_end = std::min(line.find(' ', p), line.size());
    const sv tok = line.substr(p, tok_end - p);  // "ud_ep.c:263"
    const size_t colon = tok.rfind(':');
    if (colon == sv::npos || colon + 1 >= tok.size()) continue;
    const sv file = tok.substr(0, colon), num = tok.substr(colon + 1);
    const auto ends = [&](sv x) { return file.size() > x.size() && file.substr(file.size() - x.size()) == x; };
    const bool source = ends(".c") || ends(".h") || ends(".cc") || ends(".inl");
    if (!source || num.find_first_not_of("0123456789") != sv::npos) continue;
    return tok_end;
  }
  return sv::npos;
}

const Shape* shape_of(sv emitter) {
  for (const auto& s : shapes())
    if (s.emitter == emitter) return &s;
  return nullptr;
}

// Literal characters an NCCL warning needs to be read outside its "NCCL WARN" shape.
constexpr size_t kBareNcclLiteral = 28;

// The earliest position a format of `e` may start at in `line`; npos when the line is not of its
// emitter's shape.
size_t shape_start(const CatalogueEntry& e, sv line, sv inside) {
  const Shape* s = shape_of(e.emitter);
  if (!s || (!inside.empty() && e.emitter == inside)) return 0;
  const sv call = sv(e.call).substr(0, sv(e.call).find(':'));
  for (sv c : s->anywhere_calls)
    if (c == call) return 0;
  for (sv c : s->bare_calls)
    if (c == call) return 0;
  if (s->markers.empty()) return 0;  // no marker: where a message begins, as for an emitter without a shape
  size_t best = sv::npos;
  for (sv m : s->markers) {
    const size_t at = line.find(m);
    if (at != sv::npos) best = std::min(best, at + m.size());
  }
  if (best == sv::npos && e.emitter == "ucx") best = ucx_fatal_start(line);
  // NCCL's last WARN also travels without its prefix: c10d's exception prints it on the line after
  // "Last error:" (ncclGetLastError), and a paste often keeps that line alone. A long warning is
  // specific enough to be read there; a short one stays inside the shape.
  if (best == sv::npos && inside.empty() && e.emitter == "nccl" && e.level == "warn" && e.literal_chars >= kBareNcclLiteral) return 0;
  return best;
}

uint32_t key4(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

uint32_t filter_bit(uint32_t key) { return (key * 2654435761u) >> 16; }

std::optional<long long> first_int(sv s, bool last) {
  std::optional<long long> found;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] < '0' || s[i] > '9') {
      ++i;
      continue;
    }
    const bool neg = i > 0 && s[i - 1] == '-';
    long long v = 0;
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9' && v < (1LL << 40)) v = v * 10 + (s[j++] - '0');
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;  // too long: keep the digits' end
    found = neg ? -v : v;
    if (!last) return found;
    i = j;
  }
  return found;
}

// "[3, 5]" as Python's str() of a list of ints prints it ("[]" empty): its numbers; anything else (Open MPI's
// "[1,0]" process name, a bracketed host) is no such list.
std::optional<std::vector<long long>> python_int_list(sv s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return std::nullopt;
  std::vector<long long> out;
  sv in = s.substr(1, s.size() - 2);
  while (!in.empty()) {
    size_t j = in.front() == '-' ? 1 : 0;
    const size_t digits_from = j;
    long long v = 0;
    while (j < in.size() && in[j] >= '0' && in[j] <= '9' && v < (1LL << 40)) v = v * 10 + (in[j++] - '0');
    if (j == digits_from || (j < in.size() && in[j] >= '0' && in[j] <= '9')) return std::nullopt;
    out.push_back(in.front() == '-' ? -v : v);
    in.remove_prefix(j);
    if (in.empty()) break;
    if (in.substr(0, 2) != ", " || in.size() == 2) return std::nullopt;
    in.remove_prefix(2);
  }
  return out;
}

int signal_by_name(sv s) {
  static const std::pair<sv, int> kNames[] = {{"SIGHUP", 1},
                                              {"SIGINT", 2},
                                              {"SIGQUIT", 3},
                                              {"SIGILL", 4},
                                              {"SIGABRT", 6},
                                              {"SIGBUS", 7},
                                              {"SIGFPE", 8},
                                              {"SIGKILL", 9},
                                              {"SIGUSR1", 10},
                                              {"SIGSEGV", 11},
                                              {"SIGUSR2", 12},
                                              {"SIGPIPE", 13},
                                              {"SIGTERM", 15},
                                              {"SIGCONT", 18},
                                              {"SIGSTOP", 19},
                                              {"SIGXCPU", 24},
                                              {"Hangup", 1},
                                              {"Interrupt", 2},
                                              {"Killed", 9},
                                              {"Terminated", 15},
                                              {"Aborted", 6},
                                              {"Bus error", 7},
                                              {"Segmentation fault", 11}};
  for (const auto& [n, sig] : kNames)
    if (s.find(n) != sv::npos) return sig;
  return 0;
}

}  // namespace

bool catalogue_role(sv role) {
  return role == "root" || role == "echo" || role == "exit" || role == "benign" || role == "context";
}

bool catalogue_name(sv name) {
  for (sv n : {"rank",      "peer_rank", "world", "host",       "peer_host",  "device", "pid",  "signal",
               "code",      "seq",       "op",    "timeout_ms", "local_rank", "joined", "step", "total_steps",
               "interface", "address",   "path",  "size",       "errno",      "reason", "cuda_result"})
    if (n == name) return true;
  return false;
}

std::optional<sv> CatalogueHit::named(sv name) const {
  if (!entry || !entry->meaning) return std::nullopt;
  const auto it = entry->meaning->names.find(std::string(name));
  if (it == entry->meaning->names.end() || it->second < 0 || it->second >= static_cast<int>(holes.size()))
    return std::nullopt;
  return holes[static_cast<size_t>(it->second)];
}

std::optional<long long> CatalogueHit::named_int(sv name) const {
  const auto h = named(name);
  if (!h) return std::nullopt;
  const auto it = entry->meaning->names.find(std::string(name));
  if (name == "signal") {
    if (const int sig = signal_by_name(*h)) return sig;
  }
  // A TSL task name ("/job:jax_worker/replica:0/task:3") is its task, the JAX process index; a task of another
  // job is no rank, and its replica's number never is.
  if (h->find("/job:") != sv::npos && h->find("/task:") != sv::npos) {
    const int r = jax_task_rank(*h);
    return r >= 0 ? std::optional<long long>(r) : std::nullopt;
  }
  // A Python list printed by str() ("[3]", "[3, 5]", "[]"): the Paddle fleet launcher's "ABORT!!! ... the trainer
  // process with rank=[3] was aborted" names every trainer it found exited non-zero in one poll
  // (fleet/launch_utils.py:641-683@2.6.2). One element is that value; several (which came first is not
  // shown) or none are no single value.
  if (const auto listed = python_int_list(*h)) {
    if (listed->size() != 1) return std::nullopt;
    return listed->front();
  }
  return first_int(*h, /*last=*/it->second == 0 && entry->lead_hole);
}

void split_format(sv f, CatalogueEntry& e) {
  e.segments.clear();
  e.holes = 0;
  e.literal_chars = 0;
  std::string cur;
  bool last_was_hole = false;
  e.lead_hole = false;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      cur += '{';
      ++i;
    } else if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      cur += '}';
      ++i;
    } else if (c == '{' && i + 1 < f.size() && f[i + 1] == '}') {
      if (cur.empty() && e.segments.empty() && e.holes == 0) e.lead_hole = true;
      if (!cur.empty()) e.segments.push_back(std::move(cur));
      cur.clear();
      ++e.holes;
      ++i;
      last_was_hole = true;
      continue;
    } else if (c == '{' || c == '}') {
      throw std::runtime_error(fmt::format("unbalanced '{}' at offset {} of the format", c, i));
    } else {
      cur += c;
    }
    last_was_hole = false;
  }
  if (!cur.empty()) e.segments.push_back(std::move(cur));
  e.trail_hole = last_was_hole;
  for (const auto& s : e.segments) e.literal_chars += s.size();
  // Two adjacent holes ("{}{}") share one gap: the segments stay between distinct literal runs.
}

void Catalogue::add_jsonl(sv text, sv source) {
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == sv::npos) nl = text.size();
    const sv line = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == sv::npos) continue;
    const auto fail = [&](const std::string& why) {
      throw std::runtime_error(fmt::format("{}:{}: {}", source, line_no, why));
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& ex) {
      fail(std::string("not JSON: ") + ex.what());
    }
    try {
      CatalogueEntry e;
      e.emitter = j.at("emitter").get<std::string>();
      e.version = j.at("version").get<std::string>();
      e.where = j.at("where").get<std::string>();
      e.part = j.value("part", 0);
      e.call = j.value("call", "");
      e.level = j.value("level", "");
      e.format = j.at("format").get<std::string>();
      e.weak = j.value("weak", false);
      split_format(e.format, e);
      const auto& m = j.at("meaning");
      if (!m.is_null()) {
        CatalogueMeaning cm;
        cm.kind = m.value("kind", "");
        cm.role = m.value("role", "");
        cm.category = m.value("category", "");
        cm.cause = m.value("cause", "");
        cm.phase = m.value("phase", "");
        cm.note = m.value("note", "");
        cm.marker = m.value("marker", false);
        if (m.contains("names") && m["names"].is_object())
          for (const auto& [k, v] : m["names"].items()) cm.names[k] = v.get<int>();
        if (!catalogue_role(cm.role))
          fail(fmt::format("meaning.role \"{}\" is not root|echo|exit|benign|context", cm.role));
        if (cm.kind != "Info" && log_kind_from_name(cm.kind) == LogKind::kNone)
          fail(fmt::format("meaning.kind \"{}\" is no LogKind", cm.kind));
        if (!cm.category.empty() && !listed_category(cm.category))
          fail(fmt::format("meaning.category \"{}\" is not a triage category", cm.category));
        if (!cm.phase.empty() && !listed_phase(cm.phase))
          fail(fmt::format("meaning.phase \"{}\" is no phase", cm.phase));
        for (const auto& [k, v] : cm.names) {
          if (!catalogue_name(k)) fail(fmt::format("meaning.names.{} is not a name of the contract", k));
          if (v < 0 || v >= e.holes)
            fail(fmt::format("meaning.names.{} = {}: the format has {} hole(s)", k, v, e.holes));
        }
        e.meaning = std::move(cm);
      }
      entries_.push_back(std::move(e));
    } catch (const nlohmann::json::exception& ex) {
      fail(std::string("not an entry of the contract: ") + ex.what());
    } catch (const std::runtime_error& ex) {
      if (std::string(ex.what()).rfind(std::string(source), 0) == 0) throw;
      fail(ex.what());
    }
  }
}

void Catalogue::build_index() {
  index_.clear();
  filter_.assign((1u << 16) / 64, 0);
  indexed_ = 0;
  // How many entries hold each 4-byte key: the anchor of an entry is its rarest one.
  std::unordered_map<uint32_t, uint32_t> df;
  for (const auto& e : entries_) {
    std::vector<uint32_t> seen;
    for (const auto& s : e.segments)
      for (size_t i = 0; i + 4 <= s.size(); ++i) seen.push_back(key4(s.data() + i));
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (uint32_t k : seen) ++df[k];
  }
  for (size_t n = 0; n < entries_.size(); ++n) {
    const auto& e = entries_[n];
    if (e.weak) continue;
    bool have = false;
    Anchor best{};
    uint32_t best_df = 0;
    for (size_t si = 0; si < e.segments.size() && si < 65535; ++si) {
      const auto& s = e.segments[si];
      for (size_t i = 0; i + 4 <= s.size() && i < 65535; ++i) {
        const uint32_t k = key4(s.data() + i);
        // Prefer letters over blanks and punctuation: ", " or ": " anchors every line.
        const uint32_t score = df[k] * (std::isalnum(static_cast<unsigned char>(s[i])) ? 1 : 4);
        if (!have || score < best_df) {
          have = true;
          best_df = score;
          best = Anchor{static_cast<uint32_t>(n), static_cast<uint16_t>(si), static_cast<uint16_t>(i)};
        }
      }
    }
    if (!have) continue;  // no literal run of 4 bytes: as weak, never matched alone
    const auto& seg = e.segments[best.segment];
    const uint32_t k = key4(seg.data() + best.offset);
    index_[k].push_back(best);
    const uint32_t b = filter_bit(k);
    filter_[b >> 6] |= 1ULL << (b & 63);
    ++indexed_;
  }
}

// Where a message can begin inside a line's text: its start, or after what the writers put before a
// message ("RuntimeError: ", "logger.name:", "srun: error: ", "[file.cpp:12] ", "| ").
static bool message_start(sv line, size_t p, size_t from) {
  if (p == from) return true;
  if (p < 2 || p < from) return false;
  const char a = line[p - 2], b = line[p - 1];
  return (b == ' ' && (a == ':' || a == ']' || a == '|' || a == '-' || a == '>')) || (b == ':' && a != ':') ||
         (b == ']' && a != ']');
}

// A format matches when its literal segments cover the message: the first one where a message begins
// (a leading hole takes what precedes it), the others in order, the last one at the message's end
// (unless the format ends with a hole); holes may be empty. A line whose message is longer than the
// format, or a format of holes joined by a few characters ("{}: error: {}"), is no match: a specific
// entry or none. Formats of calls whose text is quoted inside other messages are found anywhere.
bool Catalogue::verify(const CatalogueEntry& e, sv line, std::vector<sv>* holes, sv inside) const {
  const size_t start = shape_start(e, line, inside);
  if (start == sv::npos || e.segments.empty()) return false;
  const Shape* shape = shape_of(e.emitter);
  const sv call = sv(e.call).substr(0, sv(e.call).find(':'));
  bool quoted = false;
  if (shape)
    for (sv c : shape->anywhere_calls) quoted |= c == call;
  size_t end = line.size();
  while (end > start && (line[end - 1] == ' ' || line[end - 1] == '\t' || line[end - 1] == '\r')) --end;
  const sv body = line.substr(0, end);
  size_t from = start;
  while (from < body.size() && body[from] == ' ') ++from;
  std::vector<size_t> at(e.segments.size());
  const auto& first = e.segments.front();
  size_t f = body.find(first, from);
  for (int tries = 0; f != sv::npos && tries < 8; ++tries, f = body.find(first, f + 1)) {
    if (!e.lead_hole && !quoted && !message_start(body, f, from)) continue;
    at[0] = f;
    size_t p = f + first.size();
    bool ok = true;
    for (size_t i = 1; ok && i < e.segments.size(); ++i) {
      const auto& seg = e.segments[i];
      const bool last = i + 1 == e.segments.size();
      const size_t q = last && !e.trail_hole && !quoted
                           ? (body.size() >= seg.size() ? body.size() - seg.size() : sv::npos)
                           : body.find(seg, p);
      if (q == sv::npos || q < p || body.compare(q, seg.size(), seg) != 0)
        ok = false;
      else
        at[i] = q, p = q + seg.size();
    }
    if (!ok) continue;
    if (!e.trail_hole && !quoted && p != body.size()) continue;
    // Specific enough: 16 literal characters, or at least half of what it matched.
    const size_t span = (e.trail_hole ? body.size() : p) - (e.lead_hole ? from : f);
    if (e.literal_chars < 16 && (e.literal_chars < 8 || e.literal_chars * 2 < span)) return false;
    if (holes) {
      holes->clear();
      size_t hole_from = e.lead_hole ? from : at[0] + first.size();
      size_t si = e.lead_hole ? 0 : 1;
      for (int h = 0; h < e.holes; ++h) {
        const size_t to = si < at.size() ? at[si] : body.size();
        holes->push_back(body.substr(hole_from, to > hole_from ? to - hole_from : 0));
        if (si < at.size()) hole_from = at[si] + e.segments[si].size();
        ++si;
      }
    }
    return true;
  }
  return false;
}

// A release's dotted version as numbers ("2.15.0" -> {2, 15, 0}); a commit id ("0007e75") is
// empty, older than any release: such emitters are pinned snapshots of an older tree.
static std::vector<long> version_key(const std::string& v) {
  std::vector<long> k;
  size_t i = 0;
  while (i < v.size()) {
    size_t j = i;
    while (j < v.size() && std::isdigit(static_cast<unsigned char>(v[j]))) ++j;
    if (j == i || (j < v.size() && v[j] != '.')) return {};
    k.push_back(std::stol(v.substr(i, std::min<size_t>(j - i, 9))));
    i = j + 1;
  }
  return k;
}

// Of two entries whose formats match a line equally well, the one to cite: the same emitter's
// newer version (an older release that printed the same text shares its meaning, but the pinned
// version is the one the README and a re-extraction speak of), else the one loaded first.
static bool cites_before(const CatalogueEntry& e, uint32_t e_n, const CatalogueEntry& best, uint32_t best_n) {
  if (e.emitter == best.emitter && e.version != best.version) return version_key(e.version) > version_key(best.version);
  return e_n < best_n;
}

std::optional<CatalogueHit> Catalogue::match(sv line, bool meaning_only, sv inside) const {
  if (index_.empty() || line.size() < 4) return std::nullopt;
  const CatalogueEntry* best = nullptr;
  uint32_t best_n = 0;
  for (size_t i = 0; i + 4 <= line.size(); ++i) {
    const uint32_t k = key4(line.data() + i);
    const uint32_t b = filter_bit(k);
    if (!(filter_[b >> 6] & (1ULL << (b & 63)))) continue;
    const auto it = index_.find(k);
    if (it == index_.end()) continue;
    for (const Anchor& a : it->second) {
      const CatalogueEntry& e = entries_[a.entry];
      if (meaning_only && !e.meaning) continue;
      if (best && (e.literal_chars < best->literal_chars ||
                   (e.literal_chars == best->literal_chars && !cites_before(e, a.entry, *best, best_n))))
        continue;
      const std::string& seg = e.segments[a.segment];
      if (i < a.offset || line.compare(i - a.offset, seg.size(), seg) != 0) continue;
      if (!verify(e, line, nullptr, inside)) continue;
      best = &e;
      best_n = a.entry;
    }
  }
  if (!best) return std::nullopt;
  CatalogueHit hit;
  hit.entry = best;
  verify(*best, line, &hit.holes, inside);
  return hit;
}

const Catalogue& builtin_catalogue() {
  static const Catalogue c = [] {
    Catalogue cat;
    for (const auto& b : builtin_catalogue_blobs()) cat.add_jsonl(b.text, b.name);
    cat.build_index();
    return cat;
  }();
  return c;
}

}  // namespace hanglab

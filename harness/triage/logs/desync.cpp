// ProcessGroupNCCL's desync report (see desync.hpp). Sources cited below: torch/csrc/distributed/c10d/
// TraceUtils.h at v2.15.0 (the venv's header; catalogue emitter torch-desync-2.15.0), the stored
// ProcessGroupNCCL.cpp of torch 2.15 (library id 23264163: DesyncDebugger::run, Watchdog::runLoop) and
// ProcessGroup.cpp's opTypeToString / isP2POp (library id 24225082601).
#include "triage/logs/desync.hpp"

#include <algorithm>
#include <optional>

#include "triage/logs/catalogue.hpp"
#include "triage/logs/scan.hpp"

namespace hanglab {

namespace {

using logparse::dig;
using logparse::npos;
using logparse::read_int;
using logparse::starts;
using logparse::sv;
using logparse::trim;

constexpr sv kTraceUtils = "torch/csrc/distributed/c10d/TraceUtils.h";

// A rank list as ranksToString prints it (TraceUtils.h:61-63: the numbers joined by ", "), nothing else;
// false for any other text (a list cut short, "...").
bool rank_list(sv s, std::vector<int>& out) {
  out.clear();
  size_t p = 0;
  while (p < s.size()) {
    long long v = 0;
    if (!dig(s[p])) return false;
    const size_t e = read_int(s, p, &v);
    const int r = bounded_rank(v);
    if (e == npos || r < 0) return false;
    out.push_back(r);
    if (e == s.size()) return true;
    if (s.compare(e, 2, ", ") != 0) return false;
    p = e + 2;
  }
  return false;
}

// The catalogue entry of TraceUtils.h's report the line is, with a meaning; null otherwise. Every format of
// the report but the snapshot's entries holds one of these words (the hot path has none of them).
const CatalogueEntry* desync_entry(sv m, std::optional<CatalogueHit>& hit) {
  if (m.find("collective") == npos && m.find("ranks") == npos) return nullptr;
  hit = builtin_catalogue().match(m);
  if (!hit || !hit->entry->meaning || hit->entry->emitter != "torch" || !starts(hit->entry->where, kTraceUtils))
    return nullptr;
  const std::string& kind = hit->entry->meaning->kind;
  return kind == "DesyncLagging" || kind == "DesyncMissing" || kind == "Info" ? hit->entry : nullptr;
}

// A snapshot entry "[<ranks>] started <op>" / "[<ranks>] finished <op>" (dumpSnapshot, TraceUtils.h:145-149,
// :155-159; its catalogue formats "[{}] started {}", "[{}] finished {}" are too short to be matched alone):
// read inside a report only. The op is opTypeToString's one word.
bool snapshot_entry(sv t, LogLine& o) {
  if (t.empty() || t[0] != '[') return false;
  const size_t close = t.find(']');
  if (close == npos) return false;
  sv rest = t.substr(close + 1);
  if (starts(rest, " started ")) {
    rest.remove_prefix(9);
  } else if (starts(rest, " finished ")) {
    rest.remove_prefix(10);
  } else {
    return false;
  }
  if (rest.empty() ||
      !std::all_of(rest.begin(), rest.end(), [](char c) { return (c >= 'A' && c <= 'Z') || dig(c) || c == '_'; }))
    return false;  // opTypeToString's names: "ALLREDUCE", "_ALLGATHER_BASE", ...
  o.op = rest;
  o.report_entry = true;
  if (!rank_list(t.substr(1, close - 1), o.ranks)) o.ranks.clear();  // an unreadable entry: no ranks
  return true;
}

// Point-to-point ops count apart from collectives from torch 2.4 (WorkNCCL::seq_ is seqCollective_ or
// seqP2P_): isP2POp's SEND, RECV, RECVANYSOURCE (ProcessGroup.cpp), and COALESCED, which a batch of p2p
// calls also gets (batch_isend_irecv), and UNKNOWN: their seq is not comparable with a collective's.
bool p2p_or_unknown(sv op) {
  return op == "SEND" || op == "RECV" || op == "RECVANYSOURCE" || op == "COALESCED" || op == "UNKNOWN";
}

bool names(const CatalogueEntry& e, const char* name) { return e.meaning->names.count(name) > 0; }

}  // namespace

bool read_desync(sv body, const LogLineContext& ctx, LogLine& o) {
  const sv t = trim(body);
  if (ctx.desync_report && snapshot_entry(t, o)) {
    o.word = kDesyncWord;
    return true;
  }
  std::optional<CatalogueHit> hit;
  const CatalogueEntry* e = desync_entry(t, hit);
  if (!e) return false;
  const CatalogueMeaning& m = *e->meaning;
  o.word = kDesyncWord;
  o.catalogue = e;
  o.role = m.role;
  if (const auto seq = hit->named_int("seq")) o.seq = *seq;
  if (names(*e, "rank")) {
    // "- [R] Timeout at collective: OP, #S" (:253-254): the report's first line; R is the reporting rank's
    // rank in the group (myRank), never the line's writer's global rank.
    o.kind = LogKind::kDesyncLagging;
    if (const auto r = hit->named_int("rank")) o.other_rank = bounded_rank(*r);
    if (const auto op = hit->named("op")) o.op = trim(*op);
    return true;
  }
  if (m.kind == "Info") return true;  // the snapshot's header and its seq lines: context, no event
  o.kind = log_kind_from_name(m.kind);
  // The rank list: the entry's first hole (analyzeMissingRanks :82-85, analyzeLaggingRanks :104-118). As a
  // line alone it names ranks of the group as printed; the report (DesyncReport) decides whether they are
  // global ranks.
  if (e->holes > 0 && !rank_list(trim(hit->holes[0]), o.ranks)) o.ranks.clear();
  return true;
}

void DesyncReport::fold(const LogLine& l) {
  if (l.report_entry) {
    // A snapshot entry under the seq line above it.
    if (snap_seq_ < 0 || l.ranks.empty()) {
      snap_bad_ = true;
      return;
    }
    auto& ranks = snap_[snap_seq_][std::string(l.op)];
    ranks.insert(ranks.end(), l.ranks.begin(), l.ranks.end());
    return;
  }
  if (!l.catalogue) return;
  const CatalogueMeaning& m = *l.catalogue->meaning;
  if (m.kind == "DesyncMissing") {
    never_joined_ = true;
    listed_ = l.ranks;
    if (l.ranks.empty()) snap_bad_ = true;
  } else if (m.kind == "DesyncLagging" && names(*l.catalogue, "seq")) {
    // "[..] joined but didn't finish collective #S" / "[..] finished collective #S, but didn't join ...":
    // both at the lowest seq (analyzeLaggingRanks's lagSeq, traceMap.begin()).
    if (l.ranks.empty() || (lag_seq_ >= 0 && lag_seq_ != l.seq)) snap_bad_ = true;
    lag_seq_ = l.seq;
    listed_.insert(listed_.end(), l.ranks.begin(), l.ranks.end());
  } else if (m.kind == "Info" && names(*l.catalogue, "seq")) {
    snap_seq_ = l.seq;  // "#S started ranks:" / "#S finished ranks:"
  }
}

bool DesyncReport::line(const LogLine& l, int rank, uint32_t line_no, std::vector<LogEvent>& events,
                        std::vector<WorldHint>& world) {
  const bool ours = l.word == kDesyncWord;
  const bool header = ours && l.kind == LogKind::kDesyncLagging && l.other_rank >= 0 && !l.op.empty();
  if (open_ && ours && !header) {
    fold(l);
    return true;
  }
  // The report ended on another message of its writer (the watchdog's next line, or its next report): it was
  // printed whole. Another process's line in its midst (interleaved output) may cut it: not whole.
  if (open_) finish(/*whole=*/rank == writer_, events);
  if (pending_ != SIZE_MAX) {
    // The line after the report that names a group: the same watchdog's "<logPrefix> failure detected by
    // watchdog at work sequence id: ..." (Watchdog::runLoop prints it right after desyncDebugger_.run()).
    const bool same_writer = rank == writer_;
    if (same_writer && !l.pg.empty()) {
      decide(&l, events, world);
    } else if (--pending_left_ <= 0 || header) {
      decide(nullptr, events, world);
    }
  }
  if (!header) return false;
  open_ = true;
  header_ = events.size();
  header_line_ = line_no;
  writer_ = rank;
  reporter_ = l.other_rank;
  never_joined_ = snap_bad_ = false;
  listed_.clear();
  lag_seq_ = snap_seq_ = -1;
  snap_.clear();
  return false;
}

void DesyncReport::close(std::vector<LogEvent>& events, std::vector<WorldHint>& world) {
  if (open_) finish(/*whole=*/false, events);
  if (pending_ != SIZE_MAX) decide(nullptr, events, world);
}

// What the report's lines prove, its group aside (decide()).
void DesyncReport::finish(bool whole, std::vector<LogEvent>& events) {
  open_ = false;
  proven_.clear();
  proven_kind_ = LogKind::kNone;
  group_size_ = -1;
  mismatch_seq_ = -1;
  mismatch_.clear();
  if (header_ >= events.size() || events[header_].line != header_line_) return;  // its first line was not kept
  pending_ = header_;
  pending_line_ = header_line_;
  pending_left_ = 3;
  if (never_joined_) {
    // analyzeMissingRanks: no start key in the store for these ranks (retrieveDesyncReport :204-207).
    if (!snap_bad_) {
      proven_ = listed_;
      proven_kind_ = LogKind::kDesyncMissing;
    }
    return;
  }
  if (!whole || snap_bad_ || snap_.empty()) return;
  // The snapshot lists every rank of the group once (each rank has one start key, :212): 0..size-1.
  std::vector<int> all;
  bool p2p = false;
  for (const auto& [seq, ops] : snap_)
    for (const auto& [op, ranks] : ops) {
      all.insert(all.end(), ranks.begin(), ranks.end());
      p2p = p2p || p2p_or_unknown(op);
    }
  std::sort(all.begin(), all.end());
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i] != static_cast<int>(i)) return;  // a rank twice, or one left out: not the whole group
  // The reporting rank is in it (its own start key is asserted, :239-251).
  if (reporter_ < 0 || reporter_ >= static_cast<int>(all.size())) return;
  group_size_ = static_cast<int>(all.size());
  // Two collectives at one seq: ranks that called different collectives at the same count.
  for (const auto& [seq, ops] : snap_) {
    std::vector<const std::vector<int>*> sides;
    for (const auto& [op, ranks] : ops)
      if (!p2p_or_unknown(op)) sides.push_back(&ranks);
    if (sides.size() < 2) continue;
    proven_kind_ = LogKind::kCollMismatch;
    mismatch_seq_ = seq;
    mismatch_ = "the desync report's snapshot has different collectives at #" + std::to_string(seq) + ":";
    for (const auto& [op, ranks] : ops) {
      if (p2p_or_unknown(op)) continue;
      mismatch_ += (mismatch_.back() == ':' ? " " : "; ") + op + " on [";
      for (size_t i = 0; i < ranks.size(); ++i) mismatch_ += (i ? ", " : "") + std::to_string(ranks[i]);
      mismatch_ += "]";
    }
    if (sides.size() == 2 && sides[0]->size() != sides[1]->size())
      proven_ = sides[0]->size() < sides[1]->size() ? *sides[0] : *sides[1];
    return;
  }
  // The lowest seq's ranks, when other ranks are past it (one seq only: every rank is in one collective)
  // and no p2p count is among the seqs compared.
  std::vector<int> lag = listed_, at_lowest;
  for (const auto& [op, ranks] : snap_.begin()->second) at_lowest.insert(at_lowest.end(), ranks.begin(), ranks.end());
  std::sort(lag.begin(), lag.end());
  std::sort(at_lowest.begin(), at_lowest.end());
  if (p2p || snap_.size() < 2 || lag.empty() || lag != at_lowest || lag_seq_ != snap_.begin()->first) return;
  proven_ = lag;
  proven_kind_ = LogKind::kDesyncLagging;
}

// The group the report is of: `named` (a line of its writer after it that names a group), else none. Its
// ranks are global ranks only in the default group (a new_group's ranks are numbered inside it).
void DesyncReport::decide(const LogLine* named, std::vector<LogEvent>& events, std::vector<WorldHint>& world) {
  const size_t at = pending_;
  pending_ = SIZE_MAX;
  if (at >= events.size() || events[at].line != pending_line_) return;
  LogEvent& e = events[at];
  if (group_size_ > 0) e.world = group_size_;
  e.other_rank = -1;  // the reporting rank's group rank: no rank of the job unless the group is the default one
  if (proven_kind_ == LogKind::kCollMismatch) {
    // A mismatch is one whatever the group; the odd side is named only with global ranks.
    e.kind = LogKind::kCollMismatch;
    e.seq = mismatch_seq_;
    e.text = mismatch_ + (named && named->pg_default ? "" : " (ranks of its process group)");
    e.ranks.clear();
  }
  if (!named) return;
  e.pg = std::string(named->pg);
  e.pg_default = named->pg_default;
  if (!named->pg_default) return;
  if (group_size_ > 0)
    world.push_back({group_size_, e.rank, -1, 0, -1, e.file, e.line,
                     "the desync report's snapshot lists ranks 0-" + std::to_string(group_size_ - 1) +
                         " of the default process group"});
  if (proven_kind_ == LogKind::kNone) return;
  e.kind = proven_kind_;
  e.ranks = proven_;
  if (!proven_.empty()) e.other_rank = *std::max_element(proven_.begin(), proven_.end());  // the ranks it names
  if (proven_kind_ == LogKind::kDesyncLagging) e.seq = lag_seq_;                           // the count they stayed at
}

}  // namespace hanglab

// Fields inside a plain log message: rank lists, signal names, exception classes, the
// watchdog's work fields, PG tags, steps, the world size, error lines (see parse_parts.hpp).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "triage/logs/parse_parts.hpp"
#include "triage/logs/patterns.hpp"

namespace hanglab::logparse {

// "Saving latest checkpoint ...", "Saving best model checkpoint to ...": the verb, then the
// word "checkpoint" within a few words after it (not "saving" and "checkpoint" anywhere apart).
bool saving_checkpoint(sv m) {
  for (sv verb : {sv("saving "), sv("writing ")}) {
    const size_t k = ifind(m, verb);
    if (k == npos) continue;
    const size_t c = ifind(m, "checkpoint", k + verb.size());
    if (c != npos && c - (k + verb.size()) <= 24) return true;
  }
  return false;
}

// "[1, 2, 3]" after `key`.
void read_rank_list(sv s, size_t from, std::vector<int>& out) {
  size_t b = s.find('[', from);
  if (b == npos) return;
  size_t e = s.find(']', b);
  if (e == npos) return;
  size_t p = b + 1;
  while (p < e) {
    p = skip_sp(s, p);
    long long v = 0;
    size_t q = read_int(s, p, &v);
    if (q == npos || q > e) break;
    out.push_back(static_cast<int>(v));
    p = q;
    while (p < e && (s[p] == ',' || s[p] == ' ')) ++p;
  }
}

int signal_from_name(sv s) {
  struct Name {
    const char* n;
    int sig;
  };
  static const Name kNames[] = {{"sigkill", 9},      {"killed", 9},       {"sigsegv", 11},    {"segmentation", 11},
                                {"sigbus", 7},       {"bus error", 7},    {"sigabrt", 6},     {"abort", 6},
                                {"sigterm", 15},     {"terminated", 15},  {"sigint", 2},      {"interrupt", 2},
                                {"sigill", 4},       {"illegal inst", 4}, {"sigfpe", 8},      {"floating point", 8},
                                {"sighup", 1},       {"sigpipe", 13},     {"sigxcpu", 24}};
  for (const auto& n : kNames) {
    if (ihas(s, n.n)) return n.sig;
  }
  return 0;
}

// "torch.cuda.OutOfMemoryError: ..." -> the class token, when the message starts
// with a dotted identifier ending in Error/Exception/Interrupt followed by ':' or end.
sv exception_class(sv m) {
  size_t e = 0;
  while (e < m.size() && (alpha(m[e]) || dig(m[e]) || m[e] == '_' || m[e] == '.')) ++e;
  if (e < 5 || (e < m.size() && m[e] != ':')) return {};
  sv cls = m.substr(0, e);
  auto ends = [&](sv suf) { return cls.size() >= suf.size() && cls.substr(cls.size() - suf.size()) == suf; };
  if (ends("Error") || ends("Exception") || ends("Interrupt") || ends("Exit") || ends("Failure")) return cls;
  return {};
}

bool comm_text(sv m) {
  return has(m, "Timed out waiting") || has(m, "Connection closed") || has(m, "Connection reset") ||
         has(m, "communicator was aborted") || has(m, "Watchdog caught") || has(m, "NCCL error") ||
         has(m, "remote process exited") || has(m, "Socket Timeout") || has(m, "Broken pipe") ||
         has(m, "ProcessGroupNCCL is aborted") || has(m, "Read error") || has(m, "NCCL communicator") ||
         has(m, "DistBackendError") || has(m, "watchdog thread terminated");
}

void parse_workncll_fields(sv m, LogLine& o) {
  o.seq = int_after(m, "SeqNum=");
  o.op = token_after(m, "OpType=", ",)");
  o.numel_in = int_after(m, "NumelIn=");
  o.numel_out = int_after(m, "NumelOut=");
  o.timeout_ms = int_after(m, "Timeout(ms)=");
  o.ran_ms = int_after(m, "ran for ");
}

long long shape_numel(sv m) {
  const size_t k = m.find("TensorShape=[");
  if (k == npos) return -1;
  size_t p = k + 13;
  long long n = 1;
  bool any = false;
  while (p < m.size() && m[p] != ']') {
    long long d = 0;
    const size_t e = read_int(m, skip_sp(m, p), &d);
    if (e == npos || e >= m.size() || d < 0) return -1;  // "[[1], [2]]" (several tensors) or a cut line
    n = d > 0 && n > (1LL << 50) / d ? (1LL << 50) : n * d;
    any = true;
    p = e;
    while (p < m.size() && (m[p] == ',' || m[p] == ' ')) ++p;
  }
  return p < m.size() && any ? n : -1;
}

void parse_work_status(sv m, LogLine& o) {
  long long v = int_after(m, "last enqueued NCCL work:");
  if (v < 0) v = int_after(m, "Last enqueued NCCL work:");
  if (v < 0) v = int_after(m, "last enqueued work:");
  o.last_enqueued = v;
  // "-1" (nothing completed yet) reads as -1, the same as "not stated".
  long long c = int_after(m, "last completed NCCL work:", 0, false);
  if (c == -1) c = int_after(m, "last completed work:", 0, false);
  if (c == -1 && !has(m, "last completed")) c = int_after(m, "Last completed NCCL work:", 0, false);
  o.last_completed = c;
  if (o.seq < 0) o.seq = int_after(m, "work sequence id:", 0, false);
  if (o.seq < 0) o.seq = int_after(m, "Timeout at NCCL work:", 0, false);
}

// "[PG ID 0 PG GUID 0(default_pg) Rank 2]", "[PG 1 Rank 0]", "[PG 0 (default_pg) Rank 3]"
void parse_pg_tag(sv m, LogLine& o) {
  size_t k = m.find("[PG ");
  if (k == npos || k > 200) return;
  size_t close = m.find(']', k);
  if (close == npos) return;
  sv tag = m.substr(k + 4, close - k - 4);
  size_t rk = tag.rfind(" Rank ");
  if (rk == npos) return;
  long long v = 0;
  if (read_int(tag, rk + 6, &v) == npos) return;
  sv id = trim(tag.substr(0, rk));
  if (starts(id, "ID ")) {
    sv rest = id.substr(3);
    size_t sp = rest.find(' ');
    sv num = sp == npos ? rest : rest.substr(0, sp);
    o.pg = has(rest, "(default_pg)") ? sv("0(default_pg)") : num;
    o.pg_default = num == "0" || has(rest, "default_pg");
    // "PG ID <local_id_> PG GUID <pg_uid_>(<desc>)" (ProcessGroupNCCL::logPrefix): the ID counts the groups this
    // process created, the GUID names the group on every member. Two ranks' lines are one group's by the GUID.
    if (const size_t g = rest.find("PG GUID "); g != npos && !o.pg_default) {
      sv guid = rest.substr(g + 8);
      guid = guid.substr(0, std::min(guid.find('('), guid.find(' ')));
      if (!guid.empty()) o.pg = guid;
    }
  } else {
    o.pg = id;
    o.pg_default = id == "0" || has(id, "default_pg");
  }
  o.pg_rank = bounded_rank(v);
  if (o.pg_default && o.rank_src < RankSource::kMessage) {
    o.rank = o.pg_rank;
    o.rank_src = RankSource::kMessage;
  }
}

// "[i/N] Forward ...": a bracketed counter followed by the pass or the loss it reports (ColossalAI's
// demos: "[3/1000] Forward GPU memory usage: ...", "[3/1000] Backward ..."). The counter alone is
// no step: ninja prints "[1/3] c++ ..." while a JIT op builds (init), and tools count stages so.
static bool parse_bracket_step(sv m, LogLine& o) {
  long long s = 0, tot = 0;
  size_t e = read_int(m, 1, &s);
  if (e == npos || e >= m.size() || m[e] != '/') return false;
  e = read_int(m, e + 1, &tot);
  if (e == npos || e >= m.size() || m[e] != ']' || s < 0 || tot <= 0 || s > tot) return false;
  const sv word = m.substr(skip_sp(m, e + 1));
  bool training = false;
  for (sv w : {sv("forward"), sv("backward"), sv("loss"), sv("train step"), sv("optimizer step")})
    training = training || (istarts(word, w) && (word.size() == w.size() || !std::isalpha(static_cast<unsigned char>(word[w.size()]))));
  if (!training) return false;
  o.kind = LogKind::kStep;
  o.step = static_cast<int>(s);
  o.total_steps = static_cast<int>(tot);
  return true;
}

// A step line: the message starts with "step N", "Step: N", "step=N", "iteration N/M",
// "global_step=N". Fast path: the first word decides.
bool parse_step(sv m, LogLine& o) {
  size_t p;
  if (m.size() < 6) return false;
  const char c = lc(m[0]);
  if (c == 's' && istarts(m, "step")) {
    p = 4;
  } else if (c == 'i' && istarts(m, "iteration")) {
    p = 9;
  } else if (c == 'i' && istarts(m, "iter") && (m[4] == ' ' || m[4] == ':')) {
    p = 4;  // "iter 12", and "iter:  130/3000 | loss: ..." (ArcticTraining)
  } else if (c == 'g' && istarts(m, "global_step")) {
    p = 11;
  } else if (c == '[' && istarts(m, "[step ")) {
    p = 5;
  } else if (c == '[') {
    return parse_bracket_step(m, o);
  } else {
    return false;
  }
  if (p >= m.size() || !(m[p] == ' ' || m[p] == ':' || m[p] == '=' || m[p] == '\t')) return false;
  while (p < m.size() && (m[p] == ' ' || m[p] == ':' || m[p] == '=' || m[p] == '\t')) ++p;
  long long s = 0;
  size_t e = read_int(m, p, &s);
  if (e == npos || s < 0) return false;
  o.kind = LogKind::kStep;
  o.step = static_cast<int>(s);
  if (e < m.size() && m[e] == '/') {
    size_t q = skip_sp(m, e + 1);
    long long tot = 0;
    if (read_int(m, q, &tot) != npos) o.total_steps = static_cast<int>(tot);
  }
  // (the loss is not parsed: nothing in the analysis uses it, and this is the hot path)
  sv rest = m.substr(e);
  if (size_t k = rest.find("dur_ms"); k != npos) {
    size_t q = k + 6;
    while (q < rest.size() && (rest[q] == ' ' || rest[q] == ':' || rest[q] == '=')) ++q;
    double v = 0;
    if (read_double(rest, q, &v) != npos) o.dur_ms = v;
  }
  return true;
}

// faiss's verbose k-means (faiss/Clustering.cpp@02dbb4e, Clustering::train_encoded, unchanged since
// the 2017 Clustering.cpp:339): the header "Clustering %d points in %zdD to %zd clusters, redo %d times,
// %d iterations" (:148) and each iteration, redrawn in place with '\r', "  Iteration %d (%.2f s, search
// %.2f s): objective=%g imbalance=%.3f nsplit=%d" (:336). The iteration counts k-means rounds of the
// clustering (an index's training, ColBERT's centroids), not training steps of the job.
bool parse_data_prep(sv m, LogLine& o) {
  if (m.size() < 20) return false;
  size_t p;
  long long v = 0;
  if (starts(m, "Clustering ")) {
    p = read_int(m, 11, &v);
    if (p == npos || !starts(m.substr(p), " points in ")) return false;
    const size_t to = m.find("D to ", p + 11);
    if (to == npos || to > p + 24 || m.find(" clusters", to) == npos) return false;
  } else if (starts(m, "Iteration ")) {
    p = read_int(m, 10, &v);
    if (p == npos || !starts(m.substr(p), " (") || m.find(" s, search ", p) == npos ||
        m.find("): objective=", p) == npos)
      return false;
  } else {
    return false;
  }
  o.kind = LogKind::kDataPrep;
  return true;
}

// RETURNN's per-step report (returnn/torch/engine.py@b46ff5f _print_process: `", ".join([report_prefix,
// "step %i" % step, ...])`, the same in returnn/tf/engine.py Runner._print_process): the prefix names the
// loop. Training's is "ep {epoch} train" (torch engine.py:523) or "train epoch {epoch}" (tf); an
// evaluation's "ep {epoch} {dataset} eval" (torch :856) or "epoch {epoch} '{dataset}' eval" (tf :2060).
// An eval step is no training step: it marks the writer evaluating (RETURNN evaluates on rank 0 alone
// while the other ranks wait in a broadcast, engine.py:835).
bool parse_eval_progress(sv m, LogLine& o) {
  // Lightning's evaluation bars (lightning/pytorch/callbacks/progress/tqdm_progress.py@2.6.6:
  // set_description(f"{desc} DataLoader {dataloader_idx}") with progress_bar.py's descriptions "Validation",
  // "Sanity Checking" (the validation steps run before the first epoch), "Testing", "Predicting"): the
  // loop evaluating, not training ("Epoch N" is its training bar).
  for (sv d : {sv("Validation DataLoader "), sv("Sanity Checking DataLoader "), sv("Testing DataLoader "),
               sv("Predicting DataLoader ")}) {
    if (!starts(m, d)) continue;
    long long idx = 0;
    const size_t e = read_int(m, d.size(), &idx);
    if (e == npos || e >= m.size() || m[e] != ':') return false;
    o.kind = LogKind::kEvalBegin;
    return true;
  }
  size_t p;
  if (starts(m, "ep ")) p = 3;
  else if (starts(m, "epoch ")) p = 6;
  else if (starts(m, "pretrain epoch ")) p = 15;
  else return false;
  long long v = 0;
  if (read_int(m, p, &v) == npos) return false;
  const size_t k = m.find(" eval, step ", p);
  if (k == npos || k > 160) return false;
  if (read_int(m, k + 12, &v) == npos) return false;
  o.kind = LogKind::kEvalBegin;
  return true;
}

// mmengine (the runner of mmdetection/mmsegmentation/mmpretrain 1.x and the other OpenMMLab 2.0 projects),
// LogProcessor (mmengine/runner/log_processor.py@1032279): get_log_after_iter prints
// f"Epoch({mode}){epoch}[{iter}/{dataloader_len}]  " by epoch (iter counts batches of that epoch; test has
// no epoch) and f"Iter({mode}) [{iter}/{max_iters}]  " by iteration (a run-wide count in train);
// get_log_after_epoch prints the same headers for val/test with their metrics. Mode train is a training
// step (a run-wide one only for Iter(train)); val and test are an evaluation under way.
bool parse_mmengine(sv m, LogLine& o) {
  size_t p;
  bool by_iter;
  if (starts(m, "Epoch(")) p = 6, by_iter = false;
  else if (starts(m, "Iter(")) p = 5, by_iter = true;
  else return false;
  const size_t close = m.find(')', p);
  if (close == npos || close - p > 5) return false;
  const sv mode = m.substr(p, close - p);
  // The bracketed counter must follow: "[2][3400/7330]" or "[ 5/10000]".
  const size_t open = m.find('[', close);
  if (open == npos || open > close + 8) return false;
  if (mode == "val" || mode == "test") {
    o.kind = LogKind::kEvalBegin;
    return true;
  }
  if (mode != "train") return false;
  if (!by_iter) {
    o.kind = LogKind::kProgress;
    return true;
  }
  long long it = 0, tot = 0;
  size_t e = read_int(m, skip_sp(m, open + 1), &it);
  if (e == npos || e >= m.size() || m[e] != '/') return false;
  e = read_int(m, e + 1, &tot);
  if (e == npos || e >= m.size() || m[e] != ']' || it < 0) return false;
  o.kind = LogKind::kStep;
  o.step = static_cast<int>(it);
  o.total_steps = tot > 0 && tot < (1LL << 31) ? static_cast<int>(tot) : -1;
  return true;
}

void set_world(sv m, LogLine& o) {
  size_t k0 = ifind(m, "world_size");
  // torchrun's "local_world_size=8" is the processes of one node, not the job
  while (k0 != npos && k0 >= 6 && istarts(m.substr(k0 - 6), "local_")) k0 = ifind(m, "world_size", k0 + 10);
  if (size_t k = k0; k != npos) {
    long long v = iint_after(m.substr(k), "world_size");
    if (v > 0) o.world = bounded_world(v);
  } else if (size_t k2 = ifind(m, "world size"); k2 != npos) {
    long long v = iint_after(m.substr(k2), "world size");
    if (v > 0) o.world = bounded_world(v);
  }
}

// hanglab workloads: "ERROR (comm) in backward at step 6: <what> (in allreduce seq 12, numel 4225)"
bool parse_harness_error(sv m, LogLine& o) {
  if (!starts(m, "ERROR (")) return false;
  const size_t close = m.find(')', 7);
  if (close == npos) return false;
  const sv cls = m.substr(7, close - 7);
  sv rest = m.substr(close + 1);
  if (starts(rest, " in ")) {
    rest = rest.substr(4);
    const size_t at = rest.find(" at step ");
    if (at != npos) {
      o.where = rest.substr(0, at);
      long long st = 0;
      size_t e = read_int(rest, at + 9, &st);
      if (e != npos) {
        o.step = static_cast<int>(st);
        rest = rest.substr(e);
        if (starts(rest, ": ")) rest = rest.substr(2);
      }
    }
  }
  // "(in allreduce seq 12, numel 4225)"
  const size_t in = rest.rfind(" (in ");
  if (in != npos) {
    sv coll = rest.substr(in + 5);
    const size_t sp = coll.find(' ');
    if (sp != npos) {
      o.op = coll.substr(0, sp);
      o.seq = int_after(coll, "seq ");
      o.numel_in = int_after(coll, "numel ");
    }
  }
  // What the exception text says first; the workload's class decides the rest.
  LogLine inner;
  classify_text(rest, inner);
  o.word = cls;
  if (inner.kind == LogKind::kCudaOom || inner.kind == LogKind::kCudaError || inner.kind == LogKind::kDiskFull ||
      inner.kind == LogKind::kWrongIfname || inner.kind == LogKind::kShmError || inner.kind == LogKind::kStoreRefused ||
      inner.kind == LogKind::kAddressInUse || inner.kind == LogKind::kDnsFailure ||
      inner.kind == LogKind::kFdExhausted || inner.kind == LogKind::kInvalidDevice) {
    o.kind = inner.kind;
  } else if (cls == "timeout") {
    o.kind = inner.kind == LogKind::kStoreTimeout ? LogKind::kStoreTimeout : LogKind::kGlooTimeout;
    o.timeout_ms = inner.timeout_ms;
  } else if (cls == "comm") {
    o.kind = LogKind::kCommClosed;
  } else if (cls == "rendezvous") {
    o.kind = inner.kind == LogKind::kStoreTimeout ? LogKind::kStoreTimeout : LogKind::kRendezvousError;
  } else if (cls == "data") {
    o.kind = LogKind::kDataError;
  } else if (cls == "usage") {
    o.kind = LogKind::kUsageError;
  } else {
    o.kind = LogKind::kException;
  }
  // fail() exits with the class' code right after this line.
  o.code = cls == "comm" ? 10 : cls == "timeout" ? 11 : cls == "rendezvous" ? 12 : cls == "data" ? 13
           : cls == "usage" ? 2 : 1;
  return true;
}

// The older hanglab fixture format: "error in allreduce (step 3, seq 6): <what>" and
// "unhandled exception in forward (step 4): <what>".
bool parse_legacy_error(sv m, LogLine& o) {
  const bool coll = starts(m, "error in ");
  const bool exc = starts(m, "unhandled exception in ");
  if (!coll && !exc) return false;
  const size_t open = m.find(" (step ");
  const size_t close = m.find("): ");
  if (open == npos || close == npos || close < open) return false;
  const sv head = m.substr(coll ? 9 : 23, open - (coll ? 9 : 23));
  const sv inside = m.substr(open + 2, close - open - 2);
  o.step = static_cast<int>(int_after(inside, "step ", 0, false));
  const sv what = m.substr(close + 3);
  if (exc) {
    o.where = head;
    o.kind = LogKind::kException;
    o.code = 1;
    LogLine inner;
    classify_text(what, inner);
    if (inner.kind == LogKind::kCudaOom || inner.kind == LogKind::kCudaError) o.kind = inner.kind;
    return true;
  }
  o.op = head;
  o.seq = int_after(inside, "seq ", 0, false);
  LogLine inner;
  classify_text(what, inner);
  o.kind = inner.kind == LogKind::kNone ? LogKind::kCommException : inner.kind;
  o.timeout_ms = inner.timeout_ms;
  o.word = inner.word;
  o.code = o.kind == LogKind::kGlooTimeout ? 11 : 10;
  return true;
}

}  // namespace hanglab::logparse

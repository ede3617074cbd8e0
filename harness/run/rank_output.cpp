// Supervisor, what the ranks say: their stdout and stderr (time-stamped line by line into
// ranks/<r>/std{out,err}.log, progress-bar redraws read as they are drawn), their hanglab traces
// (events.jsonl, tailed every tick), and what each line or event tells the detectors: progress,
// heartbeats, the phase a rank is in, a backend's error, the step an at_step fault waits for.
// See run/supervisor.hpp.
#include <poll.h>

#include <algorithm>

#include <fmt/format.h>

#include "detect/backend_error.hpp"
#include "detect/harness_watchdog.hpp"
#include "run/proc_exit.hpp"
#include "run/state.hpp"
#include "run/supervisor_rank.hpp"
#include "triage/logs/parse.hpp"
#include "triage/logs/progress.hpp"
#include "util.hpp"

namespace hanglab {

namespace fs = std::filesystem;
using nlohmann::json;
using supervisor_detail::write_all;

void Supervisor::on_output_line(Rank& r, const std::string& line, bool is_err, double t) {
  if (r.rank < 0) {
    on_launcher_line(line, is_err, t);
    return;
  }
  log_pending_redraw(r, is_err);  // an earlier redraw goes first: the file stays in time order
  write_all(is_err ? r.err_log : r.out_log, iso_time(t) + " " + line + "\n");
  r.spoke = true;
  note_output_trigger(line);
  if (first_sign_t_ == 0 || t < first_sign_t_) first_sign_t_ = t;
  if (!r.has_trace) {
    // Without a trace, a rank's output is its voice: progress (once its main thread is seen
    // to have run around it: detect/harness_watchdog.hpp) and errors.
    watchdog_->output_line(r, mono_now());
    if (const DetectorInfo* det = classify_backend_line(line)) detect(det->name, r.rank, utf8_prefix(line, 300), t);
    // ...and of its step: read with triage's own log parser, so that at_step triggers a
    // fault in a bring-your-own rank at a step (not at a wall-clock guess of when training
    // will have started), and the watchdog knows when its init is over.
    // The progress table (triage/logs/progress.hpp) first: its shapes are whole lines
    // ("[GPU1] Epoch 12 | Batchsize: 32 | Steps: 22" is epoch 12, not step 22). Its step
    // counter, or for an epoch-only program its epoch, is the step at_step counts.
    if (auto pm = match_progress(line)) {
      const long long n = pm->step ? *pm->step : pm->epoch ? static_cast<long long>(*pm->epoch) : 0;
      r.init_done = true;
      if (n > 0) r.last_step = std::max(r.last_step, static_cast<int>(n));
      return;
    }
    LogLine ll;
    if (parse_log_line(line, LogLineContext{}, ll) && (ll.rank < 0 || ll.rank == r.rank)) {
      if (ll.kind == LogKind::kInitDone) r.init_done = true;
      if (ll.kind == LogKind::kStep && ll.step > 0) r.init_done = true, r.last_step = std::max(r.last_step, ll.step);
    }
  }
}

void Supervisor::log_pending_redraw(Rank& r, bool is_err) {
  std::string& line = is_err ? r.err_redraw : r.out_redraw;
  if (line.empty()) return;
  write_all(is_err ? r.err_log : r.out_log, iso_time(is_err ? r.err_redraw_t : r.out_redraw_t) + " " + line + "\n");
  line.clear();
}

void Supervisor::note_output_trigger(const std::string& line) {
  for (auto& f : faults_)
    if (!f.fired && !f.output_seen && f.spec->at_output && line.find(*f.spec->at_output) != std::string::npos)
      f.output_seen = true;
}

void Supervisor::drain_fd(Rank& r, int& fd, std::string& buf, int /*log_fd*/, bool is_err, bool flush_all) {
  if (fd < 0) return;
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n > 0) {
      buf.append(chunk, static_cast<size_t>(n));
      (is_err ? r.err_data_t : r.out_data_t) = unix_now();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {  // EOF: the rank (and everything holding the pipe) is gone
      ::close(fd);
      fd = -1;
      flush_all = true;
    }
    break;
  }
  double t = unix_now();
  size_t pos;
  while ((pos = buf.find('\n')) != std::string::npos) {
    std::string line = buf.substr(0, pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    buf.erase(0, pos + 1);
    on_output_line(r, line, is_err, t);
  }
  // A progress bar (tqdm: Lightning's, HF's, accelerate's) redraws in place with '\r' and
  // ends its line only when it closes, often at the end of training: without this its
  // rank would print nothing for the whole run. Each complete redraw is read now: one that
  // is progress (the progress table) is logged at most once a second, the newest one;
  // any other text between carriage returns is logged as a line of its own.
  // tqdm writes "\r" + the bar in one write() (the carriage return first), so the text after
  // the last '\r' is the bar as it stands now, not a partial line: once the pipe is drained
  // and that text is a whole bar (a progress-table match ending in tqdm's closing ']'), it
  // is read now. Waiting for the next '\r' would date it at the next redraw, seconds later
  // (tqdm redraws a stalled bar only from its monitor thread, every 10 s).
  if (!flush_all && !buf.empty()) {
    size_t last_cr = buf.rfind('\r');
    if (last_cr != std::string::npos && buf.size() > last_cr + 1 && buf.back() == ']' &&
        buf.find('\n', last_cr) == std::string::npos && match_progress(std::string_view(buf).substr(last_cr + 1)))
      buf.push_back('\r'), last_cr = buf.size() - 1;
    if (last_cr != std::string::npos) {
      std::string_view done(buf.data(), last_cr);
      std::string newest_progress;
      size_t start = 0;
      while (start <= done.size()) {
        size_t end = done.find('\r', start);
        if (end == std::string_view::npos) end = done.size();
        std::string seg(done.substr(start, end - start));
        if (!seg.empty()) {
          // A redraw that is not logged may still be the text a fault waits for.
          if (match_progress(seg)) note_output_trigger(seg), newest_progress = std::move(seg);
          else on_output_line(r, seg, is_err, t);
        }
        start = end + 1;
      }
      if (!newest_progress.empty() && t - r.last_redraw_t >= 1.0) {
        r.last_redraw_t = t;
        (is_err ? r.err_redraw : r.out_redraw).clear();  // superseded by this one
        on_output_line(r, newest_progress, is_err, t);
      } else if (!newest_progress.empty()) {
        if (!r.has_trace) {
          watchdog_->output_line(r, mono_now());  // progress all the same, only not logged yet
          if (auto pm = match_progress(newest_progress)) {
            const long long n = pm->step ? *pm->step : pm->epoch ? static_cast<long long>(*pm->epoch) : 0;
            r.init_done = true;
            if (n > 0) r.last_step = std::max(r.last_step, static_cast<int>(n));
          }
        }
        if (r.rank >= 0) {  // (a launcher's console lines are its own: on_launcher_line)
          (is_err ? r.err_redraw : r.out_redraw) = std::move(newest_progress);
          (is_err ? r.err_redraw_t : r.out_redraw_t) = t;
        }
      }
      buf.erase(0, last_cr + 1);
    }
  }
  if (flush_all && !buf.empty()) {
    const double data_t = is_err ? r.err_data_t : r.out_data_t;
    on_output_line(r, buf, is_err, data_t > 0 ? data_t : t);
    buf.clear();
  }
  if (flush_all) log_pending_redraw(r, is_err);
}

void Supervisor::pump_output(double timeout_s) {
  std::vector<pollfd> pfds;
  std::vector<std::pair<Rank*, bool>> owners;
  for (auto& r : ranks_) {
    if (r->out_fd >= 0) pfds.push_back({r->out_fd, POLLIN, 0}), owners.push_back({r.get(), false});
    if (r->err_fd >= 0) pfds.push_back({r->err_fd, POLLIN, 0}), owners.push_back({r.get(), true});
  }
  if (launcher_) {
    if (launcher_->out_fd >= 0) pfds.push_back({launcher_->out_fd, POLLIN, 0}), owners.push_back({launcher_.get(), false});
    if (launcher_->err_fd >= 0) pfds.push_back({launcher_->err_fd, POLLIN, 0}), owners.push_back({launcher_.get(), true});
  }
  if (opts_.interrupt_fd >= 0) pfds.push_back({opts_.interrupt_fd, POLLIN, 0}), owners.push_back({nullptr, false});
  // A rank's pidfd turns readable the moment it dies: the loop wakes then, and the death
  // is dated then, whatever the pipes, the tick or the launcher do.
  const size_t first_pidfd = pfds.size();
  std::vector<Rank*> pidfd_owners;
  for (auto& r : ranks_)
    if (r->alive && r->pidfd >= 0) pfds.push_back({r->pidfd, POLLIN, 0}), pidfd_owners.push_back(r.get());
  int ms = static_cast<int>(timeout_s * 1000);
  // A redraw held back for a second is logged now, though the bar has not moved since: a
  // stalled bar is where its rank stands.
  const double now = unix_now();
  for (auto& r : ranks_) {
    if (now - r->last_redraw_t < 1.0) continue;
    for (bool is_err : {false, true})
      if (!(is_err ? r->err_redraw : r->out_redraw).empty()) r->last_redraw_t = now, log_pending_redraw(*r, is_err);
  }
  int n = ::poll(pfds.data(), pfds.size(), ms);
  if (n <= 0) return;
  for (size_t i = first_pidfd; i < pfds.size(); ++i)
    if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) note_gone(*pidfd_owners[i - first_pidfd]);
  for (size_t i = 0; i < first_pidfd; ++i) {
    if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    Rank* r = owners[i].first;
    if (!r) continue;  // the interrupt pipe is checked by the loop
    if (owners[i].second)
      drain_fd(*r, r->err_fd, r->err_buf, r->err_log, true, false);
    else
      drain_fd(*r, r->out_fd, r->out_buf, r->out_log, false, false);
  }
}

void Supervisor::tail_trace(Rank& r) {
  int fd = ::open(r.trace_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char chunk[65536];
  for (;;) {
    ssize_t n = ::pread(fd, chunk, sizeof chunk, r.trace_off);
    if (n <= 0) break;
    r.trace_off += n;
    r.trace_partial.append(chunk, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t pos;
  while ((pos = r.trace_partial.find('\n')) != std::string::npos) {
    std::string line = r.trace_partial.substr(0, pos);
    r.trace_partial.erase(0, pos + 1);
    json ev = json::parse(line, nullptr, false);
    if (ev.is_discarded() || !ev.is_object()) continue;  // a torn line from a killed rank
    on_trace_event(r, ev);
  }
}

void Supervisor::on_trace_event(Rank& r, const json& ev) {
  r.has_trace = r.spoke = true;
  if (const double te = ev.value("t", unix_now()); first_sign_t_ == 0 || te < first_sign_t_) first_sign_t_ = te;
  std::string kind = ev.value("ev", "");
  double now = mono_now();
  if (kind == "hb") {
    r.last_hb_mono = now;
    return;
  }
  // Every traced event proves the process runs (the heartbeat thread may lag behind it).
  r.last_hb_mono = now;
  watchdog_->traced_progress(now);
  if (kind == "start" && r.external && r.pid <= 0) {
    tail_exec_records(r);  // the exec record, where there is one, comes first and says the same
    if (r.pid <= 0) {
      r.pid = ev.value("pid", 0);
      if (opts_.state && r.pid > 0) opts_.state->process(r.pid, fmt::format("rank {} (via the launcher)", r.rank));
      r.pidfd = open_pidfd(r.pid);
    }
  } else if (kind == "exit" && r.external) {
    r.traced_exit = ev.value("code", 0);
  }
  if (kind == "step") {
    r.last_step = std::max(r.last_step, ev.value("step", 0));
  } else if (kind == "coll") {
    r.in_collective = ev.value("edge", "") == "begin";
  } else if (kind == "phase") {
    const std::string name = ev.value("name", ""), edge = ev.value("edge", "");
    if (name == "init" && edge == "end") r.init_done = true;
    if (name == "checkpoint") r.in_checkpoint = edge == "begin";
    if (name == "eval") r.in_eval = edge == "begin";
    if (name == "shutdown") r.in_shutdown = edge == "begin";
  } else if (kind == "error") {
    const std::string cls = ev.value("class", "");
    double t = ev.value("t", unix_now());
    std::string detail = ev.value("msg", "");
    detail = utf8_prefix(detail, 300);
    if (const DetectorInfo* det = backend_detector_for_trace_class(cls)) detect(det->name, r.rank, detail, t);
  } else if (kind == "fault") {
    for (auto& f : faults_) {
      if (f.fired || !f.injector->in_process() || f.injector->hook_kind() != ev.value("kind", "")) continue;
      bool targeted = false;
      for (int x : f.spec->ranks) targeted = targeted || x == r.rank;
      if (targeted) record_fault(f, fmt::format("rank {}: {}", r.rank, ev.value("detail", "")), ev.value("t", unix_now()));
    }
  }
}

}  // namespace hanglab

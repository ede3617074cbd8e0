// Unit tests of the rank trace writer and the heartbeat thread.
#include "trace.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <iterator>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

using hanglab::Heartbeat;
using hanglab::Trace;
using hanglab::TraceFields;
using nlohmann::json;

namespace {

std::string temp_path(const std::string& name) {
  char dir_template[] = "/tmp/hanglab_trace_test.XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  REQUIRE(dir != nullptr);
  return std::string(dir) + "/sub/" + name;  // sub/ checks that parents are created
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Every line must be one complete JSON object with t/rank/ev; returns them parsed.
std::vector<json> parse_all(const std::string& path) {
  std::vector<json> out;
  for (const auto& line : read_lines(path)) {
    json j;
    INFO("line: " << line.substr(0, 200));
    REQUIRE_NOTHROW(j = json::parse(line));
    REQUIRE(j.is_object());
    REQUIRE(j.contains("t"));
    REQUIRE(j["t"].is_number());
    REQUIRE(j.contains("rank"));
    REQUIRE(j.contains("ev"));
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace

TEST_CASE("trace lines carry t, rank, ev first and the event fields in order", "[trace]") {
  const std::string path = temp_path("events.jsonl");
  const double before = hanglab::unix_time_now();
  {
    Trace trace(path, 3);
    REQUIRE(trace.enabled());
    trace.emit("start", {{"pid", 42}, {"host", "h"}, {"world_size", 4}});
    trace.emit("coll", {{"edge", "begin"}, {"seq", 7}, {"op", "allreduce"}, {"numel", 4225}, {"step", 5}});
    trace.emit("hb");
  }
  const double after = hanglab::unix_time_now();
  const auto events = parse_all(path);
  REQUIRE(events.size() == 3);
  CHECK(events[0]["ev"] == "start");
  CHECK(events[0]["rank"] == 3);
  CHECK(events[0]["pid"] == 42);
  CHECK(events[1]["seq"] == 7);
  CHECK(events[1]["op"] == "allreduce");
  CHECK(events[2]["ev"] == "hb");
  for (const auto& e : events) {
    CHECK(e["t"].get<double>() >= before - 1e-6);
    CHECK(e["t"].get<double>() <= after + 1e-6);
  }
  const auto lines = read_lines(path);
  CHECK(lines[1].rfind("{\"t\":", 0) == 0);
  CHECK(lines[1].find("\"rank\":3,\"ev\":\"coll\",\"edge\":\"begin\",\"seq\":7") != std::string::npos);
}

TEST_CASE("trace time has microsecond precision and NaN becomes null", "[trace]") {
  const std::string line = Trace::format_line(1718000000.123456, 1, "step",
                                              {{"step", 5}, {"loss", std::nan("")}, {"dur_ms", 101.5}});
  CHECK(line.rfind("{\"t\":1718000000.123456,\"rank\":1,\"ev\":\"step\",", 0) == 0);
  CHECK(line.back() == '\n');
  const json j = json::parse(line);
  CHECK(j["loss"].is_null());
  CHECK(j["t"].get<double>() == Approx(1718000000.123456).epsilon(1e-15));
  // Reserved keys in the fields cannot override the header.
  const json k = json::parse(Trace::format_line(1.0, 2, "hb", {{"rank", 99}, {"ev", "x"}}));
  CHECK(k["rank"] == 2);
  CHECK(k["ev"] == "hb");
}

TEST_CASE("each event is on disk as soon as emit returns", "[trace]") {
  const std::string path = temp_path("events.jsonl");
  Trace trace(path, 0);
  trace.emit("step", {{"step", 1}});
  // Read through an independent descriptor while the writer stays open: nothing may
  // sit in a user-space buffer, or a SIGKILL right now would lose it.
  auto lines = read_lines(path);
  REQUIRE(lines.size() == 1);
  CHECK(json::parse(lines[0])["step"] == 1);
  trace.emit("step", {{"step", 2}});
  lines = read_lines(path);
  REQUIRE(lines.size() == 2);
}

TEST_CASE("disabled trace when HANGLAB_TRACE is unset", "[trace]") {
  ::unsetenv("HANGLAB_TRACE");
  Trace trace = Trace::from_env(1);
  CHECK_FALSE(trace.enabled());
  CHECK(trace.rank() == 1);
  trace.emit("hb");  // no-op, must not crash
  Heartbeat hb(trace, std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  hb.stop();
}

TEST_CASE("HANGLAB_TRACE_OFF switches the trace off -- \"0\" or empty leaves it on", "[trace]") {
  const std::string path = temp_path("off.jsonl");
  ::setenv("HANGLAB_TRACE", path.c_str(), 1);
  ::setenv("HANGLAB_TRACE_OFF", "1", 1);
  CHECK(hanglab::trace_switched_off());
  {
    Trace trace = Trace::from_env(0);
    CHECK_FALSE(trace.enabled());
    trace.emit("step", {{"step", 1}});
  }
  CHECK_FALSE(std::ifstream(path).good());
  for (const char* on : {"0", "", "ab"}) {
    ::setenv("HANGLAB_TRACE_OFF", on, 1);
    CHECK_FALSE(hanglab::trace_switched_off());
    CHECK(hanglab::trace_alternating() == (std::string(on) == "ab"));
    CHECK(Trace::from_env(0).enabled());
  }
  ::unsetenv("HANGLAB_TRACE_OFF");
  ::unsetenv("HANGLAB_TRACE");
}

TEST_CASE("a paused trace writes nothing -- the ABBA rule of HANGLAB_TRACE_OFF=ab", "[trace]") {
  const std::string path = temp_path("paused.jsonl");
  Trace trace(path, 0);
  trace.emit("step", {{"step", 1}});
  trace.pause(true);
  trace.emit("step", {{"step", 2}});
  trace.pause(false);
  trace.emit("step", {{"step", 3}});
  const auto events = parse_all(path);
  REQUIRE(events.size() == 2);
  CHECK(events[1]["step"] == 3);
  std::vector<int> traced;
  for (int s = 1; s <= 8; ++s)
    if (hanglab::trace_step_traced(s)) traced.push_back(s);
  CHECK(traced == std::vector<int>{1, 4, 5, 8});
}

TEST_CASE("StepTimes writes each step's start-to-next-start time, with %r as the rank", "[trace]") {
  const std::string path = temp_path("steps.%r.txt");
  ::setenv("HANGLAB_STEP_TIMES", path.c_str(), 1);
  hanglab::StepTimes st = hanglab::StepTimes::from_env(3);
  ::unsetenv("HANGLAB_STEP_TIMES");
  REQUIRE(st.enabled());
  for (int s = 1; s <= 3; ++s) {
    st.begin_step(s, s != 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  st.end();
  st.write();
  std::string want = path;
  want.replace(want.find("%r"), 2, "3");
  std::ifstream in(want);
  REQUIRE(in.good());
  int step = 0, n = 0, traced = 0;
  double ms = 0;
  while (in >> step >> ms >> traced) {
    ++n;
    CHECK(step == n);
    CHECK(traced == (n != 2 ? 1 : 0));
    CHECK(ms >= 19.5);
    CHECK(ms < 500);
  }
  CHECK(n == 3);
  CHECK_FALSE(hanglab::StepTimes().enabled());
}

TEST_CASE("from_env opens HANGLAB_TRACE and fails loudly on a bad path", "[trace]") {
  const std::string path = temp_path("env.jsonl");
  ::setenv("HANGLAB_TRACE", path.c_str(), 1);
  {
    Trace trace = Trace::from_env(2);
    CHECK(trace.enabled());
    trace.emit("exit", {{"code", 0}});
  }
  const auto events = parse_all(path);
  REQUIRE(events.size() == 1);
  CHECK(events[0]["rank"] == 2);
  ::setenv("HANGLAB_TRACE", "/proc/hanglab-no-such-dir/x.jsonl", 1);
  CHECK_THROWS_AS(Trace::from_env(0), std::system_error);
  ::unsetenv("HANGLAB_TRACE");
}

TEST_CASE("heartbeat and main-thread lines never interleave under concurrency", "[trace][heartbeat]") {
  const std::string path = temp_path("events.jsonl");
  Trace trace(path, 0);
  constexpr int kMainLines = 4000;
  constexpr int kHelperLines = 4000;
  // Long payloads make a torn write (two buffered halves) much more likely to show.
  const std::string payload(1500, 'x');
  {
    Heartbeat hb(trace, std::chrono::milliseconds(1));
    std::thread helper([&] {
      for (int i = 0; i < kHelperLines; ++i) trace.emit("fault", {{"kind", "helper"}, {"i", i}, {"detail", payload}});
    });
    for (int i = 0; i < kMainLines; ++i) trace.emit("step", {{"step", i}, {"detail", payload}});
    helper.join();
    hb.stop();
  }
  const auto events = parse_all(path);
  int main_lines = 0, helper_lines = 0, hb_lines = 0, next_step = 0, next_helper = 0;
  for (const auto& e : events) {
    if (e["ev"] == "step") {
      CHECK(e["step"] == next_step++);  // each writer's own lines stay in order
      CHECK(e["detail"].get<std::string>().size() == payload.size());
      ++main_lines;
    } else if (e["ev"] == "fault") {
      CHECK(e["i"] == next_helper++);
      ++helper_lines;
    } else if (e["ev"] == "hb") {
      ++hb_lines;
    } else {
      FAIL("unexpected event " << e.dump());
    }
  }
  CHECK(main_lines == kMainLines);
  CHECK(helper_lines == kHelperLines);
  CHECK(hb_lines >= 1);
}

TEST_CASE("O_APPEND: two descriptors and a second process append without loss", "[trace]") {
  const std::string path = temp_path("events.jsonl");
  constexpr int kPerWriter = 2000;
  Trace first(path, 0);
  Trace second(path, 1);  // a second open file description on the same file
  first.emit("start");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The child appends through its own descriptor while the parent keeps writing.
    Trace child_trace(path, 2);
    for (int i = 0; i < kPerWriter; ++i) child_trace.emit("step", {{"step", i}});
    ::_exit(0);
  }
  std::thread other([&] {
    for (int i = 0; i < kPerWriter; ++i) second.emit("step", {{"step", i}});
  });
  for (int i = 0; i < kPerWriter; ++i) first.emit("step", {{"step", i}});
  other.join();
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  const auto events = parse_all(path);
  std::map<int, int> per_rank;
  for (const auto& e : events) {
    if (e["ev"] == "step") ++per_rank[e["rank"].get<int>()];
  }
  // Without O_APPEND the two descriptors would overwrite each other from their own offsets.
  CHECK(events.size() == 1 + 3 * kPerWriter);
  CHECK(per_rank[0] == kPerWriter);
  CHECK(per_rank[1] == kPerWriter);
  CHECK(per_rank[2] == kPerWriter);
}

TEST_CASE("heartbeat writes about one hb per period and stops promptly", "[heartbeat]") {
  const std::string path = temp_path("events.jsonl");
  Trace trace(path, 0);
  Heartbeat hb(trace, std::chrono::milliseconds(50));
  std::this_thread::sleep_for(std::chrono::milliseconds(520));
  const auto t0 = std::chrono::steady_clock::now();
  hb.stop();
  const auto stop_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  CHECK(stop_ms < 100);
  hb.stop();  // idempotent
  const auto events = parse_all(path);
  // First hb at start, then one per 50 ms: ~11 in 520 ms; allow scheduler slack on a
  // loaded CI box, but not a burst or a stall.
  CHECK(events.size() >= 6);
  CHECK(events.size() <= 14);
  for (const auto& e : events) CHECK(e["ev"] == "hb");
  for (size_t i = 1; i < events.size(); ++i) {
    const double gap = events[i]["t"].get<double>() - events[i - 1]["t"].get<double>();
    CHECK(gap > 0.030);
    CHECK(gap < 0.200);
  }
}

TEST_CASE("heartbeat stop() wakes the thread instead of waiting out the period", "[heartbeat]") {
  const std::string path = temp_path("events.jsonl");
  Trace trace(path, 0);
  Heartbeat hb(trace, std::chrono::seconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = std::chrono::steady_clock::now();
  hb.stop();
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
  CHECK(parse_all(path).size() == 1);  // just the immediate first hb
}

// The complete lines written so far (the writer may be mid-line), parsed; for polling.
std::vector<json> complete_events(const std::string& path) {
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<json> out;
  size_t begin = 0;
  for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', begin)) {
    json j = json::parse(text.substr(begin, nl - begin), nullptr, false);
    if (j.is_object() && j.contains("t")) out.push_back(std::move(j));
    begin = nl + 1;
  }
  return out;
}

double wall_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Polls until pred(events) holds; false after a deadline far beyond any scheduling delay.
template <typename Pred>
bool wait_for_events(const std::string& path, Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred(complete_events(path))) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

// Ordered by what the child wrote, not by sleeps: on a loaded host the child may start,
// stop or resume late, so the test waits for the events it needs before each step.
TEST_CASE("heartbeat resumes after SIGSTOP/SIGCONT with one hb, not a burst", "[heartbeat]") {
  const std::string path = temp_path("events.jsonl");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    Trace trace(path, 0);
    Heartbeat hb(trace, std::chrono::milliseconds(40));
    std::this_thread::sleep_for(std::chrono::seconds(60));
    ::_exit(0);
  }
  struct Reap {
    pid_t pid;
    ~Reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{child};
  REQUIRE(wait_for_events(path, [](const std::vector<json>& ev) { return ev.size() >= 3; }));
  ::kill(child, SIGSTOP);
  const double t_stop = wall_now();  // after kill: every stamp before the stop is earlier
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // ~10 missed periods
  const double t_cont = wall_now();
  ::kill(child, SIGCONT);
  // Two heartbeats stamped after the resume.
  REQUIRE(wait_for_events(path, [&](const std::vector<json>& ev) {
    int after = 0;
    for (const auto& e : ev) after += e["t"].get<double>() >= t_cont ? 1 : 0;
    return after >= 2;
  }));
  const auto events = complete_events(path);
  size_t first_after = 0;
  while (first_after < events.size() && events[first_after]["t"].get<double>() < t_cont) ++first_after;
  REQUIRE(first_after > 0);
  REQUIRE(first_after + 1 < events.size());
  // A frozen process writes nothing: no event is stamped inside the stop.
  const double before = events[first_after - 1]["t"].get<double>();
  CHECK(before <= t_stop + 0.005);
  CHECK(events[first_after]["t"].get<double>() - before > 0.39);
  // The next hb waits a period instead of catching up the missed ones in a burst.
  const double after_resume = events[first_after + 1]["t"].get<double>() - events[first_after]["t"].get<double>();
  CHECK(after_resume > 0.025);
}

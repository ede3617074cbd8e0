// Progress of a multi-run command (`hanglab run` over many scenarios, `hanglab validate`)
// on the terminal: "[i/n] scenario  elapsed  state", refreshed in place on stderr when
// stderr is a TTY, plain lines ("[i/n] scenario ...") when it is not (CI logs, pipes).
// Results go to stdout; the status line is cleared before each result so the two never
// interleave on a terminal. Colour only on a TTY and only without NO_COLOR
// (https://no-color.org).
//
// state() is called from the supervisor's loop (RunOptions::on_state); a ticker thread
// redraws the line so the elapsed time moves while a run is quiet.
#pragma once

#include <atomic>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace hanglab {

// True when `stream` is a terminal and NO_COLOR is unset or empty.
bool color_enabled(FILE* stream);
// Wraps a verdict word (PASS, FAIL, UNKNOWN, SKIPPED) found at the start of `line` in
// ANSI colour when `color` is set; otherwise returns the line unchanged.
std::string colorize_verdict(const std::string& line, bool color);

class Progress {
 public:
  // quiet: print nothing to stderr at all (e.g. --json output).
  explicit Progress(size_t total, bool quiet = false);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void set_total(size_t total);
  // Starts the next item (1-based numbering); on a non-terminal prints one line.
  void begin(const std::string& label);
  // Thread-safe; shown on the status line of a terminal, ignored otherwise.
  void state(const std::string& s);
  std::function<void(const std::string&)> state_callback();
  // Clears the status line and prints `line` (plus newline) to stdout, colouring a
  // leading verdict word when stdout is a colour terminal.
  void result(const std::string& line);
  // Clears the status line for good (before a summary table).
  void done();

 private:
  void redraw_locked();
  void clear_locked();
  void ticker();

  std::mutex mu_;
  size_t total_ = 0, index_ = 0;
  std::string label_, state_;
  double begin_mono_ = 0;
  bool tty_ = false, color_ = false, stdout_color_ = false, quiet_ = false;
  bool drawn_ = false;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace hanglab

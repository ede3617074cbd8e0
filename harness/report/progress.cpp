// Terminal progress for multi-run commands; see progress.hpp.
#include "report/progress.hpp"

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include "util.hpp"

namespace hanglab {

bool color_enabled(FILE* stream) {
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  return ::isatty(::fileno(stream)) == 1;
}

std::string colorize_verdict(const std::string& line, bool color) {
  if (!color) return line;
  static const std::pair<const char*, const char*> kColors[] = {
      {"PASS", "\033[32m"}, {"FAIL", "\033[1;31m"}, {"UNKNOWN", "\033[35m"}, {"SKIPPED", "\033[33m"}};
  for (const auto& [word, code] : kColors) {
    const size_t n = std::char_traits<char>::length(word);
    if (line.compare(0, n, word) == 0) return code + line.substr(0, n) + "\033[0m" + line.substr(n);
  }
  return line;
}

Progress::Progress(size_t total, bool quiet) : total_(total), quiet_(quiet) {
  tty_ = !quiet && ::isatty(STDERR_FILENO) == 1;
  color_ = tty_ && color_enabled(stderr);
  stdout_color_ = color_enabled(stdout);
  // Only a terminal gets the in-place line, so only a terminal needs the ticker.
  if (tty_) thread_ = std::thread([this] { ticker(); });
}

Progress::~Progress() {
  done();
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Progress::set_total(size_t total) {
  std::lock_guard<std::mutex> lock(mu_);
  total_ = total;
}

void Progress::begin(const std::string& label) {
  std::lock_guard<std::mutex> lock(mu_);
  ++index_;
  label_ = label;
  state_ = "starting";
  begin_mono_ = mono_now();
  if (quiet_) return;
  if (tty_) {
    redraw_locked();
  } else {
    std::cerr << fmt::format("[{}/{}] {} ...", index_, std::max(total_, index_), label_) << std::endl;
  }
}

void Progress::state(const std::string& s) {
  std::lock_guard<std::mutex> lock(mu_);
  state_ = s;
}

std::function<void(const std::string&)> Progress::state_callback() {
  return [this](const std::string& s) { state(s); };
}

void Progress::result(const std::string& line) {
  std::lock_guard<std::mutex> lock(mu_);
  clear_locked();
  std::cout << colorize_verdict(line, stdout_color_) << std::endl;
}

void Progress::done() {
  std::lock_guard<std::mutex> lock(mu_);
  clear_locked();
  label_.clear();
}

void Progress::clear_locked() {
  if (tty_ && drawn_) {
    std::cerr << "\r\033[2K" << std::flush;
    drawn_ = false;
  }
}

void Progress::redraw_locked() {
  if (!tty_ || label_.empty()) return;
  winsize ws{};
  int cols = ::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 100;
  std::string text = fmt::format("[{}/{}] {}  {:.1f}s  {}", index_, std::max(total_, index_), label_,
                                 mono_now() - begin_mono_, state_);
  // A line that wraps cannot be redrawn with \r: keep it inside the terminal width.
  if (static_cast<int>(text.size()) > cols - 1) text.resize(static_cast<size_t>(std::max(cols - 1, 0)));
  std::cerr << "\r\033[2K" << (color_ ? "\033[36m" : "") << text << (color_ ? "\033[0m" : "") << std::flush;
  drawn_ = true;
}

void Progress::ticker() {
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::lock_guard<std::mutex> lock(mu_);
    redraw_locked();
  }
}

}  // namespace hanglab

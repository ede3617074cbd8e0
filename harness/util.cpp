#include "util.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/time.h>
#include <unistd.h>

#include <fmt/format.h>

namespace hanglab {

double unix_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

double mono_now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

std::string utc_stamp(double unix_t) {
  time_t s = static_cast<time_t>(unix_t);
  tm tmv{};
  gmtime_r(&s, &tmv);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tmv);
  return buf;
}

std::string iso_time(double unix_t) {
  time_t s = static_cast<time_t>(unix_t);
  long us = static_cast<long>((unix_t - static_cast<double>(s)) * 1e6);
  if (us < 0) us = 0;
  if (us > 999999) us = 999999;
  tm tmv{};
  gmtime_r(&s, &tmv);
  char buf[40];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tmv);
  return fmt::format("{}.{:06d}Z", buf, us);
}

std::string utf8_prefix(const std::string& s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  // Back up over continuation bytes (10xxxxxx) to the start of the cut character.
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

std::string rank_ranges(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    if (j - i >= 2) {
      out += fmt::format("{}-{}", ranks[i], ranks[j]);
    } else {
      for (size_t k = i; k <= j; ++k) out += (k > i ? "," : "") + std::to_string(ranks[k]);
    }
    i = j + 1;
  }
  return out;
}

void throw_system_error(const std::string& call, const std::string& context) {
  int e = errno;
  throw std::runtime_error(fmt::format("{}: {} failed: {} (errno {})", context, call, std::strerror(e), e));
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw_system_error("open", p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::filesystem::path& p, const std::string& data) {
  auto tmp = p;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw_system_error("open", tmp.string());
    out << data;
    if (!out) throw_system_error("write", tmp.string());
  }
  std::filesystem::rename(tmp, p);
}

JsonlWriter::JsonlWriter(const std::filesystem::path& p) {
  fd_ = ::open(p.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw_system_error("open", p.string());
}

JsonlWriter::~JsonlWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlWriter::write(const nlohmann::json& obj) {
  if (fd_ < 0) return;
  std::string line = obj.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_system_error("write", "harness.jsonl");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace hanglab

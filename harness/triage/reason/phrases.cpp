#include "triage/reason/phrases.hpp"

#include <fmt/format.h>

#include <map>

#include "util.hpp"

namespace hanglab::reason {

std::string signal_name(int sig) {
  static const std::map<int, const char*> kNames = {
      {1, "SIGHUP"},  {2, "SIGINT"},   {3, "SIGQUIT"},  {4, "SIGILL"},   {6, "SIGABRT"},  {7, "SIGBUS"},  {8, "SIGFPE"},
      {9, "SIGKILL"}, {11, "SIGSEGV"}, {13, "SIGPIPE"}, {15, "SIGTERM"}, {24, "SIGXCPU"}, {25, "SIGXFSZ"}};
  auto it = kNames.find(sig);
  return it != kNames.end() ? it->second : fmt::format("signal {}", sig);
}

std::string ranks_phrase(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", rank_ranges(ranks));
}

std::string ranks_phrase_counted(const std::vector<int>& ranks) {
  std::string s = ranks_phrase(ranks);
  if (ranks.size() > 8) s += fmt::format(" ({} ranks)", ranks.size());
  return s;
}

}  // namespace hanglab::reason

#include "detect/backend_timeout.hpp"

namespace hanglab {

constexpr DetectorInfo kBackendTimeout{
    "backend_timeout",
    DetectorSource::kBackend,
    "collective_s",
    1,
    "collective_s (init_s in rendezvous)",
    "the rank entered the collective (or the store wait)",
    ClockStart::kCollectiveEntry,
    "",
    "timeout",
    "hang",
    "#d9730d",
    "a collective raised a timeout (trace error class timeout, or the backend's log line)",
    /*timed=*/true,
    /*expectable=*/true,
    {{{"init", "init_s"}, {}}},
};

const std::vector<std::string_view>& backend_timeout_patterns() {
  static const std::vector<std::string_view> kTimeout = {"Timed out waiting",
                                                         "Watchdog caught collective operation timeout",
                                                         "timed out after", "Socket Timeout",
                                                         "DistStoreError: Timed out"};
  return kTimeout;
}

bool is_backend_timeout_line(std::string_view line) {
  for (std::string_view p : backend_timeout_patterns())
    if (line.find(p) != std::string_view::npos) return true;
  return false;
}

}  // namespace hanglab

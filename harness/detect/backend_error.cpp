#include "detect/backend_error.hpp"

#include "detect/backend_timeout.hpp"

namespace hanglab {

constexpr DetectorInfo kBackendError{
    "backend_error",
    DetectorSource::kBackend,
    "",
    0,
    "none (reacts to the peer's failure)",
    "the fault (a peer's connection closed or reset)",
    ClockStart::kFault,
    "rank_exit",
    "peer_closed",
    "",
    "#b42318",
    "peer closed, connection reset, NCCL error (trace error class comm, or the backend's log line)",
};

const std::vector<std::string_view>& backend_error_patterns() {
  static const std::vector<std::string_view> kError = {"Connection closed by peer", "Connection reset by peer",
                                                       "Broken pipe", "NCCL error", "ncclRemoteError",
                                                       "ncclSystemError", "Read error",
                                                       "remote process exited or there was a network error"};
  return kError;
}

bool is_backend_error_line(std::string_view line) {
  for (std::string_view p : backend_error_patterns())
    if (line.find(p) != std::string_view::npos) return true;
  return false;
}

const DetectorInfo* classify_backend_line(std::string_view line) {
  if (is_backend_timeout_line(line)) return &kBackendTimeout;
  if (is_backend_error_line(line)) return &kBackendError;
  return nullptr;
}

const DetectorInfo* backend_detector_for_trace_class(std::string_view cls) {
  if (cls == kBackendTimeoutTraceClass) return &kBackendTimeout;
  if (cls == kBackendErrorTraceClass) return &kBackendError;
  return nullptr;
}

}  // namespace hanglab

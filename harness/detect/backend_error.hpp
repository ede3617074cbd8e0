// backend_error: a rank's communication backend failed on a peer (connection closed or reset,
// an NCCL error): a trace `error` event of class "comm", or for a bring-your-own rank the
// text its backend prints (the patterns below, unchanged from the supervisor's table).
#pragma once

#include <string_view>
#include <vector>

#include "detect/detector.hpp"

namespace hanglab {

extern const DetectorInfo kBackendError;

inline constexpr std::string_view kBackendErrorTraceClass = "comm";

const std::vector<std::string_view>& backend_error_patterns();
bool is_backend_error_line(std::string_view line);

// The backend detector an output line of a rank without a trace stands for: backend_timeout
// first (a timeout message may also say the connection closed), then backend_error; nullptr
// for any other line.
const DetectorInfo* classify_backend_line(std::string_view line);

// The backend detector of a trace `error` event's class ("timeout", "comm"); nullptr else.
const DetectorInfo* backend_detector_for_trace_class(std::string_view cls);

}  // namespace hanglab

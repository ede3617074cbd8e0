// backend_timeout: a rank's communication backend gave up waiting (a collective or the store
// timed out). A rank with a hanglab trace reports it as an `error` event of class "timeout";
// a bring-your-own rank only in its logs, recognised by the text its backend prints (the
// patterns below, unchanged from the supervisor's original table).
#pragma once

#include <string_view>
#include <vector>

#include "detect/detector.hpp"

namespace hanglab {

extern const DetectorInfo kBackendTimeout;

// The trace `error` event's class that is this detector's.
inline constexpr std::string_view kBackendTimeoutTraceClass = "timeout";

// Text a backend prints when it times out (substrings of one output line).
const std::vector<std::string_view>& backend_timeout_patterns();
bool is_backend_timeout_line(std::string_view line);

}  // namespace hanglab

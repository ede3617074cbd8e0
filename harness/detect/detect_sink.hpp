// How a runtime detector reports: the supervisor passes a DetectFn that records the
// detection (harness.jsonl, run facts) at most once per detector and rank.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace hanglab {

// (detector name, rank or -1 for the whole job, detail, Unix time of the firing)
using DetectFn = std::function<void(std::string_view, int, const std::string&, double)>;

}  // namespace hanglab

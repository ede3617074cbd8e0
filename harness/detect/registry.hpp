// The detectors, one list (registry.cpp): every detector hanglab knows, runtime and
// post-mortem, with the setting it is bound to, what starts its clock, what it reports, its
// colour and description (detector.hpp). Scenario validation (detected_by names), `hanglab
// validate` (which setting a detection measures), bench (bounds and clocks), the HTML report
// and bench charts (colours) and the tooling matrix (which tool column a detector feeds) read
// it; registry_test.cpp fails when a detector name appears anywhere in the sources without
// being here. Adding a detector: its file in harness/detect/, one line in registry.cpp, a
// scenario and a test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "detect/detector.hpp"

namespace hanglab {

// Every detector, in the order reports list them.
const std::vector<const DetectorInfo*>& detector_registry();

// nullptr when no detector has that name.
const DetectorInfo* find_detector(std::string_view name);

// The names of the detectors a scenario may list in detected_by / not_detected_by.
std::vector<std::string> expectable_detector_names();

// The colour of a detector's marks; a neutral grey for a name not in the registry.
std::string detector_colour(std::string_view name);

// The bound of a detection in seconds, given the value of its setting: factor x value; 0 for a
// detector without a bound of its own.
double detector_bound_s(const DetectorInfo& d, double setting_value);

const char* source_name(DetectorSource s);  // harness | backend | recorder | analyzer

}  // namespace hanglab

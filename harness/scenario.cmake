# Scenario loading and validation, the expectation checker, and the JUnit writer.
add_library(hanglab_scenario STATIC scenario.cpp expect.cpp junit.cpp)
target_link_libraries(hanglab_scenario PUBLIC hanglab_headers)

hanglab_unit_test(scenario_test scenario_test.cpp hanglab_scenario)
hanglab_unit_test(expect_test expect_test.cpp hanglab_scenario)
hanglab_unit_test(junit_test junit_test.cpp hanglab_scenario)

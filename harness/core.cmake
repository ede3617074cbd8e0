# Launcher, supervisor, injectors, reports and the CLI.
set(HANGLAB_INJECTOR_SOURCES
  ${PROJECT_SOURCE_DIR}/injectors/injector_common.cpp
  ${PROJECT_SOURCE_DIR}/injectors/registry.cpp
  ${PROJECT_SOURCE_DIR}/injectors/kill_rank.cpp
  ${PROJECT_SOURCE_DIR}/injectors/skip_collective.cpp
  ${PROJECT_SOURCE_DIR}/injectors/uneven_batches.cpp
  ${PROJECT_SOURCE_DIR}/injectors/process_control.cpp
  ${PROJECT_SOURCE_DIR}/injectors/freeze_rank.cpp
  ${PROJECT_SOURCE_DIR}/injectors/throttle_cpu.cpp
  ${PROJECT_SOURCE_DIR}/injectors/exception_on_rank.cpp
  ${PROJECT_SOURCE_DIR}/injectors/oom_rank.cpp
)
add_library(hanglab_core STATIC
  util.cpp host.cpp workloads.cpp supervisor.cpp runner.cpp report.cpp
  ${HANGLAB_INJECTOR_SOURCES})
target_link_libraries(hanglab_core PUBLIC hanglab_headers hanglab_scenario hanglab_triage Threads::Threads)

add_executable(hanglab main.cpp)
target_link_libraries(hanglab PRIVATE hanglab_core CLI11::CLI11)

hanglab_unit_test(supervisor_test supervisor_test.cpp hanglab_core)
hanglab_unit_test(injector_contract_test ${PROJECT_SOURCE_DIR}/injectors/injector_contract_test.cpp hanglab_core)
hanglab_unit_test(process_faults_test ${PROJECT_SOURCE_DIR}/injectors/process_faults_test.cpp hanglab_core)

# End-to-end: every scenario file is a CTest test, labelled by its tags. Exit 4
# (unsupported here) is reported as skipped, never as passed. Scenario runs are timing
# sensitive on a 2-core machine, so they never overlap each other.
file(GLOB HANGLAB_SCENARIOS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/*.toml)
foreach(sc ${HANGLAB_SCENARIOS})
  get_filename_component(name ${sc} NAME_WE)
  file(STRINGS ${sc} tag_line REGEX "^tags *=")
  set(labels scenario)
  if(tag_line)
    string(REGEX MATCHALL "\"[^\"]+\"" tags "${tag_line}")
    foreach(t ${tags})
      string(REPLACE "\"" "" t ${t})
      list(APPEND labels ${t})
    endforeach()
  endif()
  add_test(NAME scenario.${name}
           COMMAND hanglab run ${sc} --results ${PROJECT_BINARY_DIR}/test-results)
  set_tests_properties(scenario.${name} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE 4
                       RESOURCE_LOCK ranks TIMEOUT 300)
endforeach()

add_test(NAME e2e.cleanup COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e_cleanup_test.sh
         $<TARGET_FILE:hanglab> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/e2e-cleanup)
set_tests_properties(e2e.cleanup PROPERTIES LABELS "e2e" RESOURCE_LOCK ranks TIMEOUT 300)
add_test(NAME e2e.bad_input COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e_bad_input_test.sh
         $<TARGET_FILE:hanglab> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/e2e-bad-input)
set_tests_properties(e2e.bad_input PROPERTIES LABELS "e2e" TIMEOUT 60)

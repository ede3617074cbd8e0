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
  ${PROJECT_SOURCE_DIR}/injectors/extra_collective.cpp
  ${PROJECT_SOURCE_DIR}/injectors/nan_skip.cpp
  ${PROJECT_SOURCE_DIR}/injectors/mismatched_collective.cpp
  ${PROJECT_SOURCE_DIR}/injectors/network_common.cpp
  ${PROJECT_SOURCE_DIR}/injectors/wrong_socket_ifname.cpp
  ${PROJECT_SOURCE_DIR}/injectors/wrong_master_addr.cpp
  ${PROJECT_SOURCE_DIR}/injectors/port_in_use.cpp
  ${PROJECT_SOURCE_DIR}/injectors/duplicate_rank.cpp
  ${PROJECT_SOURCE_DIR}/injectors/late_joiner.cpp
  ${PROJECT_SOURCE_DIR}/injectors/storage_common.cpp
  ${PROJECT_SOURCE_DIR}/injectors/tiny_shm.cpp
  ${PROJECT_SOURCE_DIR}/injectors/slow_storage.cpp
  ${PROJECT_SOURCE_DIR}/injectors/disk_full.cpp
)
add_library(hanglab_core STATIC
  util.cpp host.cpp workloads.cpp supervisor.cpp runner.cpp report.cpp
  run_record.cpp html_report.cpp history.cpp progress.cpp validate.cpp validate_run.cpp
  ${HANGLAB_INJECTOR_SOURCES})
# Run history (history.cpp) is an embedded SQLite database (Debian: libsqlite3-dev).
find_package(SQLite3 REQUIRED)
target_link_libraries(hanglab_core PUBLIC hanglab_headers hanglab_scenario hanglab_triage Threads::Threads
                      SQLite::SQLite3)
# The LibTorch version recorded with every run: the headers' TORCH_VERSION_{MAJOR,MINOR,PATCH}.
find_file(HANGLAB_TORCH_VERSION_H torch/version.h
          PATHS /usr/include/torch/csrc/api/include /usr/local/include/torch/csrc/api/include NO_DEFAULT_PATH)
if(HANGLAB_TORCH_VERSION_H)
  file(READ ${HANGLAB_TORCH_VERSION_H} _tv)
  string(REGEX MATCH "TORCH_VERSION_MAJOR ([0-9]+)" _m "${_tv}")
  set(_tv_major ${CMAKE_MATCH_1})
  string(REGEX MATCH "TORCH_VERSION_MINOR ([0-9]+)" _m "${_tv}")
  set(_tv_minor ${CMAKE_MATCH_1})
  string(REGEX MATCH "TORCH_VERSION_PATCH ([0-9]+)" _m "${_tv}")
  set(_tv_patch ${CMAKE_MATCH_1})
  if(NOT "${_tv_major}" STREQUAL "")
    set_source_files_properties(history.cpp PROPERTIES COMPILE_DEFINITIONS
                                HANGLAB_TORCH_VERSION="${_tv_major}.${_tv_minor}.${_tv_patch}")
  endif()
endif()
# `hanglab validate` finds scenarios/ in the working directory, else in this source tree.
set_property(SOURCE validate_run.cpp APPEND PROPERTY COMPILE_DEFINITIONS
             HANGLAB_DEFAULT_SCENARIOS_DIR="${PROJECT_SOURCE_DIR}/scenarios")

# hanglab_slowfs: the FUSE passthrough of the slow_storage fault (Debian: libfuse3-dev).
# Built next to hanglab, where slow_storage looks first; the build-tree path is compiled
# in for the unit tests. Without libfuse3 the fault reports itself unsupported (skipped).
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(FUSE3 QUIET IMPORTED_TARGET fuse3)
endif()
if(FUSE3_FOUND)
  add_executable(hanglab_slowfs ${PROJECT_SOURCE_DIR}/injectors/slowfs/slowfs.cpp)
  target_link_libraries(hanglab_slowfs PRIVATE PkgConfig::FUSE3 Threads::Threads)
  set_property(SOURCE ${PROJECT_SOURCE_DIR}/injectors/slow_storage.cpp APPEND PROPERTY COMPILE_DEFINITIONS
               HANGLAB_SLOWFS_BIN="${CMAKE_CURRENT_BINARY_DIR}/hanglab_slowfs")
else()
  message(STATUS "libfuse3 not found: hanglab_slowfs is not built (slow_storage scenarios are skipped)")
endif()

add_executable(hanglab main.cpp)
target_link_libraries(hanglab PRIVATE hanglab_core CLI11::CLI11)
if(TARGET hanglab_slowfs)
  add_dependencies(hanglab hanglab_slowfs)
endif()

hanglab_unit_test(supervisor_test supervisor_test.cpp hanglab_core)
hanglab_unit_test(injector_contract_test ${PROJECT_SOURCE_DIR}/injectors/injector_contract_test.cpp hanglab_core)
hanglab_unit_test(process_faults_test ${PROJECT_SOURCE_DIR}/injectors/process_faults_test.cpp hanglab_core)
hanglab_unit_test(network_faults_test ${PROJECT_SOURCE_DIR}/injectors/network_faults_test.cpp hanglab_core)
hanglab_unit_test(storage_faults_test ${PROJECT_SOURCE_DIR}/injectors/storage_faults_test.cpp hanglab_core)
if(TARGET storage_faults_test AND TARGET hanglab_slowfs)
  add_dependencies(storage_faults_test hanglab_slowfs)
endif()
hanglab_unit_test(validate_test validate_test.cpp hanglab_core)
hanglab_unit_test(history_test history_test.cpp hanglab_core)
hanglab_unit_test(html_report_test html_report_test.cpp hanglab_core)

# End-to-end: every scenario file is a CTest test, labelled by its tags. Exit 4
# (unsupported here) is reported as skipped, never as passed. Scenario runs are timing
# sensitive on a 2-core machine, so they never overlap each other.
# scenarios/validate/*.toml are the healthy baselines of `hanglab validate` (settings/ below
# them are settings files, not scenarios).
file(GLOB HANGLAB_SCENARIOS CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/*.toml
     ${PROJECT_SOURCE_DIR}/scenarios/validate/*.toml ${PROJECT_SOURCE_DIR}/scenarios/gpu/*.toml)
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

# validate end to end: a bad setting (collective_s below the slow checkpoint) must fail
# with the false positive reported; the recommended settings it writes must then pass.
add_test(NAME e2e.validate COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e_validate_test.sh
         $<TARGET_FILE:hanglab> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/e2e-validate)
set_tests_properties(e2e.validate PROPERTIES LABELS "e2e" RESOURCE_LOCK ranks TIMEOUT 300)
# report.html in a real browser: headless Chromium loads a real run's page from disk,
# the DOM must hold the rank rows and the fault marker; the screenshot is kept under
# <build>/e2e-html/. Skipped (exit 4) where no chromium is installed.
add_test(NAME e2e.html COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e_html_test.sh
         $<TARGET_FILE:hanglab> ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR}/e2e-html)
set_tests_properties(e2e.html PROPERTIES LABELS "e2e" RESOURCE_LOCK ranks TIMEOUT 240 SKIP_RETURN_CODE 4)

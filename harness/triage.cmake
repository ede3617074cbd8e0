# The analyzer (owner: triage). Pure functions of a run directory: no clock, no processes.
#   triage_input.cpp  reads harness.jsonl and ranks/<r>/ into observations (file:line kept)
#   triage.cpp        rank timeline, classification, answers, to_json
#   triage_text.cpp   render_text
#   triage_log_parse.cpp    one plain log line -> clock, rank, meaning
#   triage_log_patterns.cpp the line pattern table (pattern -> event, cause, example line)
#   triage_logs.cpp         log files -> LogCorpus (threads, streaming), triage_logs/triage_paths
#   triage_log_analyze.cpp  LogCorpus -> TriageResult
set(HANGLAB_TRIAGE_SOURCES
  ${CMAKE_CURRENT_SOURCE_DIR}/triage_input.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/triage.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/triage_text.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/triage/logs/parse.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/triage/logs/patterns.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/triage/logs/reader.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/triage/logs/analyze.cpp
)
add_library(hanglab_triage STATIC ${HANGLAB_TRIAGE_SOURCES})
find_package(Threads REQUIRED)
target_link_libraries(hanglab_triage PUBLIC Threads::Threads)
target_link_libraries(hanglab_triage PUBLIC hanglab_headers hanglab_util)

# Canned run directories live in harness/testdata/triage/<case>/ (see make_fixtures.py there).
hanglab_unit_test(triage_test ${CMAKE_CURRENT_SOURCE_DIR}/triage_test.cpp hanglab_triage)

# The plain-log scanner is the hot path of triage on 16k-rank logs: -O2 whatever the
# build type's default (-O1 in RelWithDebInfo here).
set_source_files_properties(${CMAKE_CURRENT_SOURCE_DIR}/triage/logs/parse.cpp ${CMAKE_CURRENT_SOURCE_DIR}/triage/logs/reader.cpp
                            PROPERTIES COMPILE_OPTIONS -O2)

# Plain-log triage: the line parser on every format, and the incident corpus in
# harness/testdata/logs/<case>/ (logs + expected.json, see make_log_fixtures.py there).
hanglab_unit_test(triage_log_test ${CMAKE_CURRENT_SOURCE_DIR}/triage/logs/logs_test.cpp hanglab_triage)

# e2e.log_triage_agrees: every scenario's newest run under <build>/test-results/ (written
# by the scenario.* tests of core.cmake) is triaged from its trace and from its
# stdout/stderr alone (hanglab triage --logs-only); category and missing ranks must agree.
if(HANGLAB_BUILD_TESTS)
  add_executable(log_triage_agree ${CMAKE_CURRENT_SOURCE_DIR}/log_triage_agree.cpp)
  target_link_libraries(log_triage_agree PRIVATE nlohmann_json::nlohmann_json)
  file(GLOB _triage_scenarios CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/scenarios/*.toml)
  set(_triage_after "")
  foreach(sc ${_triage_scenarios})
    get_filename_component(_name ${sc} NAME_WE)
    list(APPEND _triage_after scenario.${_name})
  endforeach()
  add_test(NAME e2e.log_triage_agrees
           COMMAND log_triage_agree $<TARGET_FILE:hanglab> ${PROJECT_BINARY_DIR}/test-results)
  set_tests_properties(e2e.log_triage_agrees PROPERTIES LABELS "e2e" DEPENDS "${_triage_after}" TIMEOUT 300)
endif()

# triage_corpus: the score on the real incident corpus (harness/testdata/reallogs/<case>/:
# verbatim logs from public threads, source.md, expected.json from the thread's conclusion).
# The CTest test fails when the score drops below reallogs/BASELINE.json or any case crashes.
if(HANGLAB_BUILD_TESTS)
  add_executable(triage_corpus ${CMAKE_CURRENT_SOURCE_DIR}/triage_corpus.cpp)
  target_link_libraries(triage_corpus PRIVATE hanglab_triage)
  set(_reallogs ${CMAKE_CURRENT_SOURCE_DIR}/testdata/reallogs)
  if(EXISTS ${_reallogs}/BASELINE.json)
    add_test(NAME triage_corpus COMMAND triage_corpus ${_reallogs} --baseline ${_reallogs}/BASELINE.json)
    set_tests_properties(triage_corpus PROPERTIES LABELS "triage" TIMEOUT 300)
  endif()
endif()

# triage_fuzz: libFuzzer over the log reader and analyzer (-DHANGLAB_FUZZ=ON with clang;
# ci/fuzz.sh builds it into build-fuzz/ and runs it for a bounded time).
option(HANGLAB_FUZZ "Build the libFuzzer target triage_fuzz (clang only)" OFF)
if(HANGLAB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "HANGLAB_FUZZ needs clang (CMAKE_CXX_COMPILER=clang++)")
  endif()
  set(_fuzz_flags -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  # The same sources as hanglab_triage (and util.cpp below them), instrumented.
  add_library(hanglab_triage_fuzz STATIC ${HANGLAB_TRIAGE_SOURCES} ${CMAKE_CURRENT_SOURCE_DIR}/util.cpp)
  target_compile_options(hanglab_triage_fuzz PRIVATE ${_fuzz_flags})
  target_link_libraries(hanglab_triage_fuzz PUBLIC hanglab_headers Threads::Threads)
  add_executable(triage_fuzz ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/triage_fuzz.cpp)
  target_compile_options(triage_fuzz PRIVATE ${_fuzz_flags})
  target_link_options(triage_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(triage_fuzz PRIVATE hanglab_triage_fuzz)
endif()

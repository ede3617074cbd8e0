# The analyzer (owner: triage). Pure functions of a run directory: no clock, no processes.
#   triage_input.cpp  reads harness.jsonl and ranks/<r>/ into observations (file:line kept)
#   triage.cpp        rank timeline, classification, answers, to_json
#   triage_text.cpp   render_text
add_library(hanglab_triage STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/triage_input.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/triage.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/triage_text.cpp
)
target_link_libraries(hanglab_triage PUBLIC hanglab_headers)

# Canned run directories live in harness/testdata/triage/<case>/ (see make_fixtures.py there).
hanglab_unit_test(triage_test ${CMAKE_CURRENT_SOURCE_DIR}/triage_test.cpp hanglab_triage)

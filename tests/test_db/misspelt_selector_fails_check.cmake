# A deliberately misspelt selector in a scratch copy of the lists makes the real
# `test_db check` fail, naming the file, line and selector.
#   -D TEST_DB=... -D LISTS_DIR=... -D BUILD_DIR=... -D SCRATCH=...
file(REMOVE_RECURSE "${SCRATCH}")
file(COPY "${LISTS_DIR}/" DESTINATION "${SCRATCH}")
file(READ "${SCRATCH}/l0_cpu.yml" yaml)
string(REPLACE "- writer_tests\n" "- writer_testz\n" misspelt "${yaml}")
if(misspelt STREQUAL yaml)
  message(FATAL_ERROR "l0_cpu.yml has no '- writer_tests' selector to misspell")
endif()
file(WRITE "${SCRATCH}/l0_cpu.yml" "${misspelt}")

execute_process(COMMAND "${TEST_DB}" check --lists-dir "${SCRATCH}" --build-dir "${BUILD_DIR}"
                RESULT_VARIABLE result ERROR_VARIABLE errors OUTPUT_QUIET)
file(REMOVE_RECURSE "${SCRATCH}")
if(result EQUAL 0)
  message(FATAL_ERROR "check passed with a misspelt selector")
endif()
if(NOT errors MATCHES "l0_cpu.yml:[0-9]+: selector 'writer_testz' in list 'l0_cpu' matches no registered test")
  message(FATAL_ERROR "check failed without naming the selector:\n${errors}")
endif()
if(NOT errors MATCHES "registered test 'writer_tests/[^']+' is on no list")
  message(FATAL_ERROR "check did not report the tests left on no list:\n${errors}")
endif()
message(STATUS "check failed as it should:\n${errors}")

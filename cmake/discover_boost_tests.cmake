# Script mode: lists the test cases of a Boost.Test executable (its --list_content) and
# writes a CTest file that registers each case as its own test, named
# "<executable>/<suite path>/<case>".
#
#   -D TEST_EXECUTABLE=path -D TEST_NAME=executable name -D CTEST_FILE=output path
#   -D TEST_ENVIRONMENT=ctest environment list (optional)
execute_process(
  COMMAND "${TEST_EXECUTABLE}" --list_content
  OUTPUT_VARIABLE stdout_listing
  ERROR_VARIABLE listing
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --list_content failed (${result}):\n${listing}")
endif()

string(REPLACE "\n" ";" lines "${listing}")
set(content "")
set(path "")
set(previous_depth -1)
set(previous_path "")

function(emit case_path)
  set(test "${TEST_NAME}/${case_path}")
  string(APPEND content "add_test([==[${test}]==] [==[${TEST_EXECUTABLE}]==] [==[--run_test=${case_path}]==] --log_level=test_suite)\n")
  string(APPEND content "list(APPEND jsonl_discovered_tests [==[${test}]==])\n")
  set(content "${content}" PARENT_SCOPE)
endfunction()

foreach(line IN LISTS lines)
  if(NOT line MATCHES "^( *)([^ *]+)\\*?$")
    continue()
  endif()
  string(LENGTH "${CMAKE_MATCH_1}" indent)
  math(EXPR depth "${indent} / 4")
  set(name "${CMAKE_MATCH_2}")
  # A line no deeper than the one before it means the one before was a test case.
  if(previous_depth GREATER_EQUAL 0 AND depth LESS_EQUAL previous_depth)
    emit("${previous_path}")
  endif()
  list(LENGTH path length)
  if(length GREATER depth)
    list(SUBLIST path 0 ${depth} path)
  endif()
  list(APPEND path "${name}")
  list(JOIN path "/" previous_path)
  set(previous_depth ${depth})
endforeach()
if(previous_depth GREATER_EQUAL 0)
  emit("${previous_path}")
endif()

file(WRITE "${CTEST_FILE}" "${content}")

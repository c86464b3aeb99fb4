# Included by CTest for each test executable: labels its discovered tests with the
# executable's name and with every test list whose selectors name them.
#   jsonl_discovered_tests, jsonl_test_executable, jsonl_test_db, jsonl_test_lists_dir,
#   jsonl_test_environment (the build's sanitizer options; empty in other builds)
set(selectors "")
if(EXISTS "${jsonl_test_db}")
  execute_process(
    COMMAND "${jsonl_test_db}" selectors --lists-dir "${jsonl_test_lists_dir}"
    OUTPUT_VARIABLE selectors
    RESULT_VARIABLE result
    ERROR_QUIET)
  if(NOT result EQUAL 0)
    set(selectors "")
  endif()
endif()
string(REPLACE "\n" ";" selector_lines "${selectors}")

foreach(test IN LISTS jsonl_discovered_tests)
  set(labels "${jsonl_test_executable}")
  foreach(line IN LISTS selector_lines)
    if(NOT line MATCHES "^([^\t]+)\t(.+)$")
      continue()
    endif()
    set(list_name "${CMAKE_MATCH_1}")
    set(selector "${CMAKE_MATCH_2}")
    string(LENGTH "${selector}" length)
    string(LENGTH "${test}/" test_length)
    if(length GREATER_EQUAL test_length)
      continue()
    endif()
    string(SUBSTRING "${test}/" 0 ${length} prefix)
    string(SUBSTRING "${test}/" ${length} 1 boundary)
    if(prefix STREQUAL selector AND boundary STREQUAL "/")
      list(APPEND labels "${list_name}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES labels)
  set_tests_properties("${test}" PROPERTIES LABELS "${labels}")
  if(jsonl_test_environment)
    set_tests_properties("${test}" PROPERTIES ENVIRONMENT "${jsonl_test_environment}")
  endif()
endforeach()

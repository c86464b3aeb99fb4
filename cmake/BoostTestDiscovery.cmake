# jsonl_add_boost_test(<target>): registers every Boost.Test case of <target> as its own
# CTest test, found after each build from the executable's --list_content, so a case
# added to a source file is registered without editing CMake. Each test is labelled with
# its executable's name and, when CTest reads the tests, with every test list
# (test_lists/test-db) whose selectors name it.
set(_jsonl_discovery_script "${CMAKE_CURRENT_LIST_DIR}/discover_boost_tests.cmake")

# A sanitizer build's tests carry their runtime options themselves, so that any CTest
# run of the build (with or without --preset) suppresses, symbolizes and halts alike.
# The suppressions match function names: without the symbolizer they silently stop
# matching, so a missing one fails the configure.
set(_jsonl_test_environment "")
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=(address|thread)")
  find_program(JSONL_LLVM_SYMBOLIZER NAMES llvm-symbolizer PATHS /usr/lib/llvm-19/bin NO_DEFAULT_PATH REQUIRED)
endif()
if(CMAKE_CXX_FLAGS MATCHES "-fsanitize=thread")
  list(APPEND _jsonl_test_environment
    "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=${PROJECT_SOURCE_DIR}/tools/tsan.supp:external_symbolizer_path=${JSONL_LLVM_SYMBOLIZER}")
elseif(CMAKE_CXX_FLAGS MATCHES "-fsanitize=address")
  list(APPEND _jsonl_test_environment
    "ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1"
    "ASAN_SYMBOLIZER_PATH=${JSONL_LLVM_SYMBOLIZER}"
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()
set(_jsonl_label_script "${CMAKE_CURRENT_LIST_DIR}/label_tests_from_lists.cmake")

function(jsonl_add_boost_test target)
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_cases.cmake")
  add_custom_command(
    OUTPUT "${ctest_file}"
    COMMAND "${CMAKE_COMMAND}"
      -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
      -D "TEST_NAME=${target}"
      -D "CTEST_FILE=${ctest_file}"
      -P "${_jsonl_discovery_script}"
    DEPENDS ${target} "${_jsonl_discovery_script}"
    COMMENT "Listing the test cases of ${target}"
    VERBATIM)
  add_custom_target(${target}_cases ALL DEPENDS "${ctest_file}")
  string(CONCAT preamble
    "set(jsonl_discovered_tests)\n"
    "if(EXISTS [==[${ctest_file}]==])\n"
    "  include([==[${ctest_file}]==])\n"
    "else()\n"
    "  add_test([==[${target}_NOT_BUILT]==] [==[${target}_NOT_BUILT]==])\n"
    "endif()\n")
  _jsonl_write_label_include(${target} "${preamble}")
endfunction()

# jsonl_add_listed_test(<group> <name> <command>...): a test that is not a Boost.Test
# case, registered and labelled the same way: with <group> and with the test lists that
# name it. (CTest reads include files before plain add_test calls, so it is registered
# from one.)
function(jsonl_add_listed_test group name)
  list(JOIN ARGN "]==] [==[" command)
  _jsonl_write_label_include(${group}
    "add_test([==[${name}]==] [==[${command}]==])\nset(jsonl_discovered_tests [==[${name}]==])\n")
endfunction()

function(_jsonl_write_label_include group preamble)
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${group}_include.cmake")
  string(CONCAT content
    "${preamble}"
    "set(jsonl_test_executable [==[${group}]==])\n"
    "set(jsonl_test_db [==[$<TARGET_FILE:test_db>]==])\n"
    "set(jsonl_test_lists_dir [==[${PROJECT_SOURCE_DIR}/test_lists/test-db]==])\n"
    "set(jsonl_test_environment [==[${_jsonl_test_environment}]==])\n"
    "include([==[${_jsonl_label_script}]==])\n")
  file(GENERATE OUTPUT "${include_file}" CONTENT "${content}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()

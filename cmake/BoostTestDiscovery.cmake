# jsonl_add_boost_test(<target>): registers every Boost.Test case of <target> as its own
# CTest test, found after each build from the executable's --list_content, so a case
# added to a source file is registered without editing CMake.
set(_jsonl_discovery_script "${CMAKE_CURRENT_LIST_DIR}/discover_boost_tests.cmake")

function(jsonl_add_boost_test target)
  set(ctest_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_cases.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}"
      -D "TEST_EXECUTABLE=$<TARGET_FILE:${target}>"
      -D "TEST_NAME=${target}"
      -D "CTEST_FILE=${ctest_file}"
      -P "${_jsonl_discovery_script}"
    BYPRODUCTS "${ctest_file}"
    VERBATIM)
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_include.cmake")
  file(WRITE "${include_file}"
    "if(EXISTS [==[${ctest_file}]==])\n"
    "  include([==[${ctest_file}]==])\n"
    "else()\n"
    "  add_test([==[${target}_NOT_BUILT]==] [==[${target}_NOT_BUILT]==])\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()

# Installs the build to a prefix, then configures, builds and runs examples/consumer
# against what was installed; or packages it as a .deb, checks what the package depends
# on, and that it installs what the prefix install holds.
#   -D MODE=prefix|deb -D BUILD_DIR=... -D SOURCE_DIR=... -D SCRATCH=...
#   -D CXX_COMPILER=... -D SCAN_DEPS=... -D CXX_FLAGS=... -D LINKER_FLAGS=... -D PYTHON=...
cmake_minimum_required(VERSION 3.28)  # run with -P: the policies of the build's CMake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "failed (${result}): ${command}\n${output}")
  endif()
  set(run_output "${output}" PARENT_SCOPE)
endfunction()

# Every installed file with its hash, to compare two installs.
function(snapshot root out)
  file(GLOB_RECURSE files RELATIVE "${root}" "${root}/*")
  list(SORT files)
  set(lines "")
  foreach(file IN LISTS files)
    file(SHA256 "${root}/${file}" hash)
    string(APPEND lines "${file} ${hash}\n")
  endforeach()
  set(${out} "${lines}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${SCRATCH}")
file(MAKE_DIRECTORY "${SCRATCH}")

if(MODE STREQUAL "prefix")
  set(root "${SCRATCH}/prefix")
  run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${root}")
  snapshot("${root}" first)
  run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${root}")
  snapshot("${root}" second)
  if(NOT first STREQUAL second)
    message(FATAL_ERROR "a second install changed the prefix:\n${first}\n---\n${second}")
  endif()
  set(prefix "${root}")
elseif(MODE STREQUAL "deb")
  run(cpack -G DEB -B "${SCRATCH}/package" --config "${BUILD_DIR}/CPackConfig.cmake")
  file(GLOB debs "${SCRATCH}/package/*.deb")
  list(LENGTH debs count)
  if(NOT count EQUAL 1)
    message(FATAL_ERROR "expected one .deb, found: ${debs}")
  endif()
  run(dpkg-deb -f "${debs}" Depends)
  set(depends "${run_output}")
  foreach(dependency IN ITEMS "libboost-json[0-9.]+-dev" "libtbb-dev")
    if(NOT depends MATCHES "${dependency}")
      message(FATAL_ERROR "the .deb does not depend on ${dependency}: ${depends}")
    endif()
  endforeach()
  # Every package named is one this machine has: a name written for another Boost
  # release would not be installable here.
  string(REGEX REPLACE "[ \n]" "" depends "${depends}")
  string(REGEX REPLACE "\\([^)]*\\)" "" depends "${depends}")  # version constraints
  string(REPLACE "," ";" depends "${depends}")
  # A name may be a virtual package (libspdlog1.10-fmt9) that an installed one provides.
  execute_process(COMMAND dpkg-query -W -f=\${db:Status-Abbrev}\${Provides},\n OUTPUT_VARIABLE installed ERROR_QUIET)
  string(PREPEND installed "\n")
  foreach(dependency IN LISTS depends)
    execute_process(COMMAND dpkg-query -W -f=\${db:Status-Abbrev} "${dependency}" OUTPUT_VARIABLE status ERROR_QUIET)
    string(REGEX REPLACE "([.+])" "\\\\\\1" pattern "${dependency}")  # libstdc++6
    if(NOT status MATCHES "^ii" AND NOT installed MATCHES "\nii ([^\n]*[ ,])?${pattern}[ ,(]")
      message(FATAL_ERROR "the .deb depends on ${dependency}, which no package installed here is or provides")
    endif()
  endforeach()
  set(root "${SCRATCH}/root")
  run(dpkg -x "${debs}" "${root}")
  set(prefix "${root}/usr")
  # jsonl-perf, which the package installs, runs on what Depends installs: each shared
  # library it loads belongs to a package Depends names.
  run(ldd "${prefix}/bin/jsonl-perf")
  string(REGEX MATCHALL "=> /[^ \n]+" loaded "${run_output}")
  foreach(match IN LISTS loaded)
    string(REGEX REPLACE "^=> " "" library "${match}")
    # dpkg knows a library by the path its package ships, with or without /usr.
    string(REGEX REPLACE "^/usr/lib/" "/lib/" without_usr "${library}")
    string(REGEX REPLACE "^/lib/" "/usr/lib/" with_usr "${library}")
    set(owner "")
    foreach(path IN ITEMS "${library}" "${without_usr}" "${with_usr}")
      execute_process(COMMAND dpkg -S "${path}" RESULT_VARIABLE result OUTPUT_VARIABLE found ERROR_QUIET)
      if(result EQUAL 0)
        string(REGEX REPLACE "[:,].*" "" owner "${found}")
        break()
      endif()
    endforeach()
    if(owner STREQUAL "")
      message(FATAL_ERROR "jsonl-perf loads ${library}, which no installed package ships")
    endif()
    # Depends may name it by a virtual package it provides (libspdlog1.10-fmt9).
    execute_process(COMMAND dpkg-query -W -f=\${Provides} "${owner}" OUTPUT_VARIABLE provides ERROR_QUIET)
    string(REGEX REPLACE "\\([^)]*\\)| " "" provides "${provides}")
    string(REPLACE "," ";" names "${owner},${provides}")
    set(named FALSE)
    foreach(name IN LISTS names)
      if(name IN_LIST depends)
        set(named TRUE)
      endif()
    endforeach()
    if(NOT named)
      message(FATAL_ERROR "jsonl-perf loads ${library} (${owner}), which the .deb does not depend on: ${depends}")
    endif()
  endforeach()
  # What the .deb installs is what a prefix install holds, file for file: the consumer
  # built against the prefix (MODE=prefix) builds against it too, and is not built again.
  run("${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${SCRATCH}/prefix")
  snapshot("${SCRATCH}/prefix" installed)
  snapshot("${prefix}" packaged)
  if(NOT installed STREQUAL packaged)
    message(FATAL_ERROR "the .deb's /usr differs from a prefix install:\n${packaged}\n---\n${installed}")
  endif()
  file(REMOVE_RECURSE "${SCRATCH}")
  return()
else()
  message(FATAL_ERROR "MODE must be prefix or deb")
endif()

# Nothing of this machine's build or source tree may leak into the installed package.
file(GLOB_RECURSE cmake_files "${prefix}/*.cmake")
if(NOT cmake_files)
  message(FATAL_ERROR "no CMake package files installed under ${prefix}")
endif()
foreach(file IN LISTS cmake_files)
  file(READ "${file}" content)
  foreach(tree IN ITEMS "${BUILD_DIR}" "${SOURCE_DIR}")
    string(FIND "${content}" "${tree}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${file} names ${tree}")
    endif()
  endforeach()
endforeach()

run("${CMAKE_COMMAND}" -S "${SOURCE_DIR}/examples/consumer" -B "${SCRATCH}/consumer" -G Ninja
    "-DCMAKE_PREFIX_PATH=${prefix}"
    "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    "-DCMAKE_CXX_COMPILER_CLANG_SCAN_DEPS=${SCAN_DEPS}"
    "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")
run("${CMAKE_COMMAND}" --build "${SCRATCH}/consumer")
run("${SCRATCH}/consumer/consumer" "${SCRATCH}/out")
message(STATUS "${run_output}")
# This build has prometheus-cpp (the project requires it): so has the consumer. Its
# collectable's exposition and prometheus_text's read alike with prometheus_client.
run("${PYTHON}" "${SOURCE_DIR}/tests/prometheus/same_families.py" "${SCRATCH}/consumer/consumer_prometheus"
    "${SCRATCH}/prometheus")
message(STATUS "${run_output}")
file(REMOVE_RECURSE "${SCRATCH}")

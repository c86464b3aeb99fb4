# Installs the libraries, their module interface units (FILE_SET CXX_MODULES, so a
# consumer compiles BMIs with its own flags) and a CMake package:
#   find_package(jsonl 0.1 CONFIG REQUIRED)  ->  jsonl::writer, jsonl::perf_metrics,
#                                                jsonl::request_trace, jsonl::prometheus
#                                                (with prometheus-cpp: COMPONENTS prometheus)
# and packages them as a .deb with `cpack -G DEB`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(JSONL_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/jsonl")

# The libraries join the jsonlTargets export set in their own directories
# (jsonl_add_module in the top-level CMakeLists.txt).
install(EXPORT jsonlTargets
  NAMESPACE jsonl::
  DESTINATION "${JSONL_CMAKE_DIR}"
  CXX_MODULES_DIRECTORY modules)

configure_package_config_file(cmake/jsonlConfig.cmake.in
  "${PROJECT_BINARY_DIR}/jsonlConfig.cmake"
  INSTALL_DESTINATION "${JSONL_CMAKE_DIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/jsonlConfigVersion.cmake"
  COMPATIBILITY SameMajorVersion)
install(FILES "${PROJECT_BINARY_DIR}/jsonlConfig.cmake" "${PROJECT_BINARY_DIR}/jsonlConfigVersion.cmake"
  DESTINATION "${JSONL_CMAKE_DIR}")

set(CPACK_PACKAGE_NAME "libjsonl-dev")
set(CPACK_PACKAGE_VENDOR "jsonl")
set(CPACK_PACKAGE_CONTACT "jsonl maintainers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION} (C++20 modules)")
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "libdevel")
# The module interface units are compiled by the consumer, against these headers: the
# Boost.JSON of the release the package was built with. What the installed jsonl-perf
# loads (spdlog, simdjson, fmt, the C and C++ runtimes) dpkg-shlibdeps adds.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
  "libboost-json${Boost_VERSION_MAJOR}.${Boost_VERSION_MINOR}-dev, libtbb-dev, libzstd-dev")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# jsonl::prometheus is compiled against prometheus-cpp's headers by those who use it.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "prometheus-cpp-dev")
include(CPack)

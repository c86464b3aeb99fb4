// test_db: selects CTest tests from YAML test lists.
//
//   test_db list LIST [--context k=v,...]   the selected test names, one a line
//   test_db run LIST [--context k=v,...]    runs exactly those through ctest
//   test_db check                           fails on a malformed list, a selector that
//                                           matches nothing, or a test on no list
//   test_db selectors                       "<list>\t<selector>" lines, for CTest labels
//
// Every subcommand takes --build-dir DIR (default build/release), the CTest tree whose
// registered tests it reads, and --lists-dir DIR (default test_lists/test-db). It builds
// nothing.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

#include "test_lists.hpp"

namespace {

constexpr int usage_error = 2;

struct Arguments {
  std::string command;
  std::string list;
  testdb::Context context;
  std::filesystem::path build_dir = "build/release";
  std::filesystem::path lists_dir = "test_lists/test-db";
};

int usage(std::string_view problem) {
  std::cerr << "test_db: " << problem << "\n"
            << "usage: test_db {list LIST|run LIST|check|selectors} [--context k=v,...]"
               " [--build-dir DIR] [--lists-dir DIR]\n";
  return usage_error;
}

const testdb::TestList* find_list(const std::vector<testdb::TestList>& lists, std::string_view name) {
  for (const auto& list : lists) {
    if (list.name == name) return &list;
  }
  return nullptr;
}

int run_selected(const std::vector<std::string>& tests, const std::filesystem::path& build_dir) {
  if (tests.empty()) {
    std::cerr << "test_db: the list selects no test for this context\n";
    return 1;
  }
  char name[] = "/tmp/test_db-XXXXXX";
  const int fd = ::mkstemp(name);
  if (fd < 0) {
    std::perror("test_db: mkstemp");
    return 1;
  }
  ::close(fd);
  {
    std::ofstream file(name);
    for (const auto& test : tests) file << test << '\n';
  }
  const std::string command = "ctest --test-dir '" + build_dir.string() + "' --tests-from-file '" +
                              name + "' --output-on-failure";
  const int status = std::system(command.c_str());
  std::filesystem::remove(name);
  return status == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Arguments arguments;
  std::vector<std::string_view> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    const auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (argument == "--context" || argument == "--build-dir" || argument == "--lists-dir") {
      const char* given = value();
      if (!given) return usage(std::string(argument) + " needs a value");
      try {
        if (argument == "--context") arguments.context = testdb::parse_context(given);
      } catch (const std::invalid_argument& error) {
        return usage(error.what());
      }
      if (argument == "--build-dir") arguments.build_dir = given;
      if (argument == "--lists-dir") arguments.lists_dir = given;
    } else if (argument.starts_with("--")) {
      return usage("unknown option " + std::string(argument));
    } else {
      positional.push_back(argument);
    }
  }
  if (positional.empty()) return usage("no subcommand");
  arguments.command = positional[0];
  const bool takes_list = arguments.command == "list" || arguments.command == "run";
  if (takes_list != (positional.size() == 2) || positional.size() > 2) {
    return usage("wrong number of arguments for " + arguments.command);
  }
  if (takes_list) arguments.list = positional[1];

  try {
    const auto lists = testdb::load_test_lists(arguments.lists_dir);
    if (arguments.command == "selectors") {
      for (const auto& list : lists) {
        for (const auto& entry : list.entries) {
          for (const auto& selector : entry.tests) std::cout << list.name << '\t' << selector.text << '\n';
        }
      }
      return 0;
    }
    const auto registered = testdb::registered_tests(arguments.build_dir);
    if (arguments.command == "check") {
      const auto problems = testdb::check_lists(lists, registered);
      for (const auto& problem : problems) std::cerr << problem << '\n';
      if (!problems.empty()) return 1;
      std::cout << "test lists OK: " << lists.size() << " lists, " << registered.size()
                << " registered tests, each on a list\n";
      return 0;
    }
    if (!takes_list) return usage("unknown subcommand " + arguments.command);
    const testdb::TestList* list = find_list(lists, arguments.list);
    if (!list) return usage("no list named " + arguments.list);
    const auto selected = testdb::select_tests(*list, arguments.context, registered);
    if (arguments.command == "run") return run_selected(selected, arguments.build_dir);
    for (const auto& test : selected) std::cout << test << '\n';
    return 0;
  } catch (const testdb::LoadError& error) {
    std::cerr << "test_db: " << error.what() << '\n';
    return 1;
  } catch (const std::exception& error) {
    std::cerr << "test_db: " << error.what() << '\n';
    return 1;
  }
}

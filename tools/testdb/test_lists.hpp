// YAML test lists in the reference's test-db format:
//
//   version: 0.0.1
//   <list name>:
//   - condition:
//       ranges:    {<key>: {gte: N, lte: N}}      numeric bounds, either optional
//       wildcards: {<key>: <pattern> | [patterns]} shell patterns (fnmatch)
//       terms:     {<key>: <value>}                exact values
//     tests:
//     - <executable>[/<suite path>[/<case>]]
//
// An entry applies when every key its condition names is in the context and matches.
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace testdb {

using Context = std::map<std::string, std::string, std::less<>>;

// A test list file that cannot be read as the format above. what() is
// "<file>:<line>: <reason>".
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Selector {
  std::string text;
  std::string file;
  std::size_t line = 0;  // 1-based
};

struct Condition {
  struct Range {
    std::optional<double> gte;
    std::optional<double> lte;
  };
  std::map<std::string, Range, std::less<>> ranges;
  std::map<std::string, std::vector<std::string>, std::less<>> wildcards;
  std::map<std::string, std::string, std::less<>> terms;

  bool matches(const Context& context) const;
};

struct Entry {
  Condition condition;
  std::vector<Selector> tests;
};

struct TestList {
  std::string name;
  std::vector<Entry> entries;
};

// Every list in every *.yml file of `directory`. Throws LoadError.
std::vector<TestList> load_test_lists(const std::filesystem::path& directory);

// "k=v,k2=v2". Throws std::invalid_argument on a pair without '='.
Context parse_context(std::string_view text);

// Whether `selector` names `test` ("exe/suite/case"): the whole name, or a prefix of it
// that ends at a '/'.
bool selects(std::string_view selector, std::string_view test);

// The tests CTest has registered in `build_directory`, in registration order.
std::vector<std::string> registered_tests(const std::filesystem::path& build_directory);

// The registered tests that `list` selects for `context`, in registration order.
std::vector<std::string> select_tests(const TestList& list, const Context& context,
                                      const std::vector<std::string>& registered);

// Problems that make a set of lists unusable, one message each: a selector that
// matches no registered test, a registered test on no list.
std::vector<std::string> check_lists(const std::vector<TestList>& lists,
                                     const std::vector<std::string>& registered);

}  // namespace testdb

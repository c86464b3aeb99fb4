#include "test_lists.hpp"

#include <boost/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <fnmatch.h>
#include <memory>
#include <string>

namespace testdb {
namespace {

[[noreturn]] void fail(const std::string& file, const YAML::Node& node, const std::string& reason) {
  throw LoadError(file + ":" + std::to_string(node.Mark().line + 1) + ": " + reason);
}

const YAML::Node& require_map(const std::string& file, const YAML::Node& node, const std::string& what) {
  if (!node.IsMap()) fail(file, node, what + " must be a mapping");
  return node;
}

std::string scalar(const std::string& file, const YAML::Node& node, const std::string& what) {
  if (!node.IsScalar()) fail(file, node, what + " must be a scalar");
  return node.Scalar();
}

double number(const std::string& file, const YAML::Node& node, const std::string& what) {
  const std::string text = scalar(file, node, what);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) fail(file, node, what + " must be a number");
  return value;
}

Condition load_condition(const std::string& file, const YAML::Node& node) {
  Condition condition;
  for (const auto& part : require_map(file, node, "condition")) {
    const std::string kind = part.first.Scalar();
    const YAML::Node& body = require_map(file, part.second, "condition " + kind);
    for (const auto& item : body) {
      const std::string key = scalar(file, item.first, "condition key");
      if (kind == "ranges") {
        Condition::Range range;
        for (const auto& bound : require_map(file, item.second, "range " + key)) {
          const std::string name = bound.first.Scalar();
          if (name == "gte") {
            range.gte = number(file, bound.second, "gte");
          } else if (name == "lte") {
            range.lte = number(file, bound.second, "lte");
          } else {
            fail(file, bound.first, "unknown range bound '" + name + "' (gte or lte)");
          }
        }
        condition.ranges[key] = range;
      } else if (kind == "wildcards") {
        std::vector<std::string> patterns;
        if (item.second.IsSequence()) {
          for (const auto& pattern : item.second) patterns.push_back(scalar(file, pattern, "wildcard"));
        } else {
          patterns.push_back(scalar(file, item.second, "wildcard"));
        }
        condition.wildcards[key] = patterns;
      } else if (kind == "terms") {
        condition.terms[key] = scalar(file, item.second, "term " + key);
      } else {
        fail(file, part.first, "unknown condition kind '" + kind + "' (ranges, wildcards or terms)");
      }
    }
  }
  return condition;
}

Entry load_entry(const std::string& file, const YAML::Node& node) {
  require_map(file, node, "a list entry");
  Entry entry;
  for (const auto& item : node) {
    const std::string key = item.first.Scalar();
    if (key == "condition") {
      entry.condition = load_condition(file, item.second);
    } else if (key == "tests") {
      if (!item.second.IsSequence()) fail(file, item.second, "tests must be a sequence");
      for (const auto& test : item.second) {
        entry.tests.push_back({scalar(file, test, "a test selector"), file, test.Mark().line + 1u});
      }
    } else {
      fail(file, item.first, "unknown entry key '" + key + "' (condition or tests)");
    }
  }
  if (!node["tests"]) fail(file, node, "entry has no tests");
  return entry;
}

void load_file(const std::filesystem::path& path, std::vector<TestList>& lists) {
  const std::string file = path.string();
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::Exception& error) {
    throw LoadError(file + ":" + std::to_string(error.mark.line + 1) + ": " + error.msg);
  }
  require_map(file, root, "a test list file");
  if (!root["version"]) fail(file, root, "missing 'version'");
  for (const auto& item : root) {
    const std::string name = scalar(file, item.first, "a list name");
    if (name == "version") continue;
    if (!item.second.IsSequence()) fail(file, item.second, "list '" + name + "' must be a sequence of entries");
    TestList list{name, {}};
    for (const auto& entry : item.second) list.entries.push_back(load_entry(file, entry));
    lists.push_back(std::move(list));
  }
}

bool numeric(const std::string& text, double& value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size();
}

}  // namespace

bool Condition::matches(const Context& context) const {
  for (const auto& [key, range] : ranges) {
    const auto found = context.find(key);
    double value = 0;
    if (found == context.end() || !numeric(found->second, value)) return false;
    if ((range.gte && value < *range.gte) || (range.lte && value > *range.lte)) return false;
  }
  for (const auto& [key, patterns] : wildcards) {
    const auto found = context.find(key);
    if (found == context.end()) return false;
    if (std::none_of(patterns.begin(), patterns.end(), [&](const std::string& pattern) {
          return ::fnmatch(pattern.c_str(), found->second.c_str(), 0) == 0;
        })) {
      return false;
    }
  }
  for (const auto& [key, term] : terms) {
    const auto found = context.find(key);
    if (found == context.end() || found->second != term) return false;
  }
  return true;
}

std::vector<TestList> load_test_lists(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  for (const auto& item : std::filesystem::directory_iterator(directory)) {
    if (item.path().extension() == ".yml") files.push_back(item.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<TestList> lists;
  for (const auto& file : files) load_file(file, lists);
  return lists;
}

Context parse_context(std::string_view text) {
  Context context;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view pair = text.substr(0, comma);
    const std::size_t equals = pair.find('=');
    if (equals == std::string_view::npos || equals == 0) {
      throw std::invalid_argument("context pair '" + std::string(pair) + "' is not key=value");
    }
    context[std::string(pair.substr(0, equals))] = std::string(pair.substr(equals + 1));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return context;
}

bool selects(std::string_view selector, std::string_view test) {
  return test == selector || (test.size() > selector.size() && test.starts_with(selector) &&
                              test[selector.size()] == '/');
}

std::vector<std::string> registered_tests(const std::filesystem::path& build_directory) {
  const std::string command = "ctest --test-dir '" + build_directory.string() + "' --show-only=json-v1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(::popen(command.c_str(), "r"), ::pclose);
  if (!pipe) throw std::runtime_error("cannot run: " + command);
  std::string output;
  std::array<char, 65536> buffer;
  while (const std::size_t read = std::fread(buffer.data(), 1, buffer.size(), pipe.get())) {
    output.append(buffer.data(), read);
  }
  boost::json::value listing;
  try {
    listing = boost::json::parse(output);
  } catch (const std::exception&) {
    throw std::runtime_error("no CTest tests in " + build_directory.string() + " (is it built?)");
  }
  std::vector<std::string> names;
  for (const auto& test : listing.at("tests").as_array()) {
    names.emplace_back(test.at("name").as_string());
  }
  return names;
}

std::vector<std::string> select_tests(const TestList& list, const Context& context,
                                      const std::vector<std::string>& registered) {
  std::vector<std::string> selected;
  for (const std::string& test : registered) {
    const bool chosen = std::any_of(list.entries.begin(), list.entries.end(), [&](const Entry& entry) {
      return entry.condition.matches(context) &&
             std::any_of(entry.tests.begin(), entry.tests.end(),
                         [&](const Selector& selector) { return selects(selector.text, test); });
    });
    if (chosen) selected.push_back(test);
  }
  return selected;
}

std::vector<std::string> check_lists(const std::vector<TestList>& lists,
                                     const std::vector<std::string>& registered) {
  std::vector<std::string> problems;
  std::vector<bool> listed(registered.size(), false);
  for (const TestList& list : lists) {
    for (const Entry& entry : list.entries) {
      for (const Selector& selector : entry.tests) {
        bool matched = false;
        for (std::size_t i = 0; i < registered.size(); ++i) {
          if (selects(selector.text, registered[i])) {
            matched = true;
            listed[i] = true;
          }
        }
        if (!matched) {
          problems.push_back(selector.file + ":" + std::to_string(selector.line) + ": selector '" +
                             selector.text + "' in list '" + list.name + "' matches no registered test");
        }
      }
    }
  }
  for (std::size_t i = 0; i < registered.size(); ++i) {
    if (!listed[i]) problems.push_back("registered test '" + registered[i] + "' is on no list");
  }
  return problems;
}

}  // namespace testdb

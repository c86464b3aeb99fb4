// The YAML test lists: loading, conditions, selectors, and the checks.
#define BOOST_TEST_MODULE test_db
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_lists.hpp"
#include "test_support.hpp"

namespace {

std::vector<testdb::TestList> lists_from(const jsonl_test::ScratchDirectory& directory,
                                         const std::string& yaml) {
  std::ofstream(directory.path() / "l0.yml") << yaml;
  return testdb::load_test_lists(directory.path());
}

std::string load_error(const std::string& yaml) {
  jsonl_test::ScratchDirectory directory;
  try {
    lists_from(directory, yaml);
  } catch (const testdb::LoadError& error) {
    const std::string message = error.what();
    return message.substr(message.find("l0.yml:") + 3);
  }
  return "(loaded)";
}

const std::string example = R"(version: 0.0.1
l0_cpu:
- condition:
    ranges:
      system_gpu_count:
        gte: 0
        lte: 0
    wildcards:
      host: ['ci-*', 'dev-?']
    terms:
      stage: pre_merge
  tests:
  - writer_tests/writer
  - perf_metrics_tests/shaping/request_id_converts_as_python_int
- condition:
    terms:
      stage: post_merge
  tests:
  - perf_metrics_tests
)";

const std::vector<std::string> registered{
    "writer_tests/writer/a", "writer_tests/writer/b", "writer_tests/json_text/c",
    "perf_metrics_tests/shaping/request_id_converts_as_python_int",
    "perf_metrics_tests/shaping/request_id_converts_as_python_int_too"};

}  // namespace

BOOST_AUTO_TEST_SUITE(test_lists)

BOOST_AUTO_TEST_CASE(a_selector_names_an_executable_a_suite_or_one_case) {
  BOOST_TEST(testdb::selects("writer_tests", "writer_tests/writer/a"));
  BOOST_TEST(testdb::selects("writer_tests/writer", "writer_tests/writer/a"));
  BOOST_TEST(testdb::selects("writer_tests/writer/a", "writer_tests/writer/a"));
  BOOST_TEST(!testdb::selects("writer_tests/write", "writer_tests/writer/a"));
  BOOST_TEST(!testdb::selects("writer_tests/writer/a", "writer_tests/writer/ab"));
}

BOOST_AUTO_TEST_CASE(entries_apply_only_when_their_condition_matches_the_context) {
  jsonl_test::ScratchDirectory directory;
  const auto lists = lists_from(directory, example);
  BOOST_REQUIRE_EQUAL(lists.size(), 1u);
  const auto select = [&](const std::string& context) {
    return testdb::select_tests(lists[0], testdb::parse_context(context), registered);
  };
  const std::vector<std::string> pre_merge{
      "writer_tests/writer/a", "writer_tests/writer/b",
      "perf_metrics_tests/shaping/request_id_converts_as_python_int"};
  BOOST_TEST(select("stage=pre_merge,system_gpu_count=0,host=ci-7") == pre_merge,
             boost::test_tools::per_element());
  BOOST_TEST(select("stage=pre_merge,system_gpu_count=1,host=ci-7").empty());  // out of range
  BOOST_TEST(select("stage=pre_merge,system_gpu_count=0,host=laptop").empty());  // no wildcard
  BOOST_TEST(select("stage=pre_merge,system_gpu_count=0").empty());  // key missing
  BOOST_TEST(select("stage=pre_merge,system_gpu_count=x,host=ci-7").empty());  // not a number
  BOOST_TEST(select("stage=post_merge").size() == 2u);
}

BOOST_AUTO_TEST_CASE(check_reports_a_selector_that_matches_nothing_with_its_line) {
  jsonl_test::ScratchDirectory directory;
  std::string misspelt = example;
  misspelt.replace(misspelt.find("writer_tests/writer"), 19, "writer_tests/wirter");
  const auto problems = testdb::check_lists(lists_from(directory, misspelt), registered);
  BOOST_REQUIRE(!problems.empty());
  BOOST_TEST(jsonl_test::contains(problems[0], "l0.yml:13: selector 'writer_tests/wirter' in list "
                                               "'l0_cpu' matches no registered test"));
}

BOOST_AUTO_TEST_CASE(check_reports_a_registered_test_on_no_list) {
  jsonl_test::ScratchDirectory directory;
  const auto problems = testdb::check_lists(lists_from(directory, example), registered);
  const std::vector<std::string> expected{"registered test 'writer_tests/json_text/c' is on no list"};
  BOOST_TEST(problems == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(malformed_yaml_is_reported_with_line_and_reason) {
  BOOST_TEST(load_error("version: 0.0.1\nl0: [\n") == "yml:3: end of sequence flow not found");
  BOOST_TEST(load_error("l0:\n- tests: [a]\n") == "yml:1: missing 'version'");
  BOOST_TEST(load_error("version: 1\nl0:\n- tests: a\n") == "yml:3: tests must be a sequence");
  BOOST_TEST(load_error("version: 1\nl0:\n- condition:\n    ranges:\n      n: {gt: 1}\n  tests: [a]\n") ==
             "yml:5: unknown range bound 'gt' (gte or lte)");
  BOOST_TEST(load_error("version: 1\nl0:\n- condition:\n    prefix: {a: b}\n  tests: [a]\n") ==
             "yml:4: unknown condition kind 'prefix' (ranges, wildcards or terms)");
  BOOST_TEST(load_error("version: 1\nl0:\n- condition: {}\n") == "yml:3: entry has no tests");
  BOOST_TEST(load_error("version: 1\nl0:\n- condition:\n    ranges:\n      n: {gte: many}\n  tests: [a]\n") ==
             "yml:5: gte must be a number");
}

BOOST_AUTO_TEST_CASE(context_pairs_must_be_key_equals_value) {
  const auto context = testdb::parse_context("a=1,b=x=y,c=");
  BOOST_TEST(context.at("a") == "1");
  BOOST_TEST(context.at("b") == "x=y");
  BOOST_TEST(context.at("c") == "");
  BOOST_CHECK_THROW(testdb::parse_context("a=1,oops"), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

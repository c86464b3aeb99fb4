// Typed records: structs described with Boost.Describe, written without a DOM.
#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "writer_fixture.hpp"

namespace json = boost::json;
using jsonl_test::Log;
using jsonl_test::test_options;

namespace described_test {

struct Point {
  double x = 0;
  double y = 0;
};
BOOST_DESCRIBE_STRUCT(Point, (), (x, y))

struct Sample {
  std::string name;
  std::int64_t count = 0;
  std::uint64_t big = 0;
  bool ok = false;
  std::optional<double> latency_s;
  std::vector<Point> path;
  std::optional<Point> origin;
  std::variant<std::int64_t, std::string> id;
  std::vector<std::optional<int>> gaps;
  json::value extra;
};
BOOST_DESCRIBE_STRUCT(Sample, (), (name, count, big, ok, latency_s, path, origin, id, gaps, extra))

struct Empty {
  std::optional<int> a;
  std::optional<std::string> b;
};
BOOST_DESCRIBE_STRUCT(Empty, (), (a, b))

}  // namespace described_test

namespace {

using described_test::Point;
using described_test::Sample;

std::string line_of(Sample sample) {
  std::string out;
  jsonl::DescribedFormat<Sample>().append_line(sample, out);
  return out;
}

Sample full_sample() {
  return {.name = "r\u00e9sum\u00e9 \"q\"\n",
          .count = -42,
          .big = std::numeric_limits<std::uint64_t>::max(),
          .ok = true,
          .latency_s = 0.1,
          .path = {{1.5, -2.0}, {1e16, 1e-5}},
          .origin = Point{0.0, -0.0},
          .id = std::string("req-7"),
          .gaps = {1, std::nullopt, 3},
          .extra = json::object{{"k", json::array{1, "two", nullptr}}}};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(described)

BOOST_AUTO_TEST_CASE(members_are_written_in_declaration_order_with_append_jsons_bytes) {
  const Sample sample = full_sample();
  const std::string expected = jsonl::to_json_text(jsonl::to_json_value(sample)) + "\n";
  BOOST_TEST(line_of(sample) == expected);
  BOOST_TEST(expected ==
             R"({"name":"r\u00e9sum\u00e9 \"q\"\n","count":-42,"big":18446744073709551615,"ok":true,)"
             R"("latency_s":0.1,"path":[{"x":1.5,"y":-2.0},{"x":1e+16,"y":1e-05}],"origin":{"x":0.0,"y":-0.0},)"
             R"("id":"req-7","gaps":[1,null,3],"extra":{"k":[1,"two",null]}})"
             "\n");
}

BOOST_AUTO_TEST_CASE(an_empty_optional_leaves_its_key_out_and_a_variant_writes_its_alternative) {
  Sample sample;
  sample.id = std::int64_t{9};
  BOOST_TEST(line_of(sample) == R"({"name":"","count":0,"big":0,"ok":false,"path":[],"id":9,"gaps":[],"extra":null})"
                                "\n");
  BOOST_TEST(jsonl::is_empty_object(described_test::Empty{}));
  BOOST_TEST(!jsonl::is_empty_object(described_test::Empty{.a = 0}));
}

BOOST_AUTO_TEST_CASE(a_nan_or_infinity_anywhere_makes_the_record_malformed) {
  Sample nan_latency = full_sample();
  nan_latency.latency_s = std::nan("");
  BOOST_CHECK_THROW(line_of(nan_latency), jsonl::MalformedRecord);
  Sample infinite_point = full_sample();
  infinite_point.path[1].y = std::numeric_limits<double>::infinity();
  BOOST_CHECK_THROW(line_of(infinite_point), jsonl::MalformedRecord);
}

BOOST_AUTO_TEST_CASE(a_writer_of_described_records_writes_them_and_drops_the_malformed_one) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<Sample> writer(test_options(directory.path(), log),
                                          std::make_shared<jsonl::DescribedFormat<Sample>>());
  writer.start();
  Sample bad = full_sample();
  bad.origin = Point{std::nan(""), 0};
  BOOST_TEST(writer.submit(full_sample()));
  BOOST_TEST(writer.submit(std::move(bad)));
  BOOST_TEST(writer.submit(full_sample()));
  writer.close();
  const std::string line = jsonl::to_json_text(jsonl::to_json_value(full_sample()));
  const std::vector<std::string> expected{line, line};
  BOOST_TEST(jsonl_test::read_lines(*writer.path()) == expected, boost::test_tools::per_element());
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::malformed) == 1u);
  BOOST_TEST(jsonl_test::accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(invalid_utf8_in_a_string_member_is_replaced_and_counted) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<Sample> writer(test_options(directory.path(), log),
                                          std::make_shared<jsonl::DescribedFormat<Sample>>());
  writer.start();
  Sample sample;
  sample.name = "a\xff" "b";
  writer.submit(std::move(sample));
  writer.close();
  BOOST_TEST(jsonl_test::contains(jsonl_test::read_file(*writer.path()), R"({"name":"a\ufffdb",)"));
  BOOST_TEST(writer.stats().sanitized == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

// What a configuration decides (line format, malformed errors, routes, sinks), error
// containment and rate limits, and close() walking away from a stuck write.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <latch>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "writer_fixture.hpp"

namespace json = boost::json;
using jsonl::LogLevel;
using namespace std::chrono_literals;

namespace {

using jsonl_test::accounting_holds;
using jsonl_test::StuckSink;
using jsonl_test::Log;
using jsonl_test::test_options;

// A record type of a configuration's own, with a format that knows what "malformed" is.
struct Order {
  enum class Shape { complete, missing_key, trips_a_bug };
  int id;
  Shape shape = Shape::complete;
};

class MissingKey : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class OrderFormat : public jsonl::RecordFormat<Order> {
 public:
  bool append_line(Order& order, std::string& out) const override {
    out += "{\"id\":" + std::to_string(order.id);  // partial text, then maybe a throw
    if (order.shape == Order::Shape::missing_key) throw MissingKey("'price'");
    if (order.shape == Order::Shape::trips_a_bug) throw std::logic_error("serializer bug");
    out += "}\n";
    return false;
  }
  bool is_malformed(const std::exception& error) const noexcept override {
    return dynamic_cast<const MissingKey*>(&error) != nullptr;
  }
};

// Fails every other record in serialization (an unexpected error), and every append.
class FailingEverywhereFormat : public jsonl::JsonLineFormat {
 public:
  bool append_line(json::value& record, std::string& out) const override {
    if (record.as_object().at("n").as_int64() % 2 == 1) throw std::logic_error("odd record");
    return JsonLineFormat::append_line(record, out);
  }
};

class FailingAppendSink : public jsonl::FileSink {
 public:
  void append(const jsonl::FileAppend&, jsonl::AppendOutcome&) override { throw std::runtime_error("append bug"); }
};

// Every record to the writer's file, but the second record routed fails: a bug in the
// configuration's routing.
class SecondRouteFails : public jsonl::RecordRoute<json::value> {
 public:
  std::filesystem::path route(const json::value&) const override {
    if (++routed_ == 2) throw std::length_error("route bug");
    return {};
  }

 private:
  mutable std::atomic<int> routed_{0};
};

// A file per record key: "<key>.jsonl" in `directory`.
class FilePerKeyRoute : public jsonl::RecordRoute<json::value> {
 public:
  explicit FilePerKeyRoute(std::filesystem::path directory) : directory_(std::move(directory)) {}
  std::filesystem::path route(const json::value& record) const override {
    return directory_ / (std::string(record.as_object().at("key").as_string()) + ".jsonl");
  }

 private:
  std::filesystem::path directory_;
};

// A file per record key, as FilePerKeyRoute, that tells records of one key share a file
// without naming it, and counts the files it names.
class KeyTellingRoute : public FilePerKeyRoute {
 public:
  using FilePerKeyRoute::FilePerKeyRoute;
  std::filesystem::path route(const json::value& record) const override {
    ++named;
    return FilePerKeyRoute::route(record);
  }
  bool same_file(const json::value& record, const json::value& earlier) const override {
    return record.as_object().at("key") == earlier.as_object().at("key");
  }
  mutable std::atomic<int> named{0};
};

// The default sink, noting how much room each append's text holds.
class RoomNotingSink : public jsonl::FileSink {
 public:
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    largest_room = std::max(largest_room, append.bytes.capacity());
    FileSink::append(append, outcome);
  }
  std::size_t largest_room = 0;  // the write worker's alone until close() returns
};

}  // namespace

BOOST_AUTO_TEST_SUITE(configuration)

BOOST_AUTO_TEST_CASE(a_huge_first_line_does_not_size_the_text_of_its_whole_batch) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 64;
  auto sink = std::make_shared<RoomNotingSink>();
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(), sink);
  const std::string huge(256 * 1024, 'x');
  writer.submit(json::object{{"huge", huge}});
  for (int i = 1; i < 64; ++i) writer.submit(json::object{{"n", i}});
  writer.start();
  writer.close();
  BOOST_TEST(writer.stats().written == 64u);
  // Sized from the first line alone, the batch's text would take 64 huge lines' room.
  BOOST_TEST(sink->largest_room < 8 * huge.size());
}

BOOST_AUTO_TEST_CASE(configuration_decides_the_line_and_which_errors_are_malformed) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<Order> writer(test_options(directory.path(), log),
                                         std::make_shared<OrderFormat>());
  writer.submit({1});
  writer.submit({2, Order::Shape::missing_key});
  writer.submit({3, Order::Shape::trips_a_bug});
  writer.submit({4});
  writer.start();
  writer.close();
  BOOST_TEST(jsonl_test::read_file(*writer.path()) == "{\"id\":1}\n{\"id\":4}\n");
  const std::vector<std::string> warnings{"Dropped malformed test record: 'price'"};
  BOOST_TEST(log.at(LogLevel::warning) == warnings, boost::test_tools::per_element());
  const auto errors = log.at(LogLevel::error);
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(jsonl_test::contains(errors[0], "Unexpected error serializing test record"));
  BOOST_TEST(jsonl_test::contains(errors[0], "std::logic_error: serializer bug"));
  const auto stats = writer.stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::malformed) == 1u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::serialize_error) == 1u);
  BOOST_TEST(writer.dropped_records() == 2u);
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_CASE(unexpected_errors_are_logged_first_then_every_thousandth_per_stage) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 1;
  options.queue_size = 2000;
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<FailingEverywhereFormat>(),
                                    std::make_shared<FailingAppendSink>());
  for (int i = 0; i < 2000; ++i) BOOST_TEST(writer.submit(json::object{{"n", i}}));
  writer.start();
  writer.close();
  const auto errors = log.at(LogLevel::error);
  const auto count = [&](std::string_view stage) {
    return std::count_if(errors.begin(), errors.end(),
                         [&](const std::string& message) { return jsonl_test::contains(message, stage); });
  };
  BOOST_TEST(count("Unexpected error serializing test record (1 so far)") == 1);
  BOOST_TEST(count("Unexpected error serializing test record (1000 so far)") == 1);
  BOOST_TEST(count("Unexpected error writing test JSONL (1 so far)") == 1);
  BOOST_TEST(count("Unexpected error writing test JSONL (1000 so far)") == 1);
  BOOST_TEST(errors.size() == 4u);
  const auto stats = writer.stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::serialize_error) == 1000u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::unexpected_write) == 1000u);
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_CASE(unexpected_error_routing_a_record_costs_that_record_not_the_drain) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 2;
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(), nullptr,
                                    std::make_shared<SecondRouteFails>());
  for (int i = 0; i < 4; ++i) writer.submit(json::object{{"n", i}});
  writer.start();
  writer.close();
  BOOST_TEST(jsonl_test::read_file(*writer.path()) == "{\"n\":0}\n{\"n\":2}\n{\"n\":3}\n");
  const auto errors = log.at(LogLevel::error);
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(jsonl_test::contains(errors[0], "std::length_error: route bug"));
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::serialize_error) == 1u);
  BOOST_TEST(accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(close_cancels_a_write_that_outlives_the_shutdown_timeout) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = test_options(directory.path(), log);
  options.batch_size = 2;
  options.shutdown_timeout = 200ms;
  auto gates = std::make_shared<StuckSink::Gates>();
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(),
                                    std::make_shared<StuckSink>(gates));
  for (int i = 0; i < 2; ++i) writer.submit(json::object{{"n", i}});
  writer.start();
  gates->entered.wait();
  // Taken while the first append is stuck: the drain waits to hand them off, and close's
  // cancellation reaches it there.
  for (int i = 2; i < 6; ++i) writer.submit(json::object{{"n", i}});

  const auto began = std::chrono::steady_clock::now();
  writer.close();
  const auto took = std::chrono::steady_clock::now() - began;
  BOOST_TEST(took >= options.shutdown_timeout);
  BOOST_TEST(took < options.shutdown_timeout + 2s);

  const std::vector<std::string> warnings{"Timed out flushing test JSONL; dropping remaining records"};
  BOOST_TEST(log.at(LogLevel::warning) == warnings, boost::test_tools::per_element());
  BOOST_TEST(log.at(LogLevel::error).empty());  // cancellation is not an unexpected error
  const auto stats = writer.stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::abandoned) == 6u);
  BOOST_TEST(stats.written == 0u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::serialize_error) == 0u);
  BOOST_TEST(accounting_holds(stats));

  // The abandoned append finishes on its own thread later, and is not counted twice.
  gates->release.count_down();
  gates->returned.wait();
  BOOST_TEST(writer.stats().written == 0u);
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::abandoned) == 6u);
}

BOOST_AUTO_TEST_CASE(a_route_spreads_a_batch_over_files_grouped_in_submission_order) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log),
                                    std::make_shared<jsonl::JsonLineFormat>(), nullptr,
                                    std::make_shared<FilePerKeyRoute>(directory.path()));
  writer.submit(json::object{{"key", "b"}, {"n", 1}});
  writer.submit(json::object{{"key", "a"}, {"n", 2}});
  writer.submit(json::object{{"key", "b"}, {"n", std::numeric_limits<double>::infinity()}});
  writer.submit(json::object{{"key", "b"}, {"n", 4}});
  writer.start();
  writer.close();
  BOOST_TEST(jsonl_test::read_file(directory.path() / "a.jsonl") == "{\"key\":\"a\",\"n\":2}\n");
  BOOST_TEST(jsonl_test::read_file(directory.path() / "b.jsonl") ==
             "{\"key\":\"b\",\"n\":1}\n{\"key\":\"b\",\"n\":4}\n");
  const auto stats = writer.stats();
  BOOST_TEST(stats.written == 3u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::malformed) == 1u);
  BOOST_TEST(log.at(LogLevel::warning).size() == 1u);
  BOOST_TEST(accounting_holds(stats));
}

BOOST_AUTO_TEST_CASE(a_route_that_tells_records_share_a_file_names_each_file_once_a_batch) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto route = std::make_shared<KeyTellingRoute>(directory.path());
  jsonl::JsonlRecordWriter<> writer(test_options(directory.path(), log), std::make_shared<jsonl::JsonLineFormat>(),
                                    nullptr, route);
  for (const char* key : {"b", "a", "b", "b", "a"}) writer.submit(json::object{{"key", key}});
  writer.start();  // queued before start: one batch
  writer.close();
  BOOST_TEST(route->named.load() == 2);
  BOOST_TEST(jsonl_test::read_file(directory.path() / "a.jsonl") == "{\"key\":\"a\"}\n{\"key\":\"a\"}\n");
  BOOST_TEST(jsonl_test::read_file(directory.path() / "b.jsonl") ==
             "{\"key\":\"b\"}\n{\"key\":\"b\"}\n{\"key\":\"b\"}\n");
  BOOST_TEST(writer.stats().appends == 2u);
}

BOOST_AUTO_TEST_SUITE_END()

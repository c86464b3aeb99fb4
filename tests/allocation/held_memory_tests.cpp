// A writer left running holds no more memory after many records than after few: every
// buffer recycled between the drain and the write side is bounded, whatever the route,
// compression or durability. The records go to several files, as a request trace's go
// to its requests and responses, in bursts of several sizes, so that rounds of one batch
// and of many alternate. One case per kind of writer.
#include <boost/json/value.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "counted_heap.hpp"
#include "test_support.hpp"
#include "held_sink.hpp"

import jsonl.writer;

using namespace std::chrono_literals;

namespace {

constexpr std::size_t files = 3;
constexpr std::size_t few_records = 10'000;
constexpr std::size_t many_records = 100'000;
// Records a burst holds, cycled: a lone record, part of a batch, a batch, several rounds.
constexpr std::size_t burst_sizes[] = {1, 7, 64, 300};
// What may legitimately differ between the two readings: a log or counter's text a few
// digits longer, a vector grown once more by a round of another shape.
constexpr std::int64_t slack_blocks = 64;
constexpr std::int64_t slack_bytes = 64 * 1024;

// Each record to one of `files` files by its number.
class ByNumber : public jsonl::RecordRoute<boost::json::value> {
 public:
  explicit ByNumber(std::filesystem::path directory) : directory_(std::move(directory)) {}
  std::filesystem::path route(const boost::json::value& record) const override {
    return directory_ / ("part-" + std::to_string(record.at("n").as_int64() % files) + ".jsonl");
  }

 private:
  std::filesystem::path directory_;
};

class RoutedWriter {
 public:
  RoutedWriter(const std::filesystem::path& directory, jsonl::Compression compression, bool durable,
               std::shared_ptr<jsonl::Sink> sink = nullptr)
      : writer_(options(directory, compression, durable), std::make_shared<jsonl::JsonLineFormat>(), std::move(sink),
                std::make_shared<ByNumber>(directory)) {
    writer_.start();
  }

  // Submits one record and waits until the drain has taken it (and handed it off).
  void submit_one_taken() {
    BOOST_TEST_REQUIRE(writer_.submit(record(written_++)));
    while (writer_.stats().queue_depth != 0) std::this_thread::yield();
  }

  bool flush() { return writer_.flush(60s); }

  // Writes records numbered from `written_` up to `through` in bursts, each flushed.
  void write_through(std::size_t through) {
    for (std::size_t burst = 0; written_ < through; ++burst) {
      const std::size_t end = std::min(through, written_ + burst_sizes[burst % std::size(burst_sizes)]);
      for (; written_ < end; ++written_) {
        BOOST_TEST_REQUIRE(writer_.submit_wait(record(written_)));
      }
      BOOST_TEST_REQUIRE(writer_.flush(60s));
    }
  }

  void close_and_check() {
    writer_.close();
    const jsonl::WriterStats stats = writer_.stats();
    BOOST_TEST(stats.written == written_);
    BOOST_TEST(stats.dropped() == 0u);
  }

 private:
  static boost::json::value record(std::size_t n) {
    return {{"n", static_cast<std::int64_t>(n)}, {"payload", std::string(200, 'x')}};
  }

  static jsonl::WriterOptions options(const std::filesystem::path& directory, jsonl::Compression compression,
                                      bool durable) {
    jsonl::WriterOptions options{.output_dir = directory, .file_stem = "held", .subject = "held"};
    options.compression = compression;
    options.durability.enabled = durable;
    return options;
  }

  jsonl::JsonlRecordWriter<boost::json::value> writer_;
  std::size_t written_ = 0;
};

// Checks that the heap held after `many_records` is within the slack of what it was after
// `few_records`, in the same writer.
void holds_no_more_after_many_records(jsonl::Compression compression, bool durable) {
  const jsonl_test::ScratchDirectory directory;
  RoutedWriter writer(directory.path(), compression, durable);
  writer.write_through(few_records);
  const counted_heap::Held after_few = counted_heap::held();
  writer.write_through(many_records);
  const counted_heap::Held after_many = counted_heap::held();
  BOOST_TEST(after_many.blocks <= after_few.blocks + slack_blocks);
  BOOST_TEST(after_many.bytes <= after_few.bytes + slack_bytes);
  writer.close_and_check();
}

// Rounds a durable write side takes in while one commit is held: each a lone record.
constexpr std::size_t backlog_rounds = 300;

}  // namespace

BOOST_AUTO_TEST_SUITE(held_memory)

BOOST_AUTO_TEST_CASE(a_routed_writer_holds_no_more_after_many_records) {
  holds_no_more_after_many_records({}, false);
}

BOOST_AUTO_TEST_CASE(a_compressed_routed_writer_holds_no_more_after_many_records) {
  holds_no_more_after_many_records(jsonl::Compression::zstd(), false);
}

BOOST_AUTO_TEST_CASE(a_durable_routed_writer_holds_no_more_after_many_records) {
  holds_no_more_after_many_records({}, true);
}

// While a durable commit is held, the drain hands the write side round after round, each
// with texts and a list of its own; once the commit goes through they all come back, and
// the writer keeps no more of them than before.
BOOST_AUTO_TEST_CASE(what_a_backlog_made_is_freed_once_it_is_written) {
  const jsonl_test::ScratchDirectory directory;
  auto sink = std::make_shared<jsonl_test::HeldSink>();
  RoutedWriter writer(directory.path(), {}, true, sink);
  writer.write_through(few_records);
  const counted_heap::Held before = counted_heap::held();
  sink->hold();
  writer.submit_one_taken();
  sink->await_held_append();
  for (std::size_t round = 0; round < backlog_rounds; ++round) writer.submit_one_taken();
  sink->let_through();
  BOOST_TEST_REQUIRE(writer.flush());
  writer.write_through(few_records + backlog_rounds + 1 + 1'000);
  const counted_heap::Held after = counted_heap::held();
  BOOST_TEST(after.blocks <= before.blocks + slack_blocks);
  BOOST_TEST(after.bytes <= before.bytes + slack_bytes);
  writer.close_and_check();
}

BOOST_AUTO_TEST_SUITE_END()

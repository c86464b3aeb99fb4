// A writer left running holds no more memory after many records than after few: every
// buffer recycled between the drain and the write side is bounded, whatever the route,
// compression or durability. The records go to several files, as a request trace's go
// to its requests and responses, in bursts of several sizes, so that rounds of one batch
// and of many alternate. One case per kind of writer.
#include <boost/json/value.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
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
// A record's payload, and its line with its braces, keys and number.
constexpr std::size_t payload_bytes = 200;
constexpr std::size_t line_bytes = payload_bytes + 32;
// Lines long enough that the texts they are serialized into, not the writer's fixed
// buffers, are most of what it holds, in bursts of a lone line, a few, a round of
// several batches each with lines for every file, and part of a batch.
constexpr std::size_t long_payload = 3'000;
constexpr std::size_t long_line = long_payload + 32;  // with its braces, keys and number
constexpr std::size_t uneven_bursts[] = {1, 7, 200, 23};
constexpr std::size_t uneven_records = 40 * (1 + 7 + 200 + 23);

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
  RoutedWriter(const std::filesystem::path& directory, jsonl::WriterOptions options,
               std::shared_ptr<jsonl::Sink> sink = nullptr, std::size_t payload = payload_bytes)
      : writer_(std::move(options), std::make_shared<jsonl::JsonLineFormat>(), std::move(sink),
                std::make_shared<ByNumber>(directory)),
        payload_(payload) {
    writer_.start();
  }

  // Submits `records` records and waits until the drain has taken them (and handed them
  // off).
  void submit_taken(std::size_t records) {
    for (std::size_t i = 0; i < records; ++i) BOOST_TEST_REQUIRE(writer_.submit(record(written_++)));
    while (writer_.stats().queue_depth != 0) std::this_thread::yield();
  }

  bool flush() { return writer_.flush(60s); }

  // Writes records numbered from `written_` up to `through` in bursts of `bursts`'
  // sizes, cycled, each flushed.
  void write_through(std::size_t through, std::span<const std::size_t> bursts = burst_sizes) {
    for (std::size_t burst = 0; written_ < through; ++burst) {
      const std::size_t end = std::min(through, written_ + bursts[burst % bursts.size()]);
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
  boost::json::value record(std::size_t n) const {
    return {{"n", static_cast<std::int64_t>(n)}, {"payload", std::string(payload_, 'x')}};
  }

  jsonl::JsonlRecordWriter<boost::json::value> writer_;
  std::size_t payload_;
  std::size_t written_ = 0;
};

jsonl::WriterOptions options(const std::filesystem::path& directory, jsonl::Compression compression, bool durable) {
  jsonl::WriterOptions options{.output_dir = directory, .file_stem = "held", .subject = "held"};
  options.compression = compression;
  options.durability.enabled = durable;
  return options;
}

// Checks that the heap held after `many_records` is within the slack of what it was after
// `few_records`, in the same writer.
void holds_no_more_after_many_records(jsonl::Compression compression, bool durable) {
  const jsonl_test::ScratchDirectory directory;
  RoutedWriter writer(directory.path(), options(directory.path(), compression, durable));
  writer.write_through(few_records);
  const counted_heap::Held after_few = counted_heap::held();
  writer.write_through(many_records);
  const counted_heap::Held after_many = counted_heap::held();
  BOOST_TEST(after_many.blocks <= after_few.blocks + slack_blocks);
  BOOST_TEST(after_many.bytes <= after_few.bytes + slack_bytes);
  writer.close_and_check();
}

// The heap a writer holds beyond what it held once started, after `uneven_bursts` of
// long lines, each burst taken in one round (the drain holds records for a round,
// compressed or not).
std::int64_t held_after_uneven_bursts(jsonl::Compression compression) {
  const jsonl_test::ScratchDirectory directory;
  jsonl::WriterOptions held_rounds = options(directory.path(), compression, false);
  held_rounds.hold_for = 500ms;
  RoutedWriter writer(directory.path(), std::move(held_rounds), nullptr, long_payload);
  const counted_heap::Held started = counted_heap::held();
  writer.write_through(uneven_records, uneven_bursts);
  const counted_heap::Held after = counted_heap::held();
  writer.close_and_check();
  return after.bytes - started.bytes;
}

// Rounds a durable write side takes in while one commit is held: each a lone record,
// or compressed, each a full round, as many as its queue holds.
constexpr std::size_t backlog_rounds = 300;
constexpr std::size_t compressed_backlog_rounds = 3;

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
  RoutedWriter writer(directory.path(), options(directory.path(), {}, true), sink);
  writer.write_through(few_records);
  const counted_heap::Held before = counted_heap::held();
  sink->hold();
  writer.submit_taken(1);
  sink->await_held_append();
  for (std::size_t round = 0; round < backlog_rounds; ++round) writer.submit_taken(1);
  sink->let_through();
  BOOST_TEST_REQUIRE(writer.flush());
  writer.write_through(few_records + backlog_rounds + 1 + 1'000);
  const counted_heap::Held after = counted_heap::held();
  BOOST_TEST(after.blocks <= before.blocks + slack_blocks);
  BOOST_TEST(after.bytes <= before.bytes + slack_bytes);
  writer.close_and_check();
}

// Compressed, a round's lines for a file are copied into one text, one append: a durable
// writer whose commit is held hands the write side round after round, each with such
// texts. Once they come back it keeps at most a round's more than before (the spare
// texts it keeps for when the write side is a round behind, the largest), each with
// room for up to as much again as its lines.
BOOST_AUTO_TEST_CASE(the_texts_a_compressed_backlog_merged_into_are_freed_once_it_is_written) {
  const jsonl_test::ScratchDirectory directory;
  auto sink = std::make_shared<jsonl_test::HeldSink>();
  const jsonl::WriterOptions compressed = options(directory.path(), jsonl::Compression::zstd(), true);
  const std::size_t full_round = compressed.queue_size / 4;
  RoutedWriter writer(directory.path(), compressed, sink);
  writer.write_through(few_records);
  const counted_heap::Held before = counted_heap::held();
  sink->hold();
  writer.submit_taken(1);
  sink->await_held_append();
  for (std::size_t round = 0; round < compressed_backlog_rounds; ++round) writer.submit_taken(full_round);
  sink->let_through();
  BOOST_TEST_REQUIRE(writer.flush());
  writer.write_through(few_records + compressed_backlog_rounds * full_round + 1 + 1'000);
  const counted_heap::Held after = counted_heap::held();
  const auto spare_round = static_cast<std::int64_t>(2 * full_round * line_bytes);
  BOOST_TEST(after.bytes <= before.bytes + spare_round + slack_bytes);
  writer.close_and_check();
}

// Under a sanitizer the heap counted is malloc's too, and a compressed writer's zstd
// streams size their workspaces with malloc: the case below compares a compressed writer
// with a plain one, so it is built only where the C++ heap alone is counted.
#ifndef JSONL_SANITIZER_OWNS_ALLOCATION
// Compressed, a round's lines for a file are copied into one text, one append. The
// texts its batches serialize into stay sized to a batch's lines, as a plain writer's
// do: beyond what a plain writer holds under the same rounds, a compressed one holds
// the texts it merged into, for the round being made and the one being written, each
// with room for up to as much again as the fullest round's lines.
BOOST_AUTO_TEST_CASE(a_compressed_writers_batch_texts_stay_sized_to_a_batch) {
  const std::int64_t plain = held_after_uneven_bursts({});
  const std::int64_t compressed = held_after_uneven_bursts(jsonl::Compression::zstd());
  const auto fullest_round = static_cast<std::int64_t>(std::ranges::max(uneven_bursts) * long_line);
  BOOST_TEST_MESSAGE("held beyond a started writer: plain " << plain << " bytes, compressed " << compressed);
  BOOST_TEST(compressed <= plain + 4 * fullest_round + slack_bytes);
}
#endif

BOOST_AUTO_TEST_SUITE_END()

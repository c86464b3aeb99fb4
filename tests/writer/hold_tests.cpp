// A compressed writer holds a partial round (WriterOptions::hold_for, 500 ms unless set)
// so that the piece it adds to a file's frame holds many lines even at a low rate: until
// a round's records wait, a flush wants them, the writer closes, or hold_for has passed;
// and a round's lines for one file go in one append. A plain writer holds only when
// told, and then a partial round too, so that a commit and its wake-ups carry a round's
// records. A writer holding serializes alone: what it holds is not urgent, and oneTBB's
// threads cost more of the cores than they save of the time. One case per behaviour.
#include <boost/json/value.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "writer_fixture.hpp"

import jsonl.writer;

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

struct Held {
  jsonl_test::ScratchDirectory directory;
  jsonl_test::Log log;

  // Compressed and held for up to `hold_for`; batches of 4 records, and a round of
  // `round_batches` of them (a round is at most a quarter of the queue).
  jsonl::WriterOptions options(std::chrono::milliseconds hold_for, std::size_t round_batches = 1) {
    auto options = jsonl_test::test_options(directory.path(), log);
    options.compression = jsonl::Compression::zstd();
    options.hold_for = hold_for;
    options.batch_size = 4;
    options.queue_size = 16 * round_batches;
    return options;
  }
};

void submit(jsonl::JsonlRecordWriter<>& writer, int records) {
  for (int i = 0; i < records; ++i) BOOST_TEST_REQUIRE(writer.submit(boost::json::value(i)));
}

// Spins (yielding) until `records` are written, for at most a minute; how long it took.
Clock::duration until_written(const jsonl::JsonlRecordWriter<>& writer, std::uint64_t records, Clock::time_point since) {
  while (writer.stats().written < records && Clock::now() - since < 60s) std::this_thread::yield();
  BOOST_TEST_REQUIRE(writer.stats().written == records);
  return Clock::now() - since;
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(hold, Held)

BOOST_AUTO_TEST_CASE(a_partial_round_is_held_until_hold_for_has_passed) {
  jsonl::JsonlRecordWriter<> writer(options(300ms));
  writer.start();
  const auto start = Clock::now();
  submit(writer, 1);
  BOOST_TEST((until_written(writer, 1, start) >= 300ms));
  writer.close();
}

BOOST_AUTO_TEST_CASE(each_partial_round_is_held_afresh) {
  jsonl::JsonlRecordWriter<> writer(options(300ms));
  writer.start();
  submit(writer, 1);
  until_written(writer, 1, Clock::now());
  const auto second = Clock::now();
  submit(writer, 1);
  BOOST_TEST((until_written(writer, 2, second) >= 300ms));
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_full_round_is_appended_without_waiting) {
  jsonl::JsonlRecordWriter<> writer(options(std::chrono::hours(1)));
  writer.start();
  const auto start = Clock::now();
  submit(writer, 4);
  BOOST_TEST((until_written(writer, 4, start) < 30s));
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_full_batch_short_of_a_round_is_held) {
  jsonl::JsonlRecordWriter<> writer(options(300ms, 2));
  writer.start();
  const auto start = Clock::now();
  submit(writer, 4);
  BOOST_TEST((until_written(writer, 4, start) >= 300ms));
  writer.close();
}

BOOST_AUTO_TEST_CASE(held_records_go_in_one_append_once_their_round_is_full) {
  jsonl::JsonlRecordWriter<> writer(options(std::chrono::hours(1), 2));
  writer.start();
  const auto start = Clock::now();
  for (int i = 0; i < 8; ++i) {
    submit(writer, 1);
    std::this_thread::yield();
  }
  until_written(writer, 8, start);
  BOOST_TEST(writer.stats().appends == 1u);
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_compressed_rounds_batches_go_in_one_append_per_file) {
  jsonl::JsonlRecordWriter<> writer(options(0ms, 4));
  submit(writer, 16);  // queued before start: the drain's first round takes all four batches
  writer.start();
  BOOST_TEST(writer.flush(60s));
  BOOST_TEST(writer.stats().appends == 1u);
  BOOST_TEST(writer.stats().written == 16u);
  BOOST_TEST(writer.stats().lines_written == 16u);
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_compressed_rounds_lines_for_each_file_go_in_order_in_its_own_append) {
  struct ByParity : jsonl::RecordRoute<boost::json::value> {
    explicit ByParity(std::filesystem::path directory) : directory(std::move(directory)) {}
    std::filesystem::path route(const boost::json::value& record) const override {
      return directory / (record.as_int64() % 2 == 0 ? "even.jsonl.zst" : "odd.jsonl.zst");
    }
    std::filesystem::path directory;
  };
  jsonl::JsonlRecordWriter<> writer(options(0ms, 4), std::make_shared<jsonl::JsonLineFormat>(), nullptr,
                                    std::make_shared<ByParity>(directory.path()));
  for (int i = 0; i < 16; ++i) BOOST_TEST_REQUIRE(writer.submit(boost::json::value(i)));
  writer.start();
  BOOST_TEST(writer.flush(60s));
  BOOST_TEST(writer.stats().appends == 2u);
  writer.close();
  for (const int parity : {0, 1}) {
    jsonl::ZstdDecoder decoder;
    std::string content;
    decoder.decode(jsonl_test::read_file(directory.path() / (parity == 0 ? "even.jsonl.zst" : "odd.jsonl.zst")),
                   [&](std::string_view piece) { content += piece; });
    std::string expected;
    for (int i = parity; i < 16; i += 2) expected += std::to_string(i) + "\n";
    BOOST_TEST(content == expected);
  }
}

BOOST_AUTO_TEST_CASE(a_plain_rounds_batches_go_in_an_append_each) {
  auto plain = options(0ms, 4);
  plain.compression.codec = jsonl::Compression::Codec::none;
  jsonl::JsonlRecordWriter<> writer(plain);
  submit(writer, 16);
  writer.start();
  BOOST_TEST(writer.flush(60s));
  BOOST_TEST(writer.stats().appends == 4u);
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_flush_takes_held_records_at_once) {
  jsonl::JsonlRecordWriter<> writer(options(std::chrono::hours(1)));
  writer.start();
  submit(writer, 1);
  BOOST_TEST(writer.flush(60s));
  BOOST_TEST(writer.stats().written == 1u);
  writer.close();
}

BOOST_AUTO_TEST_CASE(close_writes_held_records_without_waiting_for_them) {
  jsonl::JsonlRecordWriter<> writer(options(std::chrono::hours(1)));
  writer.start();
  submit(writer, 1);
  writer.close();
  BOOST_TEST(writer.stats().written == 1u);
  BOOST_TEST(log.entries().empty());  // no "Timed out flushing"
}

BOOST_AUTO_TEST_CASE(a_compressed_writer_holds_for_500_ms_unless_told) {
  auto unset = options(0ms);
  unset.hold_for.reset();
  jsonl::JsonlRecordWriter<> writer(unset);
  writer.start();
  const auto start = Clock::now();
  submit(writer, 1);
  BOOST_TEST((until_written(writer, 1, start) >= 500ms));
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_plain_writer_holds_nothing_unless_told) {
  auto plain = options(0ms);
  plain.hold_for.reset();
  plain.compression.codec = jsonl::Compression::Codec::none;
  jsonl::JsonlRecordWriter<> writer(plain);
  writer.start();
  const auto start = Clock::now();
  submit(writer, 1);
  // Below the 500 ms a compressed writer holds unless told; a plain one's nap is 1 ms.
  BOOST_TEST((until_written(writer, 1, start) < 400ms));
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_plain_writer_told_to_hold_keeps_a_full_batch_short_of_a_round_until_hold_for_has_passed) {
  auto plain = options(300ms, 2);
  plain.compression.codec = jsonl::Compression::Codec::none;
  jsonl::JsonlRecordWriter<> writer(plain);
  writer.start();
  const auto start = Clock::now();
  submit(writer, 4);
  BOOST_TEST((until_written(writer, 4, start) >= 300ms));
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_plain_writer_holding_appends_a_full_round_without_waiting) {
  auto plain = options(std::chrono::hours(1), 2);
  plain.compression.codec = jsonl::Compression::Codec::none;
  jsonl::JsonlRecordWriter<> writer(plain);
  writer.start();
  const auto start = Clock::now();
  submit(writer, 8);
  BOOST_TEST((until_written(writer, 8, start) < 30s));
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_writer_told_to_hold_serializes_its_rounds_alone) {
  jsonl::JsonlRecordWriter<> writer(options(std::chrono::hours(1), 16));
  submit(writer, 64);  // queued before start: the drain's first round takes them all
  writer.start();
  BOOST_TEST(writer.flush(60s));
  writer.close();  // the drain counts a round once it has handed it on: read after it ends
  BOOST_TEST(writer.stats().serialized_alone == 64u);
  BOOST_TEST(writer.stats().serialized_side_by_side == 0u);
}

BOOST_AUTO_TEST_CASE(a_writer_not_holding_serializes_the_same_round_side_by_side) {
  jsonl::JsonlRecordWriter<> writer(options(0ms, 16));
  submit(writer, 64);
  writer.start();
  BOOST_TEST(writer.flush(60s));
  writer.close();
  BOOST_TEST(writer.stats().serialized_side_by_side == 64u);
}

BOOST_AUTO_TEST_CASE(a_hold_of_zero_holds_nothing) {
  jsonl::JsonlRecordWriter<> writer(options(0ms));
  writer.start();
  const auto start = Clock::now();
  submit(writer, 1);
  BOOST_TEST((until_written(writer, 1, start) < 30s));
  writer.close();
}

BOOST_AUTO_TEST_CASE(a_negative_hold_is_a_clear_error_at_construction) {
  try {
    jsonl::JsonlRecordWriter<> writer(options(-1ms));
    BOOST_FAIL("constructed");
  } catch (const std::invalid_argument& error) {
    BOOST_TEST(error.what() == std::string("hold_for must not be negative"));
  }
}

BOOST_AUTO_TEST_SUITE_END()

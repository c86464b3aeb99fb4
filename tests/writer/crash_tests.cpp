// Durable writers cut at every crash point: each scenario runs once with its calls
// recorded, then every state a crash may leave is checked (crash_model.cppm).
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <memory>

#include "durability_fixture.hpp"

import crash_model;
import jsonl.writer;

using namespace durability_test;

namespace {

struct CrashPoints : Durable {
  std::shared_ptr<crash_model::CallRecorder> recorder =
      std::make_shared<crash_model::CallRecorder>(directory.path(), calls);

  jsonl::WriterOptions recorded() {
    auto options = durable();
    options.durability.calls = recorder;
    return options;
  }

  // Every crash state of the recorded run, each checked: reports the first that fails,
  // and returns how many there were.
  std::size_t explore() const {
    const crash_model::Exploration exploration = crash_model::explore(recorder->log());
    BOOST_TEST(exploration.failure.empty(), exploration.failure);
    std::printf("%zu crash states explored over %zu crash points\n", exploration.states, exploration.points);
    return exploration.states;
  }

  // Rotation by size with retention of two files: four flushed rounds of six records.
  std::unique_ptr<Writer> rotate_and_retain(jsonl::WriterOptions options, std::uint64_t max_file_bytes) {
    options.batch_size = 4;
    options.max_file_bytes = max_file_bytes;
    options.max_files = 2;
    auto writer = make_writer(std::move(options));
    writer->start();
    for (int round = 0; round < 4; ++round) {
      submit(*writer, 6, round * 6, "é and more");
      BOOST_TEST_REQUIRE(writer->flush(10s));
    }
    writer->close();
    return writer;
  }

  // Three flushed commits of four records; the second meets a full disk after its write
  // landed 20 bytes (and, with `truncates_fail`, cannot cut them off again). The drain
  // naps through each commit's submits (a submit wakes a napping drain only once the
  // queue is half full) and takes all four when flush wakes it: one append a commit.
  std::unique_ptr<Writer> meet_a_full_disk(jsonl::WriterOptions options, bool truncates_fail = false) {
    options.linger = std::chrono::hours(1);
    auto writer = make_writer(std::move(options));
    writer->start();
    submit(*writer, 4, 0, "é");
    BOOST_TEST_REQUIRE(writer->flush(10s));
    if (truncates_fail) calls->fail_truncates();
    calls->cut_next_write(20, ENOSPC);
    submit(*writer, 4, 4, "é");
    BOOST_TEST_REQUIRE(writer->flush(10s));
    submit(*writer, 4, 8, "é");
    writer->close();
    return writer;
  }

  jsonl::WriterOptions compressed() {
    auto options = recorded();
    options.compression = jsonl::Compression::zstd();
    return options;
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(crash_points, CrashPoints)

BOOST_AUTO_TEST_CASE(rotation_and_retention_hold_from_every_crash_point) {
  rotate_and_retain(recorded(), 300);
  BOOST_TEST(explore() > 0u);
}

BOOST_AUTO_TEST_CASE(a_failed_fsync_holds_from_every_crash_point) {
  auto writer = make_writer(recorded());
  writer->start();
  submit(*writer, 4);
  BOOST_TEST_REQUIRE(writer->flush(10s));
  calls->fail_next_fsync(EIO);
  submit(*writer, 4, 4);
  BOOST_TEST_REQUIRE(writer->flush(10s));
  submit(*writer, 4, 8);
  writer->close();
  BOOST_TEST(writer->stats().unknown > 0u);
  BOOST_TEST(explore() > 0u);
}

BOOST_AUTO_TEST_CASE(a_full_disk_in_a_commit_holds_from_every_crash_point) {
  meet_a_full_disk(recorded());
  BOOST_TEST(explore() > 0u);
}

BOOST_AUTO_TEST_CASE(a_successor_appending_to_the_same_file_holds_from_every_crash_point) {
  {
    auto first = make_writer(recorded());
    first->start();
    submit(*first, 5);
    BOOST_TEST_REQUIRE(first->flush(10s));
    submit(*first, 3, 5);
    first->close();
  }
  auto second = make_writer(recorded());
  second->start();
  submit(*second, 5, 100);
  second->close();
  BOOST_TEST(explore() > 0u);
}

BOOST_AUTO_TEST_CASE(compressed_rotation_and_retention_hold_from_every_crash_point) {
  const auto writer = rotate_and_retain(compressed(), 60);
  BOOST_TEST(writer->stats().files_started > 2u);
  BOOST_TEST(explore() > 0u);
}

BOOST_AUTO_TEST_CASE(a_frame_spanning_appends_holds_from_every_crash_point_inside_it_and_before_its_end) {
  auto writer = make_writer(compressed());
  writer->start();
  for (int run = 0; run < 3; ++run) {
    submit(*writer, 4, 4 * run, "é");
    BOOST_TEST_REQUIRE(writer->flush(10s));
  }
  writer->close();
  BOOST_TEST(writer->stats().appends >= 3u);
  BOOST_TEST(explore() > 0u);
}

BOOST_AUTO_TEST_CASE(a_compressed_frame_cut_off_after_a_full_disk_holds_from_every_crash_point) {
  const auto writer = meet_a_full_disk(compressed());
  BOOST_TEST(writer->stats().dropped(jsonl::DropReason::write_error) == 4u);
  BOOST_TEST(explore() > 0u);
}

BOOST_AUTO_TEST_CASE(a_torn_compressed_file_left_behind_holds_from_every_crash_point) {
  const auto writer = meet_a_full_disk(compressed(), true);
  BOOST_TEST(writer->stats().unknown == 4u);
  BOOST_TEST(writer->stats().files_started == 2u);
  BOOST_TEST(explore() > 0u);
}

BOOST_AUTO_TEST_SUITE_END()

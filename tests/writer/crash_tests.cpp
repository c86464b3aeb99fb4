// Durable writers cut at every crash point: each scenario runs once with its calls
// recorded, then every prefix of the record is replayed into each state a crash there
// may leave (crash_model.hpp), written into a directory, and reconciled. Every
// document that survives must be whole, balanced and verified: every record it claims
// on disk and parsable.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "crash_model.hpp"
#include "durability_fixture.hpp"

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

  // Every crash state of the recorded run, each checked; returns how many there were
  // (states alike are checked once). Reports the first that fails and stops.
  std::size_t explore() const {
    const std::vector<crash_model::Change> log = recorder->log();
    crash_model::Disk disk;
    std::set<std::size_t> seen;
    std::size_t states = 0;
    bool failed = false;
    const jsonl_test::ScratchDirectory scratch;
    for (std::size_t point = 0; point <= log.size() && !failed; ++point) {
      if (point > 0) disk.apply(log[point - 1]);
      disk.crash_states([&](const crash_model::Disk::Entries& entries, const std::vector<std::string>& contents) {
        if (failed || !seen.insert(fingerprint(entries, contents)).second) return;
        ++states;
        const std::filesystem::path root = scratch.path() / std::to_string(states);
        crash_model::materialize(root, entries, contents);
        const std::string problem = check(root);
        if (!problem.empty()) {
          failed = true;
          BOOST_ERROR("crash after change " << point << " of " << log.size() << ": " << problem);
        }
        std::filesystem::remove_all(root);
      });
    }
    BOOST_TEST_MESSAGE(states << " crash states explored over " << log.size() + 1 << " crash points");
    return states;
  }

 private:
  static std::size_t fingerprint(const crash_model::Disk::Entries& entries, const std::vector<std::string>& contents) {
    std::size_t hash = 0;
    const auto mix = [&](std::size_t value) { hash ^= value + 0x9e3779b97f4a7c15ULL + (hash << 6) + (hash >> 2); };
    for (const auto& [path, inode] : entries) {
      mix(std::hash<std::string>{}(path));
      mix(inode < 0 ? 0 : std::hash<std::string>{}(contents[static_cast<std::size_t>(inode)]) + 1);
    }
    return hash;
  }

  // What is wrong with the books in `root`, or nothing.
  static std::string check(const std::filesystem::path& root) {
    const jsonl::Reconciliation reconciliation = jsonl::reconcile(root);
    for (const jsonl::BooksCheck& books : reconciliation.generations) {
      const std::string name = books.document.generic_string();
      if (books.error) return name + ": " + *books.error;
      if (!books.balanced) return name + " does not balance";
      for (const jsonl::FileCheck& file : books.files) {
        if (!file.verified()) {
          return name + ": " + file.file + " not verified (" + std::to_string(file.records) + " of " +
                 std::to_string(file.persisted_records) + " records, " + std::to_string(file.bad_lines) +
                 " bad lines" + (file.error ? ", " + *file.error : "") + ")";
        }
      }
    }
    return "";
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(crash_points, CrashPoints)

BOOST_AUTO_TEST_CASE(rotation_and_retention_hold_from_every_crash_point) {
  auto options = recorded();
  options.batch_size = 4;
  options.max_file_bytes = 300;
  options.max_files = 2;
  auto writer = make_writer(std::move(options));
  writer->start();
  for (int round = 0; round < 4; ++round) {
    submit(*writer, 6, round * 6, "é and more");
    BOOST_TEST_REQUIRE(writer->flush(10s));
  }
  writer->close();
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
  auto writer = make_writer(recorded());
  writer->start();
  submit(*writer, 4, 0, "é");
  BOOST_TEST_REQUIRE(writer->flush(10s));
  calls->cut_next_write(20, ENOSPC);
  submit(*writer, 4, 4, "é");
  BOOST_TEST_REQUIRE(writer->flush(10s));
  submit(*writer, 4, 8, "é");
  writer->close();
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

BOOST_AUTO_TEST_SUITE_END()

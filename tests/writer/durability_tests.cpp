// Durable accounting: every record persisted (written and fsync()ed), dropped by reason,
// unknown (its append failed after bytes may have landed) or pending. The failures come
// through WriterOptions::durability.calls: a write that lands a prefix and fails, an
// fsync that fails or blocks.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "durability_fixture.hpp"

import jsonl.writer;

using namespace durability_test;

BOOST_FIXTURE_TEST_SUITE(durability, Durable)

BOOST_AUTO_TEST_CASE(normal_appends_are_persisted_and_reconcile) {
  auto writer = make_writer(durable());
  writer->start();
  submit(*writer, 50);
  writer->close();

  const json::value document = document_of(*writer);
  BOOST_TEST(document.at("schema") == "jsonl-writer-books/3");
  BOOST_TEST(document.at("closed") == true);
  BOOST_TEST(writer->books_file()->filename() == std::string(document.at("generation").as_string()) + ".json");
  BOOST_TEST(json::serialize(counts_of(document)) ==
             R"({"submitted":50,"persisted":50,"dropped":{"queue_full":0,"malformed":0,"serialize_error":0,)"
             R"("write_error":0,"unexpected_write":0,"abandoned":0,"retention":0},"unknown":0,"pending":0})");
  const json::object& file = only_file(document);
  BOOST_TEST(file.at("file").as_string() == writer->path()->filename().string());
  BOOST_TEST(file.at("start_offset") == 0);
  BOOST_TEST(file.at("persisted_end").to_number<std::uint64_t>() == std::filesystem::file_size(*writer->path()));
  const jsonl::FileCheck check = only_check(directory.path(), document);
  BOOST_TEST(check.records == 50u);
  BOOST_TEST(check.bad_lines == 0u);
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
  BOOST_TEST(writer->stats().written == 50u);
  BOOST_TEST(jsonl_test::accounting_holds(writer->stats()));
}

BOOST_AUTO_TEST_CASE(a_record_counts_only_after_its_fsync) {
  auto writer = make_writer(durable());
  calls->block_fsyncs();
  writer->start();
  submit(*writer, 3);
  BOOST_TEST_REQUIRE(calls->entered.wait());
  // Written, not yet fsync()ed: not persisted.
  BOOST_TEST(std::filesystem::file_size(*writer->path()) > 0u);
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(writer->stats().unknown == 0u);
  calls->release();
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(writer->stats().written == 3u);
  BOOST_TEST(count(document_of(*writer), "persisted") == 3u);
}

BOOST_AUTO_TEST_CASE(a_new_file_counts_only_once_its_directory_is_fsynced_and_only_once) {
  auto writer = make_writer(durable());
  calls->fail_next_directory_fsync(EIO);
  submit(*writer, 3);
  writer->start();
  BOOST_TEST(writer->flush(10s));
  // The lines are fsync()ed, but the file's name may not survive a crash.
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(writer->stats().unknown == 3u);
  submit(*writer, 1, 3);
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(writer->stats().written == 1u);
  submit(*writer, 1, 4);
  writer->close();
  BOOST_TEST(writer->stats().written == 2u);
  // The failed one, then the directory and its parent (the directory's own name) once.
  BOOST_TEST(calls->data_directory_fsyncs.load() == 3);
  BOOST_TEST(balances(document_of(*writer)));
}

// Each record to the file its "index" names: a writer that makes new files for ever.
class FilePerIndex : public jsonl::RecordRoute<json::value> {
 public:
  explicit FilePerIndex(std::filesystem::path directory) : directory_(std::move(directory)) {}
  std::filesystem::path route(const json::value& record) const override {
    return directory_ / ("file-" + std::to_string(record.at("index").as_int64()) + ".jsonl");
  }

 private:
  std::filesystem::path directory_;
};

BOOST_AUTO_TEST_CASE(a_writer_forgets_durable_names_past_its_bound_and_makes_them_durable_again) {
  Writer writer(durable(), std::make_shared<jsonl::JsonLineFormat>(), nullptr,
                std::make_shared<FilePerIndex>(directory.path()));
  writer.start();
  const auto write_to = [&](int index) {
    BOOST_TEST_REQUIRE(writer.submit(record(index)));
    BOOST_TEST_REQUIRE(writer.flush(10s));
  };
  write_to(0);
  write_to(0);
  // The first commit fsyncs the directory and its parent; the second, knowing the name
  // durable, neither.
  BOOST_TEST(calls->data_directory_fsyncs.load() == 2);
  constexpr int more_files_than_remembered = 100;
  for (int index = 1; index <= more_files_than_remembered; ++index) write_to(index);
  const int before = calls->data_directory_fsyncs.load();
  write_to(0);
  // Its name forgotten: its directory is fsynced again (the directory's own name, which
  // the files written since made durable again, is not).
  BOOST_TEST(calls->data_directory_fsyncs.load() == before + 1);
  writer.close();
  BOOST_TEST(writer.stats().written == more_files_than_remembered + 3u);
}

BOOST_AUTO_TEST_CASE(a_cut_inside_a_utf8_character_leaves_two_unknown_and_the_next_append_parses) {
  auto writer = make_writer(durable());
  const std::string first = line_of(0, "你好");
  const std::string second = line_of(1, "你好");
  // Inside the first byte of the second record's three-byte character.
  const std::size_t cut = first.size() + second.find("你") + 1;
  calls->cut_next_write(cut, ENOSPC);
  submit(*writer, 4, 0, "你好");  // before start: one batch, one append
  writer->start();
  BOOST_TEST(writer->flush(10s));
  // Record 0 landed whole and record 1 in part: neither is claimed. Records 2 and 3
  // never reached the file.
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(writer->stats().unknown == 2u);
  BOOST_TEST(writer->stats().dropped(jsonl::DropReason::write_error) == 2u);

  submit(*writer, 1, 4, "after");
  writer->close();
  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "persisted") == 1u);
  BOOST_TEST(count(document, "unknown") == 2u);
  const json::object& file = only_file(document);
  BOOST_TEST(file.at("fragments_isolated") == 1);
  BOOST_TEST(json::serialize(file.at("unknown_extents")) ==
             R"([{"start":0,"landed":)" + std::to_string(cut) + R"(,"records":2}])");
  const jsonl::FileCheck check = only_check(directory.path(), document);
  BOOST_TEST(check.records == 1u);
  BOOST_TEST(check.bad_lines == 0u);
  BOOST_TEST(check.unknown_lines == 2u);
  // The fragment is one bad line of the file; the record after it parses untouched.
  const std::vector<std::string> lines = jsonl_test::read_lines(*writer->path());
  BOOST_TEST_REQUIRE(lines.size() == 3u);
  BOOST_TEST(json::parse(lines[2]) == record(4, "after"));
  boost::system::error_code error;
  json::parse(lines[1], error);
  BOOST_TEST(error.failed());
}

BOOST_AUTO_TEST_CASE(a_full_disk_drops_the_group_and_a_later_append_lands) {
  auto writer = make_writer(durable());
  calls->cut_next_write(0, EDQUOT);
  submit(*writer, 3);
  writer->start();
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(writer->stats().dropped(jsonl::DropReason::write_error) == 3u);
  BOOST_TEST(writer->stats().unknown == 0u);

  submit(*writer, 2, 3);
  writer->close();
  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "persisted") == 2u);
  BOOST_TEST(dropped(document, "write_error") == 3u);
  BOOST_TEST(jsonl_test::contains(document.at("errors").at("last_error").as_string(), "Disk quota exceeded"));
  const jsonl::FileCheck check = only_check(directory.path(), document);
  BOOST_TEST(check.records == 2u);
  BOOST_TEST(check.bad_lines == 0u);
  BOOST_TEST(log.at(jsonl::LogLevel::warning) ==
             (std::vector<std::string>{"Failed to write test JSONL: write " + writer->path()->string() +
                                           ": Disk quota exceeded",
                                       "Resumed writing test JSONL after 3 records were lost"}));
}

BOOST_AUTO_TEST_CASE(a_failed_fsync_leaves_its_records_unknown) {
  auto writer = make_writer(durable());
  calls->fail_next_fsync(EIO);
  submit(*writer, 3);
  writer->start();
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(writer->stats().unknown == 3u);

  submit(*writer, 1, 3);
  writer->close();
  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "persisted") == 1u);
  BOOST_TEST(count(document, "unknown") == 3u);
  const jsonl::FileCheck check = only_check(directory.path(), document);
  BOOST_TEST(check.records == 1u);
  BOOST_TEST(check.bad_lines == 0u);
  BOOST_TEST(check.unknown_lines == 3u);
}

BOOST_AUTO_TEST_CASE(a_stalled_filesystem_with_a_saturated_queue_still_balances) {
  auto options = durable();
  options.queue_size = 64;
  options.batch_size = 8;
  auto writer = make_writer(std::move(options));
  calls->block_fsyncs();
  writer->start();
  submit(*writer, 1);
  BOOST_TEST_REQUIRE(calls->entered.wait());
  // One record stuck in fsync; far more than the writer can hold behind it.
  int accepted = 1;
  for (int index = 1; index < 1000; ++index) accepted += writer->submit(record(index));
  const jsonl::WriterStats stalled = writer->stats();
  BOOST_TEST(stalled.written == 0u);
  BOOST_TEST(stalled.dropped(jsonl::DropReason::queue_full) == 1000u - accepted);
  BOOST_TEST(accepted < 1000);

  calls->release();
  writer->close();
  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "submitted") == 1000u);
  BOOST_TEST(count(document, "persisted") == static_cast<std::uint64_t>(accepted));
  BOOST_TEST(dropped(document, "queue_full") == 1000u - accepted);
  BOOST_TEST(count(document, "pending") == 0u);
  BOOST_TEST(only_check(directory.path(), document).records == static_cast<std::uint64_t>(accepted));
}

BOOST_AUTO_TEST_CASE(batches_waiting_behind_a_slow_fsync_are_committed_together) {
  auto options = durable();
  options.queue_size = 400;
  options.batch_size = 1;  // 16 batches a round
  auto writer = make_writer(std::move(options));
  calls->block_fsyncs();
  writer->start();
  submit(*writer, 1);
  BOOST_TEST_REQUIRE(calls->entered.wait());
  submit(*writer, 300, 1);
  // Without group commit the drain would wait with a round of its own and the rest would
  // stay queued.
  BOOST_TEST_REQUIRE(eventually([&] { return writer->stats().queue_depth == 0; }));
  calls->release();
  writer->close();
  BOOST_TEST(writer->stats().written == 301u);
  BOOST_TEST(calls->data_fsyncs.load() <= 3);
}

BOOST_AUTO_TEST_CASE(a_shutdown_during_a_stall_claims_nothing_in_flight) {
  auto options = durable();
  options.shutdown_timeout = 200ms;
  auto writer = make_writer(std::move(options));
  calls->block_fsyncs();
  writer->start();
  submit(*writer, 1);
  BOOST_TEST_REQUIRE(calls->entered.wait());
  submit(*writer, 5, 1);
  writer->close();
  const std::string published = jsonl_test::read_file(writer->books_file().value());
  const json::value document = json::parse(published);
  BOOST_TEST(document.at("closed") == true);
  BOOST_TEST(balances(document));
  // The record stuck in fsync may yet land, so it is not claimed; the rest was never written.
  BOOST_TEST(count(document, "unknown") == 1u);
  BOOST_TEST(dropped(document, "abandoned") == 5u);
  BOOST_TEST(count(document, "persisted") == 0u);

  calls->release();
  BOOST_TEST_REQUIRE(calls->blocked_fsync_returned.wait());
  BOOST_TEST(writer->flush(0ms));
  BOOST_TEST(writer->stats().written == 0u);
  BOOST_TEST(jsonl_test::accounting_holds(writer->stats()));
  BOOST_TEST(jsonl_test::read_file(writer->books_file().value()) == published);
}

BOOST_AUTO_TEST_CASE(a_publication_stuck_in_the_filesystem_does_not_hold_up_close) {
  auto options = durable();
  options.shutdown_timeout = 200ms;
  auto writer = make_writer(std::move(options));
  calls->block_books_fsyncs();
  writer->start();
  BOOST_TEST_REQUIRE(calls->books_entered.wait());  // the first document, stuck
  submit(*writer, 3);
  writer->close();
  BOOST_TEST(log.at(jsonl::LogLevel::warning) ==
             (std::vector<std::string>{"Timed out flushing test JSONL; dropping remaining records",
                                       "Timed out publishing the closed test JSONL books"}),
             boost::test_tools::per_element());
  BOOST_TEST(writer->stats().dropped(jsonl::DropReason::abandoned) == 3u);
  calls->release();
  BOOST_TEST_REQUIRE(calls->books_fsync_returned.wait());
}

BOOST_AUTO_TEST_SUITE_END()

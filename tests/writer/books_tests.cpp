// A durable writer's books: published beside the files, whole whatever fails, caught up
// when idle; a dead writer and its successor told apart by the offsets; and the
// reconciler's bytes that no document claims.
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

BOOST_FIXTURE_TEST_SUITE(books, Durable)

BOOST_AUTO_TEST_CASE(a_dead_writer_and_its_successor_stay_separable) {
  auto first = make_writer(durable());
  first->start();
  submit(*first, 10);
  BOOST_TEST(first->flush(10s));
  // It dies here: the document it published last is its last word, and its last append
  // was cut mid-record.
  const std::string last_word = jsonl_test::read_file(first->books_file().value());
  first->close();
  std::ofstream(first->books_file().value(), std::ios::binary | std::ios::trunc) << last_word;
  const std::filesystem::path file = first->path().value();
  std::ofstream(file, std::ios::binary | std::ios::app) << R"({"session":"s","index":10,"te)";
  const std::uint64_t size_at_death = std::filesystem::file_size(file);

  auto second = make_writer(durable());
  second->start();
  BOOST_TEST_REQUIRE((second->path() == file));
  submit(*second, 5, 100);
  second->close();

  const json::value dead = document_of(*first);
  const json::value alive = document_of(*second);
  BOOST_TEST(dead.at("generation") != alive.at("generation"));
  BOOST_TEST(dead.at("closed") == false);
  BOOST_TEST(alive.at("closed") == true);
  const jsonl::FileCheck dead_check = only_check(directory.path(), dead);
  const jsonl::FileCheck alive_check = only_check(directory.path(), alive);
  BOOST_TEST(dead_check.records == 10u);
  BOOST_TEST(dead_check.bad_lines == 0u);
  BOOST_TEST(alive_check.records == 5u);
  BOOST_TEST(alive_check.bad_lines == 0u);
  BOOST_TEST(alive_check.start_offset == size_at_death);
  BOOST_TEST(alive_check.fragments_isolated == 1u);
  // The successor's first record starts on a line of its own.
  const std::vector<std::string> lines = jsonl_test::read_lines(file);
  BOOST_TEST_REQUIRE(lines.size() == 16u);
  BOOST_TEST(json::parse(lines[11]) == record(100));
}

BOOST_AUTO_TEST_CASE(a_failed_publication_keeps_the_previous_document_whole) {
  auto writer = make_writer(durable());
  writer->start();
  submit(*writer, 2);
  BOOST_TEST(writer->flush(10s));
  const std::string before = jsonl_test::read_file(writer->books_file().value());
  const std::uint64_t landed = writer->stats().publications;
  BOOST_TEST(landed >= 1u);

  calls->fail_renames(true);
  submit(*writer, 1, 2);
  BOOST_TEST(writer->flush(10s));
  BOOST_TEST(jsonl_test::read_file(writer->books_file().value()) == before);
  BOOST_TEST(writer->stats().publication_errors == 1u);
  BOOST_TEST(writer->stats().publications == landed);
  BOOST_TEST(log.at(jsonl::LogLevel::warning).size() == 1u);

  calls->fail_renames(false);
  writer->close();
  const json::value after = document_of(*writer);
  BOOST_TEST(after.at("errors").at("publication_errors") == 1);
  BOOST_TEST(count(after, "persisted") == 3u);
  BOOST_TEST(balances(after));
}

BOOST_AUTO_TEST_CASE(an_idle_writer_catches_its_document_up) {
  auto options = durable();
  options.durability.publish_interval = 300ms;
  auto writer = make_writer(std::move(options));
  writer->start();
  BOOST_TEST_REQUIRE(calls->await_publications(1));  // the first document, at start
  submit(*writer, 3);
  // Within the interval of the first document, the commit may not publish; the idle
  // worker does, one interval later, with no further submit or flush.
  BOOST_TEST_REQUIRE(calls->await_publications(2));
  const json::value document = document_of(*writer);
  BOOST_TEST(document.at("closed") == false);
  BOOST_TEST(count(document, "persisted") == 3u);
  BOOST_TEST(balances(document));
}

BOOST_AUTO_TEST_CASE(a_failed_publication_is_retried_while_the_writer_is_idle) {
  auto options = durable();
  options.durability.publish_interval = 100ms;
  auto writer = make_writer(std::move(options));
  writer->start();
  BOOST_TEST_REQUIRE(calls->await_publications(1));
  calls->fail_renames(true);
  submit(*writer, 3);
  BOOST_TEST_REQUIRE(eventually([&] { return writer->stats().publication_errors != 0; }));
  calls->fail_renames(false);
  BOOST_TEST_REQUIRE(calls->await_publications(2));
  const json::value document = document_of(*writer);
  BOOST_TEST(count(document, "persisted") == 3u);
  BOOST_TEST(document.at("errors").at("publication_errors").to_number<std::uint64_t>() >= 1u);
}

BOOST_AUTO_TEST_CASE(the_reconciler_credits_unpublished_bytes_to_no_one) {
  auto first = make_writer(durable());
  first->start();
  submit(*first, 5);
  BOOST_TEST(first->flush(10s));
  const std::string last_word = jsonl_test::read_file(first->books_file().value());
  // Two more persisted, never published: it dies before its next document.
  submit(*first, 2, 5);
  first->close();
  std::ofstream(first->books_file().value(), std::ios::binary | std::ios::trunc) << last_word;

  auto second = make_writer(durable());
  second->start();
  submit(*second, 2, 200);
  second->close();

  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.generations.size() == 2u);
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST_REQUIRE(reconciliation.unaccounted.size() == 1u);
  const jsonl::UnaccountedBytes& unclaimed = reconciliation.unaccounted[0];
  BOOST_TEST(unclaimed.file == first->path()->filename().string());
  BOOST_TEST(unclaimed.unclaimed_bytes == line_of(5, "ok").size() + line_of(6, "ok").size());
  BOOST_TEST(unclaimed.whole_lines == 2u);
  BOOST_TEST(unclaimed.cut_lines == 0u);
}

BOOST_AUTO_TEST_CASE(files_deleted_by_retention_leave_the_shards_for_the_retention_summary) {
  auto options = durable();
  options.batch_size = 4;
  options.max_file_bytes = 10;  // each append a file of its own
  options.max_files = 1;
  auto writer = make_writer(std::move(options));
  submit(*writer, 12);  // before start: three appends
  writer->start();
  writer->close();

  const json::value document = document_of(*writer);
  // The reference's reconciler: the shards hold "persisted", every reason sums up.
  BOOST_TEST(balances(document));
  BOOST_TEST(count(document, "persisted") == 4u);
  BOOST_TEST(dropped(document, "retention") == 8u);
  const json::object& shard = only_file(document);
  BOOST_TEST(std::filesystem::exists(directory.path() / std::string(shard.at("file").as_string())));
  BOOST_TEST(document.at("deleting").as_array().empty());
  const json::object& retention = document.at("retention").as_object();
  BOOST_TEST(retention.at("files").to_number<std::uint64_t>() == 2u);
  BOOST_TEST(retention.at("records").to_number<std::uint64_t>() == 8u);
  std::uint64_t bytes = 0;
  for (int index = 0; index < 8; ++index) bytes += line_of(index, "ok").size();
  BOOST_TEST(retention.at("bytes").to_number<std::uint64_t>() == bytes);
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

BOOST_AUTO_TEST_CASE(a_writer_rotating_for_long_keeps_books_of_the_files_on_disk_only) {
  auto options = durable();
  options.batch_size = 1;
  options.max_file_bytes = 1;  // each append after the first a file of its own
  options.max_files = 2;
  auto writer = make_writer(std::move(options));
  writer->start();
  for (int index = 0; index < 200; ++index) {
    submit(*writer, 1, index);
    BOOST_TEST_REQUIRE(writer->flush(10s));
  }
  writer->close();

  const json::value document = document_of(*writer);
  BOOST_TEST(document.at("shards").as_array().size() == 2u);
  BOOST_TEST(document.at("retention").at("files").to_number<std::uint64_t>() == 198u);
  BOOST_TEST(balances(document));
  BOOST_TEST(jsonl::reconcile(directory.path()).all_files_verify());
}

BOOST_AUTO_TEST_CASE(a_file_let_go_is_named_deleting_and_claims_nothing_until_it_is_gone) {
  // The real calls, reconciling the directory as each file retention let go is about to
  // be deleted: what a crash at that moment leaves.
  class ReconcilingBeforeUnlink : public jsonl::FileCalls {
   public:
    explicit ReconcilingBeforeUnlink(std::filesystem::path directory) : directory_(std::move(directory)) {}
    int unlink(const std::filesystem::path& file) const override {
      if (file.extension() == ".jsonl") {
        const std::filesystem::path books = *std::filesystem::directory_iterator(directory_ / "_writer");
        seen.push_back({file.filename().string(), json::parse(jsonl_test::read_file(books)),
                        jsonl::reconcile(directory_)});
      }
      return FileCalls::unlink(file);
    }
    struct Seen {
      std::string file;
      json::value document;
      jsonl::Reconciliation reconciliation;
    };
    mutable std::vector<Seen> seen;

   private:
    std::filesystem::path directory_;
  };
  auto options = durable();
  const auto calls = std::make_shared<ReconcilingBeforeUnlink>(directory.path());
  options.durability.calls = calls;
  options.batch_size = 4;
  options.max_file_bytes = 10;
  options.max_files = 1;
  auto writer = make_writer(std::move(options));
  submit(*writer, 8);  // before start: two appends, the first file let go
  writer->start();
  writer->close();

  BOOST_TEST_REQUIRE(calls->seen.size() == 1u);
  const auto& [file, document, reconciliation] = calls->seen.front();
  BOOST_TEST(document.at("deleting") == json::array{json::value(file)});
  BOOST_TEST(std::filesystem::path(std::string(only_file(document).at("file").as_string())).filename() != file);
  BOOST_TEST(balances(document));
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

BOOST_AUTO_TEST_CASE(the_document_has_every_field_the_reference_reconciler_reads) {
  auto writer = make_writer(durable());
  writer->start();
  submit(*writer, 3);
  writer->close();
  const json::value document = document_of(*writer);
  for (const char* field : {"generation", "published_at", "closed", "counts", "shards"}) {
    BOOST_TEST(document.as_object().contains(field), field);
  }
  for (const char* field : {"submitted", "persisted", "unknown", "pending"}) {
    BOOST_TEST(counts_of(document).at(field).is_number(), field);
  }
  BOOST_TEST(counts_of(document).at("dropped").is_object());
  const json::object& shard = only_file(document);
  for (const char* field : {"file", "start_offset", "persisted_end", "persisted_records", "fragments_isolated"}) {
    BOOST_TEST(shard.contains(field), field);
  }
  BOOST_TEST(shard.at("unknown_extents").is_array());
  BOOST_TEST(document.at("schema").as_string() == "jsonl-writer-books/3");
}

BOOST_AUTO_TEST_CASE(without_durability_there_are_no_books_and_no_fsync) {
  auto options = durable();
  options.durability.enabled = false;
  auto writer = make_writer(std::move(options));
  writer->start();
  submit(*writer, 3);
  writer->close();
  BOOST_TEST(!writer->books_file().has_value());
  BOOST_TEST(!std::filesystem::exists(directory.path() / "_writer"));
  BOOST_TEST(calls->data_fsyncs.load() == 0);
  BOOST_TEST(writer->stats().written == 3u);
}

BOOST_AUTO_TEST_SUITE_END()

// Retention of routed files (WriterOptions::max_routed_file_idle): what keeps a writer
// routing by the hour from filling its disk over weeks. One case per behaviour.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "durability_fixture.hpp"

import jsonl.writer;

using namespace durability_test;

namespace {

// Each record to the file its "file" field names.
class FileByName : public jsonl::RecordRoute<json::value> {
 public:
  explicit FileByName(std::filesystem::path directory) : directory_(std::move(directory)) {}
  std::filesystem::path route(const json::value& record) const override {
    return directory_ / (std::string(record.at("file").as_string()) + ".jsonl");
  }

 private:
  std::filesystem::path directory_;
};

// A writer routing by name, its idle limit an hour, on a clock the test moves.
struct Routed : Durable {
  jsonl_test::ManualClock clock;

  jsonl::WriterOptions routed(jsonl::WriterOptions options) {
    options.clock = clock.function();
    options.max_routed_file_idle = std::chrono::hours(1);
    return options;
  }
  std::unique_ptr<Writer> make(jsonl::WriterOptions options) {
    auto writer = std::make_unique<Writer>(std::move(options), std::make_shared<jsonl::JsonLineFormat>(), nullptr,
                                           std::make_shared<FileByName>(directory.path()));
    writer->start();
    return writer;
  }
  std::filesystem::path file(std::string_view name) const { return directory.path() / (std::string(name) + ".jsonl"); }

  // `count` records routed to `name`, written by a commit of their own.
  static void write_to(Writer& writer, std::string_view name, int count) {
    for (int index = 0; index < count; ++index) {
      BOOST_TEST_REQUIRE(writer.submit(json::object{{"file", name}, {"index", index}}));
    }
    BOOST_TEST_REQUIRE(writer.flush(10s));
  }
};

}  // namespace

BOOST_FIXTURE_TEST_SUITE(routed_retention, Routed)

BOOST_AUTO_TEST_CASE(a_routed_file_idle_for_the_limit_is_deleted_and_the_rest_are_kept) {
  const std::filesystem::path stranger = directory.path() / "stranger.jsonl";
  std::ofstream(stranger) << "{}\n";
  auto writer = make(routed(jsonl_test::test_options(directory.path(), log)));
  write_to(*writer, "a", 2);
  write_to(*writer, "b", 2);
  clock.advance(30min);
  write_to(*writer, "b", 1);
  BOOST_TEST_REQUIRE(std::filesystem::exists(file("a")));
  clock.advance(30min);  // "a" idle for the limit, "b" for half of it
  write_to(*writer, "c", 1);
  writer->close();

  BOOST_TEST(!std::filesystem::exists(file("a")));
  BOOST_TEST(jsonl_test::read_lines(file("b")).size() == 3u);
  BOOST_TEST(jsonl_test::read_lines(file("c")).size() == 1u);
  BOOST_TEST(std::filesystem::exists(stranger));
  BOOST_TEST(log.at(jsonl::LogLevel::warning).empty());
}

BOOST_AUTO_TEST_CASE(an_append_routed_to_a_file_retention_deleted_is_refused_naming_retention) {
  auto writer = make(routed(jsonl_test::test_options(directory.path(), log)));
  write_to(*writer, "a", 1);
  clock.advance(1h);
  write_to(*writer, "b", 1);
  BOOST_TEST_REQUIRE(!std::filesystem::exists(file("a")));
  write_to(*writer, "a", 2);
  writer->close();

  BOOST_TEST(!std::filesystem::exists(file("a")));
  const jsonl::WriterStats stats = writer->stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::write_error) == 2u);
  BOOST_TEST(stats.written == 2u);
  BOOST_TEST(jsonl_test::accounting_holds(stats));
  const auto warnings = log.at(jsonl::LogLevel::warning);
  BOOST_TEST_REQUIRE(warnings.size() == 1u);
  BOOST_TEST(jsonl_test::contains(warnings[0], "retention deleted '" + file("a").string() + "'"));
}

BOOST_AUTO_TEST_CASE(a_durable_writer_books_the_routed_files_retention_deleted) {
  auto writer = make(routed(durable()));
  write_to(*writer, "a", 3);
  write_to(*writer, "b", 2);
  clock.advance(1h);
  write_to(*writer, "b", 1);
  writer->close();

  BOOST_TEST(!std::filesystem::exists(file("a")));
  const json::value document = document_of(*writer);
  BOOST_TEST(balances(document));
  BOOST_TEST(std::string(only_file(document).at("file").as_string()) == "b.jsonl");
  BOOST_TEST(count(document, "persisted") == 3u);
  BOOST_TEST(dropped(document, "retention") == 3u);
  BOOST_TEST(document.at("retention").at("files").to_number<std::uint64_t>() == 1u);
  BOOST_TEST(document.at("deleting").as_array().empty());
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

BOOST_AUTO_TEST_CASE(a_compressed_routed_file_is_let_go_with_its_frame_and_nothing_is_written_to_it_after) {
  auto options = routed(jsonl_test::test_options(directory.path(), log));
  options.compression = jsonl::Compression::zstd();
  auto writer = make(std::move(options));
  write_to(*writer, "a", 2);  // its frame stays open: frames end by age at a commit
  clock.advance(1h);
  write_to(*writer, "b", 1);
  write_to(*writer, "b", 1);
  writer->close();

  BOOST_TEST(!std::filesystem::exists(file("a")));
  BOOST_TEST(std::filesystem::exists(file("b")));
  const jsonl::WriterStats stats = writer->stats();
  BOOST_TEST(stats.written == 4u);
  BOOST_TEST(stats.dropped() == 0u);
  BOOST_TEST(log.at(jsonl::LogLevel::warning).empty());
}

BOOST_AUTO_TEST_CASE(a_deleted_files_directory_goes_with_it_when_below_the_output_directory_and_empty) {
  const std::filesystem::path output = directory.path() / "out";
  auto writer = std::make_unique<Writer>(routed(jsonl_test::test_options(output, log)),
                                         std::make_shared<jsonl::JsonLineFormat>(), nullptr,
                                         std::make_shared<FileByName>(output));
  writer->start();
  write_to(*writer, "hour/a", 1);
  write_to(*writer, "../beside/a", 1);
  clock.advance(1h);
  write_to(*writer, "b", 1);
  writer->close();

  BOOST_TEST(!std::filesystem::exists(output / "hour"));
  BOOST_TEST(!std::filesystem::exists(directory.path() / "beside" / "a.jsonl"));
  BOOST_TEST(std::filesystem::is_directory(directory.path() / "beside"));
  BOOST_TEST(std::filesystem::exists(output / "b.jsonl"));
}

BOOST_AUTO_TEST_CASE(a_routed_file_idle_limit_that_is_not_positive_is_refused_at_construction) {
  auto options = routed(jsonl_test::test_options(directory.path(), log));
  options.max_routed_file_idle = 0s;
  BOOST_CHECK_THROW(make(options), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()

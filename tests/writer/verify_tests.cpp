// The verifier against documents it must not trust: each names what is wrong with a
// document, reads nothing outside the output directory and nothing but regular files,
// and takes time in proportion to the bytes on disk, not to the entries of a document.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "test_support.hpp"

import jsonl.writer;

namespace {

// Three records in "data.jsonl", and a document that claims them truly; each test
// spoils the document (or the directory) in one way.
struct Claimed {
  jsonl_test::ScratchDirectory directory;
  const std::string lines = "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n";

  Claimed() { write("data.jsonl", lines); }

  void write(const std::filesystem::path& relative, const std::string& bytes) const {
    std::filesystem::create_directories((directory.path() / relative).parent_path());
    std::ofstream(directory.path() / relative, std::ios::binary) << bytes;
  }

  boost::json::object file(const std::string& name = "data.jsonl") const {
    return {{"file", name},
            {"start_offset", 0},
            {"persisted_end", lines.size()},
            {"persisted_records", 3},
            {"fragments_isolated", 0},
            {"unknown_extents", boost::json::array{}}};
  }

  boost::json::object document(boost::json::array files) const {
    std::uint64_t persisted = 0;
    for (const auto& entry : files) {
      const boost::json::value* records = entry.as_object().if_contains("persisted_records");
      if (records && records->is_number()) persisted += records->to_number<std::uint64_t>();
    }
    return {{"schema", "jsonl-writer-books/1"},
            {"generation", "g1"},
            {"closed", true},
            {"counts",
             {{"submitted", persisted},
              {"persisted", persisted},
              {"dropped", boost::json::object{}},
              {"unknown", 0},
              {"pending", 0}}},
            {"files", std::move(files)}};
  }

  jsonl::BooksCheck verify(const boost::json::object& document) const {
    return jsonl::verify_books(directory.path(), document);
  }
};

std::string file_error(const jsonl::BooksCheck& books, std::size_t i = 0) {
  BOOST_REQUIRE(!books.error);
  BOOST_REQUIRE(books.files.size() > i);
  return books.files[i].error.value_or("");
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(verify, Claimed)

BOOST_AUTO_TEST_CASE(a_true_document_verifies) {
  const jsonl::BooksCheck books = verify(document({file()}));
  BOOST_TEST(!books.error);
  BOOST_TEST(books.balanced);
  BOOST_TEST(books.verified());
  BOOST_TEST(books.files.at(0).records == 3u);
}

BOOST_AUTO_TEST_CASE(a_path_leaving_the_directory_is_not_read) {
  auto entry = file("../../../etc/passwd");
  const jsonl::BooksCheck books = verify(document({entry}));
  BOOST_TEST(!books.verified());
  BOOST_TEST(jsonl_test::contains(file_error(books), "leaves the directory"));
  BOOST_TEST(books.files.at(0).size == 0u);
}

BOOST_AUTO_TEST_CASE(an_absolute_path_is_not_read) {
  auto entry = file("/dev/zero");
  entry["persisted_end"] = 1'000'000'000'000;
  const jsonl::BooksCheck books = verify(document({entry}));
  BOOST_TEST(!books.verified());
  BOOST_TEST(jsonl_test::contains(file_error(books), "absolute path"));
}

BOOST_AUTO_TEST_CASE(a_symbolic_link_on_the_way_is_not_followed) {
  std::filesystem::create_directory_symlink("/etc", directory.path() / "link");
  std::filesystem::create_symlink(directory.path() / "data.jsonl", directory.path() / "alias.jsonl");
  const jsonl::BooksCheck through_directory = verify(document({file("link/passwd")}));
  BOOST_TEST(jsonl_test::contains(file_error(through_directory), "symbolic link"));
  const jsonl::BooksCheck to_file = verify(document({file("alias.jsonl")}));
  BOOST_TEST(jsonl_test::contains(file_error(to_file), "symbolic link"));
}

BOOST_AUTO_TEST_CASE(a_pipe_is_not_read_and_does_not_hang) {
  BOOST_REQUIRE(::mkfifo((directory.path() / "pipe.jsonl").c_str(), 0600) == 0);
  const jsonl::BooksCheck books = verify(document({file("pipe.jsonl")}));
  BOOST_TEST(jsonl_test::contains(file_error(books), "not a regular file"));
}

BOOST_AUTO_TEST_CASE(a_file_listed_twice_is_an_inconsistency) {
  const jsonl::BooksCheck books = verify(document({file(), file()}));
  BOOST_TEST(!books.verified());
  BOOST_TEST(jsonl_test::contains(file_error(books, 0), "files[0] and files[1] claim overlapping bytes of data.jsonl"));
  BOOST_TEST(jsonl_test::contains(file_error(books, 1), "overlapping"));
}

BOOST_AUTO_TEST_CASE(overlapping_ranges_of_one_file_are_an_inconsistency) {
  auto first = file(), second = file();
  first["persisted_end"] = 16;
  first["persisted_records"] = 2;
  second["start_offset"] = 8;
  second["persisted_records"] = 2;
  const jsonl::BooksCheck books = verify(document({first, second}));
  BOOST_TEST(jsonl_test::contains(file_error(books, 1), "overlapping"));
}

BOOST_AUTO_TEST_CASE(an_extent_outside_its_claim_is_an_inconsistency) {
  auto before = file();
  before["start_offset"] = 8;
  before["persisted_records"] = 2;
  before["unknown_extents"] = boost::json::array{boost::json::object{{"start", 0}, {"landed", 8}, {"records", 1}}};
  BOOST_TEST(jsonl_test::contains(file_error(verify(document({before}))), "starts before start_offset"));
  auto far = file();
  far["unknown_extents"] = boost::json::array{boost::json::object{{"start", 1'000'000'000}, {"landed", 8}, {"records", 1}}};
  BOOST_TEST(jsonl_test::contains(file_error(verify(document({far}))), "past where the writer's appends reached (24)"));
}

BOOST_AUTO_TEST_CASE(an_extent_right_after_the_persisted_end_is_accepted) {
  write("data.jsonl", lines + "{\"a\":4");
  auto entry = file();
  entry["unknown_extents"] = boost::json::array{boost::json::object{{"start", lines.size()}, {"landed", 6}, {"records", 1}}};
  const jsonl::BooksCheck books = verify(document({entry}));
  BOOST_TEST(books.verified(), file_error(books));
}

BOOST_AUTO_TEST_CASE(a_negative_offset_names_the_field) {
  auto good = file(), bad = file("other.jsonl");
  bad["start_offset"] = -5;
  const jsonl::BooksCheck books = verify(document({good, bad}));
  BOOST_TEST(books.error.value_or("") == "files[1].start_offset: expected a non-negative integer");
}

BOOST_AUTO_TEST_CASE(a_field_of_the_wrong_type_names_the_field) {
  auto entry = file();
  entry["persisted_end"] = "abc";
  BOOST_TEST(verify(document({entry})).error.value_or("") == "files[0].persisted_end: expected a non-negative integer");
  auto extent = file();
  extent["unknown_extents"] = boost::json::array{boost::json::object{{"start", 0}, {"landed", 1.5}, {"records", 1}}};
  BOOST_TEST(verify(document({extent})).error.value_or("") ==
             "files[0].unknown_extents[0].landed: expected a non-negative integer");
  auto counts = document({file()});
  counts["counts"].as_object()["dropped"] = {{"queue_full", true}};
  BOOST_TEST(verify(counts).error.value_or("") == "counts.dropped.queue_full: expected a non-negative integer");
}

BOOST_AUTO_TEST_CASE(a_missing_field_is_named) {
  auto entry = file();
  entry.erase("persisted_records");
  BOOST_TEST(verify(document({entry})).error.value_or("") == "files[0].persisted_records: missing");
}

BOOST_AUTO_TEST_CASE(counts_that_would_wrap_around_do_not_balance) {
  auto books = document({file()});
  auto& counts = books["counts"].as_object();
  counts["submitted"] = 2;
  counts["unknown"] = std::numeric_limits<std::uint64_t>::max();
  BOOST_TEST(!verify(books).balanced);
}

BOOST_AUTO_TEST_CASE(time_grows_with_the_bytes_not_with_the_entries) {
  // 4 MiB of records named 200,000 times: read each time, that is 800 GB.
  std::string big;
  while (big.size() < (4u << 20)) big += "{\"record\":\"" + std::string(100, 'x') + "\"}\n";
  write("data.jsonl", big);
  auto whole = file();
  whole["persisted_end"] = big.size();
  whole["persisted_records"] = big.size() / 114;
  boost::json::array files;
  for (int i = 0; i < 200'000; ++i) files.push_back(whole);
  const auto began = std::chrono::steady_clock::now();
  const jsonl::BooksCheck books = verify(document(std::move(files)));
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - began;
  BOOST_TEST(took.count() < 20.0);
  BOOST_TEST(!books.verified());
  BOOST_TEST(jsonl_test::contains(file_error(books, 199'999), "overlapping"));
}

BOOST_AUTO_TEST_CASE(the_reconciler_reads_no_symbolic_link_as_a_data_file) {
  std::filesystem::create_symlink("/etc/passwd", directory.path() / "passwd.jsonl");
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  for (const auto& unclaimed : reconciliation.unaccounted) BOOST_TEST(unclaimed.file != "passwd.jsonl");
}

BOOST_AUTO_TEST_SUITE_END()

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
    return {{"schema", "jsonl-writer-books/2"},
            {"generation", "g1"},
            {"closed", true},
            {"counts",
             {{"submitted", persisted},
              {"persisted", persisted},
              {"dropped", boost::json::object{}},
              {"unknown", 0},
              {"pending", 0}}},
            {"shards", std::move(files)}};
  }

  // A document as the reference's request-trace writer publishes it: its schema, its
  // drop reasons, its names for the error counters, and a writer suffix.
  boost::json::object reference_document(boost::json::array shards, std::uint64_t submitted,
                                         boost::json::object dropped) const {
    std::uint64_t persisted = 0;
    for (const auto& entry : shards) persisted += entry.at("persisted_records").to_number<std::uint64_t>();
    return {{"schema", "trtllm-request-trace-writer/1"},
            {"generation", "reference-generation"},
            {"pid", 7},
            {"writer_suffix", "-7"},
            {"started_at", "2026-01-01T00:00:00+00:00"},
            {"published_at", "2026-01-01T00:00:10+00:00"},
            {"sequence", 3},
            {"closed", true},
            {"durability", "persisted once written, flushed and fsynced"},
            {"counts",
             {{"submitted", submitted},
              {"persisted", persisted},
              {"dropped", std::move(dropped)},
              {"unknown", 0},
              {"pending", 0}}},
            {"attributes", {{"sanitized", 0}}},
            {"shards", std::move(shards)},
            {"errors", {{"write_errors", 0}, {"last_error", nullptr}, {"sidecar_errors", 0}}}};
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
  BOOST_TEST(jsonl_test::contains(file_error(books, 0), "shards[0] and shards[1] claim overlapping bytes of data.jsonl"));
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
  BOOST_TEST(books.error.value_or("") == "shards[1].start_offset: expected a non-negative integer");
}

BOOST_AUTO_TEST_CASE(a_field_of_the_wrong_type_names_the_field) {
  auto entry = file();
  entry["persisted_end"] = "abc";
  BOOST_TEST(verify(document({entry})).error.value_or("") == "shards[0].persisted_end: expected a non-negative integer");
  auto extent = file();
  extent["unknown_extents"] = boost::json::array{boost::json::object{{"start", 0}, {"landed", 1.5}, {"records", 1}}};
  BOOST_TEST(verify(document({extent})).error.value_or("") ==
             "shards[0].unknown_extents[0].landed: expected a non-negative integer");
  auto counts = document({file()});
  counts["counts"].as_object()["dropped"] = {{"queue_full", true}};
  BOOST_TEST(verify(counts).error.value_or("") == "counts.dropped.queue_full: expected a non-negative integer");
}

BOOST_AUTO_TEST_CASE(a_missing_field_is_named) {
  auto entry = file();
  entry.erase("persisted_records");
  BOOST_TEST(verify(document({entry})).error.value_or("") == "shards[0].persisted_records: missing");
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

BOOST_AUTO_TEST_CASE(two_documents_claiming_the_same_bytes_are_an_inconsistency) {
  for (const char* name : {"a", "b", "c"}) {
    write(std::string("_writer/") + name + ".json", boost::json::serialize(document({file()})));
  }
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_REQUIRE(reconciliation.generations.size() == 3u);
  BOOST_TEST(reconciliation.generations[0].verified());
  for (std::size_t later : {1u, 2u}) {
    BOOST_TEST(jsonl_test::contains(file_error(reconciliation.generations[later]),
                                    "claims bytes of data.jsonl that _writer/a.json claims too"));
  }
}

BOOST_AUTO_TEST_CASE(the_reconciler_reads_no_symbolic_link_as_a_data_file) {
  std::filesystem::create_symlink("/etc/passwd", directory.path() / "passwd.jsonl");
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  for (const auto& unclaimed : reconciliation.unaccounted) BOOST_TEST(unclaimed.file != "passwd.jsonl");
}

BOOST_AUTO_TEST_CASE(our_previous_schema_is_read) {
  auto books = document({file()});
  books["schema"] = "jsonl-writer-books/1";
  books["files"] = books["shards"];
  books.erase("shards");
  const jsonl::BooksCheck check = verify(books);
  BOOST_TEST(check.verified());
  BOOST_TEST(check.balanced);
  BOOST_TEST(check.schema == "jsonl-writer-books/1");
  books["files"].as_array()[0].as_object()["start_offset"] = -1;
  BOOST_TEST(verify(books).error.value_or("") == "files[0].start_offset: expected a non-negative integer");
}

BOOST_AUTO_TEST_CASE(the_reference_writers_document_is_read) {
  const jsonl::BooksCheck check = verify(reference_document({file()}, 5, {{"queue_full", 1}, {"shutdown", 1}}));
  BOOST_TEST(!check.error, check.error.value_or(""));
  BOOST_TEST(check.balanced);
  BOOST_TEST(check.verified());
  BOOST_TEST(check.dropped == 2u);
  BOOST_TEST(check.schema == "trtllm-request-trace-writer/1");
}

BOOST_AUTO_TEST_CASE(a_drop_reason_the_schema_lacks_is_named) {
  BOOST_TEST(verify(reference_document({file()}, 4, {{"abandoned", 1}})).error.value_or("") ==
             "counts.dropped.abandoned: not a drop reason of trtllm-request-trace-writer/1");
  auto ours = document({file()});
  ours["counts"].as_object()["dropped"] = {{"shutdown", 0}};
  BOOST_TEST(verify(ours).error.value_or("") == "counts.dropped.shutdown: not a drop reason of jsonl-writer-books/2");
}

BOOST_AUTO_TEST_CASE(retention_is_a_drop_reason_of_the_schema_that_left_deleted_files_out_of_the_shards_only) {
  auto current = document({file()});
  current["schema"] = "jsonl-writer-books/3";
  current["counts"].as_object()["submitted"] = 5;
  current["counts"].as_object()["dropped"] = {{"retention", 2}};
  current["deleting"] = boost::json::array{};
  const jsonl::BooksCheck check = verify(current);
  BOOST_TEST(!check.error, check.error.value_or(""));
  BOOST_TEST(check.balanced);
  BOOST_TEST(check.dropped == 2u);
  auto previous = current;
  previous["schema"] = "jsonl-writer-books/2";
  BOOST_TEST(verify(previous).error.value_or("") ==
             "counts.dropped.retention: not a drop reason of jsonl-writer-books/2");
}

BOOST_AUTO_TEST_CASE(a_deleting_entry_that_leaves_the_directory_is_named) {
  auto current = document({file()});
  current["schema"] = "jsonl-writer-books/3";
  current["deleting"] = boost::json::array{"old.jsonl", "../elsewhere.jsonl"};
  BOOST_TEST(verify(current).error.value_or("") ==
             "deleting[1]: a path that leaves the directory (../elsewhere.jsonl)");
}

BOOST_AUTO_TEST_CASE(a_file_named_deleting_is_not_unaccounted_and_one_named_nowhere_is) {
  write("old.jsonl", lines);
  write("stray.jsonl", lines);
  auto current = document({file()});
  current["schema"] = "jsonl-writer-books/3";
  current["deleting"] = boost::json::array{"old.jsonl"};
  write("_writer/g1.json", boost::json::serialize(current));
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST_REQUIRE(reconciliation.unaccounted.size() == 1u);
  BOOST_TEST(reconciliation.unaccounted[0].file == "stray.jsonl");
}

BOOST_AUTO_TEST_CASE(a_reference_generation_and_ours_appending_in_turn_reconcile) {
  // One shard, three generations appending in turn: the reference writer, then ours,
  // then the reference writer again; each document claims its own range.
  const std::string shard = "2026-01-01T00/requests-7.jsonl";
  const std::string first = "{\"i\":1}\n{\"i\":2}\n", second = "{\"i\":3}\n", third = "{\"i\":4}\n{\"i\":5}\n";
  write(shard, first + second + third);
  const auto range = [&](std::size_t begin, std::size_t end, std::size_t records) {
    auto entry = file(shard);
    entry["start_offset"] = begin;
    entry["persisted_end"] = end;
    entry["persisted_records"] = records;
    return entry;
  };
  write("_writer/a.json", boost::json::serialize(reference_document({range(0, first.size(), 2)}, 2, {})));
  write("_writer/b.json", boost::json::serialize(document({range(first.size(), first.size() + second.size(), 1)})));
  write("_writer/c.json",
        boost::json::serialize(reference_document({range(first.size() + second.size(), first.size() + second.size() + third.size(), 2)}, 2, {})));
  std::filesystem::remove(directory.path() / "data.jsonl");
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_REQUIRE(reconciliation.generations.size() == 3u);
  BOOST_TEST(reconciliation.generations[0].schema == "trtllm-request-trace-writer/1");
  BOOST_TEST(reconciliation.generations[1].schema == "jsonl-writer-books/2");
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

BOOST_AUTO_TEST_SUITE_END()

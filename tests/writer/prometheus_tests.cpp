// Writers' counters in Prometheus's text exposition format. (The jsonl_perf/metrics test
// reads a real writer's exposition with prometheus_client's parser.)
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "test_support.hpp"

import jsonl.writer;

namespace {

jsonl::WriterStats counted_stats() {
  jsonl::WriterStats stats;
  stats.submitted = 100;
  stats.written = 78;
  stats.unknown = 2;
  stats.dropped_by[jsonl::index_of(jsonl::DropReason::queue_full)] = 7;
  stats.dropped_by[jsonl::index_of(jsonl::DropReason::malformed)] = 3;
  stats.dropped_by[jsonl::index_of(jsonl::DropReason::serialize_error)] = 1;
  stats.dropped_by[jsonl::index_of(jsonl::DropReason::write_error)] = 4;
  stats.dropped_by[jsonl::index_of(jsonl::DropReason::unexpected_write)] = 2;
  stats.dropped_by[jsonl::index_of(jsonl::DropReason::abandoned)] = 2;
  stats.dropped_by[jsonl::index_of(jsonl::DropReason::ignored)] = 1;
  stats.sanitized = 5;
  stats.lines_written = 81;
  stats.bytes_written = 123456;
  stats.uncompressed_bytes_written = 654321;
  stats.appends = 9;
  stats.files_started = 2;
  stats.directories_recreated = 1;
  stats.publications = 6;
  stats.publication_errors = 1;
  stats.queue_depth = 0;
  stats.waiting_for_room = 0;
  stats.last_append = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'790'000'000'250));
  return stats;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(prometheus)

BOOST_AUTO_TEST_CASE(every_counter_is_exposed_with_help_type_subject_and_constant_labels) {
  const std::string text =
      jsonl::prometheus_text(counted_stats(), "performance metrics", {{"server", "ctx-0"}, {"host", "a"}});
  const std::string labels = R"(subject="performance metrics",server="ctx-0",host="a")";
  const auto sample = [&](const std::string& name, const std::string& value) { return name + "{" + labels + "} " + value + "\n"; };
  const auto dropped = [&](const std::string& reason, const std::string& value) {
    return "jsonl_records_dropped_total{subject=\"performance metrics\",reason=\"" + reason +
           "\",server=\"ctx-0\",host=\"a\"} " + value + "\n";
  };
  const std::string expected =
      "# HELP jsonl_records_submitted_total Records submitted to the writer.\n"
      "# TYPE jsonl_records_submitted_total counter\n" + sample("jsonl_records_submitted_total", "100") +
      "# HELP jsonl_records_written_total Records whose line reached a file (with durability: fsync()ed).\n"
      "# TYPE jsonl_records_written_total counter\n" + sample("jsonl_records_written_total", "78") +
      "# HELP jsonl_records_unknown_total Records whose append failed after their bytes may have landed "
      "(durability only).\n"
      "# TYPE jsonl_records_unknown_total counter\n" + sample("jsonl_records_unknown_total", "2") +
      "# HELP jsonl_records_dropped_total Records dropped, by reason.\n"
      "# TYPE jsonl_records_dropped_total counter\n" +
      dropped("queue_full", "7") + dropped("malformed", "3") + dropped("serialize_error", "1") +
      dropped("write_error", "4") + dropped("unexpected_write", "2") + dropped("abandoned", "2") +
      dropped("ignored", "1") +
      "# HELP jsonl_records_sanitized_total Records written with invalid UTF-8 replaced.\n"
      "# TYPE jsonl_records_sanitized_total counter\n" + sample("jsonl_records_sanitized_total", "5") +
      "# HELP jsonl_lines_written_total Newline-terminated lines appended.\n"
      "# TYPE jsonl_lines_written_total counter\n" + sample("jsonl_lines_written_total", "81") +
      "# HELP jsonl_bytes_written_total Bytes appended to files (on disk, after any compression).\n"
      "# TYPE jsonl_bytes_written_total counter\n" + sample("jsonl_bytes_written_total", "123456") +
      "# HELP jsonl_uncompressed_bytes_written_total Bytes of the lines appended, before compression.\n"
      "# TYPE jsonl_uncompressed_bytes_written_total counter\n" +
      sample("jsonl_uncompressed_bytes_written_total", "654321") +
      "# HELP jsonl_appends_total Appends that reached a file.\n"
      "# TYPE jsonl_appends_total counter\n" + sample("jsonl_appends_total", "9") +
      "# HELP jsonl_files_started_total Files the writer started: the first, then each rotation.\n"
      "# TYPE jsonl_files_started_total counter\n" + sample("jsonl_files_started_total", "2") +
      "# HELP jsonl_directories_recreated_total Appends that found their directory gone and created it again.\n"
      "# TYPE jsonl_directories_recreated_total counter\n" + sample("jsonl_directories_recreated_total", "1") +
      "# HELP jsonl_books_publications_total Documents of the books published (durability only).\n"
      "# TYPE jsonl_books_publications_total counter\n" + sample("jsonl_books_publications_total", "6") +
      "# HELP jsonl_books_publication_errors_total Publications of the books that failed (durability only).\n"
      "# TYPE jsonl_books_publication_errors_total counter\n" + sample("jsonl_books_publication_errors_total", "1") +
      "# HELP jsonl_queue_depth Accepted records not yet serialized.\n"
      "# TYPE jsonl_queue_depth gauge\n" + sample("jsonl_queue_depth", "0") +
      "# HELP jsonl_submits_waiting_for_room submit_wait calls blocked on a full queue.\n"
      "# TYPE jsonl_submits_waiting_for_room gauge\n" + sample("jsonl_submits_waiting_for_room", "0") +
      "# HELP jsonl_last_append_timestamp_seconds When the last append reached a file, in Unix time.\n"
      "# TYPE jsonl_last_append_timestamp_seconds gauge\n" +
      sample("jsonl_last_append_timestamp_seconds", "1790000000.25");
  BOOST_TEST(text == expected);
}

BOOST_AUTO_TEST_CASE(several_writers_share_each_family_once) {
  jsonl::WriterStats idle;  // never appended: no timestamp sample
  const std::vector<jsonl::WriterMetrics> writers{{counted_stats(), "performance metrics", {}},
                                                  {idle, "request trace", {}}};
  const std::string text = jsonl::prometheus_text(writers);
  const auto occurrences = [&](const std::string& part) {
    std::size_t count = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
    return count;
  };
  BOOST_TEST(occurrences("# TYPE jsonl_records_written_total counter\n") == 1u);
  BOOST_TEST(occurrences("jsonl_records_written_total{subject=\"performance metrics\"} 78\n") == 1u);
  BOOST_TEST(occurrences("jsonl_records_written_total{subject=\"request trace\"} 0\n") == 1u);
  BOOST_TEST(occurrences("jsonl_records_dropped_total{subject=\"request trace\",reason=") == 7u);
  BOOST_TEST(occurrences("jsonl_last_append_timestamp_seconds{") == 1u);
}

BOOST_AUTO_TEST_CASE(the_last_append_is_exposed_to_the_microsecond_in_at_most_sixteen_digits) {
  jsonl::WriterStats stats;
  stats.last_append = std::chrono::system_clock::time_point(std::chrono::nanoseconds(1'796'457'588'325'913'456));
  BOOST_TEST(jsonl_test::contains(jsonl::prometheus_text(stats, "s"),
                                  "jsonl_last_append_timestamp_seconds{subject=\"s\"} 1796457588.325913\n"));
  stats.last_append = std::chrono::system_clock::time_point(std::chrono::microseconds(1'796'457'588'000'100));
  BOOST_TEST(jsonl_test::contains(jsonl::prometheus_text(stats, "s"),
                                  "jsonl_last_append_timestamp_seconds{subject=\"s\"} 1796457588.0001\n"));
}

BOOST_AUTO_TEST_CASE(label_values_are_escaped) {
  const std::string text = jsonl::prometheus_text(jsonl::WriterStats{}, "a \"quoted\" \\ subject\nline", {{"path", "C:\\x"}});
  BOOST_TEST(jsonl_test::contains(
      text, "jsonl_records_submitted_total{subject=\"a \\\"quoted\\\" \\\\ subject\\nline\",path=\"C:\\\\x\"} 0\n"));
}

BOOST_AUTO_TEST_CASE(unusable_label_names_are_refused) {
  for (const std::string name : {"", "1st", "has-dash", "__reserved", "subject", "reason", "ünï"}) {
    BOOST_CHECK_THROW(jsonl::prometheus_text(jsonl::WriterStats{}, "s", {{name, "v"}}), std::invalid_argument);
  }
  BOOST_CHECK_THROW(jsonl::prometheus_text(jsonl::WriterStats{}, "s", {{"a", "1"}, {"a", "2"}}), std::invalid_argument);
  BOOST_CHECK_NO_THROW(jsonl::prometheus_text(jsonl::WriterStats{}, "s", {{"_ok", "1"}, {"Server2", "2"}}));
}

BOOST_AUTO_TEST_SUITE_END()

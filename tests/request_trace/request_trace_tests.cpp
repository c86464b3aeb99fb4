// The request-trace configuration: files per UTC hour and kind. One case per behaviour.
#define BOOST_TEST_MODULE request_trace
#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "test_support.hpp"

import crash_model;
import jsonl.request_trace;

namespace json = boost::json;
using jsonl::LogLevel;
using namespace std::chrono_literals;
using Log = jsonl_test::LogRecord<jsonl::LogLevel>;
using Record = jsonl::TraceRecord<>;

namespace trace_test {

struct Usage {
  int prompt_tokens = 0;
  std::optional<int> cached_tokens;
};
BOOST_DESCRIBE_STRUCT(Usage, (), (prompt_tokens, cached_tokens))

}  // namespace trace_test

namespace {

// 2026-09-03T14:59:59.900Z and the moments around it.
const auto just_before_three = std::chrono::sys_days(std::chrono::year(2026) / 9 / 3) + 14h + 59min + 59s + 900ms;
const auto just_after_three = just_before_three + 200ms;

jsonl::WriterOptions options_in(const std::filesystem::path& directory, Log& log) {
  auto options = jsonl::request_trace_options(directory, log.sink());
  options.shutdown_timeout = 10s;
  return options;
}

Record record(std::string_view kind, int n, std::chrono::system_clock::time_point made_at = just_before_three) {
  return Record(std::string(kind), json::object{{"n", n}}, made_at);
}

std::vector<std::string> lines_of(const std::filesystem::path& file) { return jsonl_test::read_lines(file); }

// The trace sink, recording each append's file and size.
class RecordingSink : public jsonl::TraceSink {
 public:
  using TraceSink::TraceSink;
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    {
      const std::lock_guard lock(mutex_);
      appends_.emplace_back(outcome.file, append.records);
    }
    TraceSink::append(append, outcome);
  }
  std::vector<std::pair<std::filesystem::path, std::size_t>> appends() const {
    const std::lock_guard lock(mutex_);
    return appends_;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::vector<std::pair<std::filesystem::path, std::size_t>> appends_;
};

// A writer on the recording sink, with the request trace's options and suffix "-t".
struct RecordingWriter {
  RecordingWriter(const std::filesystem::path& directory, Log& log)
      : sink(std::make_shared<RecordingSink>(options_in(directory, log).durability.calls,
                                             std::make_shared<jsonl::BucketDirectories>())),
        writer(options_in(directory, log), std::make_shared<jsonl::TraceFormat<json::value>>(), sink,
               std::make_shared<jsonl::TraceRoute<json::value>>(directory, "-t")) {}
  std::shared_ptr<RecordingSink> sink;
  jsonl::JsonlRecordWriter<Record> writer;
};

// Bucket directories that count the ones they create.
class CountingDirectories : public jsonl::BucketDirectories {
 public:
  mutable std::atomic<int> created{0};

 protected:
  void create(const jsonl::FileCalls& calls, const std::filesystem::path& directory) const override {
    ++created;
    BucketDirectories::create(calls, directory);
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(request_trace)

BOOST_AUTO_TEST_CASE(records_land_in_bucket_and_kind_files_by_the_hour_they_were_made) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::RequestTraceWriter<> writer(directory.path(), std::nullopt, log.sink());
  writer.start();
  BOOST_TEST(writer.submit(record(jsonl::trace_requests, 1)));
  BOOST_TEST(writer.submit(record(jsonl::trace_responses, 2)));
  writer.close();
  const auto bucket = directory.path() / "2026-09-03T14";
  const std::string suffix = "-" + std::to_string(::getpid());
  BOOST_TEST(lines_of(bucket / ("requests" + suffix + ".jsonl")) == std::vector<std::string>{R"({"n":1})"},
             boost::test_tools::per_element());
  BOOST_TEST(lines_of(bucket / ("responses" + suffix + ".jsonl")) == std::vector<std::string>{R"({"n":2})"},
             boost::test_tools::per_element());
  const std::vector<std::string> info{"Recording request traces to " + directory.path().string()};
  BOOST_TEST(log.at(LogLevel::info) == info, boost::test_tools::per_element());
  BOOST_TEST(log.at(LogLevel::warning).empty());
}

BOOST_AUTO_TEST_CASE(the_hour_bucket_is_the_iso_time_cut_to_the_hour) {
  BOOST_TEST(jsonl::hour_bucket(just_before_three) == "2026-09-03T14");
  BOOST_TEST(jsonl::hour_bucket(just_after_three) == "2026-09-03T15");
  BOOST_TEST(jsonl::hour_bucket(std::chrono::sys_days(std::chrono::year(1999) / 12 / 31) + 23h + 59min) ==
             "1999-12-31T23");
}

BOOST_AUTO_TEST_CASE(records_of_one_kind_and_hour_share_a_file_without_naming_it) {
  const jsonl::TraceRoute<json::value> route("/traces", "-t");
  const auto at = [](std::string_view kind, std::chrono::system_clock::time_point made_at) {
    return record(kind, 0, made_at);
  };
  BOOST_TEST(route.same_file(at(jsonl::trace_requests, just_after_three),
                             at(jsonl::trace_requests, just_after_three + 59min)));
  BOOST_TEST(!route.same_file(at(jsonl::trace_requests, just_after_three),
                              at(jsonl::trace_requests, just_before_three)));
  BOOST_TEST(!route.same_file(at(jsonl::trace_requests, just_after_three),
                              at(jsonl::trace_responses, just_after_three)));
}

BOOST_AUTO_TEST_CASE(a_batch_spanning_an_hour_boundary_is_two_appends_to_two_files) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  RecordingWriter recording(directory.path(), log);
  // Queued before start: one batch, written after both hours began.
  recording.writer.submit(record(jsonl::trace_requests, 1, just_before_three));
  recording.writer.submit(record(jsonl::trace_requests, 2, just_after_three));
  recording.writer.submit(record(jsonl::trace_requests, 3, just_before_three));
  recording.writer.start();
  recording.writer.close();
  const auto appends = recording.sink->appends();
  BOOST_REQUIRE_EQUAL(appends.size(), 2u);
  BOOST_TEST(appends[0].first == directory.path() / "2026-09-03T14" / "requests-t.jsonl");
  BOOST_TEST(appends[0].second == 2u);
  BOOST_TEST(appends[1].first == directory.path() / "2026-09-03T15" / "requests-t.jsonl");
  const std::vector<std::string> fourteen{R"({"n":1})", R"({"n":3})"};
  BOOST_TEST(lines_of(appends[0].first) == fourteen, boost::test_tools::per_element());
  BOOST_TEST(lines_of(appends[1].first) == std::vector<std::string>{R"({"n":2})"}, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(records_a_microsecond_either_side_of_an_hours_edge_go_to_their_own_buckets) {
  const std::chrono::system_clock::time_point three = std::chrono::sys_days(std::chrono::year(2026) / 9 / 3) + 15h;
  jsonl_test::ScratchDirectory directory;
  Log log;
  RecordingWriter recording(directory.path(), log);
  // One batch: requests and responses, each kind on both sides of the edge, interleaved.
  for (int i = 0; i < 8; ++i) {
    const std::chrono::system_clock::time_point made_at = i % 4 < 2 ? three - 1us : three;
    recording.writer.submit(record(i % 2 ? jsonl::trace_responses : jsonl::trace_requests, i, made_at));
  }
  recording.writer.start();
  recording.writer.close();
  const auto appends = recording.sink->appends();
  BOOST_REQUIRE_EQUAL(appends.size(), 4u);
  const auto file = [&](std::string_view hour, std::string_view kind) {
    return directory.path() / hour / (std::string(kind) + "-t.jsonl");
  };
  BOOST_TEST(lines_of(file("2026-09-03T14", "requests")) == (std::vector<std::string>{R"({"n":0})", R"({"n":4})"}),
             boost::test_tools::per_element());
  BOOST_TEST(lines_of(file("2026-09-03T14", "responses")) == (std::vector<std::string>{R"({"n":1})", R"({"n":5})"}),
             boost::test_tools::per_element());
  BOOST_TEST(lines_of(file("2026-09-03T15", "requests")) == (std::vector<std::string>{R"({"n":2})", R"({"n":6})"}),
             boost::test_tools::per_element());
  BOOST_TEST(lines_of(file("2026-09-03T15", "responses")) == (std::vector<std::string>{R"({"n":3})", R"({"n":7})"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(requests_and_responses_of_one_batch_are_two_appends) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  RecordingWriter recording(directory.path(), log);
  for (int i = 0; i < 6; ++i) {
    recording.writer.submit(record(i % 2 ? jsonl::trace_responses : jsonl::trace_requests, i));
  }
  recording.writer.start();
  recording.writer.close();
  const auto appends = recording.sink->appends();
  BOOST_REQUIRE_EQUAL(appends.size(), 2u);
  BOOST_TEST(appends[0].first.filename() == "requests-t.jsonl");
  BOOST_TEST(appends[1].first.filename() == "responses-t.jsonl");
  const std::vector<std::string> requests{R"({"n":0})", R"({"n":2})", R"({"n":4})"};
  BOOST_TEST(lines_of(appends[0].first) == requests, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(batches_hold_at_most_32_records) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  RecordingWriter recording(directory.path(), log);
  for (int i = 0; i < 70; ++i) recording.writer.submit(record(jsonl::trace_requests, i));
  recording.writer.start();
  recording.writer.close();
  std::vector<std::size_t> sizes;
  for (const auto& append : recording.sink->appends()) sizes.push_back(append.second);
  const std::vector<std::size_t> expected{32, 32, 6};
  BOOST_TEST(sizes == expected, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(non_ascii_text_is_written_as_utf8_byte_for_byte_as_json_dumps_without_ensure_ascii) {
  // Each expected line is what json.dumps(s, ensure_ascii=False, separators=(",", ":"))
  // writes for the string.
  const std::vector<std::pair<std::string, std::string>> table{
      {"h\u00e9llo", "\"h\u00e9llo\""},
      {"\u65e5\u672c\u8a9e", "\"\u65e5\u672c\u8a9e\""},
      {"emoji \U0001F600", "\"emoji \U0001F600\""},
      {"\u2028 and \u2029", "\"\u2028 and \u2029\""},
      {"\x01\x1f", R"("\u0001\u001f")"},
      {"\x7f", "\"\x7f\""},
      {"quote \" backslash \\", R"("quote \" backslash \\")"},
      {"tab\tnew\nline", R"("tab\tnew\nline")"},
      {"\u00a0nbsp", "\"\u00a0nbsp\""},
      {std::string("nul \0 end", 9), R"("nul \u0000 end")"}};
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::RequestTraceWriter<> writer(directory.path(), "", log.sink());
  for (const auto& [text, expected] : table) writer.submit(Record("requests", json::string(text), just_before_three));
  writer.start();
  writer.close();
  std::vector<std::string> expected;
  for (const auto& row : table) expected.push_back(row.second);
  BOOST_TEST(lines_of(directory.path() / "2026-09-03T14" / "requests.jsonl") == expected,
             boost::test_tools::per_element());
  BOOST_TEST(writer.stats().sanitized == 0u);
}

BOOST_AUTO_TEST_CASE(invalid_utf8_is_replaced_and_the_record_counted_as_sanitized) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::RequestTraceWriter<> writer(directory.path(), "", log.sink());
  writer.start();
  writer.submit(Record("requests", json::string("a\xff" "b\xe2\x82"), just_before_three));
  writer.close();
  BOOST_TEST(lines_of(directory.path() / "2026-09-03T14" / "requests.jsonl") ==
                 std::vector<std::string>{"\"a\ufffdb\ufffd\""},
             boost::test_tools::per_element());
  BOOST_TEST(writer.stats().sanitized == 1u);
}

BOOST_AUTO_TEST_CASE(a_nan_makes_a_trace_record_malformed) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::RequestTraceWriter<> writer(directory.path(), "", log.sink());
  writer.start();
  writer.submit(Record("requests", json::object{{"latency", std::nan("")}}, just_before_three));
  writer.submit(record("requests", 2));
  writer.close();
  BOOST_TEST(lines_of(directory.path() / "2026-09-03T14" / "requests.jsonl") ==
                 std::vector<std::string>{R"({"n":2})"},
             boost::test_tools::per_element());
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::malformed) == 1u);
  const auto warnings = log.at(LogLevel::warning);
  BOOST_REQUIRE_EQUAL(warnings.size(), 1u);
  BOOST_TEST(warnings[0] ==
             "Dropped malformed request trace record: Out of range float values are not JSON compliant: nan");
}

BOOST_AUTO_TEST_CASE(a_described_struct_payload_is_written_as_described_format_writes_it) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::RequestTraceWriter<trace_test::Usage> writer(directory.path(), "", log.sink());
  writer.start();
  writer.submit({"responses", trace_test::Usage{.prompt_tokens = 12}, just_before_three});
  writer.submit({"responses", trace_test::Usage{.prompt_tokens = 7, .cached_tokens = 4}, just_before_three});
  writer.close();
  const std::vector<std::string> expected{R"({"prompt_tokens":12})", R"({"prompt_tokens":7,"cached_tokens":4})"};
  BOOST_TEST(lines_of(directory.path() / "2026-09-03T14" / "responses.jsonl") == expected,
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_bucket_directory_that_cannot_be_created_costs_that_group_only_warned_once) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  std::ofstream(directory.path() / "2026-09-03T14") << "a file where the bucket would go";
  jsonl::RequestTraceWriter<> writer(directory.path(), "", log.sink());
  writer.submit(record("requests", 1, just_before_three));
  writer.submit(record("responses", 3, just_before_three));
  writer.submit(record("requests", 2, just_after_three));
  writer.start();
  writer.close();
  BOOST_TEST(lines_of(directory.path() / "2026-09-03T15" / "requests.jsonl") ==
                 std::vector<std::string>{R"({"n":2})"},
             boost::test_tools::per_element());
  const auto stats = writer.stats();
  BOOST_TEST(stats.dropped(jsonl::DropReason::write_error) == 2u);
  BOOST_TEST(stats.written == 1u);
  const auto warnings = log.at(LogLevel::warning);
  // The two groups of hour 14 fail one after the other: one run, one warning.
  BOOST_REQUIRE_EQUAL(warnings.size(), 2u);
  BOOST_TEST(jsonl_test::contains(warnings[0], "Failed to write request trace JSONL: create directory "));
  BOOST_TEST(warnings[1] == "Resumed writing request trace JSONL after 2 records were lost");
  BOOST_TEST(stats.submitted == stats.written + stats.dropped());
}

BOOST_AUTO_TEST_CASE(each_bucket_directory_is_created_once) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto directories = std::make_shared<CountingDirectories>();
  jsonl::RequestTraceWriter<> writer(options_in(directory.path(), log), "", directories);
  writer.start();
  for (int i = 0; i < 100; ++i) {
    writer.submit(record(i % 2 ? "requests" : "responses", i, i % 3 ? just_before_three : just_after_three));
  }
  writer.close();
  BOOST_TEST(writer.stats().written == 100u);
  BOOST_TEST(directories->created.load() == 2);
}

BOOST_AUTO_TEST_CASE(bucket_directories_past_the_bound_are_forgotten_and_made_again) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto directories = std::make_shared<CountingDirectories>();
  jsonl::RequestTraceWriter<> writer(options_in(directory.path(), log), "", directories);
  writer.start();
  const auto write_in_hour = [&](int hour) {
    BOOST_TEST_REQUIRE(writer.submit(record("requests", hour, just_before_three + std::chrono::hours(hour))));
    BOOST_TEST_REQUIRE(writer.flush(10s));
  };
  constexpr int hours = 100;
  for (int hour = 0; hour < hours; ++hour) write_in_hour(hour);
  write_in_hour(0);
  writer.close();
  BOOST_TEST(writer.stats().written == hours + 1u);
  BOOST_TEST(directories->created.load() == hours + 1);
}

BOOST_AUTO_TEST_CASE(a_kind_that_could_escape_its_directory_makes_the_record_malformed) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::RequestTraceWriter<> writer(directory.path() / "traces", "", log.sink());
  writer.start();
  for (const std::string& kind : std::vector<std::string>{"", ".", "..", "../escape", "a/b", std::string("nul\0", 4)}) {
    BOOST_TEST(writer.submit(record(kind, 1)));
  }
  BOOST_TEST(writer.submit(record("requests", 2)));
  writer.close();
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::malformed) == 6u);
  BOOST_TEST(writer.stats().written == 1u);
  std::size_t entries = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory.path())) {
    entries += entry.is_regular_file() && entry.path() != writer.books_file();
  }
  BOOST_TEST(entries == 1u);
}

BOOST_AUTO_TEST_CASE(close_writes_every_queued_record_and_a_writer_without_a_directory_is_inert) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::RequestTraceWriter<> writer(directory.path(), "", log.sink());
  for (int i = 0; i < 500; ++i) writer.submit(record("requests", i));
  writer.start();
  writer.close();
  BOOST_TEST(lines_of(directory.path() / "2026-09-03T14" / "requests.jsonl").size() == 500u);
  BOOST_TEST(!writer.submit(record("requests", 1)));

  Log quiet;
  jsonl::RequestTraceWriter<> inert(std::nullopt, std::nullopt, quiet.sink());
  inert.start();
  BOOST_TEST(!inert.submit(record("requests", 1)));
  inert.close();
  BOOST_TEST(quiet.entries().empty());
  BOOST_TEST(inert.stats().written == 0u);
  BOOST_TEST(inert.stats().dropped(jsonl::DropReason::ignored) == 1u);
}

BOOST_AUTO_TEST_CASE(a_directory_that_cannot_be_made_disables_the_writer_in_the_references_words) {
  jsonl_test::ScratchDirectory directory;
  std::ofstream(directory.path() / "file") << "x";
  Log log;
  jsonl::RequestTraceWriter<> writer(directory.path() / "file" / "traces", "", log.sink());
  writer.start();
  const auto errors = log.at(LogLevel::error);
  BOOST_REQUIRE_EQUAL(errors.size(), 1u);
  BOOST_TEST(errors[0].starts_with("Disabling request trace output: "));
  BOOST_TEST(log.at(LogLevel::info).empty());
}

BOOST_AUTO_TEST_CASE(session_keys_are_trimmed_replaced_and_cut) {
  const std::vector<std::pair<std::string, std::string>> table{
      {"", "_no_session"},
      {"   ", "_no_session"},
      {"abc-DEF_1.2", "abc-DEF_1.2"},
      {"  padded\t\n", "padded"},
      {"\u00a0nbsp\u3000", "nbsp"},
      {"a b/c:d", "a_b_c_d"},
      {"caf\u00e9 \U0001F600", "caf___"},
      {".hidden", "_no_session"},
      {"./x", "_no_session"},
      {"x.", "x."},
      {std::string(200, 'k'), std::string(128, 'k')},
      {std::string(127, 'k') + "\u00e9\u00e9", std::string(128, 'k').replace(127, 1, "_")},
      {"bad\xff" "byte", "bad_byte"}};
  for (const auto& [input, expected] : table) BOOST_TEST(jsonl::sanitize_session_key(input) == expected, input);
}

BOOST_AUTO_TEST_CASE(trace_ids_are_tr_and_a_random_version_4_uuid_in_lowercase_hex) {
  const std::regex shape("tr_[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = jsonl::make_trace_id();
    BOOST_TEST_REQUIRE(std::regex_match(id, shape), id);
    seen.insert(id);
  }
  BOOST_TEST(seen.size() == 1000u);
}

BOOST_AUTO_TEST_CASE(headers_are_kept_as_ordered_pairs_repeats_included) {
  const std::vector<std::pair<std::string, std::string>> headers{
      {"x-forwarded-for", "10.0.0.1"}, {"content-type", "application/json"}, {"x-forwarded-for", "10.0.0.2"}};
  BOOST_TEST(jsonl::to_json_text(jsonl::headers_json(headers)) ==
             R"([["x-forwarded-for","10.0.0.1"],["content-type","application/json"],["x-forwarded-for","10.0.0.2"]])");
}

BOOST_AUTO_TEST_CASE(traces_are_durable_by_default_and_their_books_reconcile) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::RequestTraceWriter<> writer(directory.path(), "-t", log.sink());
  writer.start();
  BOOST_TEST(writer.submit(record(jsonl::trace_requests, 1)));
  BOOST_TEST(writer.submit(record(jsonl::trace_responses, 2, just_after_three)));
  writer.close();
  BOOST_TEST_REQUIRE(writer.books_file().has_value());
  BOOST_TEST(writer.books_file()->parent_path() == directory.path() / "_writer");
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST_REQUIRE(reconciliation.generations.size() == 1u);
  const jsonl::BooksCheck& books = reconciliation.generations[0];
  BOOST_TEST(books.closed);
  BOOST_TEST(books.persisted == 2u);
  std::set<std::string> shards;
  for (const jsonl::FileCheck& file : books.files) shards.insert(file.file);
  BOOST_TEST(shards == (std::set<std::string>{"2026-09-03T14/requests-t.jsonl", "2026-09-03T15/responses-t.jsonl"}),
             boost::test_tools::per_element());
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

BOOST_AUTO_TEST_CASE(compressed_trace_files_are_named_apart_for_each_writer_and_reconcile) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = options_in(directory.path(), log);
  options.compression = jsonl::Compression::zstd();
  std::set<std::string> names;
  for (int generation = 0; generation < 2; ++generation) {
    jsonl::RequestTraceWriter<> writer(options, "-7");
    writer.start();
    BOOST_TEST(writer.submit(record(jsonl::trace_requests, generation)));
    BOOST_TEST(writer.submit(record(jsonl::trace_responses, generation)));
    writer.close();
  }
  const std::regex compressed_name(R"((requests|responses)-7-[0-9a-f]{16}\.jsonl\.zst)");
  for (const auto& entry : std::filesystem::directory_iterator(directory.path() / "2026-09-03T14")) {
    const std::string name = entry.path().filename().string();
    BOOST_TEST(std::regex_match(name, compressed_name), name);
    names.insert(name);
  }
  BOOST_TEST(names.size() == 4u);
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.generations.size() == 2u);
  for (const jsonl::BooksCheck& books : reconciliation.generations) BOOST_TEST(books.persisted == 2u);
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

BOOST_AUTO_TEST_CASE(credential_headers_keep_their_names_and_lose_their_values) {
  const std::vector<std::pair<std::string, bool>> table{
      {"Authorization", true},     {"proxy-authorization", true}, {"Cookie", true},
      {"SET-COOKIE", true},        {"x-api-key", true},           {"Api_Key", true},
      {"x-apikey", true},          {"x-auth-token", true},        {"x-amz-security-token", true},
      {"x-client-secret", true},   {"db-password", true},         {"content-type", false},
      {"x-forwarded-for", false},  {"authorization-hint", false}, {"cookies-enabled", false},
      {"user-agent", false}};
  for (const auto& [name, credential] : table) BOOST_TEST(jsonl::is_credential_header(name) == credential, name);
  const std::vector<std::pair<std::string, std::string>> headers{
      {"Authorization", "Bearer sk-live-123"}, {"x-api-key", "abc"}, {"accept", "text/event-stream"}};
  BOOST_TEST(jsonl::to_json_text(jsonl::headers_json(headers)) ==
             R"([["Authorization","[redacted]"],["x-api-key","[redacted]"],["accept","text/event-stream"]])");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(a_trace_across_an_hour_boundary_holds_from_every_crash_point) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  auto options = options_in(directory.path(), log);
  const auto recorder = std::make_shared<crash_model::CallRecorder>(directory.path(), options.durability.calls);
  options.durability.calls = recorder;
  jsonl::RequestTraceWriter<> writer(options, "-t");
  writer.start();
  for (int n = 0; n < 3; ++n) BOOST_TEST(writer.submit(record(jsonl::trace_requests, n)));
  BOOST_TEST_REQUIRE(writer.flush(10s));
  for (int n = 3; n < 6; ++n) BOOST_TEST(writer.submit(record(jsonl::trace_responses, n, just_after_three)));
  writer.close();
  const crash_model::Exploration exploration = crash_model::explore(recorder->log());
  BOOST_TEST(exploration.failure.empty(), exploration.failure);
  BOOST_TEST(exploration.states > 0u);
  std::printf("%zu crash states explored over %zu crash points\n", exploration.states, exploration.points);
}

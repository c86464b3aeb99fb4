// Record shaping, quirk by quirk, against the reference's _jsonl_record. Expected lines
// are written out by hand from the reference's code.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

import jsonl.perf_metrics;

namespace json = boost::json;

namespace {

// What the writer's format writes for `record`, without its '\n', or the message of
// what it throws.
std::string format_output(const json::value& record) {
  json::value copy = record;
  std::string line;
  try {
    jsonl::PerfMetricsFormat().append_line(copy, line);
  } catch (const std::exception& error) {
    return std::string("throws: ") + error.what();
  }
  return line.substr(0, line.size() - 1);
}

// The record shaped as a value, then serialized. The format, which writes the shaped
// text straight from the raw record, must write the same.
std::string shaped(std::string_view raw) {
  const json::value record = json::parse(raw);
  std::string text = jsonl::to_json_text(jsonl::shape_perf_metrics_record(record));
  BOOST_TEST(format_output(record) == text, "the format writes " << raw << " as shaping then serializing does");
  return text;
}

// A worker record whose server phase holds `phase` (JSON object text).
std::string worker_with(std::string_view phase) {
  return R"({"request_id":"1","phases":{"server":)" + std::string(phase) + "}}";
}

std::string malformed_message(std::string_view raw) {
  const json::value record = json::parse(raw);
  try {
    jsonl::shape_perf_metrics_record(record);
  } catch (const jsonl::MalformedRecord& error) {
    BOOST_TEST(format_output(record) == std::string("throws: ") + error.what(), "the format rejects " << raw << " alike");
    return error.what();
  }
  return "(not malformed)";
}

constexpr std::string_view disagg_phases =
    R"("disagg":{"ctx_server":"c0","gen_server":"g0","timing_metrics":{"server_arrival_time":1.0,"ctx_dispatch_time":1.5,"server_first_token_time":2.0}})";

}  // namespace

BOOST_AUTO_TEST_SUITE(shaping)

BOOST_AUTO_TEST_CASE(worker_record_keeps_the_reference_key_order_and_drops_what_it_drops) {
  const std::string raw =
      R"({"schema_version":1,"request_id":"42","status":"complete","phases":{"server":{)"
      R"("first_iter":3,"last_iter":9,"timing_metrics":{"arrival_time":1.5,"first_scheduled_time":1.75,)"
      R"("first_token_time":2.0,"last_token_time":3.25,"kv_cache_transfer_start":null,)"
      R"("kv_cache_transfer_end":null,"kv_cache_size":0,"server_arrival_time":1.25},)"
      R"("kv_cache_metrics":{"num_total_allocated_blocks":10,"num_reused_blocks":6,"kv_cache_hit_rate":0.6},)"
      R"("speculative_decoding":{"acceptance_rate":0.5},)"
      R"("time_breakdown_metrics":{"step_metrics":[{"iter":3}]}}},)"
      R"("ctx_request_id":7,"streaming":true,"metrics_headers":{"X":"y"}})";
  BOOST_TEST(shaped(raw) ==
             R"({"request_id":42,"perf_metrics":{"timing_metrics":{"arrival_time":1.5,)"
             R"("first_scheduled_time":1.75,"first_token_time":2.0,"last_token_time":3.25,)"
             R"("server_arrival_time":1.25},"first_iter":3,"last_iter":9,"kv_cache_metrics":)"
             R"({"num_total_allocated_blocks":10,"num_reused_blocks":6},"speculative_decoding":)"
             R"({"acceptance_rate":0.5}},"ctx_request_id":7,"time_breakdown_metrics":{"step_metrics":)"
             R"([{"iter":3}]},"status":"complete"})");
}

BOOST_AUTO_TEST_CASE(worker_record_with_only_what_the_schema_needs) {
  BOOST_TEST(shaped(worker_with("{}")) ==
             R"({"request_id":1,"perf_metrics":{"timing_metrics":{}},"status":"complete"})");
}

BOOST_AUTO_TEST_CASE(optional_top_level_fields_come_last_and_null_means_absent) {
  BOOST_TEST(shaped(R"({"request_id":5,"status":null,"disagg_request_id":9,"ctx_request_id":null,)"
                    R"("phases":{"server":{"time_breakdown_metrics":null}}})") ==
             R"({"request_id":5,"perf_metrics":{"timing_metrics":{}},"status":null,"disagg_request_id":9})");
  BOOST_TEST(shaped(R"({"request_id":5,"disagg_request_id":null,"phases":{"server":{}}})") ==
             R"({"request_id":5,"perf_metrics":{"timing_metrics":{}},"status":"complete"})");
}

BOOST_AUTO_TEST_CASE(disaggregated_record_takes_its_ids_from_each_phase) {
  const std::string raw =
      R"({"request_id":"r-9","status":"complete","disagg_request_id":77,"ctx_request_id":1000,"phases":{)" +
      std::string(disagg_phases) +
      R"(,"ctx":{"request_id":"11","ctx_request_id":12,"timing_metrics":{"kv_cache_size":4096,)"
      R"("kv_cache_transfer_start":2.0,"kv_cache_transfer_end":2.5}},)"
      R"("gen":{"timing_metrics":{"arrival_time":3.0},"kv_cache_metrics":{"kv_cache_hit_rate":0.0}}}})";
  BOOST_TEST(shaped(raw) ==
             R"({"ctx_server":"c0","gen_server":"g0","disagg_server_arrival_time":1.0,)"
             R"("disagg_ctx_dispatch_time":1.5,"disagg_server_first_token_time":2.0,"status":"complete",)"
             R"("ctx_perf_metrics":{"request_id":11,"perf_metrics":{"timing_metrics":{"kv_cache_size":4096,)"
             R"("kv_cache_transfer_start":2.0,"kv_cache_transfer_end":2.5}},"ctx_request_id":12},)"
             R"("gen_perf_metrics":{"request_id":"r-9","perf_metrics":{"timing_metrics":{"arrival_time":3.0},)"
             R"("kv_cache_metrics":{"kv_cache_hit_rate":0.0}}},"disagg_request_id":77})");
}

BOOST_AUTO_TEST_CASE(empty_or_null_worker_phases_are_left_out_of_a_disaggregated_record) {
  BOOST_TEST(shaped(R"({"request_id":1,"phases":{)" + std::string(disagg_phases) + R"(,"ctx":{},"gen":null}})") ==
             R"({"ctx_server":"c0","gen_server":"g0","disagg_server_arrival_time":1.0,)"
             R"("disagg_ctx_dispatch_time":1.5,"disagg_server_first_token_time":2.0,"status":"complete"})");
}

BOOST_AUTO_TEST_CASE(request_id_fallback_is_evaluated_eagerly) {
  // The ctx phase has its own request_id, yet the missing top-level one is a KeyError.
  BOOST_TEST(malformed_message(R"({"phases":{)" + std::string(disagg_phases) +
                               R"(,"ctx":{"request_id":3}}})") == "'request_id'");
  // Without worker phases the top-level request_id is never read.
  BOOST_TEST(malformed_message(R"({"phases":{)" + std::string(disagg_phases) + "}}") == "(not malformed)");
}

BOOST_AUTO_TEST_CASE(request_id_converts_as_python_int) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"("007")", "7"},
      {R"(" 42 ")", "42"},
      {R"("\t-42\n")", "-42"},
      {R"("+5")", "5"},
      {R"("-0")", "0"},
      {R"("1_0")", "10"},
      {R"("1_000_000")", "1000000"},
      {R"("\u00a042\u3000")", "42"},
      {R"("abc")", R"("abc")"},
      {R"("1__0")", R"("1__0")"},
      {R"("_1")", R"("_1")"},
      {R"("1_")", R"("1_")"},
      {R"("")", R"("")"},
      {R"("  ")", R"("  ")"},
      {R"("0x10")", R"("0x10")"},
      {R"("1e3")", R"("1e3")"},
      {R"("1.0")", R"("1.0")"},
      {R"("- 1")", R"("- 1")"},
      {R"("9223372036854775807")", "9223372036854775807"},
      {R"("9223372036854775808")", "9223372036854775808"},
      {R"("18446744073709551615")", "18446744073709551615"},
      {R"("-9223372036854775808")", "-9223372036854775808"},
      {"3.9", "3"},
      {"-3.9", "-3"},
      {"-0.0", "0"},
      {"1e19", "10000000000000000000"},
      {"true", "1"},
      {"false", "0"},
      {"null", "null"},
      {"[1]", "[1]"},
      {"18446744073709551615", "18446744073709551615"},
  };
  for (const auto& [id, expected] : cases) {
    BOOST_TEST(shaped(R"({"request_id":)" + id + R"(,"phases":{"server":{}}})") ==
                   R"({"request_id":)" + expected + R"(,"perf_metrics":{"timing_metrics":{}},"status":"complete"})",
               "request_id " << id);
  }
}

BOOST_AUTO_TEST_CASE(infinite_request_id_is_an_unexpected_error_not_malformed) {
  json::object raw{{"request_id", std::numeric_limits<double>::infinity()},
                   {"phases", json::object{{"server", json::object{}}}}};
  BOOST_CHECK_THROW(jsonl::shape_perf_metrics_record(raw), std::overflow_error);
  // int(nan) raises ValueError, caught: the NaN stays and makes the line malformed.
  raw["request_id"] = std::numeric_limits<double>::quiet_NaN();
  BOOST_CHECK_THROW(jsonl::to_json_text(jsonl::shape_perf_metrics_record(raw)), jsonl::MalformedRecord);
}

BOOST_AUTO_TEST_CASE(falsy_kv_cache_size_drops_it_and_the_transfer_times) {
  for (const std::string falsy : {"0", "0.0", "-0.0", "false", "null", R"("")", "[]", "{}"}) {
    BOOST_TEST(shaped(worker_with(R"({"timing_metrics":{"a":1,"kv_cache_size":)" + falsy +
                                  R"(,"kv_cache_transfer_start":2,"kv_cache_transfer_end":3,"z":4}})")) ==
                   R"({"request_id":1,"perf_metrics":{"timing_metrics":{"a":1,"z":4}},"status":"complete"})",
               "kv_cache_size " << falsy);
  }
  BOOST_TEST(shaped(worker_with(R"({"timing_metrics":{"kv_cache_transfer_start":2}})")) ==
             R"({"request_id":1,"perf_metrics":{"timing_metrics":{}},"status":"complete"})");
  for (const std::string truthy : {"1", "0.5", R"("0")", "[0]", "true"}) {
    const std::string timing = R"({"kv_cache_size":)" + truthy + R"(,"kv_cache_transfer_start":2})";
    BOOST_TEST(shaped(worker_with(R"({"timing_metrics":)" + timing + "}")) ==
                   R"({"request_id":1,"perf_metrics":{"timing_metrics":)" + timing + R"(},"status":"complete"})",
               "kv_cache_size " << truthy);
  }
}

BOOST_AUTO_TEST_CASE(kv_cache_metrics_with_nothing_but_the_hit_rate_is_written_as_it_came) {
  BOOST_TEST(shaped(worker_with(R"({"kv_cache_metrics":{"kv_cache_hit_rate":0.25}})")) ==
             R"({"request_id":1,"perf_metrics":{"timing_metrics":{},"kv_cache_metrics":{"kv_cache_hit_rate":0.25}},"status":"complete"})");
  BOOST_TEST(shaped(worker_with(R"({"kv_cache_metrics":{}})")) ==
             R"({"request_id":1,"perf_metrics":{"timing_metrics":{},"kv_cache_metrics":{}},"status":"complete"})");
  BOOST_TEST(shaped(worker_with(R"({"kv_cache_metrics":{"kv_cache_hit_rate":0.25,"num_reused_blocks":2}})")) ==
             R"({"request_id":1,"perf_metrics":{"timing_metrics":{},"kv_cache_metrics":{"num_reused_blocks":2}},"status":"complete"})");
}

BOOST_AUTO_TEST_CASE(present_iteration_fields_are_copied_even_when_null) {
  BOOST_TEST(shaped(worker_with(R"({"last_iter":null,"speculative_decoding":[1],"first_iter":0})")) ==
             R"({"request_id":1,"perf_metrics":{"timing_metrics":{},"first_iter":0,"last_iter":null,"speculative_decoding":[1]},"status":"complete"})");
}

BOOST_AUTO_TEST_CASE(missing_keys_are_malformed_and_named_as_python_prints_them) {
  const std::string disagg_without = R"({"request_id":1,"phases":{"disagg":)";
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"({"request_id":1})", "'server'"},
      {R"({"request_id":1,"phases":{}})", "'server'"},
      {R"({"phases":{}})", "'server'"},
      {R"({"phases":{"server":{}}})", "'request_id'"},
      {R"({"phases":{"server":5}})", "'request_id'"},  // the key is looked up before the phase is used
      {disagg_without + R"({"timing_metrics":5,"gen_server":"g"}}})", "'ctx_server'"},
      {disagg_without + R"({"ctx_server":"c","gen_server":"g"}}})", "'timing_metrics'"},
      {disagg_without + R"({"timing_metrics":{},"gen_server":"g"}}})", "'ctx_server'"},
      {disagg_without + R"({"timing_metrics":{},"ctx_server":"c"}}})", "'gen_server'"},
      {disagg_without + R"({"timing_metrics":{},"ctx_server":"c","gen_server":"g"}}})", "'server_arrival_time'"},
      {disagg_without + R"({"timing_metrics":{"server_arrival_time":1,"server_first_token_time":2},)"
                        R"("ctx_server":"c","gen_server":"g"}}})", "'ctx_dispatch_time'"},
      {disagg_without + R"({"timing_metrics":{"server_arrival_time":1,"ctx_dispatch_time":2},)"
                        R"("ctx_server":"c","gen_server":"g"}}})", "'server_first_token_time'"},
  };
  for (const auto& [raw, key] : cases) BOOST_TEST(malformed_message(raw) == key, raw);
}

BOOST_AUTO_TEST_CASE(wrong_json_types_where_an_object_is_needed_are_malformed) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"[1,2]", "record: expected an object, got array"},
      {R"({"request_id":1,"phases":null})", "phases: expected an object, got null"},
      {R"({"request_id":1,"phases":{"server":5}})", "phases.server: expected an object, got integer"},
      {worker_with(R"({"timing_metrics":[]})"), "phases.server.timing_metrics: expected an object, got array"},
      {worker_with(R"({"kv_cache_metrics":"x"})"), "phases.server.kv_cache_metrics: expected an object, got string"},
      {R"({"request_id":1,"phases":{"disagg":true}})", "phases.disagg: expected an object, got bool"},
      {R"({"request_id":1,"phases":{)" + std::string(disagg_phases) + R"(,"gen":[1]}})",
       "phases.gen: expected an object, got array"},
  };
  for (const auto& [raw, message] : cases) BOOST_TEST(malformed_message(raw) == message, raw);
}

BOOST_AUTO_TEST_CASE(the_format_leaves_the_raw_record_as_it_was) {
  for (const std::string raw :
       {worker_with(R"({"timing_metrics":{"kv_cache_size":0,"a":1},"kv_cache_metrics":{"kv_cache_hit_rate":0.5,"b":2},)"
                    R"("time_breakdown_metrics":{"c":3},"ctx_request_id":"7"})"),
        R"({"request_id":1,"status":"error","disagg_request_id":9,"phases":{)" + std::string(disagg_phases) +
            R"(,"ctx":{"request_id":2,"timing_metrics":{}},"gen":{"ctx_request_id":3}}})"}) {
    const json::value original = json::parse(raw);
    json::value record = original;
    std::string line;
    jsonl::PerfMetricsFormat().append_line(record, line);
    BOOST_TEST(record == original, raw);
  }
}

// The reference shapes the whole record before json.dumps sees it: a record that is
// both mis-shaped and unserializable is reported for its shape, wherever the
// unserializable value sits.
BOOST_AUTO_TEST_CASE(a_record_wrong_in_shape_and_in_value_reports_its_shape) {
  json::object raw{{"request_id", 1},
                   {"phases", json::object{{"server", json::object{{"timing_metrics", json::object{{"a", std::nan("")}}},
                                                                     {"kv_cache_metrics", "x"}}}}}};
  BOOST_TEST(format_output(raw) == "throws: phases.server.kv_cache_metrics: expected an object, got string");
}

BOOST_AUTO_TEST_SUITE_END()

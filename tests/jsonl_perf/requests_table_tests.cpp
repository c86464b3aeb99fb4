// requests.csv against rows computed by the reference analysis's rules from the same
// lines: an aggregated server's streamed, whole, refused and unanswered requests, and a
// disaggregated request that joins its proxy's, context worker's and generation worker's
// records.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "python_json.hpp"
#include "python_values.hpp"
#include "requests_table.hpp"

namespace {

namespace json = boost::json;

std::vector<json::value> parsed(const std::vector<std::string>& lines) {
  std::vector<json::value> values;
  for (const std::string& line : lines) values.push_back(json::parse(line, {}, jsonl_perf::python_json_loads()));
  return values;
}

const std::vector<std::string> request_lines = {
    R"({"event":"request","trace_id":"tr_a","session":"s1","recorded_at":"2026-09-03T14:05:10.500000+00:00","server_arrival_time":100.25,"route":"/v1/chat/completions","status":"accepted","headers":[],"body":{"model":"m","stream":true}})",
    R"({"event":"request","trace_id":"tr_b","session":"_no_session","recorded_at":"2026-09-03T14:05:09+00:00","server_arrival_time":99.0,"route":"/v1/chat/completions","status":"rejected_400","headers":[],"body":{"model":"m"},"validation_errors":[{"loc":["body","messages"],"type":"missing","msg":"Field required"},{"loc":["body","n",0],"type":"int_parsing","msg":"Input should be a valid integer, it's 'x'"}]})",
    R"({"event":"request","trace_id":"tr_c","session":"s\"q","recorded_at":"2026-09-03T14:05:11.250000+00:00","server_arrival_time":101.0,"route":"/v1/completions","status":"accepted","headers":[],"body":{"model":"m,x","stream":false}})",
    R"({"event":"request","trace_id":"tr_d","session":"s1","recorded_at":"2026-09-03T14:05:11.750000+00:00","server_arrival_time":101.5,"route":"/v1/chat/completions","status":"accepted","headers":[],"body":{"model":"m","stream":true}})",
    R"({"event":"request","trace_id":"tr_p","session":"s2","recorded_at":"2026-09-03T14:06:50.125000+00:00","server_arrival_time":200.0,"route":"/v1/responses","status":"accepted","headers":[],"body":{"model":"m","stream":true}})",
};

const std::vector<std::string> response_lines = {
    R"({"event":"response","trace_id":"tr_a","session":"s1","finished_at":"2026-09-03T14:05:12.750000+00:00","status":"completed","client_id":7,"disagg_request_id":7,"ctx_request_id":null,"response":{"kind":"sse_text","body":"data: {\"choices\":[]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":4,\"prompt_tokens_details\":{\"cached_tokens\":4}}}\n\ndata: [DONE]\n\n"}})",
    R"({"event":"response","trace_id":"tr_c","session":"s\"q","finished_at":"2026-09-03T14:05:11.875000+00:00","status":"completed","client_id":8,"disagg_request_id":8,"ctx_request_id":null,"response":{"kind":"json","body":{"usage":{"prompt_tokens":5,"completion_tokens":3}}}})",
    R"({"event":"response","trace_id":"tr_p","session":"s2","finished_at":"2026-09-03T14:06:52.000000+00:00","status":"completed","client_id":9,"disagg_request_id":9,"ctx_request_id":31,"response":{"kind":"sse_text","body":"event: response.created\ndata: {\"type\":\"response.created\"}\n\nevent: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":12,\"output_tokens\":6,\"input_tokens_details\":{\"cached_tokens\":3}}}}\n\n"}})",
};

// The workers' records in a server's file, the proxy's in its own: a record's hop is
// read off its file's name where the name says it.
const std::vector<std::string> server_records = {
    R"({"request_id":7,"perf_metrics":{"first_iter":1,"last_iter":4,"timing_metrics":{"arrival_time":100.25,"first_scheduled_time":100.5,"first_token_time":101.0,"last_token_time":102.0,"server_arrival_time":100.25,"server_first_token_time":101.125},"kv_cache_metrics":{"num_total_allocated_blocks":3,"num_new_allocated_blocks":2,"num_reused_blocks":1}}})",
    R"({"request_id":8,"perf_metrics":{"first_iter":5,"last_iter":5,"timing_metrics":{"arrival_time":101.0,"first_scheduled_time":101.0625,"first_token_time":101.5,"last_token_time":101.5,"server_arrival_time":101.0,"server_first_token_time":101.875},"kv_cache_metrics":{"num_total_allocated_blocks":1,"num_new_allocated_blocks":1,"num_reused_blocks":0}}})",
    R"({"request_id":31,"ctx_request_id":31,"disagg_request_id":9,"perf_metrics":{"first_iter":10,"last_iter":10,"timing_metrics":{"arrival_time":200.125,"first_scheduled_time":200.25,"first_token_time":200.375},"kv_cache_metrics":{"num_total_allocated_blocks":4,"num_new_allocated_blocks":4,"num_reused_blocks":0}}})",
    R"({"request_id":32,"ctx_request_id":31,"disagg_request_id":9,"perf_metrics":{"first_iter":11,"last_iter":16,"timing_metrics":{"arrival_time":200.5,"first_scheduled_time":200.5,"first_token_time":200.5,"last_token_time":201.5,"kv_cache_transfer_start":200.5,"kv_cache_transfer_end":200.625,"kv_cache_size":1024},"kv_cache_metrics":{"num_total_allocated_blocks":5,"num_new_allocated_blocks":5,"num_reused_blocks":0}}})",
};
const std::vector<std::string> proxy_records = {
    R"({"ctx_server":"http://ctx","gen_server":"http://gen","disagg_server_arrival_time":200.0,"disagg_ctx_dispatch_time":200.125,"disagg_server_first_token_time":200.5,"request_id":"9","disagg_request_id":9})",
};

// The rows as the reference's requests table computes them from the lines above.
const std::vector<std::string> expected_rows = {
    R"(,tr_b,/v1/chat/completions,2026-09-03T14:05:09Z,2026-09-03T14:05:09Z,,rejected_400,,m,,,,,,0,,,,,,,,,,,,,,,,,,,,,,,,"['body', 'messages']: Field required | ['body', 'n', 0]: Input should be a valid integer, it's 'x'",_no_session)",
    R"(7,tr_a,/v1/chat/completions,2026-09-03T14:05:10Z,2026-09-03T14:05:10Z,2026-09-03T14:05:12Z,completed,True,m,10,4,6,4,0.4,250,,875,2500,1625,250,500,,,,,1,4,,,3,2,1,,,,,,,,s1)",
    R"(8,tr_c,/v1/completions,2026-09-03T14:05:11Z,2026-09-03T14:05:11Z,2026-09-03T14:05:11Z,completed,False,"m,x",5,,,3,,250,,875,875,0,62.5,437.5,,,,,5,5,,,1,1,0,,,,,,,,"s""q")",
    R"(,tr_d,/v1/chat/completions,2026-09-03T14:05:11Z,2026-09-03T14:05:11Z,,no_response,True,m,,,,,,250,,,,,,,,,,,,,,,,,,,,,,,,,s1)",
    R"(9,tr_p,/v1/responses,2026-09-03T14:06:50Z,2026-09-03T14:06:50Z,2026-09-03T14:06:52Z,completed,True,m,12,3,9,6,0.25,125,125,500,2000,1500,125,125,125,1024,1000,,10,10,11,16,4,4,0,5,,,,,,,s2)",
};

std::string table(const std::vector<std::string>& requests, const std::vector<std::string>& responses) {
  const std::vector<json::value> servers = parsed(server_records), proxies = parsed(proxy_records);
  std::vector<jsonl_perf::PerfRecordLine> records;
  for (const json::value& record : servers) records.push_back({&record, "perf_metrics-server-host-1-20260903T140509Z.jsonl"});
  for (const json::value& record : proxies) records.push_back({&record, "perf_metrics-disagg-host-2-20260903T140509Z.jsonl"});
  return jsonl_perf::requests_table(parsed(requests), parsed(responses), records).csv;
}

std::string header() {
  std::string line;
  for (const std::string& column : jsonl_perf::requests_table_columns()) line += (line.empty() ? "" : ",") + column;
  return line + "\r\n";
}

}  // namespace

BOOST_AUTO_TEST_SUITE(requests_table)

BOOST_AUTO_TEST_CASE(each_request_line_is_a_row_as_the_reference_computes_it) {
  std::string expected = header();
  for (const std::string& row : expected_rows) expected += row + "\r\n";
  BOOST_TEST(table(request_lines, response_lines) == expected);
}

BOOST_AUTO_TEST_CASE(the_header_names_the_reference_columns_in_order_then_the_session) {
  BOOST_TEST(header().starts_with("rid,trace_id,route,started_at,handler_entry_at,finished_at,status,stream,model,"));
  BOOST_TEST(header().ends_with(",validation_errors,session\r\n"));
  BOOST_TEST(table({}, {}) == header());
}

BOOST_AUTO_TEST_CASE(a_request_line_repeated_keeps_its_first_place_and_takes_the_later_line) {
  std::vector<std::string> requests = request_lines;
  std::string later = requests[0];
  later.replace(later.find(R"("model":"m")"), 11, R"("model":"n")");
  requests.push_back(later);
  const std::string text = table(requests, response_lines);
  BOOST_TEST(text.find(",completed,True,n,10,4,6,4,0.4,") != std::string::npos);
  BOOST_TEST(text.find(",completed,True,m,10,4,6,4,0.4,") == std::string::npos);
  BOOST_TEST(jsonl_perf::requests_table(parsed(requests), parsed(response_lines), {}).rows.size() == request_lines.size());
}

BOOST_AUTO_TEST_CASE(a_time_is_read_as_python_reads_it_whatever_its_fraction_and_offset) {
  const auto seconds = [](const char* text) {
    const json::value stamp(text);
    return jsonl_perf::python::parse_iso(&stamp);
  };
  BOOST_TEST(*seconds("2026-09-03T14:05:09+00:00") == 1788444309.0);
  BOOST_TEST(*seconds("2026-09-03T14:05:09.5Z") == 1788444309.5);
  BOOST_TEST(*seconds("2026-09-03T14:05:09.25+00:00") == 1788444309.25);
  BOOST_TEST(*seconds("2026-09-03T14:05:09.123456789+00:00") == *seconds("2026-09-03T14:05:09.123456+00:00"));
  BOOST_TEST(*seconds("2026-09-03T16:05:09.5+02:00") == 1788444309.5);
  BOOST_TEST(!seconds("2026-09-03T14:05:09.+00:00"));
  BOOST_TEST(!seconds("2026-09-03T14:05:09 UTC"));
}

BOOST_AUTO_TEST_SUITE_END()

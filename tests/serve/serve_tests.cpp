// jsonl-perf serve from outside: a real server process on loopback, driven over HTTP,
// its records read after it stopped. One case a behaviour at the HTTP boundary.
#define BOOST_TEST_MODULE serve
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

#include "served.hpp"

namespace {

using namespace serve_test;
using Clock = std::chrono::steady_clock;

// The nice value (field 19 of its stat) of each thread of process `pid` named `name`,
// by thread id.
std::map<int, int> nice_of_threads_named(int pid, const std::string& name) {
  std::map<int, int> nice;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream stat(task.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const std::size_t open = text.find('('), close = text.rfind(')');
    if (text.substr(open + 1, close - open - 1) != name) continue;
    std::istringstream fields(text.substr(close + 2));  // from field 3
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i) {}
    nice[std::stoi(task.path().filename().string())] = std::stoi(field);
  }
  return nice;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_streamed_answer_is_traced_once_with_its_usage_and_joins_its_perf_record) {
  Served server;
  const auto response = server.post("/v1/chat/completions", chat_request(true));
  BOOST_TEST(response.result_int() == 200u);
  BOOST_TEST(response.body().ends_with("data: [DONE]\n\n"));
  BOOST_REQUIRE_EQUAL(server.stop(), 0);

  const auto requests = server.lines("requests");
  const auto responses = server.lines("responses");
  const auto records = server.lines("perf_metrics");
  BOOST_REQUIRE_EQUAL(requests.size(), 1u);
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_REQUIRE_EQUAL(records.size(), 1u);
  BOOST_TEST(text_of(requests[0].at("status")) == "accepted");
  BOOST_TEST(requests[0].at("trace_id") == responses[0].at("trace_id"));
  BOOST_TEST(text_of(responses[0].at("status")) == "completed");
  BOOST_TEST(responses[0].at("client_id") == records[0].at("request_id"));
  // The key the reference's analysis joins on, which an aggregated server has no proxy to set.
  BOOST_TEST(responses[0].at("disagg_request_id") == records[0].at("request_id"));
  // The answer as sent, its usage where OpenAI puts it: the chunk before [DONE].
  const std::string sent = text_of(responses[0].at("response").at("body"));
  BOOST_TEST(sent == response.body());
  BOOST_TEST(sent.find(R"("choices":[],"usage":{"prompt_tokens":)") != std::string::npos);
  const auto& timing = records[0].at("perf_metrics").at("timing_metrics").as_object();
  BOOST_TEST(timing.at("server_arrival_time") == requests[0].at("server_arrival_time"));
  BOOST_TEST(timing.at("server_first_token_time").as_double() >= timing.at("server_arrival_time").as_double());
  BOOST_TEST(records[0].at("perf_metrics").at("kv_cache_metrics").as_object().contains("num_total_allocated_blocks"));
}

BOOST_AUTO_TEST_CASE(the_reference_servers_null_disagg_request_id_is_an_option) {
  Served server({"--disagg-request-id", "null"});
  server.post("/v1/chat/completions", chat_request(false));
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(server.lines("responses").at(0).at("disagg_request_id").is_null());
}

BOOST_AUTO_TEST_CASE(connections_on_several_threads_are_each_traced_once_and_stop_cleanly) {
  Served server({"--threads", "2", "--itl-ms", "const:2"});
  std::vector<std::jthread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&server] {
      for (int j = 0; j < 5; ++j) server.post("/v1/chat/completions", chat_request(j % 2 == 0));
    });
  }
  clients.clear();
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(server.lines("requests").size() == 20u);
  BOOST_TEST(server.lines("responses").size() == 20u);
  BOOST_TEST(server.lines("perf_metrics").size() == 20u);
}

BOOST_AUTO_TEST_CASE(both_stamps_lead_the_request_line_whatever_the_body) {
  Served server;
  std::string long_text(200'000, 'x');
  json::object body{{"model", "m"}, {"messages", json::array{json::object{{"role", "user"}, {"content", long_text}}}}};
  BOOST_TEST(server.post("/v1/chat/completions", json::serialize(body)).result_int() == 200u);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const std::string line = json::serialize(server.lines("requests").at(0));
  BOOST_TEST(line.find("\"recorded_at\":") < 1000u);
  BOOST_TEST(line.find("\"server_arrival_time\":") < 1000u);
}

// The keys of a line in its order (Boost.JSON keeps the order it parsed).
std::vector<std::string> keys_of(const json::object& line) {
  std::vector<std::string> keys;
  for (const auto& member : line) keys.emplace_back(member.key());
  return keys;
}

BOOST_AUTO_TEST_CASE(trace_lines_hold_the_reference_servers_keys_in_its_order_and_no_credential) {
  Served server;
  server.request(http::verb::post, "/v1/chat/completions", chat_request(false), {{"Authorization", "Bearer sk-secret"}});
  server.post("/v1/chat/completions", R"({"model": "m"})");
  server.post("/v1/chat/completions", R"({"model": "m", "messages": [)");
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto requests = server.lines("requests");
  BOOST_REQUIRE_EQUAL(requests.size(), 3u);
  const std::vector<std::string> request_keys{"event", "trace_id", "session", "recorded_at", "server_arrival_time",
                                              "route", "status", "headers", "body"};
  BOOST_TEST(keys_of(requests[0]) == request_keys, boost::test_tools::per_element());
  std::vector<std::string> rejected_keys = request_keys;
  rejected_keys.push_back("validation_errors");
  BOOST_TEST(keys_of(requests[1]) == rejected_keys, boost::test_tools::per_element());
  rejected_keys.push_back("body_parse_error");
  BOOST_TEST(keys_of(requests[2]) == rejected_keys, boost::test_tools::per_element());
  const std::string headers = json::serialize(requests[0].at("headers"));
  BOOST_TEST(headers.find(R"(["authorization","[redacted]"])") != std::string::npos);
  BOOST_TEST(headers.find("sk-secret") == std::string::npos);
  const auto responses = server.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  const std::vector<std::string> response_keys{"event",          "trace_id",          "session",
                                               "finished_at",    "status",            "client_id",
                                               "disagg_request_id", "ctx_request_id", "response"};
  BOOST_TEST(keys_of(responses[0]) == response_keys, boost::test_tools::per_element());
  BOOST_TEST(text_of(responses[0].at("response").at("kind")) == "json");
  BOOST_TEST(responses[0].at("response").at("body").at("object") == "chat.completion");
}

BOOST_AUTO_TEST_CASE(each_route_answers_in_its_own_dialect_streamed_and_not) {
  Served server;
  const json::value completion = json::parse(
      server.post("/v1/completions", R"({"model":"m","prompt":"Once","max_tokens":3})").body());
  BOOST_TEST(text_of(completion.at("object")) == "text_completion");
  BOOST_TEST(completion.at("usage").at("completion_tokens").as_int64() == 3);
  const std::string responses_stream =
      server.post("/v1/responses", R"({"model":"m","input":"Hi","max_output_tokens":3,"stream":true})").body();
  BOOST_TEST(responses_stream.starts_with("event: response.created\ndata: "));
  BOOST_TEST(responses_stream.find("event: response.completed\n") != std::string::npos);
  BOOST_TEST(responses_stream.find("\"input_tokens\":") != std::string::npos);
  // Each event's sequence number is the next, in the order the events went out.
  std::int64_t next = 0;
  for (std::size_t at = responses_stream.find("\ndata: "); at != std::string::npos;
       at = responses_stream.find("\ndata: ", at + 1)) {
    const std::size_t from = at + 7;
    const json::value event = json::parse(responses_stream.substr(from, responses_stream.find('\n', from) - from));
    BOOST_TEST(event.at("sequence_number").as_int64() == next++);
  }
  BOOST_TEST(next >= 7);
  const json::value chat = json::parse(server.post("/v1/chat/completions", chat_request(false, 2)).body());
  BOOST_TEST(text_of(chat.at("object")) == "chat.completion");
  BOOST_TEST(chat.at("usage").at("total_tokens").as_int64() > 2);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(server.lines("requests").size() == 3u);
  BOOST_TEST(server.lines("responses").size() == 3u);
  BOOST_TEST(server.lines("perf_metrics").size() == 3u);
}

BOOST_AUTO_TEST_CASE(health_models_and_the_writers_metrics_are_served) {
  Served server;
  BOOST_TEST(server.request(http::verb::get, "/health").result_int() == 200u);
  const json::value models = json::parse(server.request(http::verb::get, "/v1/models").body());
  BOOST_TEST(text_of(models.at("object")) == "list");
  BOOST_TEST(server.request(http::verb::get, "/v1/nothing").result_int() == 404u);
  server.post("/v1/chat/completions", chat_request(false));
  BOOST_TEST(server.metric(R"(jsonl_records_submitted_total{subject="request trace",server_kind="server"})") >= 1);
  BOOST_TEST(server.metric(R"(jsonl_serve_requests_total{route="/v1/chat/completions",status="completed"})") == 1);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
}

BOOST_AUTO_TEST_CASE(the_writers_threads_are_named_and_run_at_the_servers_priority_unless_told) {
  // The server inherits this process's nice value (a test run under `nice` gives it one).
  errno = 0;
  const int inherited = ::getpriority(PRIO_PROCESS, 0);
  BOOST_REQUIRE(errno == 0);
  BOOST_REQUIRE(inherited < 19);  // or the two cases below could not be told apart
  for (const auto& [flags, writers_nice] : {std::pair{std::vector<std::string>{}, inherited},
                                             std::pair{std::vector<std::string>{"--writer-nice", "19"}, 19}}) {
    Served server(flags);
    server.post("/v1/chat/completions", chat_request(false));
    // Each writer's threads have started once it wrote a record.
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    for (const char* subject : {"request trace", "performance metrics"}) {
      const std::string written =
          std::string("jsonl_records_written_total{subject=\"") + subject + "\",server_kind=\"server\"}";
      while (server.metric(written) < 1) BOOST_REQUIRE(Clock::now() < deadline);
    }
    // Two writers (perf metrics, request traces), a drain and a write worker each.
    const std::map<int, int> nice = nice_of_threads_named(server.pid(), "jsonl-writer");
    BOOST_TEST(nice.size() == 4u);
    for (const auto& [thread, value] : nice) BOOST_TEST(value == writers_nice, "thread " << thread);
    BOOST_TEST(nice_of_threads_named(server.pid(), "jsonl-perf").at(server.pid()) == inherited);  // the request thread
    BOOST_REQUIRE_EQUAL(server.stop(), 0);
  }
}

BOOST_AUTO_TEST_CASE(a_body_declared_over_the_default_16_mib_gets_413_is_counted_and_not_traced) {
  Served server;
  tcp::socket socket = server.connect();
  const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                           std::to_string((std::size_t{16} << 20) + 1) + "\r\n\r\n";
  net::write(socket, net::buffer(head));
  BOOST_TEST(read_to_close(socket).starts_with("HTTP/1.1 413"));
  // At the limit exactly, a body is read (and this one, not JSON, rejected with 400).
  BOOST_TEST(server.post("/v1/chat/completions", std::string(std::size_t{16} << 20, ' ')).result_int() == 400u);
  BOOST_TEST(server.metric(R"(jsonl_serve_refused_total{reason="body_too_large"})") == 1);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(server.lines("requests").size() == 1u);  // the 400 only
}

BOOST_AUTO_TEST_CASE(a_chunked_body_over_a_configured_limit_gets_413) {
  Served server({"--body-limit", "1000"});
  tcp::socket socket = server.connect();
  const std::string chunk(1500, 'a');
  std::ostringstream raw;
  raw << "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" << std::hex
      << chunk.size() << "\r\n" << chunk << "\r\n0\r\n\r\n";
  net::write(socket, net::buffer(raw.str()));
  BOOST_TEST(read_to_close(socket).starts_with("HTTP/1.1 413"));
  BOOST_TEST(server.metric(R"(jsonl_serve_refused_total{reason="body_too_large"})") == 1);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(server.lines("requests").empty());
}

BOOST_AUTO_TEST_CASE(invalid_json_gets_400_and_a_rejected_request_line_without_a_response_line) {
  Served server;
  const auto response = server.post("/v1/chat/completions", R"({"model": "m", "messages": [)");
  BOOST_TEST(response.result_int() == 400u);
  BOOST_TEST(json::parse(response.body()).as_object().contains("error"));
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto requests = server.lines("requests");
  BOOST_REQUIRE_EQUAL(requests.size(), 1u);
  BOOST_TEST(text_of(requests[0].at("status")) == "rejected_400");
  BOOST_TEST(text_of(requests[0].at("body")) == R"({"model": "m", "messages": [)");
  BOOST_TEST(text_of(requests[0].at("validation_errors").at(0).at("type")) == "json_invalid");
  BOOST_TEST(requests[0].contains("body_parse_error"));
  BOOST_TEST(server.lines("responses").empty());
  BOOST_TEST(server.lines("perf_metrics").empty());
}

BOOST_AUTO_TEST_CASE(invalid_utf8_gets_400_and_its_body_is_kept_as_text_with_replacement_characters) {
  Served server;
  const auto response = server.post("/v1/chat/completions", "{\"model\":\"m\",\"messages\":\"\xff\xfe\"}");
  BOOST_TEST(response.result_int() == 400u);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto requests = server.lines("requests");
  BOOST_REQUIRE_EQUAL(requests.size(), 1u);
  BOOST_TEST(text_of(requests[0].at("status")) == "rejected_400");
  BOOST_TEST(text_of(requests[0].at("body")).find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
  BOOST_TEST(server.lines("responses").empty());
}

BOOST_AUTO_TEST_CASE(a_body_missing_a_required_field_is_rejected_with_its_validation_errors) {
  Served server;
  const auto response = server.post("/v1/responses", R"({"model":"m","stream":"yes"})");
  BOOST_TEST(response.result_int() == 400u);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto requests = server.lines("requests");
  BOOST_REQUIRE_EQUAL(requests.size(), 1u);
  const json::array& errors = requests[0].at("validation_errors").as_array();
  BOOST_REQUIRE_EQUAL(errors.size(), 2u);
  BOOST_TEST(json::serialize(errors[0]) == R"({"loc":["body","input"],"type":"missing","msg":"Field required"})");
  BOOST_TEST(text_of(errors[1].at("type")) == "bool_type");
  BOOST_TEST(text_of(requests[0].at("route")) == "/v1/responses");
}

BOOST_AUTO_TEST_CASE(a_client_that_hangs_up_mid_stream_is_traced_client_disconnected_with_the_frames_sent) {
  Served server({"--itl-ms", "const:20"});
  tcp::socket socket = server.connect();
  net::write(socket, net::buffer(raw_post(chat_request(true, 500))));
  // Hang up once two tokens have come.
  std::string seen;
  char buffer[4096];
  while (std::count(seen.begin(), seen.end(), '\n') < 12) seen.append(buffer, socket.read_some(net::buffer(buffer)));
  socket.close();
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto responses = server.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(responses[0].at("status")) == "client_disconnected");
  BOOST_TEST(text_of(responses[0].at("termination").at("cause")) == "client_disconnected");
  const std::string sent = text_of(responses[0].at("response").at("body"));
  BOOST_TEST(sent.find("\"content\":") != std::string::npos);
  BOOST_TEST(sent.find("[DONE]") == std::string::npos);
  BOOST_TEST(server.lines("requests").size() == 1u);
  BOOST_TEST(server.lines("perf_metrics").empty());  // an engine reports what it finished
}

BOOST_AUTO_TEST_CASE(a_client_that_hangs_up_before_an_answer_sent_whole_is_traced_client_disconnected_at_once) {
  Served server({"--ttft-ms", "const:600000"});  // an answer ten minutes away
  tcp::socket socket = server.connect();
  net::write(socket, net::buffer(raw_post(chat_request(false, 4))));
  socket.close();
  const std::string ended = R"(jsonl_serve_requests_total{route="/v1/chat/completions",status="client_disconnected"})";
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (server.metric(ended) < 1) BOOST_REQUIRE(Clock::now() < deadline);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto responses = server.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(responses[0].at("status")) == "client_disconnected");
  BOOST_TEST(json::serialize(responses[0].at("response")) == R"({"kind":"json","body":null})");
  BOOST_TEST(!responses[0].contains("termination"));
  BOOST_TEST(server.lines("perf_metrics").empty());
}

BOOST_AUTO_TEST_CASE(a_next_request_pipelined_behind_an_answer_sent_whole_is_answered_in_turn) {
  Served server({"--ttft-ms", "const:2000"});
  tcp::socket socket = server.connect();
  net::write(socket, net::buffer(raw_post(chat_request(false, 2))));
  // The next request comes while the first one's answer is being made.
  const std::string accepted = R"(jsonl_records_submitted_total{subject="request trace",server_kind="server"})";
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (server.metric(accepted) < 1) BOOST_REQUIRE(Clock::now() < deadline);
  net::write(socket, net::buffer(raw_post(chat_request(false, 2))));
  std::string answers;
  char buffer[4096];
  const auto answered = [&] {
    const std::size_t first = answers.find(R"("finish_reason")");
    return first != std::string::npos && answers.find(R"("finish_reason")", first + 1) != std::string::npos;
  };
  while (!answered()) answers.append(buffer, socket.read_some(net::buffer(buffer)));
  socket.close();
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto responses = server.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 2u);
  for (const auto& response : responses) BOOST_TEST(text_of(response.at("status")) == "completed");
}

BOOST_AUTO_TEST_CASE(a_top_level_field_the_references_model_does_not_declare_is_rejected_extra_forbidden) {
  Served server;
  const auto chat = server.post("/v1/chat/completions", R"({"model":"m","messages":[],"brand_new_field":{"nested":1}})");
  const auto completion = server.post("/v1/completions", R"({"model":"m","prompt":"Hi","max_completion_tokens":3})");
  const auto responses = server.post("/v1/responses", R"({"model":"m","input":"Hi","max_output_tokens":3,"extra":1})");
  BOOST_TEST(chat.result_int() == 400u);
  BOOST_TEST(completion.result_int() == 400u);
  BOOST_TEST(responses.result_int() == 200u);  // the responses model allows extras
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const auto requests = server.lines("requests");
  BOOST_REQUIRE_EQUAL(requests.size(), 3u);
  std::map<std::string, std::string> errors;
  for (const auto& request : requests) {
    if (request.contains("validation_errors")) errors[text_of(request.at("route"))] = json::serialize(request.at("validation_errors"));
  }
  BOOST_TEST(errors["/v1/chat/completions"] ==
             R"([{"loc":["body","brand_new_field"],"type":"extra_forbidden","msg":"Extra inputs are not permitted"}])");
  BOOST_TEST(errors["/v1/completions"] ==
             R"([{"loc":["body","max_completion_tokens"],"type":"extra_forbidden","msg":"Extra inputs are not permitted"}])");
  BOOST_TEST(errors.size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_clients_integers_of_any_size_and_nan_are_recorded_as_python_reads_them) {
  Served server;
  const auto response =
      server.post("/v1/completions", R"({"model":"m","prompt":"Hi","max_tokens":2,"seed":123456789012345678901234,)"
                                     R"("temperature":NaN,"top_p":1E0})");
  BOOST_TEST(response.result_int() == 200u);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  const std::vector<std::string> lines = server.raw_lines("requests");
  BOOST_REQUIRE_EQUAL(lines.size(), 1u);
  BOOST_TEST(lines[0].find(R"("body":{"model":"m","prompt":"Hi","max_tokens":2,"seed":123456789012345678901234,)"
                       R"("temperature":NaN,"top_p":1.0})") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(headers_sent_a_byte_a_second_are_closed_after_the_default_10_s_header_timeout) {
  Served server;
  tcp::socket socket = server.connect();
  const std::string head = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Padding: ";
  const auto start = Clock::now();
  boost::system::error_code error;
  // The peer's pace is the behaviour under test, not a wait for the server.
  for (std::size_t i = 0; !error && i < 60; ++i) {
    net::write(socket, net::buffer(&head[i % head.size()], 1), error);
    if (!error) std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  }
  if (!error) read_to_close(socket);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  BOOST_TEST(seconds >= 9.5);
  BOOST_TEST(seconds < 20);
  BOOST_TEST(server.metric(R"(jsonl_serve_refused_total{reason="header_timeout"})") == 1);
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(server.lines("requests").empty());
}

BOOST_AUTO_TEST_CASE(nine_hundred_idle_connections_keep_memory_bounded_and_new_requests_served) {
  // The server under the default soft limit, 1,024 files; this process holds the 900 too.
  rlimit files{};
  BOOST_REQUIRE_EQUAL(::getrlimit(RLIMIT_NOFILE, &files), 0);
  const rlimit default_limit{std::min<rlim_t>(1024, files.rlim_max), files.rlim_max};
  BOOST_REQUIRE(default_limit.rlim_cur >= 1000);
  BOOST_REQUIRE_EQUAL(::setrlimit(RLIMIT_NOFILE, &default_limit), 0);
  Served server;
  BOOST_REQUIRE_EQUAL(::setrlimit(RLIMIT_NOFILE, &files), 0);
  const auto resident_kib = [&] {
    std::ifstream status("/proc/" + std::to_string(server.pid()) + "/status");
    for (std::string line; std::getline(status, line);) {
      if (line.starts_with("VmRSS:")) return std::stol(line.substr(6));
    }
    return -1L;
  };
  server.post("/v1/chat/completions", chat_request(true));
  const long before = resident_kib();
  std::vector<tcp::socket> idle;
  for (int i = 0; i < 900; ++i) idle.push_back(server.connect());
  BOOST_TEST(server.post("/v1/chat/completions", chat_request(true)).result_int() == 200u);
  BOOST_TEST(server.metric("jsonl_serve_connections_open") >= 900);
  const long after = resident_kib();
  BOOST_TEST_MESSAGE("resident " << before << " KiB before, " << after << " KiB with 900 idle connections");
  BOOST_TEST(after - before < 32 * 1024);  // well under 36 KiB a connection
  idle.clear();
  BOOST_REQUIRE_EQUAL(server.stop(), 0);
  BOOST_TEST(server.lines("requests").size() == 2u);
}

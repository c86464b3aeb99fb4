// A disaggregated deployment from outside: a context worker, a generation worker and the
// proxy in front of them, each its own `jsonl-perf serve` process on loopback recording
// into one attempt directory, driven over HTTP; what they recorded read after they
// stopped. One case a behaviour, the faults included.
#define BOOST_TEST_MODULE proxy
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <boost/asio/read_until.hpp>

#include <csignal>
#include <functional>
#include <cstdlib>
#include <set>
#include <thread>

#include "canned_worker.hpp"
#include "served.hpp"

namespace {

using namespace serve_test;
using Clock = std::chrono::steady_clock;

std::vector<std::string> with(std::vector<std::string> arguments, const std::vector<std::string>& extra) {
  arguments.insert(arguments.end(), extra.begin(), extra.end());
  return arguments;
}

// The three processes, recording into the context worker's directory as a deployment's
// attempt directory holds them all.
struct Deployment {
  explicit Deployment(const std::vector<std::string>& worker_extra = {}, const std::vector<std::string>& proxy_extra = {})
      : context(with({"--role", "context"}, worker_extra)),
        generation(with({"--role", "generation"}, worker_extra), context.dir()),
        proxy(with({"--role", "proxy", "--ctx-url", context.url(), "--gen-url", generation.url()}, proxy_extra),
              context.dir()) {}

  void stop() {
    BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
    BOOST_REQUIRE_EQUAL(context.stop(), 0);
    BOOST_REQUIRE_EQUAL(generation.stop(), 0);
  }

  Served context;
  Served generation;
  Served proxy;
};

// `jsonl-perf ARGUMENTS`, its exit status and its standard output.
std::pair<int, std::string> run_tool(const std::string& arguments, const std::filesystem::path& scratch) {
  const std::filesystem::path out = scratch / "tool.out";
  const int status = std::system((std::string(JSONL_PERF_TOOL) + " " + arguments + " > " + out.string() + " 2>&1").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, jsonl_test::read_file(out)};
}

// Each trace_id once among the request lines and once among the response lines.
void each_request_traced_once(const Served& proxy) {
  for (const char* kind : {"requests", "responses"}) {
    std::set<std::string> ids;
    for (const auto& line : proxy.lines(kind)) BOOST_TEST(ids.insert(text_of(line.at("trace_id"))).second);
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_proxied_request_leaves_a_proxy_a_context_and_a_generation_record_joined_on_its_disagg_request_id) {
  Deployment deployment;
  const auto streamed = deployment.proxy.post("/v1/chat/completions", chat_request(true));
  const auto whole = deployment.proxy.post("/v1/completions",
                                           R"({"model":"m","prompt":"Say hello.","max_tokens":3})");
  BOOST_TEST(streamed.result_int() == 200u);
  BOOST_TEST(streamed.body().ends_with("data: [DONE]\n\n"));  // the workers' metrics event stays with the proxy
  BOOST_TEST(whole.body().find("disaggregated_params") == std::string::npos);
  BOOST_TEST(json::parse(whole.body()).at("usage").at("completion_tokens").as_int64() == 3);
  deployment.stop();

  const auto responses = deployment.proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 2u);
  const auto proxy_records = deployment.proxy.lines("perf_metrics-disagg");
  const auto context_records = deployment.proxy.lines("perf_metrics-context");
  const auto generation_records = deployment.proxy.lines("perf_metrics-generation");
  BOOST_REQUIRE_EQUAL(proxy_records.size(), 2u);
  BOOST_REQUIRE_EQUAL(context_records.size(), 2u);
  BOOST_REQUIRE_EQUAL(generation_records.size(), 2u);
  std::set<std::int64_t> traced, proxied, contexts, generations;
  for (const auto& line : responses) traced.insert(line.at("disagg_request_id").as_int64());
  for (const auto& record : proxy_records) {
    proxied.insert(record.at("disagg_request_id").as_int64());
    BOOST_TEST(text_of(record.at("ctx_server")) == deployment.context.url().substr(7));
    BOOST_TEST(text_of(record.at("gen_server")) == deployment.generation.url().substr(7));
    BOOST_TEST(record.contains("ctx_perf_metrics"));
    BOOST_TEST(record.contains("gen_perf_metrics"));
    BOOST_TEST(record.at("disagg_ctx_dispatch_time").as_double() >= record.at("disagg_server_arrival_time").as_double());
  }
  for (const auto& record : context_records) contexts.insert(record.at("disagg_request_id").as_int64());
  for (const auto& record : generation_records) generations.insert(record.at("disagg_request_id").as_int64());
  BOOST_TEST(traced.size() == 2u);
  BOOST_TEST((proxied == traced));
  BOOST_TEST((contexts == traced));
  BOOST_TEST((generations == traced));
  each_request_traced_once(deployment.proxy);

  const auto [status, report] = run_tool("join --json " + deployment.proxy.dir().string(), deployment.proxy.dir());
  BOOST_TEST_MESSAGE(report);
  BOOST_TEST(status == 0);
  const json::value figures = json::parse(report);
  BOOST_TEST(figures.at("disaggregated").as_int64() == 2);
  BOOST_TEST(figures.at("joined_ctx").as_int64() == 2);
  BOOST_TEST(figures.at("joined_gen").as_int64() == 2);
  BOOST_TEST(figures.at("usage_found").as_int64() == 2);
  BOOST_TEST(figures.at("min_hop_span_ms").as_double() >= 0);
  BOOST_TEST(figures.at("min_decode_ms").as_double() >= 0);
}

BOOST_AUTO_TEST_CASE(a_context_hop_that_stops_short_of_the_length_asked_skips_the_generation_worker) {
  Deployment deployment;
  const auto streamed = deployment.proxy.post("/v1/chat/completions", chat_request(true, 1));
  const auto whole = deployment.proxy.post("/v1/chat/completions", chat_request(false, 1));
  BOOST_TEST(streamed.body().find(R"("finish_reason":"stop")") != std::string::npos);
  BOOST_TEST(streamed.body().find(R"("usage":{)") != std::string::npos);
  BOOST_TEST(streamed.body().ends_with("data: [DONE]\n\n"));
  BOOST_TEST(text_of(json::parse(whole.body()).at("choices").at(0).at("finish_reason")) == "stop");
  deployment.stop();
  BOOST_TEST(deployment.proxy.lines("perf_metrics-generation").empty());
  const auto proxy_records = deployment.proxy.lines("perf_metrics-disagg");
  BOOST_REQUIRE_EQUAL(proxy_records.size(), 2u);
  for (const auto& record : proxy_records) {
    BOOST_TEST(text_of(record.at("gen_server")).empty());
    BOOST_TEST(!record.contains("gen_perf_metrics"));
  }
}

BOOST_AUTO_TEST_CASE(a_worker_that_stops_answering_gets_504_after_the_hop_timeout_and_its_trace_says_why) {
  Deployment deployment({}, {"--hop-timeout", "1"});
  deployment.context.signal(SIGSTOP);
  const auto start = Clock::now();
  const auto answer = deployment.proxy.post("/v1/chat/completions", chat_request(false));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  deployment.context.signal(SIGCONT);
  BOOST_TEST(answer.result_int() == 504u);
  BOOST_TEST(seconds >= 0.9);
  BOOST_TEST(seconds < 20);
  deployment.stop();
  const auto responses = deployment.proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(responses[0].at("status")) == "error");
  BOOST_TEST(text_of(responses[0].at("termination").at("cause")) == "worker_timeout");
  BOOST_TEST(responses[0].at("response").at("body").at("error").at("code").as_int64() == 504);
  BOOST_TEST(deployment.proxy.lines("perf_metrics-disagg").empty());  // a record is a completed request's
}

BOOST_AUTO_TEST_CASE(a_refused_connection_gets_502_and_its_trace_says_why) {
  Served context({"--role", "context"});
  // A port bound and held, with nobody listening: a connection to it is refused.
  net::io_context io;
  tcp::socket held(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  const std::string closed_port = std::to_string(held.local_endpoint().port());
  Served proxy({"--role", "proxy", "--ctx-url", context.url(), "--gen-url", "http://127.0.0.1:" + closed_port});
  const auto answer = proxy.post("/v1/chat/completions", chat_request(false));
  BOOST_TEST(answer.result_int() == 502u);
  BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
  const auto responses = proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(responses[0].at("status")) == "error");
  BOOST_TEST(text_of(responses[0].at("termination").at("cause")) == "worker_unreachable");
}

// What a context worker may answer that the proxy cannot go on from, and the words its
// trace line gives for it.
struct FaultyAnswer {
  std::string name;
  std::string answer;
  std::string cause;
  std::string detail;
};

std::ostream& operator<<(std::ostream& out, const FaultyAnswer& fault) { return out << fault.name; }

const std::string handed_params = R"("disaggregated_params":{"request_type":"context_only","ctx_request_id":5})";
const std::vector<FaultyAnswer> faulty_context_answers{
    {"not_json", CannedWorker::json_answer("the model is warming up"), "worker_error", "answered with what is not JSON"},
    {"not_an_object", CannedWorker::json_answer("[1,2]"), "worker_error", "answered without a choice"},
    {"without_choices", CannedWorker::json_answer(R"({"id":"cmpl-1"})"), "worker_error", "answered without a choice"},
    {"without_params", CannedWorker::json_answer(R"({"choices":[{"index":0,"text":"hi","finish_reason":"stop"}]})"),
     "worker_error", "answered without usable disaggregated_params"},
    {"without_finish_reason", CannedWorker::json_answer(R"({"choices":[{"index":0,"text":"hi",)" + handed_params + "}]}"),
     "worker_error", "answered without a finish_reason string"},
    {"numeric_finish_reason",
     CannedWorker::json_answer(R"({"choices":[{"index":0,"text":"hi","finish_reason":1,)" + handed_params + "}]}"),
     "worker_error", "answered without a finish_reason string"},
    {"cut_short", CannedWorker::json_answer(R"({"choices":[{"index":0,"text":"hi")", true), "worker_lost", ""},
    {"over_the_hops_body_limit",
     "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 300000000\r\nConnection: close\r\n\r\n{",
     "worker_lost", "body limit exceeded"}};

BOOST_DATA_TEST_CASE(a_context_answer_the_proxy_cannot_use_gets_every_client_502_and_the_proxy_stays_up,
                     boost::unit_test::data::make(faulty_context_answers), fault) {
  CannedWorker context(fault.answer);
  Served generation({"--role", "generation"});
  Served proxy({"--role", "proxy", "--ctx-url", context.url(), "--gen-url", generation.url()});
  for (const std::string route : {"/v1/chat/completions", "/v1/completions"}) {
    for (const bool stream : {false, true}) {
      json::object body{{"model", "m"}, {"max_tokens", 4}, {"stream", stream}};
      if (route == "/v1/completions") {
        body["prompt"] = "Hi";
      } else {
        body["messages"] = json::array{json::object{{"role", "user"}, {"content", "Hi"}}};
      }
      const auto answer = proxy.post(route, json::serialize(body));
      BOOST_TEST(answer.result_int() == 502u);
      BOOST_TEST(json::parse(answer.body()).at("detail").as_string().find("context worker") != std::string::npos);
    }
  }
  BOOST_TEST(proxy.request(http::verb::get, "/health").result_int() == 200u);
  BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
  BOOST_TEST(proxy.log().find(".hpp") == std::string::npos);  // no library's source path in what it says
  const auto responses = proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 4u);
  for (const auto& response : responses) {
    BOOST_TEST(text_of(response.at("status")) == "error");
    BOOST_TEST(text_of(response.at("termination").at("cause")) == fault.cause);
    BOOST_TEST(text_of(response.at("termination").at("detail")).find(fault.detail) != std::string::npos);
  }
  each_request_traced_once(proxy);
}

BOOST_AUTO_TEST_CASE(a_generation_answer_sent_whole_that_is_not_an_answer_gets_502) {
  Served context({"--role", "context"});
  for (const std::string& faulty : {std::string("not JSON"), std::string(R"({"id":"cmpl-1"})")}) {
    CannedWorker generation(CannedWorker::json_answer(faulty));
    Served proxy({"--role", "proxy", "--ctx-url", context.url(), "--gen-url", generation.url()});
    const auto answer = proxy.post("/v1/chat/completions", chat_request(false));
    BOOST_TEST(answer.result_int() == 502u);
    BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
    const auto responses = proxy.lines("responses");
    BOOST_REQUIRE_EQUAL(responses.size(), 1u);
    BOOST_TEST(text_of(responses[0].at("termination").at("detail")).find("generation worker") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(a_clock_handshake_answer_that_is_not_stamps_is_named_in_the_projects_words) {
  CannedWorker context(CannedWorker::json_answer(R"({"receive_ts":"soon","transmit_ts":"later"})"));
  Served generation({"--role", "generation"});
  Served proxy({"--role", "proxy", "--ctx-url", context.url(), "--gen-url", generation.url()});
  BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
  const std::string log = proxy.log();
  BOOST_TEST(log.find("cannot align the clock of 127.0.0.1") != std::string::npos);
  BOOST_TEST(log.find("/steady_clock_offset is not") != std::string::npos);
  BOOST_TEST(log.find("boost") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_connection_a_worker_resets_before_its_answer_gets_502) {
  net::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  // The generation "worker": takes each request's head, then resets its connection (the
  // proxy's clock handshake comes first and is reset the same way); for 30 s at most,
  // whatever the proxy does.
  std::jthread worker([&io, &acceptor] {
    std::function<void()> serve_next = [&] {
      auto socket = std::make_shared<tcp::socket>(io);
      acceptor.async_accept(*socket, [&, socket](boost::system::error_code error) {
        if (error) return;
        auto request = std::make_shared<std::string>();
        net::async_read_until(*socket, net::dynamic_buffer(*request), "\r\n\r\n",
                              [&, socket, request](boost::system::error_code, std::size_t) {
                                boost::system::error_code ignored;
                                socket->set_option(net::socket_base::linger(true, 0), ignored);
                                socket->close(ignored);
                                if (request->starts_with("POST /v1/")) return io.stop();
                                serve_next();
                              });
      });
    };
    serve_next();
    io.run_for(std::chrono::seconds(30));
  });
  Served context({"--role", "context"});
  Served proxy({"--role", "proxy", "--ctx-url", context.url(), "--gen-url",
                "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port())});
  const auto answer = proxy.post("/v1/chat/completions", chat_request(false));
  BOOST_TEST(answer.result_int() == 502u);
  BOOST_REQUIRE_EQUAL(proxy.stop(), 0);
  const auto responses = proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(responses[0].at("termination").at("cause")) == "worker_lost");
}

BOOST_AUTO_TEST_CASE(a_generation_worker_killed_mid_stream_ends_the_stream_with_an_error_event_and_leaves_books_that_verify) {
  const std::vector<std::string> durable{"--durable-perf-metrics"};
  Deployment deployment(with({"--itl-ms", "const:50"}, durable), durable);
  BOOST_TEST(deployment.proxy.post("/v1/chat/completions", chat_request(true)).result_int() == 200u);
  tcp::socket socket = deployment.proxy.connect();
  net::write(socket, net::buffer(raw_post(chat_request(true, 200))));
  std::string seen;
  read_until(socket, seen, R"("delta":{"content":" )");  // the response's head and a token are out
  deployment.generation.signal(SIGKILL);
  const std::string rest = read_to_close(socket, seen);
  BOOST_TEST(rest.find(R"(data: {"error":{"message":)") != std::string::npos);
  BOOST_TEST(rest.ends_with("0\r\n\r\n"));  // the chunked body ended, not cut
  BOOST_TEST(rest.find("[DONE]") == std::string::npos);
  BOOST_REQUIRE_EQUAL(deployment.proxy.stop(), 0);
  BOOST_REQUIRE_EQUAL(deployment.context.stop(), 0);
  BOOST_TEST(deployment.generation.stop() == -1);

  const auto responses = deployment.proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 2u);
  const auto& cut = text_of(responses[0].at("status")) == "error" ? responses[0] : responses[1];
  BOOST_TEST(text_of(cut.at("status")) == "error");
  BOOST_TEST(text_of(cut.at("termination").at("cause")) == "worker_lost");
  BOOST_TEST(text_of(cut.at("response").at("body")).find(R"("error":)") != std::string::npos);
  each_request_traced_once(deployment.proxy);
  const auto [status, report] =
      run_tool("verify " + (deployment.proxy.dir() / "perf_metrics").string(), deployment.proxy.dir());
  BOOST_TEST_MESSAGE(report);
  BOOST_TEST(status == 0);
  BOOST_TEST(report.find("all files verify: yes") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_restarted_worker_writes_files_of_its_own) {
  Served first({"--role", "generation"});
  const std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2,)"
                           R"("disaggregated_params":{"request_type":"generation_only","ctx_request_id":1,"disagg_request_id":5}})";
  first.post("/v1/chat/completions", body);
  BOOST_REQUIRE_EQUAL(first.stop(), 0);
  Served restarted({"--role", "generation"}, first.dir());
  restarted.post("/v1/chat/completions", body);
  BOOST_REQUIRE_EQUAL(restarted.stop(), 0);
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(first.dir() / "perf_metrics")) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("perf_metrics-generation-")) files.insert(name);
  }
  BOOST_TEST(files.size() == 2u);
  BOOST_TEST(restarted.lines("perf_metrics-generation").size() == 2u);
}

BOOST_AUTO_TEST_CASE(a_client_that_hangs_up_during_a_hop_of_an_answer_sent_whole_is_traced_client_disconnected) {
  Deployment deployment;
  deployment.context.signal(SIGSTOP);  // the context hop waits
  tcp::socket socket = deployment.proxy.connect();
  net::write(socket, net::buffer(raw_post(chat_request(false))));
  socket.close();
  const std::string ended = R"(jsonl_serve_requests_total{route="/v1/chat/completions",status="client_disconnected"})";
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (deployment.proxy.metric(ended) < 1) BOOST_REQUIRE(Clock::now() < deadline);
  deployment.context.signal(SIGCONT);
  deployment.stop();
  const auto responses = deployment.proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(responses[0].at("status")) == "client_disconnected");
  BOOST_TEST(json::serialize(responses[0].at("response")) == R"({"kind":"json","body":null})");
  BOOST_TEST(!responses[0].contains("termination"));
  BOOST_TEST(deployment.proxy.lines("perf_metrics-disagg").empty());
}

BOOST_AUTO_TEST_CASE(a_proxy_stopped_with_a_hop_in_flight_ends_it_at_the_drain_timeout_as_server_shutdown) {
  Deployment deployment;
  deployment.context.signal(SIGSTOP);
  tcp::socket socket = deployment.proxy.connect();
  net::write(socket, net::buffer(raw_post(chat_request(false))));
  // The request is in flight, its context hop sent, once the proxy submitted its request
  // line (it forwards in the same step).
  const std::string submitted = R"(jsonl_records_submitted_total{subject="request trace",server_kind="disagg"})";
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (deployment.proxy.metric(submitted) < 1 && Clock::now() < deadline) {}
  BOOST_REQUIRE_EQUAL(deployment.proxy.metric(submitted), 1);
  const auto start = Clock::now();
  BOOST_REQUIRE_EQUAL(deployment.proxy.stop(), 0);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  deployment.context.signal(SIGCONT);
  BOOST_TEST(seconds < 25);  // the 10-s drain, not the 180-s hop timeout
  const auto responses = deployment.proxy.lines("responses");
  BOOST_REQUIRE_EQUAL(responses.size(), 1u);
  BOOST_TEST(text_of(responses[0].at("status")) == "error");
  BOOST_TEST(text_of(responses[0].at("termination").at("cause")) == "server_shutdown");
}

// A disaggregated deployment's workers from outside: `jsonl-perf serve --role context`
// and `--role generation` processes on loopback, sent what a proxy sends them; their
// records read after they stopped. One case a behaviour.
#define BOOST_TEST_MODULE disaggregated_workers
#include <boost/test/unit_test.hpp>

#include "served.hpp"

namespace {

using namespace serve_test;

std::string hop_body(const std::string& type, std::int64_t disagg_id, std::optional<std::int64_t> ctx_id = std::nullopt,
                     bool stream = false) {
  json::object params{{"request_type", type}, {"disagg_request_id", disagg_id}};
  if (ctx_id) params["ctx_request_id"] = *ctx_id;
  json::value body = json::parse(chat_request(stream, 4));
  body.as_object()["disaggregated_params"] = params;
  return json::serialize(body);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_context_worker_answers_the_first_token_with_what_the_generation_worker_needs_and_no_trace) {
  Served context({"--role", "context"});
  const auto answer = json::parse(context.post("/v1/chat/completions", hop_body("context_only", 77)).body());
  const auto& choice = answer.at("choices").at(0);
  BOOST_TEST(text_of(choice.at("finish_reason")) == "length");
  const auto& params = choice.at("disaggregated_params");
  BOOST_TEST(text_of(params.at("request_type")) == "context_only");
  BOOST_TEST(params.at("disagg_request_id").as_int64() == 77);
  BOOST_TEST(params.at("first_gen_tokens").as_array().size() == 1u);
  BOOST_TEST(answer.at("usage").at("completion_tokens").as_int64() == 1);
  BOOST_REQUIRE_EQUAL(context.stop(), 0);
  const auto records = context.lines("perf_metrics");
  BOOST_REQUIRE_EQUAL(records.size(), 1u);
  BOOST_TEST(records[0].at("disagg_request_id").as_int64() == 77);
  BOOST_TEST(records[0].at("ctx_request_id") == params.at("ctx_request_id"));
  BOOST_TEST(!records[0].at("perf_metrics").at("timing_metrics").as_object().contains("kv_cache_transfer_start"));
  BOOST_TEST(context.lines("requests").empty());
  BOOST_TEST(!std::filesystem::exists(context.dir() / "request_trace"));
}

BOOST_AUTO_TEST_CASE(a_generation_worker_records_its_kv_cache_transfer_and_the_ids_it_was_handed) {
  Served generation({"--role", "generation"});
  BOOST_TEST(generation.post("/v1/chat/completions", hop_body("generation_only", 78, 5)).result_int() == 200u);
  BOOST_REQUIRE_EQUAL(generation.stop(), 0);
  const auto records = generation.lines("perf_metrics");
  BOOST_REQUIRE_EQUAL(records.size(), 1u);
  BOOST_TEST(records[0].at("disagg_request_id").as_int64() == 78);
  BOOST_TEST(records[0].at("ctx_request_id").as_int64() == 5);
  const auto& timing = records[0].at("perf_metrics").at("timing_metrics").as_object();
  BOOST_TEST(timing.at("kv_cache_size").as_int64() > 0);
  BOOST_TEST(timing.at("kv_cache_transfer_end").as_double() >= timing.at("kv_cache_transfer_start").as_double());
  BOOST_TEST(timing.at("first_token_time").as_double() >= timing.at("kv_cache_transfer_end").as_double());
}

BOOST_AUTO_TEST_CASE(a_generation_only_request_without_its_contexts_id_is_rejected_with_400) {
  Served generation({"--role", "generation"});
  const auto response = generation.post("/v1/chat/completions", hop_body("generation_only", 79));
  BOOST_TEST(response.result_int() == 400u);
  BOOST_TEST(response.body().find("ctx_request_id") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_worker_returns_its_metrics_in_fields_and_after_a_streams_done_only_when_asked) {
  Served worker({"--role", "generation"});
  const std::vector<std::pair<std::string, std::string>> ask{{"X-TRTLLM-return-metrics", "1"}};
  const auto whole = worker.request(http::verb::post, "/v1/chat/completions", hop_body("generation_only", 1, 1), ask);
  BOOST_TEST(std::string(whole["Server-Timing"]).find("server_kv_transfer;dur=") != std::string::npos);
  BOOST_TEST(std::string(whole["X-TRTLLM-Start-End-Time"]).starts_with("server-start;ts="));
  const auto streamed = worker.request(http::verb::post, "/v1/chat/completions", hop_body("generation_only", 2, 1, true), ask);
  const std::string& body = streamed.body();
  const std::size_t done = body.find("data: [DONE]\n\n");
  BOOST_REQUIRE(done != std::string::npos);
  BOOST_TEST(body.substr(done + 14).starts_with("event: trtllm.perf_metrics\ndata: {\"Server-Timing\":"));
  const auto unasked = worker.post("/v1/chat/completions", hop_body("generation_only", 3, 1, true));
  BOOST_TEST(unasked.body().ends_with("data: [DONE]\n\n"));
  BOOST_TEST(unasked["Server-Timing"].empty());
}

BOOST_AUTO_TEST_CASE(the_steady_clock_offset_a_proxy_posts_moves_every_time_of_a_workers_records) {
  Served worker({"--role", "context"});
  const auto probe = json::parse(worker.request(http::verb::get, "/steady_clock_offset").body());
  BOOST_TEST(probe.at("transmit_ts").as_double() >= probe.at("receive_ts").as_double());
  BOOST_TEST(worker.post("/steady_clock_offset", R"({"offset": 1000.5})").result_int() == 200u);
  const double before = steady_seconds();
  worker.post("/v1/chat/completions", hop_body("context_only", 9));
  BOOST_REQUIRE_EQUAL(worker.stop(), 0);
  const auto records = worker.lines("perf_metrics");
  BOOST_REQUIRE_EQUAL(records.size(), 1u);
  const auto& timing = records[0].at("perf_metrics").at("timing_metrics").as_object();
  BOOST_TEST(timing.at("arrival_time").as_double() >= before + 1000.5);
  BOOST_TEST(timing.at("server_arrival_time").as_double() >= before + 1000.5);
}

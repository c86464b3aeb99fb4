#include "serving_commands.hpp"

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "../compression_flag.hpp"
#include "../join.hpp"
#include "client.hpp"
#include "fleet.hpp"
#include "writer_threads.hpp"
#include "server.hpp"  // imports: after every other header

namespace jsonl_perf::serve {
namespace {

const std::map<std::string, Route> route_names{{"chat", Route::chat_completions},
                                               {"completions", Route::completions},
                                               {"responses", Route::responses}};

// The model and recording options serve takes; fleet passes them on to its server.
struct ServerFlags {
  std::string queue = "exp:2";
  std::string first_token = "lognormal:40:0.3";
  std::string between_tokens = "uniform:8:12";
  std::uint64_t seed = 1;
  std::size_t body_limit = std::size_t{16} << 20;
  double header_timeout = 10;
  std::string recording = "on";
  std::string durable_traces = "on";
  bool durable_perf_metrics = false;
  std::string compression = "none";
  std::string disagg_request_id = "engine";
  // The recording layer's own defaults, written once there.
  unsigned linger_ms = static_cast<unsigned>(jsonl::recording::RecorderOptions{}.linger.count());
  unsigned hold_ms = static_cast<unsigned>(jsonl::recording::RecorderOptions{}.hold_for.count());
  int writer_nice = 0;

  // Each may be given again: the last counts (a fleet's or a test's override).
  void add_to(CLI::App& command) {
    command.add_option("--queue-ms", queue, "queueing before scheduling: const:X, exp:MEAN, uniform:LOW:HIGH, lognormal:MEDIAN:SIGMA")
        ->capture_default_str();
    command.add_option("--ttft-ms", first_token, "from scheduling to the first token (a distribution, as --queue-ms)")
        ->capture_default_str();
    command.add_option("--itl-ms", between_tokens, "between tokens (a distribution, as --queue-ms)")->capture_default_str();
    command.add_option("--seed", seed, "the model's draws")->capture_default_str();
    command.add_option("--body-limit", body_limit, "larger request bodies get 413")->capture_default_str();
    command.add_option("--header-timeout", header_timeout, "seconds for a request's headers, then for its body")
        ->check(CLI::PositiveNumber)->capture_default_str();
    command.add_option("--recording", recording,
                       "on: perf metrics and request traces under --output-dir; off: none; spdlog: the same lines "
                       "serialized on the request's thread, handed to spdlog's async logger (a benchmark's peer)")
        ->check(CLI::IsMember({"on", "off", "spdlog"}))->capture_default_str();
    command.add_option("--durable-traces", durable_traces, "on: a trace line counts once fsync()ed (the default)")
        ->check(CLI::IsMember({"on", "off"}))->capture_default_str();
    command.add_flag("--durable-perf-metrics", durable_perf_metrics, "perf metrics count once fsync()ed, with books");
    add_compression_flag(command, compression, "none or zstd[:LEVEL], both streams");
    command.add_option("--disagg-request-id", disagg_request_id,
                       "a response line's disagg_request_id: engine (its request id, which the reference's analysis "
                       "joins on) or null (the reference server's bytes)")
        ->check(CLI::IsMember({"engine", "null"}))->capture_default_str();
    command.add_option("--linger-ms", linger_ms, "how long each writer's drain waits for more records")
        ->check(CLI::Range(1u, 1000u))->capture_default_str();
    command.add_option("--hold-ms", hold_ms,
                       "how long each writer may hold fewer than a batch of records for more (0: none)")
        ->check(CLI::Range(0u, 10000u))->capture_default_str();
    command.add_option("--writer-nice", writer_nice,
                       "the nice value the writers' threads take (0: the server's priority; higher ones starve "
                       "them on a busy core)")
        ->check(CLI::Range(0, 19))->capture_default_str();
    for (CLI::Option* option : command.get_options()) option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }

  std::vector<std::string> arguments() const {
    std::vector<std::string> result{"--queue-ms", queue, "--ttft-ms", first_token, "--itl-ms", between_tokens,
                                    "--seed", std::to_string(seed), "--body-limit", std::to_string(body_limit),
                                    "--header-timeout", std::to_string(header_timeout), "--recording", recording,
                                    "--durable-traces", durable_traces,
                                    "--compression", compression, "--disagg-request-id", disagg_request_id,
                                    "--linger-ms", std::to_string(linger_ms), "--hold-ms", std::to_string(hold_ms),
                                    "--writer-nice", std::to_string(writer_nice)};
    if (durable_perf_metrics) result.push_back("--durable-perf-metrics");
    return result;
  }

  void apply(ServeOptions& options, const std::filesystem::path& output_dir) const {
    options.model.queue = Distribution::parse(queue);
    options.model.first_token = Distribution::parse(first_token);
    options.model.between_tokens = Distribution::parse(between_tokens);
    options.model.seed = seed;
    options.body_limit = body_limit;
    options.header_timeout = std::chrono::milliseconds(static_cast<long>(header_timeout * 1000));
    if (recording != "off") options.recording.output_dir = output_dir;
    options.record_with_spdlog = recording == "spdlog";
    options.recording.durable_traces = durable_traces == "on";
    options.recording.durable_perf_metrics = durable_perf_metrics;
    options.recording.engine_id_as_disagg_request_id = disagg_request_id == "engine";
    options.recording.linger = std::chrono::milliseconds(linger_ms);
    options.recording.hold_for = std::chrono::milliseconds(hold_ms);
    options.recording.on_writer_thread_start = writer_thread_start(writer_nice);
    options.recording.zstd_level = compression_level(compression);
  }
};

void add_client_flags(CLI::App& command, ClientOptions& client, std::vector<std::string>& routes) {
  command.add_option("--rate", client.rate, "requests/s, evenly spaced")->check(CLI::PositiveNumber)->capture_default_str();
  command.add_option("--duration", client.duration, "seconds of sending")->check(CLI::PositiveNumber)->capture_default_str();
  command.add_option("--route", routes, "chat, completions, responses (taken in turn)")
      ->check(CLI::IsMember({"chat", "completions", "responses"}))->capture_default_str();
  command.add_option("--stream-fraction", client.stream_fraction, "share of streamed requests")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  command.add_option("--max-tokens", client.max_tokens, "tokens each request asks for")
      ->check(CLI::Range(1u, 4096u))->capture_default_str();
  command.add_option("--client-seed", client.seed, "the client's draws")->capture_default_str();
  command.add_option("--timeout", client.timeout, "seconds a request may take")->check(CLI::PositiveNumber)->capture_default_str();
  command.add_option("--max-in-flight", client.max_in_flight,
                     "requests open at once; one due beyond them is counted unsent, not delayed")
      ->check(CLI::PositiveNumber)->capture_default_str();
}

}  // namespace

struct ServingCommands::Parsed {
  CLI::App* serve = nullptr;
  CLI::App* client = nullptr;
  CLI::App* fleet = nullptr;
  CLI::App* join = nullptr;
  ServeOptions serve_options;
  std::string role = "server";
  ProxyOptions proxy;
  double hop_timeout = 180;
  std::filesystem::path output_dir = "serve_out";
  ServerFlags server_flags;
  ClientOptions client_options;
  std::vector<std::string> routes{"chat"};
  std::string json_output;
  FleetOptions fleet_options;
  JoinOptions join_options;
  std::string client_results;
};

ServingCommands::ServingCommands(CLI::App& app) : parsed_(std::make_unique<Parsed>()) {
  Parsed& p = *parsed_;
  p.serve = app.add_subcommand("serve", "An OpenAI-compatible HTTP server with a simulated model that records as the reference's does");
  p.serve->add_option("--role", p.role,
                      "server: answers requests itself; context, generation: a disaggregated deployment's workers "
                      "(perf_metrics-context-*, -generation-*; the proxy alone traces); proxy: its front end "
                      "(perf_metrics-disagg-*), which forwards each request to a context worker, then a generation worker")
      ->check(CLI::IsMember({"server", "context", "generation", "proxy"}))->capture_default_str();
  p.serve->add_option("--ctx-url", p.proxy.ctx_urls, "a proxy's context worker, http://HOST:PORT (again for more)");
  p.serve->add_option("--gen-url", p.proxy.gen_urls, "a proxy's generation worker, http://HOST:PORT (again for more)");
  p.serve->add_option("--hop-timeout", p.hop_timeout, "seconds a proxy waits on a worker (for a stream, between its bytes)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  p.serve->add_option("--host", p.serve_options.host, "address to listen on")->capture_default_str();
  p.serve->add_option("--port", p.serve_options.port, "0: any free port")->capture_default_str();
  p.serve->add_option("--output-dir", p.output_dir, "perf_metrics/ and request_trace/ go under it")->capture_default_str();
  p.serve->add_option("--threads", p.serve_options.threads, "threads serving connections")
      ->check(CLI::Range(1u, 64u))->capture_default_str();
  p.server_flags.add_to(*p.serve);

  p.client = app.add_subcommand("client", "Open-loop load on an OpenAI-compatible server; latency from intended send times");
  p.client->add_option("--url", p.client_options.url, "http://HOST:PORT")->capture_default_str();
  add_client_flags(*p.client, p.client_options, p.routes);
  p.client->add_option("--json-output", p.json_output, "also write the results, a row a request, as JSON");

  p.fleet = app.add_subcommand("fleet", "Start a server, drive it with the client, stop it; summarize, verify and join what it recorded");
  p.fleet->add_option("--mode", p.fleet_options.mode, "aggregated (one server) or disaggregated (workers behind a proxy)")
      ->check(CLI::IsMember({"aggregated", "disaggregated"}))->capture_default_str();
  p.fleet->add_option("--ctx", p.fleet_options.ctx_workers, "disaggregated: context workers")
      ->check(CLI::Range(1u, 16u))->capture_default_str();
  p.fleet->add_option("--gen", p.fleet_options.gen_workers, "disaggregated: generation workers")
      ->check(CLI::Range(1u, 16u))->capture_default_str();
  p.fleet->add_option("--output-dir", p.fleet_options.output_dir, "the run directory (attempt-NNN under it)")->capture_default_str();
  p.fleet->add_option("--host", p.fleet_options.host, "address the server listens on")->capture_default_str();
  add_client_flags(*p.fleet, p.fleet_options.client, p.routes);
  p.server_flags.add_to(*p.fleet);

  p.join = app.add_subcommand("join", "Join a run attempt's request traces and perf records, request by request");
  p.join->add_option("attempt_dir", p.join_options.attempt_dir, "holds request_trace/ and perf_metrics/")->required();
  p.join->add_option("--client-results", p.client_results, "the client's --json-output, to compare E2E");
  p.join->add_flag("--json", p.join_options.json, "print the figures as JSON");
  p.join->add_option("--max-line-bytes", p.join_options.max_line_bytes, "a longer line is counted bad, never held")
      ->check(CLI::PositiveNumber)->capture_default_str();
}

ServingCommands::~ServingCommands() = default;

std::optional<int> ServingCommands::run(std::ostream& out, std::ostream& err) {
  Parsed& p = *parsed_;
  const auto routes = [&] {
    std::vector<Route> result;
    for (const std::string& name : p.routes) result.push_back(route_names.at(name));
    return result;
  };
  if (*p.serve) {
    p.server_flags.apply(p.serve_options, p.output_dir);
    const bool proxy = p.role == "proxy";
    if (!proxy && (!p.proxy.ctx_urls.empty() || !p.proxy.gen_urls.empty())) {
      throw std::invalid_argument("--ctx-url and --gen-url are a proxy's (--role proxy)");
    }
    if (proxy && (p.proxy.ctx_urls.empty() || p.proxy.gen_urls.empty())) {
      throw std::invalid_argument("--role proxy needs at least one --ctx-url and one --gen-url");
    }
    p.serve_options.recording.server_kind = proxy ? "disagg" : p.role;
    p.serve_options.recording.traces = p.role == "server" || proxy;
    if (proxy) {
      p.proxy.hop_timeout = std::chrono::milliseconds(static_cast<long>(p.hop_timeout * 1000));
      p.serve_options.proxy = p.proxy;
    }
    return run_serve(p.serve_options, out, err);
  }
  if (*p.client) {
    p.client_options.routes = routes();
    if (!p.json_output.empty()) p.client_options.json_output = p.json_output;
    return run_client(p.client_options, out, err);
  }
  if (*p.fleet) {
    ServeOptions checked;
    p.server_flags.apply(checked, p.fleet_options.output_dir);  // refuses what the server would
    p.fleet_options.client.routes = routes();
    if (p.fleet_options.mode == "disaggregated") {
      for (Route route : p.fleet_options.client.routes) {
        if (route == Route::responses) throw std::invalid_argument("--mode disaggregated: the proxy serves chat and completions");
      }
      if (p.fleet_options.client.max_tokens < 2) {
        throw std::invalid_argument("--mode disaggregated: --max-tokens at least 2, so that each request reaches both workers");
      }
    }
    p.fleet_options.server_arguments = p.server_flags.arguments();
    return run_fleet(p.fleet_options, out, err);
  }
  if (*p.join) {
    if (!p.client_results.empty()) p.join_options.client_results = p.client_results;
    return run_join(p.join_options, out, err);
  }
  return std::nullopt;
}

}  // namespace jsonl_perf::serve

#include "serving_commands.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
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
                                               {"responses", Route::responses},
                                               {"messages", Route::messages}};

// The model and recording options serve takes; fleet passes them on to its server.
struct ServerFlags {
  // The model's and the server's own defaults, written once there.
  std::string queue = ModelOptions{}.queue.text();
  std::string first_token = ModelOptions{}.first_token.text();
  std::string between_tokens = ModelOptions{}.between_tokens.text();
  std::uint64_t seed = ModelOptions{}.seed;
  std::size_t body_limit = ServeOptions{}.body_limit;
  double header_timeout = std::chrono::duration<double>(ServeOptions{}.header_timeout).count();
  std::string recording = "on";
  std::string durable_traces = "on";
  bool durable_perf_metrics = false;
  std::string compression = "none";
  std::string disagg_request_id = "engine";
  // The recording layer's own defaults, written once there.
  unsigned linger_ms = static_cast<unsigned>(jsonl::recording::RecorderOptions{}.linger.count());
  unsigned hold_ms = static_cast<unsigned>(jsonl::recording::RecorderOptions{}.hold_for.count());
  int writer_nice = 0;
  // The perf-metrics file's rotation and retention; 0: none.
  std::uint64_t perf_rotate_bytes = 0;
  unsigned perf_rotate_seconds = 0;
  std::size_t perf_keep_files = 0;
  // How long a request-trace file no record went to is kept, in hours; 0: for ever.
  unsigned trace_keep_hours = 0;

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
                       "serialized on the request's thread, handed to spdlog's async logger; floor: the same lines serialized and written "
                       "by the request's thread, 16 a write per file (the benchmark's peers)")
        ->check(CLI::IsMember({"on", "off", "spdlog", "floor"}))->capture_default_str();
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
                       "how long each writer may hold fewer than a round of records for more (0: none)")
        ->check(CLI::Range(0u, 10000u))->capture_default_str();
    command.add_option("--writer-nice", writer_nice,
                       "the nice value the writers' threads take (0: the server's priority; higher ones starve "
                       "them on a busy core)")
        ->check(CLI::Range(0, 19))->capture_default_str();
    command.add_option("--perf-rotate-bytes", perf_rotate_bytes,
                       "start a new perf-metrics file before one would pass this size (0: never)")
        ->capture_default_str();
    command.add_option("--perf-rotate-seconds", perf_rotate_seconds,
                       "start a new perf-metrics file once one is this old (0: never)")
        ->capture_default_str();
    command.add_option("--perf-keep-files", perf_keep_files,
                       "keep the newest N perf-metrics files, deleting older ones as rotation starts one (0: all)")
        ->capture_default_str();
    command.add_option("--trace-keep-hours", trace_keep_hours,
                       "delete a request-trace file once no record went to it for N hours: the current hour's "
                       "files and about N hours' before them are kept (0: all)")
        ->capture_default_str();
    for (CLI::Option* option : command.get_options()) option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }

  std::vector<std::string> arguments() const {
    std::vector<std::string> result{"--queue-ms", queue, "--ttft-ms", first_token, "--itl-ms", between_tokens,
                                    "--seed", std::to_string(seed), "--body-limit", std::to_string(body_limit),
                                    "--header-timeout", std::to_string(header_timeout), "--recording", recording,
                                    "--durable-traces", durable_traces,
                                    "--compression", compression, "--disagg-request-id", disagg_request_id,
                                    "--linger-ms", std::to_string(linger_ms), "--hold-ms", std::to_string(hold_ms),
                                    "--writer-nice", std::to_string(writer_nice),
                                    "--perf-rotate-bytes", std::to_string(perf_rotate_bytes),
                                    "--perf-rotate-seconds", std::to_string(perf_rotate_seconds),
                                    "--perf-keep-files", std::to_string(perf_keep_files),
                                    "--trace-keep-hours", std::to_string(trace_keep_hours)};
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
    options.recording_peer = recording == "spdlog" ? RecordingPeer::spdlog
                             : recording == "floor"  ? RecordingPeer::floor
                                                     : RecordingPeer::none;
    options.recording.durable_traces = durable_traces == "on";
    options.recording.durable_perf_metrics = durable_perf_metrics;
    options.recording.engine_id_as_disagg_request_id = disagg_request_id == "engine";
    options.recording.linger = std::chrono::milliseconds(linger_ms);
    options.recording.hold_for = std::chrono::milliseconds(hold_ms);
    options.recording.on_writer_thread_start = writer_thread_start(writer_nice);
    options.recording.zstd_level = compression_level(compression);
    jsonl::recording::RecorderOptions::Rotation& rotation = options.recording.perf_metrics_rotation;
    if (perf_rotate_bytes > 0) rotation.max_file_bytes = perf_rotate_bytes;
    if (perf_rotate_seconds > 0) rotation.max_file_age = std::chrono::seconds(perf_rotate_seconds);
    if (perf_keep_files > 0) rotation.max_files = perf_keep_files;
    if (trace_keep_hours > 0) options.recording.request_trace_retention = std::chrono::hours(trace_keep_hours);
    options.recording.rotation_requests = std::make_shared<jsonl::RotationRequests>();
  }
};

void add_client_flags(CLI::App& command, ClientOptions& client, std::vector<std::string>& routes) {
  command.add_option("--rate", client.rate, "requests/s, evenly spaced")->check(CLI::PositiveNumber)->capture_default_str();
  command.add_option("--duration", client.duration, "seconds of sending")->check(CLI::PositiveNumber)->capture_default_str();
  command.add_option("--route", routes, "chat, completions, responses, messages (taken in turn)")
      ->check(CLI::IsMember({"chat", "completions", "responses", "messages"}))->capture_default_str();
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


std::vector<Route> routes_named(const std::vector<std::string>& names) {
  std::vector<Route> result;
  for (const std::string& name : names) result.push_back(route_names.at(name));
  return result;
}

class ServeCommand final : public Command {
 public:
  explicit ServeCommand(CLI::App& app)
      : Command(app, "serve", "An OpenAI-compatible HTTP server with a simulated model that records as the reference's does") {
    CLI::App& c = flags();
    c.add_option("--role", role_,
                 "server: answers requests itself; context, generation: a disaggregated deployment's workers "
                 "(perf_metrics-context-*, -generation-*; the proxy alone traces); proxy: its front end "
                 "(perf_metrics-disagg-*), which forwards each request to a context worker, then a generation worker")
        ->check(CLI::IsMember({"server", "context", "generation", "proxy"}))->capture_default_str();
    c.add_option("--ctx-url", proxy_.ctx_urls, "a proxy's context worker, http://HOST:PORT (again for more)");
    c.add_option("--gen-url", proxy_.gen_urls, "a proxy's generation worker, http://HOST:PORT (again for more)");
    c.add_option("--hop-timeout", hop_timeout_, "seconds a proxy waits on a worker (for a stream, between its bytes)")
        ->check(CLI::PositiveNumber)->capture_default_str();
    c.add_option("--host", options_.host, "address to listen on")->capture_default_str();
    c.add_option("--port", options_.port, "0: any free port")->capture_default_str();
    c.add_option("--output-dir", output_dir_, "perf_metrics/ and request_trace/ go under it")->capture_default_str();
    c.add_option("--threads", options_.threads, "threads serving connections")->check(CLI::Range(1u, 64u))->capture_default_str();
    server_flags_.add_to(c);
  }

  int run(std::ostream& out, std::ostream& err) override {
    server_flags_.apply(options_, output_dir_);
    const bool proxy = role_ == "proxy";
    if (!proxy && (!proxy_.ctx_urls.empty() || !proxy_.gen_urls.empty())) {
      throw std::invalid_argument("--ctx-url and --gen-url are a proxy's (--role proxy)");
    }
    if (proxy && (proxy_.ctx_urls.empty() || proxy_.gen_urls.empty())) {
      throw std::invalid_argument("--role proxy needs at least one --ctx-url and one --gen-url");
    }
    options_.recording.server_kind = proxy ? "disagg" : role_;
    options_.recording.traces = role_ == "server" || proxy;
    if (proxy) {
      proxy_.hop_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(hop_timeout_));
      options_.proxy = proxy_;
    }
    return run_serve(options_, out, err);
  }

 private:
  ServeOptions options_;
  std::string role_ = "server";
  ProxyOptions proxy_;
  double hop_timeout_ = std::chrono::duration<double>(proxy_.hop_timeout).count();
  std::filesystem::path output_dir_ = "serve_out";
  ServerFlags server_flags_;
};

class ClientCommand final : public Command {
 public:
  explicit ClientCommand(CLI::App& app)
      : Command(app, "client", "Open-loop load on an OpenAI-compatible server; latency from intended send times") {
    flags().add_option("--url", options_.url, "http://HOST:PORT")->capture_default_str();
    add_client_flags(flags(), options_, routes_);
    flags().add_option("--json-output", options_.json_output, "also write the results, a row a request, as JSON");
  }

  int run(std::ostream& out, std::ostream& err) override {
    options_.routes = routes_named(routes_);
    return run_client(options_, out, err);
  }

 private:
  ClientOptions options_;
  std::vector<std::string> routes_{"chat"};
};

class FleetCommand final : public Command {
 public:
  explicit FleetCommand(CLI::App& app)
      : Command(app, "fleet", "Start a server, drive it with the client, stop it; summarize, verify and join what it recorded") {
    CLI::App& c = flags();
    c.add_option("--mode", options_.mode, "aggregated (one server) or disaggregated (workers behind a proxy)")
        ->check(CLI::IsMember({"aggregated", "disaggregated"}))->capture_default_str();
    c.add_option("--ctx", options_.ctx_workers, "disaggregated: context workers")->check(CLI::Range(1u, 16u))->capture_default_str();
    c.add_option("--gen", options_.gen_workers, "disaggregated: generation workers")->check(CLI::Range(1u, 16u))->capture_default_str();
    c.add_option("--output-dir", options_.output_dir, "the run directory (attempt-NNN under it)")->capture_default_str();
    c.add_option("--host", options_.host, "address the server listens on")->capture_default_str();
    add_client_flags(c, options_.client, routes_);
    server_flags_.add_to(c);
  }

  int run(std::ostream& out, std::ostream& err) override {
    ServeOptions checked;
    server_flags_.apply(checked, options_.output_dir);  // refuses what the server would
    options_.client.routes = routes_named(routes_);
    if (options_.mode == "disaggregated") {
      for (Route route : options_.client.routes) {
        if (route == Route::responses) {
          throw std::invalid_argument("--mode disaggregated: the proxy serves chat, completions and messages");
        }
      }
      if (options_.client.max_tokens < 2) {
        throw std::invalid_argument("--mode disaggregated: --max-tokens at least 2, so that each request reaches both workers");
      }
    }
    options_.server_arguments = server_flags_.arguments();
    return run_fleet(options_, out, err);
  }

 private:
  FleetOptions options_;
  std::vector<std::string> routes_{"chat"};
  ServerFlags server_flags_;
};

class JoinCommand final : public Command {
 public:
  explicit JoinCommand(CLI::App& app)
      : Command(app, "join", "Join a run attempt's request traces and perf records, request by request") {
    CLI::App& c = flags();
    c.add_option("attempt_dir", options_.attempt_dir, "holds request_trace/ and perf_metrics/")->required();
    c.add_option("--client-results", options_.client_results, "the client's --json-output, to compare E2E");
    c.add_option("--csv", options_.csv, "write requests.csv, one row per request, here");
    c.add_option("--html", options_.html, "write the run's report, a page read from the same rows, here");
    c.add_option("--instances", options_.instances, "the engine instances that served the run (throughput is per instance)")
        ->check(CLI::PositiveNumber)->capture_default_str();
    c.add_flag("--json", options_.json, "print the figures as JSON");
    c.add_option("--max-line-bytes", options_.max_line_bytes, "a longer line is counted bad, never held")
        ->check(CLI::PositiveNumber)->capture_default_str();
  }

  int run(std::ostream& out, std::ostream& err) override { return run_join(options_, out, err); }

 private:
  JoinOptions options_;
};

}  // namespace

void add_serving_commands(CLI::App& app, Commands& commands) {
  commands.push_back(std::make_unique<ServeCommand>(app));
  commands.push_back(std::make_unique<ClientCommand>(app));
  commands.push_back(std::make_unique<FleetCommand>(app));
  commands.push_back(std::make_unique<JoinCommand>(app));
}

}  // namespace jsonl_perf::serve

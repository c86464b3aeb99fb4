#include "fleet.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <ostream>
#include <system_error>

#include "../commands.hpp"
#include "../join.hpp"
#include "server_process.hpp"

namespace jsonl_perf::serve {
namespace {

namespace fs = std::filesystem;

}  // namespace

fs::path next_attempt_dir(const fs::path& run_dir) {
  for (int attempt = 1;; ++attempt) {
    char name[32];
    std::snprintf(name, sizeof name, "attempt-%03d", attempt);
    if (!fs::exists(run_dir / name)) return run_dir / name;
  }
}

namespace {

// The deployment's processes: the one the client drives last, stopped first.
class Deployment {
 public:
  Deployment(const FleetOptions& options, const fs::path& attempt) : options_(options), attempt_(attempt) {}

  // Starts a `serve` of `role` logging to `log`; its URL, or empty when it did not start.
  std::string start(const std::string& role, const std::string& log, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> arguments{"jsonl-perf", "serve", "--role", role, "--host", options_.host,
                                       "--port", "0", "--output-dir", attempt_.string()};
    arguments.insert(arguments.end(), options_.server_arguments.begin(), options_.server_arguments.end());
    arguments.insert(arguments.end(), extra.begin(), extra.end());
    processes_.push_back(std::make_unique<ServerProcess>("/proc/self/exe", arguments, attempt_ / log));
    return processes_.back()->url(std::chrono::seconds(30));
  }

  // SIGTERM to each, the last started first; the worst exit status.
  int stop() {
    int status = 0;
    for (auto process = processes_.rbegin(); process != processes_.rend(); ++process) {
      const int exited = (*process)->stop(std::chrono::milliseconds(static_cast<long>(options_.stop_timeout * 1000)));
      if (exited != 0) status = exited;
    }
    processes_.clear();
    return status;
  }

 private:
  const FleetOptions& options_;
  fs::path attempt_;
  std::vector<std::unique_ptr<ServerProcess>> processes_;
};

// The URL the client drives: the server, or the proxy in front of the workers.
std::string start_deployment(const FleetOptions& options, Deployment& deployment, std::ostream& err) {
  if (options.mode == "aggregated") return deployment.start("server", "server.log");
  std::vector<std::string> upstreams;
  for (unsigned i = 0; i < options.ctx_workers + options.gen_workers; ++i) {
    const bool context = i < options.ctx_workers;
    const std::string log = (context ? "ctx-" + std::to_string(i) : "gen-" + std::to_string(i - options.ctx_workers)) + ".log";
    const std::string url = deployment.start(context ? "context" : "generation", log);
    if (url.empty()) {
      err << "jsonl-perf fleet: a worker did not start; see " << log << '\n';
      return {};
    }
    upstreams.insert(upstreams.end(), {context ? "--ctx-url" : "--gen-url", url});
  }
  return deployment.start("proxy", "server.log", upstreams);
}

}  // namespace

int run_fleet(const FleetOptions& options, std::ostream& out, std::ostream& err) {
  const fs::path attempt = next_attempt_dir(options.output_dir);
  std::error_code error;
  fs::create_directories(attempt, error);
  if (error) {
    err << "jsonl-perf fleet: cannot create " << attempt.string() << ": " << error.message() << '\n';
    return 1;
  }
  ClientReport report;
  int server_status = 0;
  {
    Deployment deployment(options, attempt);
    ClientOptions client = options.client;
    client.url = start_deployment(options, deployment, err);
    if (client.url.empty()) {
      err << "jsonl-perf fleet: the deployment did not start; see the logs in " << attempt.string() << '\n';
      return 1;
    }
    out << "fleet: " << options.mode << ", "
        << (options.mode == "aggregated" ? std::string("server")
                                          : std::to_string(options.ctx_workers) + " context and " +
                                                std::to_string(options.gen_workers) + " generation workers behind a proxy")
        << " at " << client.url << ", " << client.rate << " requests/s for " << client.duration
        << " s; run directory " << attempt.string() << "\n\n";
    report = drive(client);
    server_status = deployment.stop();
  }
  std::ofstream(attempt / "client.json", std::ios::binary) << client_report_json(report) << '\n';

  SummaryOptions summary{.paths = {attempt / "perf_metrics"}};
  const int summary_status = run_summary(summary, out, err);
  out << '\n';
  print_client_report(report, out);
  out << "\nbooks of the request traces (jsonl-perf verify):\n";
  const int verify_status = run_verify({.output_dir = attempt / "request_trace"}, out, err);
  out << '\n';
  const double instances = options.mode == "aggregated" ? 1.0 : options.ctx_workers + options.gen_workers;
  const int join_status = run_join({.attempt_dir = attempt,
                                    .client_results = attempt / "client.json",
                                    .csv = attempt / "requests.csv",
                                    .html = attempt / "report.html",
                                    .instances = instances},
                                   out, err);
  if (server_status != 0) err << "jsonl-perf fleet: a server exited with " << server_status << '\n';
  return server_status == 0 && summary_status == 0 && verify_status == 0 && join_status == 0 ? 0 : 1;
}

}  // namespace jsonl_perf::serve

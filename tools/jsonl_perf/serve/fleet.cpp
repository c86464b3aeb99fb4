#include "fleet.hpp"

#include <chrono>
#include <cstdio>
#include <fstream>
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

int run_fleet(const FleetOptions& options, std::ostream& out, std::ostream& err) {
  if (options.mode != "aggregated") {
    err << "jsonl-perf fleet: --mode " << options.mode << " is not built yet; aggregated is\n";
    return 2;
  }
  const fs::path attempt = next_attempt_dir(options.output_dir);
  std::error_code error;
  fs::create_directories(attempt, error);
  if (error) {
    err << "jsonl-perf fleet: cannot create " << attempt.string() << ": " << error.message() << '\n';
    return 1;
  }
  std::vector<std::string> arguments{"jsonl-perf", "serve",          "--role",       "server", "--host",
                                     options.host,  "--port",         "0",            "--output-dir",
                                     attempt.string()};
  arguments.insert(arguments.end(), options.server_arguments.begin(), options.server_arguments.end());

  ClientReport report;
  int server_status = 0;
  {
    ServerProcess server("/proc/self/exe", arguments, attempt / "server.log");
    ClientOptions client = options.client;
    client.url = server.url(std::chrono::seconds(30));
    if (client.url.empty()) {
      err << "jsonl-perf fleet: the server did not start; see " << (attempt / "server.log").string() << '\n';
      return 1;
    }
    out << "fleet: server at " << client.url << ", " << client.rate << " requests/s for " << client.duration
        << " s; run directory " << attempt.string() << "\n\n";
    report = drive(client);
    server_status = server.stop(std::chrono::milliseconds(static_cast<long>(options.stop_timeout * 1000)));
  }
  std::ofstream(attempt / "client.json", std::ios::binary) << client_report_json(report) << '\n';

  SummaryOptions summary{.paths = {attempt / "perf_metrics"}, .html = attempt / "report.html"};
  const int summary_status = run_summary(summary, out, err);
  out << '\n';
  print_client_report(report, out);
  out << "\nbooks of the request traces (jsonl-perf verify):\n";
  const int verify_status = run_verify({.output_dir = attempt / "request_trace"}, out, err);
  out << '\n';
  const int join_status = run_join({.attempt_dir = attempt, .client_results = attempt / "client.json"}, out, err);
  out << "HTML report: " << (attempt / "report.html").string() << '\n';
  if (server_status != 0) err << "jsonl-perf fleet: the server exited with " << server_status << '\n';
  return server_status == 0 && summary_status == 0 && verify_status == 0 && join_status == 0 ? 0 : 1;
}

}  // namespace jsonl_perf::serve

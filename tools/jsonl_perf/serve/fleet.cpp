#include "fleet.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <system_error>

#include "../commands.hpp"
#include "../join.hpp"

extern char** environ;

namespace jsonl_perf::serve {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A `jsonl-perf serve` child: its stdout read through a pipe until it says where it
// listens; its stderr in the attempt's server.log.
class ServerProcess {
 public:
  ServerProcess(std::vector<std::string> arguments, const fs::path& log) {
    int pipe_ends[2];
    if (::pipe2(pipe_ends, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
    ::posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    const int failed = ::posix_spawn(&pid_, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_ends[1]);
    output_ = pipe_ends[0];
    if (failed != 0) {
      ::close(output_);
      throw std::system_error(failed, std::generic_category(), "cannot start the server");
    }
  }

  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(output_);
  }

  // The server's URL, from its "listening on URL" line; empty if it did not say so in time.
  std::string url(std::chrono::milliseconds timeout) {
    std::string text;
    const auto deadline = Clock::now() + timeout;
    while (text.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      pollfd ready{output_, POLLIN, 0};
      if (left <= 0 || ::poll(&ready, 1, static_cast<int>(left)) <= 0) return {};
      char buffer[256];
      const ssize_t got = ::read(output_, buffer, sizeof buffer);
      if (got <= 0) return {};
      text.append(buffer, static_cast<std::size_t>(got));
    }
    const std::string prefix = "listening on ";
    const std::string line = text.substr(0, text.find('\n'));
    return line.starts_with(prefix) ? line.substr(prefix.size()) : std::string();
  }

  // SIGTERM, then the exit status (SIGKILL after `timeout`, reported as -1).
  int stop(std::chrono::milliseconds timeout) {
    const int exited = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    ::kill(pid_, SIGTERM);
    pollfd ready{exited, POLLIN, 0};
    const bool in_time = exited >= 0 && ::poll(&ready, 1, static_cast<int>(timeout.count())) == 1;
    if (exited >= 0) ::close(exited);
    if (!in_time) ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return in_time && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
  int output_ = -1;
};

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
    ServerProcess server(arguments, attempt / "server.log");
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

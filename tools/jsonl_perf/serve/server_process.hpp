// A `jsonl-perf serve` child process, as the fleet (and the tests) run one: its stdout
// read through a pipe until it says where it listens, its stderr in a log file; stopped
// with SIGTERM as a deployment stops a server.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

extern char** environ;

namespace jsonl_perf::serve {

class ServerProcess {
 public:
  // `arguments` begins with the program's name.
  ServerProcess(const std::filesystem::path& executable, std::vector<std::string> arguments,
                const std::filesystem::path& log) {
    int pipe_ends[2];
    if (::pipe2(pipe_ends, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
    ::posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<char*> argv;
    for (std::string& argument : arguments) argv.push_back(argument.data());
    argv.push_back(nullptr);
    const int failed = ::posix_spawn(&pid_, executable.c_str(), &actions, nullptr, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    ::close(pipe_ends[1]);
    output_ = pipe_ends[0];
    if (failed != 0) {
      ::close(output_);
      throw std::system_error(failed, std::generic_category(), "cannot start the server");
    }
  }

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

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
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (text.find('\n') == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
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

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int output_ = -1;
};

}  // namespace jsonl_perf::serve

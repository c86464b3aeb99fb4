// One subcommand of jsonl-perf: made with the command line, it binds its flags to its
// options (each default is its options struct's, written once there) and runs when the
// command line named it.
#pragma once

#include <CLI/CLI.hpp>

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace jsonl_perf {

class Command {
 public:
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  bool chosen() const { return bool(*command_); }
  // The exit status. Throws std::invalid_argument for an option the command refuses once
  // parsed (a usage error).
  virtual int run(std::ostream& out, std::ostream& err) = 0;

 protected:
  Command(CLI::App& app, const std::string& name, const std::string& description)
      : command_(app.add_subcommand(name, description)) {}
  CLI::App& flags() { return *command_; }

 private:
  CLI::App* command_;
};

using Commands = std::vector<std::unique_ptr<Command>>;

// loadgen, replay, summary, verify, decompress.
void add_file_commands(CLI::App& app, Commands& commands);

}  // namespace jsonl_perf

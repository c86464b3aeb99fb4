// The serving subcommands of jsonl-perf: serve, client, fleet and join.
#pragma once

#include <CLI/CLI.hpp>

#include <iosfwd>
#include <memory>
#include <optional>

namespace jsonl_perf::serve {

class ServingCommands {
 public:
  explicit ServingCommands(CLI::App& app);
  ~ServingCommands();

  // The exit status of the serving subcommand parsed, if one was. Throws
  // std::invalid_argument for an option its command refuses (a usage error).
  std::optional<int> run(std::ostream& out, std::ostream& err);

 private:
  struct Parsed;
  std::unique_ptr<Parsed> parsed_;
};

}  // namespace jsonl_perf::serve

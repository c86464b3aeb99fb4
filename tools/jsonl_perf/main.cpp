// jsonl-perf: load generator, replay, latency report and books verifier for JSONL writers.
#include <CLI/CLI.hpp>

#include <iostream>
#include <stdexcept>

#include "command.hpp"
#include "serve/serving_commands.hpp"

int main(int argc, char** argv) {
  constexpr int usage_error = 2;
  CLI::App app{"Load generator, replay and latency report for performance-metrics JSON Lines", "jsonl-perf"};
  app.require_subcommand(1);
  jsonl_perf::Commands commands;
  jsonl_perf::add_file_commands(app, commands);
  jsonl_perf::serve::add_serving_commands(app, commands);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::ParseError& error) {
    std::cerr << "jsonl-perf: " << error.what() << '\n';
    return usage_error;
  }
  // Options a command refuses once parsed (a zstd level out of range) are usage errors too.
  try {
    for (const auto& command : commands) {
      if (command->chosen()) return command->run(std::cout, std::cerr);
    }
  } catch (const std::invalid_argument& error) {
    std::cerr << "jsonl-perf: " << error.what() << '\n';
    return usage_error;
  }
  return usage_error;
}

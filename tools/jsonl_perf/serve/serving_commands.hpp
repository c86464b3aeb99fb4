// The serving subcommands of jsonl-perf: serve, client, fleet and join.
#pragma once

#include "../command.hpp"

namespace jsonl_perf::serve {

void add_serving_commands(CLI::App& app, Commands& commands);

}  // namespace jsonl_perf::serve

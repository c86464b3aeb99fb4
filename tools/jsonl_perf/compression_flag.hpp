// --compression, as every command of jsonl-perf takes it: "none", "zstd" (level 1) or
// "zstd:LEVEL" (the writer checks the level's range). Anything else is a usage error
// that names the flag.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <stdexcept>
#include <string>

namespace jsonl_perf {

// The zstd level `text` names; none for "none". Throws std::invalid_argument saying what
// is expected.
inline std::optional<int> compression_level(const std::string& text) {
  if (text == "none") return std::nullopt;
  if (text == "zstd") return 1;
  if (text.starts_with("zstd:")) {
    try {
      std::size_t used = 0;
      const int level = std::stoi(text.substr(5), &used);
      if (used == text.size() - 5) return level;
    } catch (const std::exception&) {
      // Not a number: refused below.
    }
  }
  throw std::invalid_argument("expected 'none', 'zstd' or 'zstd:LEVEL', got '" + text + "'");
}

// Adds --compression to `command`, checked as it is parsed (CLI11 then names the flag).
inline CLI::Option* add_compression_flag(CLI::App& command, std::string& text, const std::string& help) {
  const CLI::Validator check(
      [](std::string& given) {
        try {
          compression_level(given);
          return std::string();
        } catch (const std::invalid_argument& refused) {
          return std::string(refused.what());
        }
      },
      "none|zstd[:LEVEL]");
  return command.add_option("--compression", text, help)->check(check)->capture_default_str();
}

}  // namespace jsonl_perf

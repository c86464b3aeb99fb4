// The subcommands of jsonl-perf. Each returns the process's exit status.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "bounded_lines.hpp"

namespace jsonl_perf {

struct LoadgenOptions {
  unsigned producers = 2;
  std::optional<double> rate = 5000;  // records/s in total; empty: as fast as possible
  double duration = 5;         // seconds
  std::filesystem::path output_dir = "perf_metrics_out";
  std::string kind = "server";
  std::uint64_t seed = 1;
  double disagg_fraction = 0.25;
  bool typed_records = true;  // typed structs, or raw JSON records built in an arena
  bool request_trace = false;  // request traces (--config request-trace) instead of perf metrics
  std::optional<std::uint64_t> rotate_bytes;        // start a new file past this size
  std::optional<std::filesystem::path> metrics_file;  // Prometheus text of the writer's counters, at the end
  // Durability: on or off; empty keeps the configuration's default (off for perf
  // metrics, on for request traces).
  std::optional<bool> durable;
  std::optional<unsigned> publish_interval_ms;  // how often the books may be published
  std::optional<int> zstd_level;  // compressed files (zstd frames) at this level; empty: plain
};

struct ReplayOptions {
  std::string kind = "server";
  std::filesystem::path output_dir = "perf_metrics_out";
  std::string input = "-";  // a file, or "-" for standard input
  std::optional<int> zstd_level;  // compressed files (zstd frames) at this level; empty: plain
  std::uint64_t max_line_bytes = default_max_line_bytes;  // a longer input line is reported and skipped
};

struct SummaryOptions {
  std::vector<std::filesystem::path> paths;  // files, or directories of perf_metrics-*.jsonl
  bool json = false;
  std::optional<std::filesystem::path> html;
  unsigned threads = 0;  // 0: one a core
  std::uint64_t max_line_bytes = default_max_line_bytes;  // a longer line is reported and skipped
};

struct VerifyOptions {
  std::filesystem::path output_dir;
  bool json = false;
};

struct DecompressOptions {
  std::filesystem::path input_dir;
  std::filesystem::path output_dir;  // made; must be empty if it exists
};

int run_loadgen(const LoadgenOptions& options, std::ostream& out, std::ostream& err);
int run_replay(const ReplayOptions& options, std::istream& in, std::ostream& out, std::ostream& err);
int run_summary(const SummaryOptions& options, std::ostream& out, std::ostream& err);
// Exit 0 when every document balances and every file verifies, 1 when not, 2 when the
// directory cannot be listed.
int run_verify(const VerifyOptions& options, std::ostream& out, std::ostream& err);
// Every ".jsonl.zst" file under the input directory decoded into the output directory
// under the same relative name less ".zst", through the end of its last whole append
// (what follows, a torn append, is left out and reported); other ".jsonl" files copied;
// each books document ("_writer/*.json") written with the plain files' names and
// offsets. Exit 0 when all of it was done, 1 when a file did not decode or a document's
// offsets are not where appends end (reported), 2 when the input cannot be listed or
// the output directory is not empty.
int run_decompress(const DecompressOptions& options, std::ostream& out, std::ostream& err);

}  // namespace jsonl_perf

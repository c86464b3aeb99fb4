// jsonl-perf: load generator, replay, latency report and books verifier for JSONL writers.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "compression_flag.hpp"
#include "serve/serving_commands.hpp"

namespace {

constexpr int usage_error = 2;

// "max", or a positive number of records per second.
std::string parse_rate(const std::string& text, std::optional<double>& rate) {
  if (text == "max") {
    rate.reset();
    return {};
  }
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && value > 0) {
      rate = value;
      return {};
    }
  } catch (const std::exception&) {
  }
  return "--rate: expected a positive number of records/s or 'max', got '" + text + "'";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Load generator, replay and latency report for performance-metrics JSON Lines", "jsonl-perf"};
  app.require_subcommand(1);

  jsonl_perf::LoadgenOptions loadgen;
  std::string rate = "5000";
  auto* loadgen_command = app.add_subcommand(
      "loadgen", "Simulate a serving app: producer threads submit realistic records to a PerfMetricsJsonlWriter");
  loadgen_command->add_option("--producers", loadgen.producers, "producer threads")
      ->check(CLI::Range(1u, 64u))->capture_default_str();
  loadgen_command->add_option("--rate", rate, "records/s in total, or 'max'")->capture_default_str();
  loadgen_command->add_option("--duration", loadgen.duration, "seconds")
      ->check(CLI::PositiveNumber)->capture_default_str();
  loadgen_command->add_option("--output-dir", loadgen.output_dir, "where the JSONL file goes")->capture_default_str();
  loadgen_command->add_option("--kind", loadgen.kind, "server kind, in the file name")->capture_default_str();
  loadgen_command->add_option("--seed", loadgen.seed, "makes the records repeatable")->capture_default_str();
  loadgen_command->add_option("--disagg-fraction", loadgen.disagg_fraction, "share of disaggregated records")
      ->check(CLI::Range(0.0, 1.0))->capture_default_str();
  std::string config = "perf-metrics";
  loadgen_command->add_option("--config", config, "perf-metrics, or request-trace: request and response traces")
      ->check(CLI::IsMember({"perf-metrics", "request-trace"}))->capture_default_str();
  std::string records = "typed";
  loadgen_command->add_option("--records", records, "typed structs, or raw JSON records (each in an arena)")
      ->check(CLI::IsMember({"typed", "json"}))->capture_default_str();
  loadgen_command->add_option("--rotate-bytes", loadgen.rotate_bytes, "start a new file before one would pass N bytes")
      ->check(CLI::PositiveNumber);
  loadgen_command->add_option("--metrics-file", loadgen.metrics_file,
                              "write the writer's counters there at the end (Prometheus text format)");

  std::string durability = "default";
  loadgen_command->add_option("--durability", durability,
                              "on: a record counts once fsync()ed, and the writer's books are published "
                              "(default: on for request traces, off for perf metrics)")
      ->check(CLI::IsMember({"default", "on", "off"}))->capture_default_str();
  loadgen_command->add_option("--publish-interval-ms", loadgen.publish_interval_ms,
                              "with durability: publish the books at most this often")
      ->check(CLI::PositiveNumber);

  std::string compression = "none";
  const std::string compression_help =
      "zstd[:LEVEL]: every append one zstd frame, in .jsonl.zst files (level 1 unless given)";
  jsonl_perf::add_compression_flag(*loadgen_command, compression, compression_help);

  jsonl_perf::ReplayOptions replay;
  auto* replay_command = app.add_subcommand(
      "replay", "Write raw records (one JSON value a line) through a PerfMetricsJsonlWriter; print the file written");
  replay_command->add_option("--kind", replay.kind, "server kind, in the file name")->capture_default_str();
  replay_command->add_option("--output-dir", replay.output_dir, "where the JSONL file goes")->capture_default_str();
  jsonl_perf::add_compression_flag(*replay_command, compression, compression_help);
  const std::string max_line_help = "a longer line is reported and skipped, never held";
  replay_command->add_option("--max-line-bytes", replay.max_line_bytes, max_line_help)
      ->check(CLI::PositiveNumber)->capture_default_str();
  replay_command->add_option("input", replay.input, "a file of raw records, or - for standard input")
      ->capture_default_str();

  jsonl_perf::SummaryOptions summary;
  std::string html;
  auto* summary_command = app.add_subcommand(
      "summary", "Latency percentiles per server kind and status from performance-metrics files");
  summary_command->add_option("paths", summary.paths, "files, or directories of perf_metrics-*.jsonl")->required();
  summary_command->add_flag("--json", summary.json, "print the figures as JSON");
  summary_command->add_option("--html", html, "also write a self-contained HTML report with SVG charts");
  summary_command->add_option("--threads", summary.threads, "threads reading the files (0: one a core)")
      ->check(CLI::Range(0u, 64u))->capture_default_str();
  summary_command->add_option("--max-line-bytes", summary.max_line_bytes, max_line_help)
      ->check(CLI::PositiveNumber)->capture_default_str();

  jsonl_perf::VerifyOptions verify;
  auto* verify_command = app.add_subcommand(
      "verify", "Check every durable writer's books in a directory against its files; report bytes no one claims");
  verify_command->add_option("dir", verify.output_dir, "the writers' output directory")->required();
  verify_command->add_flag("--json", verify.json, "print the reconciliation as JSON");

  jsonl_perf::DecompressOptions decompress;
  auto* decompress_command = app.add_subcommand(
      "decompress", "Decode a directory's .jsonl.zst files into plain ones, with books that describe them");
  decompress_command->add_option("dir", decompress.input_dir, "the writers' output directory")->required();
  decompress_command->add_option("out", decompress.output_dir, "where the plain files go (new or empty)")->required();

  jsonl_perf::serve::ServingCommands serving(app);

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

  // Options the writers refuse (a zstd level out of range) are usage errors too.
  try {
    if (*loadgen_command) {
      loadgen.typed_records = records == "typed";
      loadgen.request_trace = config == "request-trace";
      if (durability != "default") loadgen.durable = durability == "on";
      if (const std::string problem = parse_rate(rate, loadgen.rate); !problem.empty()) {
        std::cerr << "jsonl-perf: " << problem << '\n';
        return usage_error;
      }
      loadgen.zstd_level = jsonl_perf::compression_level(compression);
      return jsonl_perf::run_loadgen(loadgen, std::cout, std::cerr);
    }
    if (const std::optional<int> status = serving.run(std::cout, std::cerr)) return *status;
    if (*replay_command) {
      replay.zstd_level = jsonl_perf::compression_level(compression);
      if (replay.input == "-") return jsonl_perf::run_replay(replay, std::cin, std::cout, std::cerr);
      std::ifstream input(replay.input, std::ios::binary);
      if (!input) {
        std::cerr << "jsonl-perf: cannot read " << replay.input << '\n';
        return usage_error;
      }
      return jsonl_perf::run_replay(replay, input, std::cout, std::cerr);
    }
  } catch (const std::invalid_argument& error) {
    std::cerr << "jsonl-perf: " << error.what() << '\n';
    return usage_error;
  }
  if (*verify_command) return jsonl_perf::run_verify(verify, std::cout, std::cerr);
  if (*decompress_command) return jsonl_perf::run_decompress(decompress, std::cout, std::cerr);
  if (!html.empty()) summary.html = html;
  return jsonl_perf::run_summary(summary, std::cout, std::cerr);
}

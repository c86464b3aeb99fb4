// The subcommands over files: loadgen, replay, summary, verify and decompress.
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "command.hpp"
#include "commands.hpp"
#include "compression_flag.hpp"

namespace jsonl_perf {
namespace {

const std::string compression_help =
    "zstd[:LEVEL]: every append one zstd frame, in .jsonl.zst files (level 1 unless given)";
const std::string max_line_help = "a longer line is reported and skipped, never held";

// "max", or a positive number of records per second.
std::optional<double> parse_rate(const std::string& text) {
  if (text == "max") return std::nullopt;
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && value > 0) return value;
  } catch (const std::exception&) {
  }
  throw std::invalid_argument("--rate: expected a positive number of records/s or 'max', got '" + text + "'");
}

std::string rate_text(std::optional<double> rate) {
  if (!rate) return "max";
  std::ostringstream text;
  text << *rate;
  return text.str();
}

class LoadgenCommand final : public Command {
 public:
  explicit LoadgenCommand(CLI::App& app)
      : Command(app, "loadgen", "Simulate a serving app: producer threads submit realistic records to a PerfMetricsJsonlWriter") {
    CLI::App& c = flags();
    c.add_option("--producers", options_.producers, "producer threads")->check(CLI::Range(1u, 64u))->capture_default_str();
    c.add_option("--rate", rate_, "records/s in total, or 'max'")->capture_default_str();
    c.add_option("--duration", options_.duration, "seconds")->check(CLI::PositiveNumber)->capture_default_str();
    c.add_option("--output-dir", options_.output_dir, "where the JSONL file goes")->capture_default_str();
    c.add_option("--kind", options_.kind, "server kind, in the file name")->capture_default_str();
    c.add_option("--seed", options_.seed, "makes the records repeatable")->capture_default_str();
    c.add_option("--disagg-fraction", options_.disagg_fraction, "share of disaggregated records")
        ->check(CLI::Range(0.0, 1.0))->capture_default_str();
    c.add_option("--config", config_, "perf-metrics, or request-trace: request and response traces")
        ->check(CLI::IsMember({"perf-metrics", "request-trace"}))->capture_default_str();
    c.add_option("--records", records_, "typed structs, or raw JSON records (each in an arena)")
        ->check(CLI::IsMember({"typed", "json"}))->capture_default_str();
    c.add_option("--rotate-bytes", options_.rotate_bytes, "start a new file before one would pass N bytes")
        ->check(CLI::PositiveNumber);
    c.add_option("--metrics-file", options_.metrics_file,
                 "write the writer's counters there at the end (Prometheus text format)");
    c.add_option("--durability", durability_,
                 "on: a record counts once fsync()ed, and the writer's books are published "
                 "(default: on for request traces, off for perf metrics)")
        ->check(CLI::IsMember({"default", "on", "off"}))->capture_default_str();
    c.add_option("--publish-interval-ms", options_.publish_interval_ms, "with durability: publish the books at most this often")
        ->check(CLI::PositiveNumber);
    add_compression_flag(c, compression_, compression_help);
  }

  int run(std::ostream& out, std::ostream& err) override {
    options_.rate = parse_rate(rate_);
    options_.typed_records = records_ == "typed";
    options_.request_trace = config_ == "request-trace";
    if (durability_ != "default") options_.durable = durability_ == "on";
    options_.zstd_level = compression_level(compression_);
    return run_loadgen(options_, out, err);
  }

 private:
  LoadgenOptions options_;
  std::string rate_ = rate_text(options_.rate);
  std::string config_ = "perf-metrics";
  std::string records_ = "typed";
  std::string durability_ = "default";
  std::string compression_ = "none";
};

class ReplayCommand final : public Command {
 public:
  explicit ReplayCommand(CLI::App& app)
      : Command(app, "replay", "Write raw records (one JSON value a line) through a PerfMetricsJsonlWriter; print the file written") {
    CLI::App& c = flags();
    c.add_option("--kind", options_.kind, "server kind, in the file name")->capture_default_str();
    c.add_option("--output-dir", options_.output_dir, "where the JSONL file goes")->capture_default_str();
    add_compression_flag(c, compression_, compression_help);
    c.add_option("--max-line-bytes", options_.max_line_bytes, max_line_help)->check(CLI::PositiveNumber)->capture_default_str();
    c.add_option("input", options_.input, "a file of raw records, or - for standard input")->capture_default_str();
  }

  int run(std::ostream& out, std::ostream& err) override {
    options_.zstd_level = compression_level(compression_);
    if (options_.input == "-") return run_replay(options_, std::cin, out, err);
    std::ifstream input(options_.input, std::ios::binary);
    if (!input) throw std::invalid_argument("cannot read " + options_.input);
    return run_replay(options_, input, out, err);
  }

 private:
  ReplayOptions options_;
  std::string compression_ = "none";
};

class SummaryCommand final : public Command {
 public:
  explicit SummaryCommand(CLI::App& app)
      : Command(app, "summary", "Latency percentiles per server kind and status from performance-metrics files") {
    CLI::App& c = flags();
    c.add_option("paths", options_.paths, "files, or directories of perf_metrics-*.jsonl")->required();
    c.add_flag("--json", options_.json, "print the figures as JSON");
    c.add_option("--html", options_.html, "also write a self-contained HTML report with SVG charts");
    c.add_option("--threads", options_.threads, "threads reading the files (0: one a core)")
        ->check(CLI::Range(0u, 64u))->capture_default_str();
    c.add_option("--max-line-bytes", options_.max_line_bytes, max_line_help)->check(CLI::PositiveNumber)->capture_default_str();
  }

  int run(std::ostream& out, std::ostream& err) override { return run_summary(options_, out, err); }

 private:
  SummaryOptions options_;
};

class VerifyCommand final : public Command {
 public:
  explicit VerifyCommand(CLI::App& app)
      : Command(app, "verify", "Check every durable writer's books in a directory against its files; report bytes no one claims") {
    flags().add_option("dir", options_.output_dir, "the writers' output directory")->required();
    flags().add_flag("--json", options_.json, "print the reconciliation as JSON");
  }

  int run(std::ostream& out, std::ostream& err) override { return run_verify(options_, out, err); }

 private:
  VerifyOptions options_;
};

class DecompressCommand final : public Command {
 public:
  explicit DecompressCommand(CLI::App& app)
      : Command(app, "decompress", "Decode a directory's .jsonl.zst files into plain ones, with books that describe them") {
    flags().add_option("dir", options_.input_dir, "the writers' output directory")->required();
    flags().add_option("out", options_.output_dir, "where the plain files go (new or empty)")->required();
  }

  int run(std::ostream& out, std::ostream& err) override { return run_decompress(options_, out, err); }

 private:
  DecompressOptions options_;
};

}  // namespace

void add_file_commands(CLI::App& app, Commands& commands) {
  commands.push_back(std::make_unique<LoadgenCommand>(app));
  commands.push_back(std::make_unique<ReplayCommand>(app));
  commands.push_back(std::make_unique<SummaryCommand>(app));
  commands.push_back(std::make_unique<VerifyCommand>(app));
  commands.push_back(std::make_unique<DecompressCommand>(app));
}

}  // namespace jsonl_perf

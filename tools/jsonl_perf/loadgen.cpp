// jsonl-perf loadgen: producer threads submit simulated records to a perf-metrics
// writer (or request traces to a request-trace writer), paced or as fast as possible,
// with a progress line a second and a summary at the end.
#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>
#include <utility>
#include <iomanip>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <cstdint>
#include <random>

#include "commands.hpp"

import jsonl.perf_metrics;
import jsonl.request_trace;
import jsonl_perf.record_builder;
import jsonl_perf.trace_builder;

namespace jsonl_perf {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using TraceWriter = jsonl::RequestTraceWriter<jsonl::recording::TraceLine>;

// What each writer's producers build: performance records (typed, or the raw JSON
// record each stands for, built in an arena), or request traces.
RecordBuilder builder_for(const jsonl::TypedPerfMetricsJsonlWriter&, const LoadgenOptions& options, unsigned index) {
  return RecordBuilder(options.seed, index, options.disagg_fraction);
}
RecordBuilder builder_for(const jsonl::ArenaPerfMetricsJsonlWriter&, const LoadgenOptions& options, unsigned index) {
  return RecordBuilder(options.seed, index, options.disagg_fraction);
}
TraceBuilder builder_for(const TraceWriter&, const LoadgenOptions& options, unsigned index) {
  return TraceBuilder(options.seed, index);
}

void submit(jsonl::TypedPerfMetricsJsonlWriter& writer, jsonl::perf::PerfMetricsRecord record) {
  writer.submit(std::move(record));
}
void submit(jsonl::ArenaPerfMetricsJsonlWriter& writer, const jsonl::perf::PerfMetricsRecord& record) {
  jsonl::ArenaRecord json = jsonl::ArenaRecord::make();
  json.value() = jsonl::to_json_value(record, json.storage());
  writer.submit(std::move(json));
}
void submit(TraceWriter& writer, jsonl::TraceRecord<jsonl::recording::TraceLine> record) { writer.submit(std::move(record)); }

template <class Writer>
void produce(Writer& writer, const LoadgenOptions& options, unsigned index, Clock::time_point start,
             Clock::time_point end) {
  auto builder = builder_for(writer, options, index);
  const double server_clock_offset = 1000.0;  // a steady clock that did not start at zero
  const auto interval = options.rate ? std::chrono::duration<double>(options.producers / *options.rate)
                                     : std::chrono::duration<double>(0);
  auto next = start + std::chrono::duration_cast<Clock::duration>(interval * (index / double(options.producers)));
  // One clock read a record: it is both the loop's test and the record's arrival time.
  for (auto now = Clock::now(); now < end; now = Clock::now()) {
    submit(writer, builder.next(server_clock_offset + std::chrono::duration<double>(now - start).count()));
    if (options.rate) {
      next += std::chrono::duration_cast<Clock::duration>(interval);
      std::this_thread::sleep_until(std::min(next, end));
    }
  }
}

std::string progress_line(const jsonl::WriterStats& stats, double records_per_second, double elapsed) {
  std::ostringstream line;
  line << std::fixed << std::setprecision(1) << elapsed << " s  " << std::setprecision(0)
       << records_per_second << " records/s  queue " << stats.queue_depth << "  written " << stats.written
       << "  dropped " << stats.dropped();
  return line.str();
}

void print_summary(std::ostream& out, const jsonl::WriterStats& stats, double elapsed, const std::string& file,
                   const std::optional<std::filesystem::path>& books) {
  const auto row = [&](const std::string& name, const auto& value) {
    out << "  " << std::left << std::setw(26) << name << ' ' << value << '\n';
  };
  out << "jsonl-perf loadgen summary\n";
  row("submitted", stats.submitted);
  row("written", stats.written);
  row("unknown", stats.unknown);
  row("dropped", stats.dropped());
  row("  queue full", stats.dropped(jsonl::DropReason::queue_full));
  row("  malformed", stats.dropped(jsonl::DropReason::malformed));
  row("  serialize error", stats.dropped(jsonl::DropReason::serialize_error));
  row("  write error", stats.dropped(jsonl::DropReason::write_error));
  row("  unexpected write error", stats.dropped(jsonl::DropReason::unexpected_write));
  row("  abandoned at close", stats.dropped(jsonl::DropReason::abandoned));
  row("  ignored", stats.dropped(jsonl::DropReason::ignored));
  row("lines", stats.lines_written);
  row("bytes", stats.bytes_written);
  std::ostringstream rate, megabytes;
  rate << std::fixed << std::setprecision(0) << stats.written / elapsed;
  megabytes << std::fixed << std::setprecision(2) << stats.bytes_written / elapsed / 1e6;
  row("records/s", rate.str());
  row("MB/s", megabytes.str());
  row("files started", stats.files_started);
  row("file", file);
  if (books) row("books", books->string());
  row("submitted = written + unknown + dropped",
      stats.submitted == stats.written + stats.unknown + stats.dropped() ? "yes" : "NO");
}

// Writes the exposition to a temporary file renamed over `path`, so that a collector
// reading it never sees half of it.
bool write_metrics(const std::filesystem::path& path, const std::string& text, std::ostream& err) {
  const std::filesystem::path temporary = path.string() + ".tmp";
  bool written = static_cast<bool>(std::ofstream(temporary, std::ios::binary) << text);
  std::error_code error;
  if (written) std::filesystem::rename(temporary, path, error);
  if (!written || error) {
    err << "jsonl-perf: cannot write " << path.string() << '\n';
    return false;
  }
  return true;
}


template <class Writer>
int run(Writer& writer, const LoadgenOptions& options, std::string_view subject, std::ostream& out, std::ostream& err) {
  writer.start();
  if (!writer.path()) return 1;  // the writer logged why

  const auto start = Clock::now();
  const auto end = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.duration));
  std::vector<std::jthread> producers;
  for (unsigned i = 0; i < options.producers; ++i) {
    producers.emplace_back([&, i] { produce(writer, options, i, start, end); });
  }

  const bool terminal = ::isatty(STDERR_FILENO) == 1;
  std::uint64_t last_written = 0;
  for (auto tick = start + std::chrono::seconds(1); tick < end; tick += std::chrono::seconds(1)) {
    std::this_thread::sleep_until(tick);
    const auto stats = writer.stats();
    const std::string line = progress_line(stats, double(stats.written - last_written), seconds_since(start));
    last_written = stats.written;
    err << (terminal ? "\r\033[K" : "") << line << (terminal ? "" : "\n") << std::flush;
  }
  producers.clear();
  writer.close();
  if (terminal) err << '\n';
  const double elapsed = seconds_since(start);
  const auto stats = writer.stats();
  // A trace writer's files are in the hour buckets under the directory.
  print_summary(out, stats, elapsed, options.request_trace ? options.output_dir.string() : writer.path()->string(),
                writer.books_file());
  if (options.metrics_file &&
      !write_metrics(*options.metrics_file,
                     jsonl::prometheus_text(stats, std::string(subject), {{"server_kind", options.kind}}), err)) {
    return 1;
  }
  return stats.submitted == stats.written + stats.unknown + stats.dropped() ? 0 : 1;
}

}  // namespace

int run_loadgen(const LoadgenOptions& options, std::ostream& out, std::ostream& err) {
  const auto configure = [&](jsonl::WriterOptions writer_options) {
    writer_options.max_file_bytes = options.rotate_bytes;
    if (options.zstd_level) writer_options.compression = jsonl::Compression::zstd(*options.zstd_level);
    if (options.durable) writer_options.durability.enabled = *options.durable;
    if (options.publish_interval_ms) {
      writer_options.durability.publish_interval = std::chrono::milliseconds(*options.publish_interval_ms);
    }
    return writer_options;
  };
  if (options.request_trace) {
    TraceWriter writer(configure(jsonl::request_trace_options(options.output_dir)), jsonl::process_suffix());
    return run(writer, options, jsonl::request_trace_subject, out, err);
  }
  jsonl::WriterOptions writer_options = configure(jsonl::perf_metrics_options(options.output_dir, options.kind));
  if (options.typed_records) {
    jsonl::TypedPerfMetricsJsonlWriter writer(std::move(writer_options));
    return run(writer, options, jsonl::perf_metrics_subject, out, err);
  }
  jsonl::ArenaPerfMetricsJsonlWriter writer(std::move(writer_options));
  return run(writer, options, jsonl::perf_metrics_subject, out, err);
}

}  // namespace jsonl_perf

// Compressed output (zstd level 1, WriterOptions::compression): bytes on disk against
// plain for perf-metrics and request-trace records; typed records end to end compressed
// against the same records plain, and against the cost floor, compressing the same lines
// alone with libzstd on as many threads (a frame per batch, nothing else done), and
// against serializing and compressing them alone (what bounds a writer that must do
// both), and against a pipeline of the two (one thread serializing, another compressing
// what it hands over: what bounds a writer that compresses as a stage of its own); and
// durable + compressed on the working disk against durable plain.
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "measure.hpp"
#include "sections.hpp"
#include "support.hpp"

import jsonl.request_trace;
import jsonl_perf.trace_builder;

namespace jsonl_bench {
namespace {

using Record = jsonl::perf::PerfMetricsRecord;

constexpr int level = 1;

enum class Where { plain, compressed };

struct Run {
  double records_per_second = 0;
  double bytes_per_record = 0;  // on disk
};

// One producer moves the records in (submit_wait: none dropped); timed from the first
// submit until close() has written the last.
Run end_to_end(std::vector<Record> records, const std::filesystem::path& directory, Where where, bool durable = false) {
  auto options = jsonl::perf_metrics_options(fresh_directory(directory), "bench", [](jsonl::LogLevel, std::string_view) {});
  if (where == Where::compressed) options.compression = jsonl::Compression::zstd(level);
  options.durability.enabled = durable;
  jsonl::JsonlRecordWriter<Record> writer(std::move(options), std::make_shared<jsonl::PerfMetricsTypedFormat>());
  const double seconds = seconds_writing_all(writer, records);
  const jsonl::WriterStats stats = writer.stats();
  if (stats.written != records.size()) std::printf("warning: wrote %zu of %zu\n", std::size_t(stats.written), records.size());
  return {stats.written / seconds, double(stats.bytes_written) / double(stats.written)};
}

// Compresses `lines` into one frame as the writer's frames are made.
class Compressor {
 public:
  Compressor() {
    ZSTD_CCtx_setParameter(context_, ZSTD_c_compressionLevel, level);
    ZSTD_CCtx_setParameter(context_, ZSTD_c_checksumFlag, 1);
  }
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
  ~Compressor() { ZSTD_freeCCtx(context_); }
  void operator()(const std::string& lines) {
    frame_.resize(ZSTD_compressBound(lines.size()));
    const std::size_t size = ZSTD_compress2(context_, frame_.data(), frame_.size(), lines.data(), lines.size());
    if (ZSTD_isError(size)) std::printf("warning: %s\n", ZSTD_getErrorName(size));
  }

 private:
  ZSTD_CCtx* context_ = ZSTD_createCCtx();
  std::string frame_;
};

// The floor: the records' lines, serialized beforehand in batches of the writer's size,
// each batch compressed into one frame by libzstd, on `threads` threads.
double compressing_alone(const std::vector<std::string>& batches, std::size_t records, unsigned threads) {
  const auto start = Clock::now();
  {
    std::vector<std::jthread> workers;
    for (unsigned t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        Compressor compress;
        for (std::size_t i = t; i < batches.size(); i += threads) compress(batches[i]);
      });
    }
  }
  return records / seconds_since(start);
}

// What bounds the writer, which must also serialize: each thread serializing its share
// a batch at a time and compressing each batch into a frame, nothing handed over.
double serializing_and_compressing_alone(std::vector<Record> records, unsigned threads) {
  std::vector<Compressor> compressors(threads);
  return serialize_in_batches(std::move(records), threads,
                              [&](unsigned thread, const std::string& lines) { compressors[thread](lines); });
}

// Serializing on one thread a batch of the writer's size at a time and compressing on
// another each batch handed over (a few at most in between): the two stages overlap, and
// the slower bounds the rate.
double two_stage_pipeline(std::vector<Record> records) {
  constexpr std::size_t most_in_between = 4;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::string> handed;
  bool serialized_all = false;
  const auto start = Clock::now();
  {
    std::jthread compressing([&] {
      Compressor compress;
      for (;;) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return !handed.empty() || serialized_all; });
        if (handed.empty()) return;
        std::string lines = std::move(handed.front());
        handed.pop_front();
        lock.unlock();
        changed.notify_all();
        compress(lines);
      }
    });
    const jsonl::PerfMetricsTypedFormat format;
    std::string lines;
    const auto hand_over = [&] {
      std::unique_lock lock(mutex);
      changed.wait(lock, [&] { return handed.size() < most_in_between; });
      handed.push_back(std::move(lines));
      lock.unlock();
      changed.notify_all();
      lines.clear();
    };
    for (std::size_t i = 0; i < records.size(); ++i) {
      format.append_line(records[i], lines);
      records[i] = Record();
      if ((i + 1) % jsonl::perf_metrics_batch_size == 0) hand_over();
    }
    if (!lines.empty()) hand_over();
    {
      const std::lock_guard lock(mutex);
      serialized_all = true;
    }
    changed.notify_all();
  }
  return records.size() / seconds_since(start);
}

std::vector<std::string> serialized_batches(std::vector<Record> records) {
  const jsonl::PerfMetricsTypedFormat format;
  std::vector<std::string> batches;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (i % jsonl::perf_metrics_batch_size == 0) batches.emplace_back();
    format.append_line(records[i], batches.back());
  }
  return batches;
}

// Bytes on disk per record of loadgen's request traces, plain or compressed.
double trace_bytes_per_record(std::size_t count, const std::filesystem::path& directory, bool compressed) {
  auto options = jsonl::request_trace_options(fresh_directory(directory), [](jsonl::LogLevel, std::string_view) {});
  options.durability.enabled = false;
  if (compressed) options.compression = jsonl::Compression::zstd(level);
  jsonl::RequestTraceWriter<jsonl::recording::TraceLine> writer(options, jsonl::process_suffix());
  writer.start();
  jsonl_perf::TraceBuilder builder(1, 0);
  for (std::size_t i = 0; i < count; ++i) writer.submit_wait(builder.next(double(i)));
  writer.close();
  const jsonl::WriterStats stats = writer.stats();
  return double(stats.bytes_written) / double(stats.written);
}

}  // namespace

int compression(const Settings& settings) {
  const std::size_t count = settings.quick ? 20'000 : 100'000;
  const auto data = typed_records(count, Shape::worker);
  const auto shm = settings.shm_dir / "compression";
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::vector<std::string> batches = serialized_batches(data);

  end_to_end(typed_records(count / 4, Shape::worker), shm, Where::compressed);  // warm-up
  // Three rounds, each of every way on the same records, so that a slow stretch of a
  // shared machine falls on all of them; the medians are compared.
  std::vector<Run> plain, drain;
  std::vector<double> floor, serializing_floor, pipeline_floor;
  for (int round = 0; round < 3; ++round) {
    plain.push_back(end_to_end(data, shm, Where::plain));
    drain.push_back(end_to_end(data, shm, Where::compressed));
    floor.push_back(compressing_alone(batches, count, threads));
    serializing_floor.push_back(serializing_and_compressing_alone(data, threads));
    pipeline_floor.push_back(two_stage_pipeline(data));
  }
  const auto median_rate = [](const std::vector<Run>& runs) {
    std::vector<double> rates;
    for (const Run& run : runs) rates.push_back(run.records_per_second);
    return percentile(rates, 50);
  };
  const double plain_rate = median_rate(plain);
  const double drain_rate = median_rate(drain);
  const double floor_rate = percentile(floor, 50);
  const double perf_ratio = plain.front().bytes_per_record / drain.front().bytes_per_record;
  figure("compression_perf_metrics_plain_bytes", plain.front().bytes_per_record, "bytes/record");
  figure("compression_perf_metrics_zstd1_bytes", drain.front().bytes_per_record, "bytes/record");
  figure("compression_perf_metrics_ratio", perf_ratio, "x");
  const std::size_t traces = settings.quick ? 2'000 : 20'000;
  const double trace_ratio = trace_bytes_per_record(traces, shm, false) / trace_bytes_per_record(traces, shm, true);
  figure("compression_request_trace_ratio", trace_ratio, "x");
  figure("compression_e2e_plain_typed", plain_rate, "records/s");
  figure("compression_e2e_zstd1_typed", drain_rate, "records/s");
  figure("compression_e2e_zstd1_ratio_to_plain", drain_rate / plain_rate, "x");
  figure("compression_floor_compressing_alone", floor_rate, "records/s");
  figure("compression_e2e_zstd1_ratio_to_floor", drain_rate / floor_rate, "x");
  const double serializing_rate = percentile(serializing_floor, 50);
  figure("compression_serializing_and_compressing_alone", serializing_rate, "records/s");
  figure("compression_e2e_zstd1_ratio_to_serializing_and_compressing_alone", drain_rate / serializing_rate, "x");
  const double pipeline_rate = percentile(pipeline_floor, 50);
  figure("compression_floor_two_stage_pipeline", pipeline_rate, "records/s");
  figure("compression_two_stage_pipeline_ratio_to_plain", pipeline_rate / plain_rate, "x");
  figure("compression_e2e_zstd1_ratio_to_two_stage_pipeline", drain_rate / pipeline_rate, "x");

  // Durable on the working disk: what compression saves where every byte is fsync()ed.
  const auto disk = settings.disk_dir / "compression";
  const std::vector<Record> durable_data(data.begin(), data.begin() + count / 2);
  const Run durable_plain = end_to_end(durable_data, disk, Where::plain, true);
  const Run durable_packed = end_to_end(durable_data, disk, Where::compressed, true);
  figure("compression_durable_plain_typed", durable_plain.records_per_second, "records/s");
  figure("compression_durable_zstd1_typed", durable_packed.records_per_second, "records/s");
  figure("compression_durable_zstd1_ratio_to_plain",
         durable_packed.records_per_second / durable_plain.records_per_second, "x");
  figure("compression_durable_plain_fsynced_bytes", durable_plain.bytes_per_record, "bytes/record");
  figure("compression_durable_zstd1_fsynced_bytes", durable_packed.bytes_per_record, "bytes/record");

  int failed = 0;
  failed += target("compression_perf_metrics_at_least_5x", perf_ratio >= 5, std::to_string(perf_ratio) + "x");
  // The writer also serializes on the same cores: its bound is serializing and
  // compressing alone, not compressing alone.
  failed += target("compression_e2e_at_least_0.55x_serializing_and_compressing_alone",
                   drain_rate >= 0.55 * serializing_rate, std::to_string(drain_rate / serializing_rate) + "x");
  return failed;
}

}  // namespace jsonl_bench

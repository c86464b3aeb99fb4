// The compressed ratio as the appends make it, without the scheduler's say: the writer
// driven so that every append holds exactly k records (k = 1, 4, 16, 64; a flush after
// each k), for perf metrics and for request traces (requests and responses, each its
// own file), against bulk zstd at the same level on the same lines (the files decoded
// and compressed again in one call). A real server writes tens to a few thousand
// records a second per process: its appends hold one record or a few.
#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "measure.hpp"
#include "sections.hpp"
#include "support.hpp"

import jsonl.request_trace;
import jsonl_perf.trace_builder;

namespace jsonl_bench {
namespace {

using namespace std::chrono_literals;

constexpr int level = 1;
constexpr std::size_t records_per_append[] = {1, 4, 16, 64};

// What the files of one kind hold: their size on disk and their lines.
struct Written {
  std::size_t compressed = 0;
  std::string lines;
};

void decode_into(const std::filesystem::path& file, Written& written) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  written.compressed += bytes.size();
  ZSTD_DStream* stream = ZSTD_createDStream();
  ZSTD_inBuffer input{bytes.data(), bytes.size(), 0};
  std::string out(ZSTD_DStreamOutSize(), '\0');
  while (input.pos < input.size) {
    ZSTD_outBuffer output{out.data(), out.size(), 0};
    const std::size_t result = ZSTD_decompressStream(stream, &output, &input);
    if (ZSTD_isError(result)) throw std::runtime_error(file.string() + ": " + ZSTD_getErrorName(result));
    written.lines.append(out.data(), output.pos);
  }
  ZSTD_freeDStream(stream);
}

// The files under `directory` whose name begins with `prefix`, decoded together.
Written written_under(const std::filesystem::path& directory, const std::string& prefix) {
  Written written;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory)) {
    if (entry.is_regular_file() && entry.path().filename().string().starts_with(prefix) &&
        jsonl::is_compressed_file(entry.path())) {
      decode_into(entry.path(), written);
    }
  }
  return written;
}

double bulk_ratio(const std::string& lines) {
  std::string frame(ZSTD_compressBound(lines.size()), '\0');
  const std::size_t size = ZSTD_compress(frame.data(), frame.size(), lines.data(), lines.size(), level);
  return double(lines.size()) / double(size);
}

void report(const std::string& kind, std::size_t k, const Written& written) {
  const double ratio = double(written.lines.size()) / double(written.compressed);
  const double bulk = bulk_ratio(written.lines);
  const std::string name = "compression_ratio_" + kind + "_" + std::to_string(k) + "_per_append";
  figure(name.c_str(), ratio, "x");
  figure((name + "_bulk").c_str(), bulk, "x");
  figure((name + "_share_of_bulk").c_str(), 100 * ratio / bulk, "%");
}

void perf_metrics(std::size_t count, std::size_t k, const std::filesystem::path& directory) {
  auto options = jsonl::perf_metrics_options(fresh_directory(directory), "bench", [](jsonl::LogLevel, std::string_view) {});
  options.compression = jsonl::Compression::zstd(level);
  options.batch_size = k;
  jsonl::JsonlRecordWriter<jsonl::perf::PerfMetricsRecord> writer(std::move(options),
                                                                   std::make_shared<jsonl::PerfMetricsTypedFormat>());
  writer.start();
  std::vector<jsonl::perf::PerfMetricsRecord> records = typed_records(count, Shape::worker, 7);
  for (std::size_t i = 0; i < records.size(); ++i) {
    writer.submit_wait(std::move(records[i]));
    if ((i + 1) % k == 0 && !writer.flush(10s)) std::printf("warning: a flush timed out\n");
  }
  writer.close();
  report("perf_metrics", k, written_under(directory, ""));
}

// A request, then its response, in turn: a batch of 2k records is k of each kind, one
// append per kind.
void request_trace(std::size_t count, std::size_t k, const std::filesystem::path& directory) {
  auto options = jsonl::request_trace_options(fresh_directory(directory), [](jsonl::LogLevel, std::string_view) {});
  options.durability.enabled = false;
  options.compression = jsonl::Compression::zstd(level);
  options.batch_size = 2 * k;
  jsonl::RequestTraceWriter<jsonl::recording::TraceLine> writer(options, jsonl::process_suffix());
  writer.start();
  jsonl_perf::TraceBuilder builder(7, 0);
  for (std::size_t i = 0; i < 2 * count; ++i) {
    writer.submit_wait(builder.next(double(i)));
    if ((i + 1) % (2 * k) == 0 && !writer.flush(10s)) std::printf("warning: a flush timed out\n");
  }
  writer.close();
  report("trace_requests", k, written_under(directory, "requests"));
  report("trace_responses", k, written_under(directory, "responses"));
}

}  // namespace

int compression_ratio(const Settings& settings) {
  const std::size_t count = settings.quick ? 640 : 6'400;
  const auto shm = settings.shm_dir / "compression_ratio";
  for (const std::size_t k : records_per_append) {
    perf_metrics(count, k, shm);
    request_trace(count, k, shm);
  }
  std::filesystem::remove_all(shm);
  return 0;
}

}  // namespace jsonl_bench

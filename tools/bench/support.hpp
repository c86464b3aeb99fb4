// Records and writer set-ups shared by the benchmark sections.
#pragma once

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "measure.hpp"

import jsonl.perf_metrics;
import jsonl_perf.record_builder;

namespace jsonl_bench {

enum class Shape { worker, disagg };

// `count` typed records of one shape, as a serving app builds them.
inline std::vector<jsonl::perf::PerfMetricsRecord> typed_records(std::size_t count, Shape shape, std::uint64_t seed = 1) {
  jsonl_perf::RecordBuilder builder(seed, 0, 0.0);
  std::vector<jsonl::perf::PerfMetricsRecord> records;
  records.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    records.push_back(shape == Shape::worker ? builder.worker_record(1000.0 + i * 1e-4)
                                             : builder.disagg_record(1000.0 + i * 1e-4));
  }
  return records;
}

// Where a raw JSON record's memory comes from: the default allocator, node by node (the
// old way), or one arena per record.
enum class Storage { default_resource, arena };

// The raw JSON records the same requests make.
inline std::vector<boost::json::value> raw_records(std::size_t count, Shape shape, Storage storage = Storage::default_resource,
                                                   std::uint64_t seed = 1) {
  std::vector<boost::json::value> records;
  records.reserve(count);
  for (const auto& typed : typed_records(count, shape, seed)) {
    records.push_back(jsonl::to_json_value(typed, storage == Storage::arena ? jsonl::make_record_arena()
                                                                             : boost::json::storage_ptr()));
  }
  return records;
}

// A sink whose appends block until released: a disk that stopped answering.
class StuckSink : public jsonl::FileSink {
 public:
  explicit StuckSink(std::shared_ptr<std::latch> release) : release_(std::move(release)) {}
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    release_->wait();
    FileSink::append(append, outcome);
  }

 private:
  std::shared_ptr<std::latch> release_;
};

inline std::filesystem::path fresh_directory(const std::filesystem::path& path) {
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  return path;
}

// Starts `writer`, submits every record with submit_wait, closes it, and returns the
// seconds from the first submit until close returned (every record written or dropped).
template <class Writer, class Record>
double seconds_writing_all(Writer& writer, std::vector<Record>& records) {
  writer.start();
  const auto start = Clock::now();
  for (Record& record : records) writer.submit_wait(std::move(record));
  writer.close();
  return seconds_since(start);
}

// Records a second serialized by `threads` threads with nothing handed between them:
// thread t serializes its share of `records` a batch of the writer's size at a time, as
// the drain does (each record released once serialized), and calls
// `batch_done(t, lines)` with each batch's lines before reusing their text.
template <class BatchDone>
double serialize_in_batches(std::vector<jsonl::perf::PerfMetricsRecord> records, unsigned threads,
                            BatchDone batch_done) {
  const auto start = Clock::now();
  {
    std::vector<std::jthread> workers;
    const std::size_t share = (records.size() + threads - 1) / threads;
    for (unsigned t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        const jsonl::PerfMetricsTypedFormat format;
        std::string lines;
        const std::size_t end = std::min(records.size(), (t + 1) * share);
        for (std::size_t i = t * share; i < end; ++i) {
          format.append_line(records[i], lines);
          records[i] = jsonl::perf::PerfMetricsRecord();
          if ((i + 1) % jsonl::perf_metrics_batch_size != 0 && i + 1 != end) continue;
          batch_done(t, lines);
          lines.clear();
        }
      });
    }
  }
  return records.size() / seconds_since(start);
}

}  // namespace jsonl_bench

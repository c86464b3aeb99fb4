// Records and writer set-ups shared by the benchmark sections.
#pragma once

#include <boost/json.hpp>

#include <filesystem>
#include <latch>
#include <memory>
#include <string>
#include <vector>

#include "record_builder.hpp"

import jsonl.perf_metrics;

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

}  // namespace jsonl_bench

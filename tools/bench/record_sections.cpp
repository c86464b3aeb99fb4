// Records that cost little to build, move and free: end to end and per record on the
// producer, for raw JSON records in default storage (the old way), in an arena each, and
// typed records, against spdlog's async logger; and typed records under overload.
#include <boost/json.hpp>
#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "measure.hpp"
#include "sections.hpp"
#include "support.hpp"

namespace jsonl_bench {
namespace {

namespace perf = jsonl::perf;

jsonl::WriterOptions quiet_options(const std::filesystem::path& directory) {
  return jsonl::perf_metrics_options(fresh_directory(directory), "bench", [](jsonl::LogLevel, std::string_view) {});
}

// The record of each kind, built from the app's own data (a typed record standing for
// what the app knows of a request): the raw JSON record with the same content in the
// default storage (the old way), in a reference-counted arena (make_record_arena), or
// in an arena of its own (ArenaRecord); or the typed record itself.
enum class Kind { json_default, json_shared_arena, json_arena, typed };
constexpr Kind kinds[] = {Kind::json_default, Kind::json_shared_arena, Kind::json_arena, Kind::typed};
const char* name_of(Kind kind) {
  switch (kind) {
    case Kind::json_default: return "json_default";
    case Kind::json_shared_arena: return "json_shared_arena";
    case Kind::json_arena: return "json_arena";
    case Kind::typed: return "typed";
  }
  return "";
}

boost::json::value json_record(const perf::PerfMetricsRecord& data, Kind kind) {
  return jsonl::to_json_value(data, kind == Kind::json_shared_arena ? jsonl::make_record_arena() : boost::json::storage_ptr());
}

jsonl::ArenaRecord arena_record(const perf::PerfMetricsRecord& data) {
  jsonl::ArenaRecord record = jsonl::ArenaRecord::make();
  record.value() = jsonl::to_json_value(data, record.storage());
  return record;
}

// One producer moves prebuilt records in (submit_wait: none dropped); timed from the
// first submit until close() has written the last.
template <class Writer, class Record>
double writer_records_per_second(std::vector<Record> records, const std::filesystem::path& directory) {
  Writer writer(quiet_options(directory));
  const double seconds = seconds_writing_all(writer, records);
  if (writer.stats().written != records.size()) std::printf("warning: wrote %zu of %zu\n", std::size_t(writer.stats().written), records.size());
  return writer.stats().written / seconds;
}

double end_to_end_of(Kind kind, const std::vector<perf::PerfMetricsRecord>& data, const std::filesystem::path& directory) {
  if (kind == Kind::typed) return writer_records_per_second<jsonl::TypedPerfMetricsJsonlWriter>(data, directory);
  if (kind == Kind::json_arena) {
    std::vector<jsonl::ArenaRecord> records;
    records.reserve(data.size());
    for (const auto& record : data) records.push_back(arena_record(record));
    return writer_records_per_second<jsonl::ArenaPerfMetricsJsonlWriter>(std::move(records), directory);
  }
  std::vector<boost::json::value> records;
  records.reserve(data.size());
  for (const auto& record : data) records.push_back(json_record(record, kind));
  return writer_records_per_second<jsonl::PerfMetricsJsonlWriter>(std::move(records), directory);
}

// spdlog's async logger as a C++ user would set it up for the same job: the producer
// shapes and serializes each record and logs the line; one worker thread appends.
// Blocking on a full queue, so that nothing is dropped, as with submit_wait.
struct SpdlogWriter {
  explicit SpdlogWriter(const std::filesystem::path& directory) {
    spdlog::init_thread_pool(8192, 1);
    logger = spdlog::basic_logger_mt<spdlog::async_factory>("bench", (fresh_directory(directory) / "spdlog.jsonl").string(), true);
    logger->set_pattern("%v");
  }
  void log(const boost::json::value& record) {
    logger->info(boost::json::serialize(jsonl::shape_perf_metrics_record(record)));
  }
  // Returns once every line is in the file.
  void close() {
    logger->flush();
    logger.reset();
    spdlog::shutdown();
  }
  std::shared_ptr<spdlog::logger> logger;
};

double spdlog_records_per_second(const std::vector<perf::PerfMetricsRecord>& data, const std::filesystem::path& directory) {
  std::vector<boost::json::value> records;
  records.reserve(data.size());
  for (const auto& record : data) records.push_back(json_record(record, Kind::json_default));
  SpdlogWriter writer(directory);
  const auto start = Clock::now();
  for (const auto& record : records) writer.log(record);
  writer.close();
  return records.size() / seconds_since(start);
}

// The producer's cost per record, build + submit, while the writer keeps up: paced at
// `rate` records/s, each call timed alone. Returns the p50 in ns.
template <class Call>
double producer_p50(const CycleClock& clock, std::size_t count, double rate, Call&& call) {
  std::vector<double> samples;
  samples.reserve(count);
  const auto interval = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / rate));
  auto next = Clock::now();
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t before = CycleClock::now();
    call(i);
    samples.push_back(clock.ns(CycleClock::now() - before));
    next += interval;
    while (Clock::now() < next) {
    }
  }
  return percentile(samples, 50);
}

double producer_cost(Kind kind, const CycleClock& clock, const std::vector<perf::PerfMetricsRecord>& data,
                     const std::filesystem::path& directory, double rate) {
  if (kind == Kind::typed) {
    jsonl::TypedPerfMetricsJsonlWriter writer(quiet_options(directory));
    writer.start();
    return producer_p50(clock, data.size(), rate, [&](std::size_t i) { writer.submit(perf::PerfMetricsRecord(data[i])); });
  }
  if (kind == Kind::json_arena) {
    jsonl::ArenaPerfMetricsJsonlWriter writer(quiet_options(directory));
    writer.start();
    return producer_p50(clock, data.size(), rate, [&](std::size_t i) { writer.submit(arena_record(data[i])); });
  }
  jsonl::PerfMetricsJsonlWriter writer(quiet_options(directory));
  writer.start();
  return producer_p50(clock, data.size(), rate, [&](std::size_t i) { writer.submit(json_record(data[i], kind)); });
}

double spdlog_producer_cost(const CycleClock& clock, const std::vector<perf::PerfMetricsRecord>& data,
                            const std::filesystem::path& directory, double rate) {
  SpdlogWriter writer(directory);
  const double p50 = producer_p50(clock, data.size(), rate,
                                  [&](std::size_t i) { writer.log(json_record(data[i], Kind::json_default)); });
  writer.close();
  return p50;
}

// Two producers submit typed records as fast as they can for `seconds`; the records
// written per second, while overloaded.
double typed_overload_written_per_second(const std::vector<perf::PerfMetricsRecord>& data,
                                         const std::filesystem::path& directory, double seconds) {
  jsonl::TypedPerfMetricsJsonlWriter writer(quiet_options(directory));
  writer.start();
  std::atomic<bool> stop = false;
  std::vector<std::jthread> producers;
  const auto start = Clock::now();
  for (unsigned p = 0; p < 2; ++p) {
    producers.emplace_back([&, p] {
      for (std::size_t i = p; !stop.load(std::memory_order_relaxed); ++i) {
        writer.submit(perf::PerfMetricsRecord(data[i % data.size()]));
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  producers.clear();
  const double elapsed = seconds_since(start);
  const std::uint64_t written = writer.stats().written;
  writer.close();
  return written / elapsed;
}

}  // namespace

int corpus(const Settings& settings) {
  // A quarter disaggregated, as loadgen makes them by default.
  jsonl_perf::RecordBuilder builder(11, 0, 0.25);
  const std::size_t count = settings.quick ? 5'000 : 50'000;
  std::ofstream out(settings.shm_dir / "corpus.jsonl", std::ios::binary);
  for (std::size_t i = 0; i < count; ++i) {
    out << jsonl::to_json_text(jsonl::to_json_value(builder.next(1000.0 + i * 1e-4))) << '\n';
  }
  return out ? 0 : 1;
}

int records(const Settings& settings) {
  const std::size_t count = settings.quick ? 20'000 : 100'000;
  const auto data = typed_records(count, Shape::worker);
  const auto directory = settings.shm_dir / "records";
  // A first pass of each warms the allocator and the thread pools; its figures are not kept.
  for (const Kind kind : kinds) end_to_end_of(kind, typed_records(count / 4, Shape::worker), directory);

  // The kinds take turns, three rounds; each keeps its median, so a slow stretch of a
  // shared machine falls on all of them alike.
  std::vector<double> rounds[4];
  for (int round = 0; round < 3; ++round) {
    for (const Kind kind : kinds) rounds[int(kind)].push_back(end_to_end_of(kind, data, directory));
  }
  double e2e[4];
  for (const Kind kind : kinds) {
    e2e[int(kind)] = percentile(rounds[int(kind)], 50);
    figure((std::string("records_e2e_") + name_of(kind)).c_str(), e2e[int(kind)], "records/s");
  }
  const double spdlog_e2e = spdlog_records_per_second(data, directory);
  figure("records_e2e_spdlog_async", spdlog_e2e, "records/s");
  const double arena_ratio = e2e[int(Kind::json_arena)] / e2e[int(Kind::json_default)];
  const double typed_ratio = e2e[int(Kind::typed)] / e2e[int(Kind::json_default)];
  const double typed_to_spdlog = e2e[int(Kind::typed)] / spdlog_e2e;
  figure("records_e2e_ratio_json_arena_to_json_default", arena_ratio, "x");
  figure("records_e2e_ratio_typed_to_json_default", typed_ratio, "x");
  figure("records_e2e_ratio_typed_to_spdlog_async", typed_to_spdlog, "x");

  const CycleClock clock;
  const std::size_t paced = settings.quick ? 5'000 : 20'000;
  const std::vector<perf::PerfMetricsRecord> sample(data.begin(), data.begin() + paced);
  const double rate = 20'000;
  double cost[4];
  for (const Kind kind : kinds) {
    cost[int(kind)] = producer_cost(kind, clock, sample, directory, rate);
    figure((std::string("records_producer_p50_") + name_of(kind)).c_str(), cost[int(kind)], "ns");
  }
  const double spdlog_cost = spdlog_producer_cost(clock, sample, directory, rate);
  figure("records_producer_p50_spdlog_async", spdlog_cost, "ns");
  const double cost_ratio = cost[int(Kind::typed)] / cost[int(Kind::json_default)];
  figure("records_producer_p50_ratio_typed_to_json_default", cost_ratio, "x");

  const double overloaded = typed_overload_written_per_second(data, directory, settings.quick ? 2 : 5);
  const double overload_ratio = overloaded / e2e[int(Kind::typed)];
  figure("records_overload_typed_written", overloaded, "records/s");
  figure("records_overload_typed_ratio_to_e2e", overload_ratio, "x");

  int failed = 0;
  failed += target("records_e2e_json_arena_at_least_1.15x_json_default", arena_ratio >= 1.15,
                   std::to_string(arena_ratio) + "x");
  failed += target("records_e2e_typed_at_least_1.6x_json_default", typed_ratio >= 1.6, std::to_string(typed_ratio) + "x");
  failed += target("records_e2e_typed_at_least_3x_spdlog", typed_to_spdlog >= 3, std::to_string(typed_to_spdlog) + "x");
  failed += target("records_producer_typed_at_most_a_fifth_of_json_default", cost_ratio <= 0.2,
                   std::to_string(cost_ratio) + "x");
  return failed;
}

}  // namespace jsonl_bench

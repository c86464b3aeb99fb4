// Drain-side figures: the serializer against boost::json::serialize, shaping cost, and
// end-to-end throughput against two baselines measured in the same run.
#include <tbb/info.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "measure.hpp"
#include "sections.hpp"
#include "support.hpp"

namespace jsonl_bench {
namespace {

std::vector<boost::json::value> shaped(const std::vector<boost::json::value>& raw) {
  std::vector<boost::json::value> out;
  out.reserve(raw.size());
  for (const auto& record : raw) out.push_back(jsonl::shape_perf_metrics_record(record));
  return out;
}

struct Throughput {
  double records_per_second;
  double megabytes_per_second;
  double side_by_side_share = 0;  // of the records the writer serialized
};

// The writer, end to end: one producer moves every record in with submit_wait (no drop),
// timed from the first submit until close() has written the last.
Throughput writer_throughput(std::vector<boost::json::value> records, const std::filesystem::path& directory,
                             std::size_t queue_size, std::filesystem::path* file) {
  auto options = jsonl::perf_metrics_options(fresh_directory(directory), "bench");
  options.queue_size = queue_size;
  jsonl::PerfMetricsJsonlWriter writer(options);
  const double seconds = seconds_writing_all(writer, records);
  const auto stats = writer.stats();
  if (stats.written != records.size()) std::printf("warning: wrote %llu of %zu\n", (unsigned long long)stats.written, records.size());
  if (file) *file = *writer.path();
  const double serialized = double(stats.serialized_side_by_side + stats.serialized_alone);
  return {stats.written / seconds, stats.bytes_written / seconds / 1e6,
          serialized > 0 ? stats.serialized_side_by_side / serialized : 0};
}

// Baseline: the same bytes, already serialized, appended with one write per 64 lines.
Throughput raw_append(const std::filesystem::path& lines_file, const std::filesystem::path& directory) {
  std::ifstream in(lines_file, std::ios::binary);
  std::vector<std::string> chunks(1);
  std::size_t lines = 0, bytes = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    if (lines % 64 == 0 && lines > 0) chunks.emplace_back();
    chunks.back() += line;
    chunks.back() += '\n';
    bytes += line.size() + 1;
  }
  const auto append_all = [&](const std::filesystem::path& target) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    for (const auto& chunk : chunks) {
      if (::write(fd, chunk.data(), chunk.size()) != static_cast<ssize_t>(chunk.size())) break;
    }
    ::close(fd);
  };
  // The lines are written once before the timed pass, to a file then removed: on some
  // virtual machines the kernel's first read of a page the process filled is several
  // times slower than later ones, and the writer's own buffers are reused and so warm.
  const auto warm = fresh_directory(directory) / "warm.jsonl";
  append_all(warm);
  std::filesystem::remove(warm);
  const auto start = Clock::now();
  append_all(directory / "raw.jsonl");
  const double seconds = seconds_since(start);
  return {lines / seconds, bytes / seconds / 1e6};
}

// Baseline: a naive writer. Mutex, deque and condition variable; the writer thread
// shapes and serializes with boost::json::serialize and appends what it drained.
Throughput naive_writer(std::vector<boost::json::value> records, const std::filesystem::path& directory) {
  const auto target = fresh_directory(directory) / "naive.jsonl";
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<boost::json::value> queue;
  bool done = false;
  std::size_t bytes = 0;
  const auto start = Clock::now();
  std::thread writer([&] {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    std::unique_lock lock(mutex);
    for (;;) {
      ready.wait(lock, [&] { return !queue.empty() || done; });
      if (queue.empty()) break;
      std::deque<boost::json::value> batch;
      batch.swap(queue);
      lock.unlock();
      std::string data;
      for (const auto& record : batch) {
        data += boost::json::serialize(jsonl::shape_perf_metrics_record(record));
        data += '\n';
      }
      bytes += data.size();
      if (::write(fd, data.data(), data.size()) < 0) break;
      lock.lock();
    }
    ::close(fd);
  });
  for (auto& record : records) {
    const std::lock_guard lock(mutex);
    queue.push_back(std::move(record));
    ready.notify_one();
  }
  {
    const std::lock_guard lock(mutex);
    done = true;
    ready.notify_one();
  }
  writer.join();
  const double seconds = seconds_since(start);
  return {records.size() / seconds, bytes / seconds / 1e6};
}

// What the drain does per record, without the queue and the I/O: shape, serialize into
// a buffer, release the record. On `threads` threads, each taking an equal share.
Throughput serializer_only(std::vector<boost::json::value> records, unsigned threads) {
  std::vector<std::size_t> bytes(threads);
  const auto start = Clock::now();
  {
    std::vector<std::jthread> workers;
    const std::size_t share = (records.size() + threads - 1) / threads;
    for (unsigned t = 0; t < threads; ++t) {
      workers.emplace_back([&, t] {
        std::string out;
        const std::size_t end = std::min(records.size(), (t + 1) * share);
        for (std::size_t i = t * share; i < end; ++i) {
          out.clear();
          jsonl::PerfMetricsFormat().append_line(records[i], out);
          records[i] = boost::json::value();
          bytes[t] += out.size();
        }
      });
    }
  }
  const double seconds = seconds_since(start);
  std::size_t total = 0;
  for (const std::size_t b : bytes) total += b;
  return {records.size() / seconds, total / seconds / 1e6};
}

}  // namespace

// Ours appends each record's text to a reused buffer, as the drain does. The target
// baseline is boost::json::serialize, which returns each record's text as a string;
// boost's streaming serializer into a reused buffer, its fastest path, is printed too.
// Shaping is measured as the drain pays for it: the format writes the shaped text
// straight from the raw record, and what that costs beyond serializing the already
// shaped record is the shaping.
int serializer(const Settings& settings) {
  auto raw = raw_records(settings.quick ? 4'000 : 20'000, Shape::worker);
  const auto records = shaped(raw);
  const int rounds = settings.quick ? 3 : 10;
  const double count = double(records.size()) * rounds;
  // They take turns round by round, so a slower stretch of a shared machine falls on
  // all of them alike.
  struct Totals {
    std::size_t bytes = 0;
    double seconds = 0;
  };
  const auto measure_round = [&](Totals& totals, auto& input, auto&& serialize_one) {
    const auto start = Clock::now();
    for (auto& record : input) totals.bytes += serialize_one(record);
    totals.seconds += seconds_since(start);
  };
  Totals ours, boost_serialize, boost_stream, ours_beside_raw, from_raw, shaping_to_value;
  std::string out;
  char buffer[65536];
  const auto ours_one = [&](const boost::json::value& record) {
    out.clear();
    jsonl::append_json(record, out);
    return out.size();
  };
  for (int round = 0; round < rounds; ++round) {
    measure_round(ours, records, ours_one);
    measure_round(boost_serialize, records,
                  [](const boost::json::value& record) { return boost::json::serialize(record).size(); });
    measure_round(boost_stream, records, [&](const boost::json::value& record) {
      boost::json::serializer serializer;
      serializer.reset(&record);
      std::size_t bytes = 0;
      while (!serializer.done()) bytes += serializer.read(buffer).size();
      return bytes;
    });
  }
  // The shaping figures take their turns apart: building values churns the allocator
  // and the caches, which would fall on whichever serializer came next.
  const jsonl::PerfMetricsFormat format;
  for (int round = 0; round < rounds; ++round) {
    measure_round(ours_beside_raw, records, ours_one);
    measure_round(from_raw, raw, [&](boost::json::value& record) {
      out.clear();
      format.append_line(record, out);  // leaves the record as it was, for the next round
      return out.size() - 1;
    });
    measure_round(shaping_to_value, raw, [](const boost::json::value& record) {
      return jsonl::shape_perf_metrics_record(record).as_object().size();
    });
  }
  figure("serializer_ours", ours.bytes / ours.seconds / 1e6, "MB/s");
  figure("serializer_ours_records", count / ours.seconds, "records/s");
  figure("serializer_boost", boost_serialize.bytes / boost_serialize.seconds / 1e6, "MB/s");
  figure("serializer_boost_records", count / boost_serialize.seconds, "records/s");
  figure("serializer_boost_stream", boost_stream.bytes / boost_stream.seconds / 1e6, "MB/s");
  const double ratio = boost_serialize.seconds / ours.seconds;
  figure("serializer_ratio_ours_to_boost", ratio, "x");
  figure("serializer_ratio_ours_to_boost_stream", boost_stream.seconds / ours.seconds, "x");
  figure("format_from_raw_records", count / from_raw.seconds, "records/s");
  figure("shaping_per_record", (from_raw.seconds - ours_beside_raw.seconds) / count * 1e9, "ns");
  figure("shaping_to_value_per_record", shaping_to_value.seconds / count * 1e9, "ns");
  const bool same_bytes = from_raw.bytes == ours.bytes;
  if (!same_bytes) std::printf("warning: the format wrote %zu bytes, the serializer %zu\n", from_raw.bytes, ours.bytes);
  return target("serializer_at_least_boost", ratio >= 1.0, std::to_string(ratio) + "x boost::json::serialize") +
         !same_bytes;
}

int end_to_end(const Settings& settings) {
  const std::size_t count = settings.quick ? 20'000 : 100'000;
  // A first run warms the allocator and the thread pools; its figures are not kept.
  writer_throughput(raw_records(count / 4, Shape::worker), settings.shm_dir / "warm-up", jsonl::perf_metrics_queue_size,
                    nullptr);
  int failed = 0;
  for (const Shape shape : {Shape::worker, Shape::disagg}) {
    const char* shape_name = shape == Shape::worker ? "worker" : "disagg";
    for (const auto& [place, directory] : {std::pair{"shm", settings.shm_dir}, std::pair{"disk", settings.disk_dir}}) {
      for (const std::size_t queue : {jsonl::perf_metrics_queue_size, std::size_t{65536}}) {
        std::filesystem::path file;
        const Throughput ours = writer_throughput(raw_records(count, shape), directory / "e2e", queue, &file);
        const std::string name = std::string("e2e_") + shape_name + "_" + place + "_queue" + std::to_string(queue);
        figure((name + "_records").c_str(), ours.records_per_second, "records/s");
        figure((name + "_MB").c_str(), ours.megabytes_per_second, "MB/s");
        if (queue != jsonl::perf_metrics_queue_size) continue;

        const Throughput raw = raw_append(file, directory / "raw");
        const Throughput naive = naive_writer(raw_records(count, shape), directory / "naive");
        // The writer serializes a round alone on the drain thread, or side by side on as
        // many threads as oneTBB's default concurrency, whichever has lately been faster.
        // The baseline takes the thread count the writer used for most records.
        const auto all_threads = static_cast<unsigned>(tbb::info::default_concurrency());
        const unsigned threads = ours.side_by_side_share >= 0.5 ? all_threads : 1;
        const Throughput one_thread = serializer_only(raw_records(count, shape), 1);
        const Throughput on_all_threads = serializer_only(raw_records(count, shape), all_threads);
        const Throughput alone = threads == 1 ? one_thread : on_all_threads;
        figure((name + "_baseline_raw_append").c_str(), raw.records_per_second, "records/s");
        figure((name + "_baseline_naive_writer").c_str(), naive.records_per_second, "records/s");
        figure((name + "_serializer_only").c_str(), alone.records_per_second, "records/s");
        figure((name + "_serializer_only_threads").c_str(), threads, "threads");
        figure((name + "_serializer_only_1_thread").c_str(), one_thread.records_per_second, "records/s");
        figure((name + "_serializer_only_" + std::to_string(all_threads) + "_threads").c_str(),
               on_all_threads.records_per_second, "records/s");
        figure((name + "_serialized_side_by_side").c_str(), 100 * ours.side_by_side_share, "%");
        figure((name + "_ratio_to_raw_append").c_str(), ours.records_per_second / raw.records_per_second, "x");
        figure((name + "_ratio_to_naive_writer").c_str(), ours.records_per_second / naive.records_per_second, "x");
        figure((name + "_ratio_to_serializer_only").c_str(), ours.records_per_second / alone.records_per_second, "x");
        if (shape == Shape::worker && std::string(place) == "shm") {
          // Against the serializer alone in the same run (docs/PERFORMANCE.md, Targets, says
          // why 0.6x: run with oneTBB's allocator, the serializer alone gains more).
          failed += target("e2e_worker_at_least_0.6x_serializer_only",
                           ours.records_per_second >= 0.6 * alone.records_per_second,
                           std::to_string(ours.records_per_second / alone.records_per_second) + "x");
        }
      }
    }
  }
  return failed;
}

}  // namespace jsonl_bench

// The options a long-running server sets: rotation and retention, a bounded flush, the
// counters for /metrics, rotation on SIGHUP; then compressed and durable writers. Writes under DIR (default
// "long_running_out"); exit 0 when every writer wrote its records and says so.
#include <boost/json.hpp>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>

import jsonl.writer;
import jsonl.perf_metrics;

namespace {

boost::json::object perf_record(int id) {
  return {{"request_id", std::to_string(id)},
          {"phases", boost::json::object{{"server", boost::json::object{{"first_iter", id}}}}}};
}

bool rotating(const std::filesystem::path& dir) {
  // docs:begin rotation
  jsonl::WriterOptions options = jsonl::perf_metrics_options(dir, "server");
  options.max_file_bytes = std::uint64_t{1} << 30;  // a new file before one would pass 1 GiB
  options.max_file_age = std::chrono::hours(24);    // and at least one a day
  options.max_files = 30;                           // delete this writer's oldest beyond 30
  jsonl::PerfMetricsJsonlWriter writer(std::move(options));
  writer.start();
  writer.submit(perf_record(1));
  if (!writer.flush(std::chrono::seconds(2))) { /* still on its way after 2 s */ }
  std::string text = jsonl::prometheus_text(writer.stats(), "performance metrics", {{"server_kind", "server"}});
  // docs:end rotation
  writer.close();
  return writer.stats().written == 1 && text.find("jsonl_records_written_total{subject=\"performance metrics\"") !=
                                            std::string::npos;
}

bool rotated_on_request(const std::filesystem::path& dir) {
  // docs:begin rotation-requests
  static const auto requests = std::make_shared<jsonl::RotationRequests>();
  std::signal(SIGHUP, [](int) { requests->request(); });  // lock-free: a handler may call it
  jsonl::WriterOptions options = jsonl::perf_metrics_options(dir, "server");
  options.rotation_requests = requests;  // each writer given it leaves its file at its next line
  // docs:end rotation-requests
  jsonl::PerfMetricsJsonlWriter writer(std::move(options));
  writer.start();
  writer.submit(perf_record(1));
  const bool first = writer.flush(std::chrono::seconds(30));
  std::raise(SIGHUP);
  writer.submit(perf_record(2));
  writer.close();
  std::signal(SIGHUP, SIG_DFL);
  return first && writer.stats().written == 2 && writer.stats().files_started == 2;
}

bool compressed(const std::filesystem::path& dir) {
  // docs:begin compression
  jsonl::WriterOptions options = jsonl::perf_metrics_options(dir, "server");
  options.compression = jsonl::Compression::zstd(1);  // level 1; files end in .jsonl.zst
  // docs:end compression
  jsonl::PerfMetricsJsonlWriter writer(std::move(options));
  writer.start();
  for (int id = 1; id <= 10; ++id) writer.submit(perf_record(id));
  writer.close();
  bool zst = false;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) zst = zst || entry.path().extension() == ".zst";
  return writer.stats().written == 10 && zst;
}

bool durable(const std::filesystem::path& dir) {
  // docs:begin durability
  jsonl::WriterOptions options = jsonl::perf_metrics_options(dir, "server");
  options.durability.enabled = true;  // publish_interval: 5 s unless set
  jsonl::PerfMetricsJsonlWriter writer(std::move(options));
  writer.start();                     // publishes the first document
  // ... writer.stats().written counts persisted records; writer.books_file() names the books
  // docs:end durability
  writer.submit(perf_record(1));
  writer.close();
  const jsonl::WriterStats stats = writer.stats();
  return stats.written == 1 && stats.unknown == 0 && writer.books_file() && std::filesystem::exists(*writer.books_file());
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path root = argc > 1 ? argv[1] : "long_running_out";
  const bool ok = rotating(root / "rotating") && rotated_on_request(root / "rotated_on_request") &&
                  compressed(root / "compressed") && durable(root / "durable");
  std::cout << (ok ? "long_running: every writer wrote its records\n" : "long_running: FAILED\n");
  return ok ? 0 : 1;
}

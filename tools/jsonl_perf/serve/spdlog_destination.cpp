// Headers before the modules: no #include may follow an import.
#include <spdlog/async.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "recording_peers.hpp"

namespace jsonl_perf::serve {
namespace {

class SpdlogDestination final : public jsonl::recording::RecordingDestination {
 public:
  explicit SpdlogDestination(const jsonl::recording::RecorderOptions& options)
      : directory_(*options.output_dir), kind_(options.server_kind) {}

  bool start() override {
    try {
      std::filesystem::create_directories(directory_ / "perf_metrics");
      std::filesystem::create_directories(directory_ / "request_trace");
      spdlog::init_thread_pool(8192, 1);
      perf_ = logger("perf", directory_ / "perf_metrics" / ("perf_metrics-" + kind_ + "-spdlog.jsonl"));
      requests_ = logger("requests", directory_ / "request_trace" / "requests.jsonl");
      responses_ = logger("responses", directory_ / "request_trace" / "responses.jsonl");
      return true;
    } catch (const std::exception& error) {
      spdlog::error("cannot record with spdlog: {}", error.what());
      return false;
    }
  }

  void close() override {
    for (auto* logger : {&perf_, &requests_, &responses_}) {
      if (*logger) (*logger)->flush();
    }
    overruns_ = spdlog::thread_pool()->overrun_counter();
    perf_.reset();
    requests_.reset();
    responses_.reset();
    spdlog::shutdown();
  }

  bool trace(jsonl::recording::TraceLine line) override {
    std::string text;
    jsonl::recording::append_trace_line(line, text);
    (std::holds_alternative<jsonl::recording::RequestLine>(line) ? requests_ : responses_)->info(text);
    lines_.fetch_add(1, std::memory_order_relaxed);
    return true;  // overrun or not, spdlog does not say which line it lost
  }

  bool perf(jsonl::perf::PerfMetricsRecord record) override {
    perf_->info(jsonl::to_json_text(jsonl::shape_perf_metrics_record(jsonl::to_json_value(record))));
    lines_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  std::vector<jsonl::WriterMetrics> writer_metrics() const override { return {}; }

  std::string accounting_line() const override {
    return "spdlog: " + std::to_string(lines_.load()) + " lines logged, " + std::to_string(overruns_) +
           " overrun (lost; which ones, it cannot say)";
  }

 private:
  static std::shared_ptr<spdlog::logger> logger(const std::string& name, const std::filesystem::path& file) {
    auto logger = spdlog::create_async_nb<spdlog::sinks::basic_file_sink_mt>(name, file.string());
    logger->set_pattern("%v");
    return logger;
  }

  std::filesystem::path directory_;
  std::string kind_;
  std::shared_ptr<spdlog::logger> perf_;
  std::shared_ptr<spdlog::logger> requests_;
  std::shared_ptr<spdlog::logger> responses_;
  std::atomic<std::uint64_t> lines_{0};
  std::size_t overruns_ = 0;
};

}  // namespace

std::unique_ptr<jsonl::recording::RecordingDestination> spdlog_destination(
    const jsonl::recording::RecorderOptions& options) {
  return std::make_unique<SpdlogDestination>(options);
}

}  // namespace jsonl_perf::serve

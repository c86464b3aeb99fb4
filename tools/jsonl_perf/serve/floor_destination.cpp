// Headers before the modules: no #include may follow an import.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <variant>
#include <vector>

#include "recording_peers.hpp"

namespace jsonl_perf::serve {
namespace {

// One file the floor appends to: the batch its callers fill, and what became of its
// lines. Any thread; one at a time.
class FloorFile {
 public:
  FloorFile() = default;
  FloorFile(const FloorFile&) = delete;
  FloorFile& operator=(const FloorFile&) = delete;
  ~FloorFile() {
    if (descriptor_ >= 0) ::close(descriptor_);
  }

  // `durable`: each batch written is fdatasync()ed before its lines count as written.
  bool open(const std::filesystem::path& path, bool durable) {
    durable_ = durable;
    descriptor_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return descriptor_ >= 0;
  }

  // Appends the line `format` makes of `record` (a line it cannot make is lost), and
  // writes the batch once it holds lines_a_write lines.
  template <class Format, class Record>
  void add(const Format& format, Record& record) {
    const std::lock_guard lock(mutex_);
    const std::size_t mark = batch_.size();
    try {
      format.append_line(record, batch_);
    } catch (...) {
      batch_.resize(mark);
      ++lost_;
      return;
    }
    if (++lines_ == lines_a_write) write_batch();
  }

  void flush() {
    const std::lock_guard lock(mutex_);
    write_batch();
  }

  std::uint64_t written() const {
    const std::lock_guard lock(mutex_);
    return written_;
  }
  std::uint64_t lost() const {
    const std::lock_guard lock(mutex_);
    return lost_;
  }
  std::uint64_t syncs() const {
    const std::lock_guard lock(mutex_);
    return syncs_;
  }

 private:
  // The batch's lines count as written once it is written whole (and, durable, synced);
  // otherwise they are lost.
  void write_batch() {
    const bool landed = write_whole() && (!durable_ || batch_.empty() || sync());
    (landed ? written_ : lost_) += lines_;
    lines_ = 0;
    batch_.clear();
  }

  bool write_whole() const {
    for (std::size_t done = 0; done < batch_.size();) {
      const ssize_t wrote = ::write(descriptor_, batch_.data() + done, batch_.size() - done);
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) return false;
      done += static_cast<std::size_t>(wrote);
    }
    return true;
  }

  bool sync() {
    if (::fdatasync(descriptor_) != 0) return false;
    ++syncs_;
    return true;
  }

  mutable std::mutex mutex_;
  int descriptor_ = -1;
  bool durable_ = false;
  std::string batch_;
  std::size_t lines_ = 0;
  std::uint64_t written_ = 0;
  std::uint64_t lost_ = 0;
  std::uint64_t syncs_ = 0;
};

class FloorDestination final : public jsonl::recording::RecordingDestination {
 public:
  explicit FloorDestination(const jsonl::recording::RecorderOptions& options)
      : directory_(*options.output_dir),
        kind_(options.server_kind),
        durable_perf_metrics_(options.durable_perf_metrics),
        durable_traces_(options.durable_traces) {}

  bool start() override {
    std::error_code error;
    std::filesystem::create_directories(directory_ / "perf_metrics", error);
    std::filesystem::create_directories(directory_ / "request_trace", error);
    return perf_.open(directory_ / "perf_metrics" / ("perf_metrics-" + kind_ + "-floor.jsonl"), durable_perf_metrics_) &&
           requests_.open(directory_ / "request_trace" / "requests.jsonl", durable_traces_) &&
           responses_.open(directory_ / "request_trace" / "responses.jsonl", durable_traces_);
  }

  void close() override {
    for (FloorFile* file : {&perf_, &requests_, &responses_}) file->flush();
  }

  bool trace(jsonl::recording::TraceLine line) override {
    (std::holds_alternative<jsonl::recording::RequestLine>(line) ? requests_ : responses_).add(trace_format_, line);
    return true;
  }

  bool perf(jsonl::perf::PerfMetricsRecord record) override {
    perf_.add(perf_format_, record);
    return true;
  }

  std::vector<jsonl::WriterMetrics> writer_metrics() const override { return {}; }

  std::string accounting_line() const override {
    std::uint64_t written = 0;
    std::uint64_t lost = 0;
    std::uint64_t syncs = 0;
    for (const FloorFile* file : {&perf_, &requests_, &responses_}) {
      written += file->written();
      lost += file->lost();
      syncs += file->syncs();
    }
    return "floor: written " + std::to_string(written) + ", dropped " + std::to_string(lost) + ", synced " +
           std::to_string(syncs) + " writes";
  }

 private:
  std::filesystem::path directory_;
  std::string kind_;
  bool durable_perf_metrics_;
  bool durable_traces_;
  const jsonl::recording::TraceLineFormat trace_format_{jsonl::JsonTextOptions{}};
  const jsonl::PerfMetricsTypedFormat perf_format_;
  FloorFile perf_;
  FloorFile requests_;
  FloorFile responses_;
};

}  // namespace

std::unique_ptr<jsonl::recording::RecordingDestination> floor_destination(
    const jsonl::recording::RecorderOptions& options) {
  return std::make_unique<FloorDestination>(options);
}

}  // namespace jsonl_perf::serve

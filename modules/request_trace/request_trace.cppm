// Module jsonl.request_trace: request and response traces in files per UTC hour and kind.
//
//   <dir>/2026-09-03T14/requests-<pid>.jsonl    one line per request
//   <dir>/2026-09-03T14/responses-<pid>.jsonl   one line per response
//
// Compressed (WriterOptions::compression), "requests-<pid>-<16 hex digits>.jsonl.zst":
// the digits are drawn once per writer, so that a process restarted with the same pid
// (a container's) never appends to its predecessor's file.
//
// The second configuration of the shared writer, and the first real use of its
// RecordRoute and Sink extension points: each batch (at most 32 records) is grouped by
// file (hour bucket and kind), and each group is appended to its file with one write. The bucket is
// the hour the record was made, not the hour it was written: a record made at
// 14:59:59.9 goes to hour 14 even when written at 15:00. Hive-style readers (DuckDB,
// Spark) take the buckets as partitions.
//
// Lines are json.dumps(payload, ensure_ascii=False, separators=(",", ":")): non-ASCII
// text as UTF-8. Two deliberate differences from the reference: NaN and infinity make a
// record malformed (every line is strict JSON), and invalid UTF-8 costs one U+FFFD per
// bad sequence and counts the record as sanitized.
//
// Durable by default (request_trace_options): "<dir>/_writer/<generation>.json" holds
// each writer lifetime's books, which `jsonl-perf verify <dir>` reconciles.
module;

#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

export module jsonl.request_trace;

export import jsonl.writer;

export namespace jsonl {

// The reference's settings.
inline constexpr std::size_t request_trace_queue_size = 1024;
inline constexpr std::size_t request_trace_batch_size = 32;
inline constexpr std::chrono::milliseconds request_trace_shutdown_timeout{5000};
inline constexpr std::string_view request_trace_subject = "request trace";

// The kinds the reference writes.
inline constexpr std::string_view trace_requests = "requests";
inline constexpr std::string_view trace_responses = "responses";

// One trace line to be: its kind (the file's name in the bucket), when it was made (the
// bucket's hour; now, by default, when the record is constructed) and the payload that
// is written. Payload: boost::json::value, ArenaRecord, or a struct described with
// Boost.Describe (written as DescribedFormat writes it).
template <class Payload = boost::json::value>
struct TraceRecord {
  TraceRecord() = default;
  TraceRecord(std::string kind, Payload payload,
              std::chrono::system_clock::time_point made_at = std::chrono::system_clock::now())
      : kind(std::move(kind)), made_at(made_at), payload(std::move(payload)) {}

  std::string kind;
  std::chrono::system_clock::time_point made_at;
  Payload payload;
};

// "2026-09-03T14": the first 13 characters of the ISO-8601 UTC time `at`.
std::string hour_bucket(std::chrono::system_clock::time_point at);

// Whether `a` and `b` fall in one hour bucket.
bool same_hour(std::chrono::system_clock::time_point a, std::chrono::system_clock::time_point b);

// Throws MalformedRecord unless `kind` names a file inside a bucket directory: empty,
// ".", "..", or any '/' or NUL could escape it.
void check_trace_kind(std::string_view kind);

// The bucket directories a writer has made: each is created (with its parents) on first
// use and remembered, so later groups cost no system call for it. Called on the write
// worker. A directory removed later is made again by the append itself (see FileSink).
// Bound: past `remembered` directories (a writer makes one an hour) all are forgotten,
// and one still in use is created again, at the cost of a system call.
class BucketDirectories {
 public:
  virtual ~BucketDirectories() = default;
  // Throws std::system_error when `directory` cannot be created; it is then tried again
  // for the next group. Made through `calls` (FileCalls::mkdir); its name is made
  // durable by the sink, with the first file in it.
  void ensure(const FileCalls& calls, const std::filesystem::path& directory) const;

 protected:
  // Creates `directory` and its missing parents: the seam a test counts calls through.
  virtual void create(const FileCalls& calls, const std::filesystem::path& directory) const;

 private:
  static constexpr std::size_t remembered = 16;
  mutable std::mutex mutex_;
  mutable std::set<std::filesystem::path> made_;
};

// A trace record's line: its kind checked, its payload written without \u-escaping.
template <class Payload>
class TraceFormat : public RecordFormat<TraceRecord<Payload>> {
 public:
  bool append_line(TraceRecord<Payload>& record, std::string& out) const override {
    check_trace_kind(record.kind);
    return payload_.append_line(record.payload, out);
  }

 private:
  typename format_for<Payload>::type payload_{JsonTextOptions{.ensure_ascii = false}};
};

// Sends each record to <directory>/<hour bucket>/<kind><suffix><extension>: the drain groups
// a batch by file, groups in the order their first record came, records in submission
// order within a group, each group one append. A kind that could escape makes every
// record of its group malformed (the format checks it), so its path is never opened.
template <class Payload>
class TraceRoute : public RecordRoute<TraceRecord<Payload>> {
 public:
  TraceRoute(std::filesystem::path directory, std::string suffix, std::string extension = ".jsonl")
      : directory_(std::move(directory)), suffix_(std::move(suffix)), extension_(std::move(extension)) {}

  std::filesystem::path route(const TraceRecord<Payload>& record) const override {
    return directory_ / hour_bucket(record.made_at) / (record.kind + suffix_ + extension_);
  }

  // Records of one kind made in one hour share a file: no path is made for them.
  bool same_file(const TraceRecord<Payload>& record, const TraceRecord<Payload>& earlier) const override {
    return record.kind == earlier.kind && same_hour(record.made_at, earlier.made_at);
  }

 private:
  std::filesystem::path directory_;
  std::string suffix_;
  std::string extension_;
};

// Local files, each bucket directory made (and remembered) before its first append.
class TraceSink : public FileSink {
 public:
  TraceSink(std::shared_ptr<const FileCalls> calls, std::shared_ptr<const BucketDirectories> directories)
      : FileSink(std::move(calls)), directories_(std::move(directories)) {}

  void append(const FileAppend& append, AppendOutcome& outcome) override {
    directories_->ensure(calls(), outcome.file.parent_path());
    FileSink::append(append, outcome);
  }

 private:
  std::shared_ptr<const BucketDirectories> directories_;
};

// The options of a request-trace writer: subject "request trace", the constants above,
// the reference's wording of its log lines, and durability on, as the reference's later
// revisions have it: a trace line counts once fsync()ed, and the writer's books are
// published in "<dir>/_writer/" (see WriterOptions::durability).
WriterOptions request_trace_options(std::optional<std::filesystem::path> output_dir, LogSink log_sink = log_to_stderr);

// "-<pid>": the reference's file suffix, which keeps processes sharing a directory apart.
std::string process_suffix();

// `suffix` as a writer with `compression` names its files: compressed, followed by "-"
// and 16 random hex digits, drawn anew at each call.
std::string trace_file_suffix(std::string suffix, const Compression& compression);

// The writer a server owns. Without an output directory it is inert: start, submit and
// close do nothing (submits are refused and counted as ignored). start() logs INFO
// "Recording request traces to <dir>". Thread-safety, blocking and accounting are
// JsonlRecordWriter's.
template <class Payload = boost::json::value>
class RequestTraceWriter : public JsonlRecordWriter<TraceRecord<Payload>> {
 public:
  explicit RequestTraceWriter(std::optional<std::filesystem::path> output_dir,
                              std::optional<std::string> suffix = std::nullopt, LogSink log_sink = log_to_stderr)
      : RequestTraceWriter(request_trace_options(std::move(output_dir), std::move(log_sink)),
                           suffix ? std::move(*suffix) : process_suffix()) {}

  // With options from request_trace_options, possibly adjusted; `directories` is a seam.
  RequestTraceWriter(WriterOptions options, std::string suffix,
                     std::shared_ptr<const BucketDirectories> directories = std::make_shared<BucketDirectories>())
      : JsonlRecordWriter<TraceRecord<Payload>>(
            options, std::make_shared<TraceFormat<Payload>>(),
            std::make_shared<TraceSink>(options.durability.calls, std::move(directories)),
            std::make_shared<TraceRoute<Payload>>(options.output_dir.value_or(std::filesystem::path()),
                                                  trace_file_suffix(std::move(suffix), options.compression),
                                                  options.compression.file_extension())),
        directory_(options.output_dir),
        log_sink_(options.log_sink) {}

  // As JsonlRecordWriter::start, and logs where the traces go the first time it starts.
  void start() {
    JsonlRecordWriter<TraceRecord<Payload>>::start();
    std::call_once(announced_, [&] {
      if (this->path() && log_sink_) {
        try {
          log_sink_(LogLevel::info, "Recording request traces to " + directory_->string());
        } catch (...) {
          // A failing sink must not take the writer down with it.
        }
      }
    });
  }

 private:
  std::optional<std::filesystem::path> directory_;
  LogSink log_sink_;
  std::once_flag announced_;
};

// Helpers for a server's request and response hooks.

// "tr_" and 32 lowercase hex digits: a random (version 4) UUID, as uuid.uuid4().hex.
std::string make_trace_id();

// A client-supplied session id as a stable, bounded key: trimmed of whitespace, each
// character outside [A-Za-z0-9._-] replaced by '_', cut to 128 characters; empty, or
// starting with '.', becomes "_no_session".
std::string sanitize_session_key(std::string_view value);

// Whether a header's value is a credential: its name, compared without regard to case,
// is authorization, proxy-authorization, cookie or set-cookie, or contains api-key,
// api_key, apikey, token, secret or password.
bool is_credential_header(std::string_view name);

// Headers as ordered [name, value] pairs, repeats kept: [["a","1"],["a","2"]]. A
// credential header keeps its name (it shows one was sent) and its value becomes
// "[redacted]": a trace is never where a credential leaks.
boost::json::value headers_json(std::span<const std::pair<std::string, std::string>> headers,
                                boost::json::storage_ptr storage = {});

}  // namespace jsonl

// Module jsonl.perf_metrics: the performance-metrics configuration of the JSONL writer.
//
// A serving app builds one raw record per completed request (worker records with a
// "server" phase; disaggregated ones with "disagg" plus "ctx"/"gen" phases), as a JSON
// value or as a typed perf::PerfMetricsRecord, and submits it. Each record is shaped
// into the published schema on the drain thread, then written with Python's json.dumps
// bytes, so files match the reference server's byte for byte.
module;

#include <boost/json/value.hpp>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

export module jsonl.perf_metrics;

export import jsonl.writer;
export import :missing_key;
export import :typed_records;

export namespace jsonl {

// The reference's settings, which perf_metrics_options puts in the options: records that
// may wait, records per append, how long close() waits, and what log lines call them.
inline constexpr std::size_t perf_metrics_queue_size = 1024;
inline constexpr std::size_t perf_metrics_batch_size = 64;
inline constexpr std::chrono::milliseconds perf_metrics_shutdown_timeout{5000};
inline constexpr std::string_view perf_metrics_subject = "performance metrics";

// The options of a performance-metrics writer for `server_kind`: stem
// "perf_metrics-<server_kind>", subject "performance metrics", and the queue, batch and
// timeout constants above. Adjust them before constructing the writer.
WriterOptions perf_metrics_options(std::optional<std::filesystem::path> output_dir,
                                   std::string_view server_kind, LogSink log_sink = log_to_stderr);

// Shapes a raw per-request record the way the reference's _jsonl_record does: the worker
// schema (request_id, perf_metrics, ctx_request_id?, time_breakdown_metrics?, status,
// disagg_request_id?) or the disaggregated one (ctx_server, gen_server, disagg_* times,
// status, ctx_perf_metrics?, gen_perf_metrics?, disagg_request_id?). request_id is
// converted as Python's int() would (within the 64-bit range) and kept when it cannot be.
// Throws MissingKey for a key the schema needs, MalformedRecord for a value of the wrong
// JSON type where an object is needed, and std::overflow_error for an infinite
// request_id (as int(inf) raises OverflowError: an unexpected error, as in the reference).
boost::json::value shape_perf_metrics_record(const boost::json::value& record);

// Writes the shaped record's Python-exact compact JSON plus '\n' straight from the raw
// record: the bytes of shape_perf_metrics_record then append_json, with the same errors,
// without building the shaped value. Leaves the record as it was.
class PerfMetricsFormat : public RecordFormat<boost::json::value> {
 public:
  bool append_line(boost::json::value& record, std::string& out) const override;
};

// Writes a typed record (perf::PerfMetricsRecord) as PerfMetricsFormat writes the raw
// record it stands for (jsonl::to_json_value of it): the same bytes, from the structs,
// with no JSON value built. A NaN or infinite time makes it malformed; so does a record
// with neither a "server" nor a "disagg" phase (MissingKey "'server'").
class PerfMetricsTypedFormat : public RecordFormat<perf::PerfMetricsRecord> {
 public:
  bool append_line(perf::PerfMetricsRecord& record, std::string& out) const override;
};

// The perf-metrics format of each record kind, format_for<Record, PerfMetricsFormat>:
// raw JSON records, raw records in an arena of their own (jsonl::ArenaRecord), and typed
// records (perf::PerfMetricsRecord), all with the same bytes.
template <>
struct format_for<perf::PerfMetricsRecord, PerfMetricsFormat> {
  using type = PerfMetricsTypedFormat;
};

// The writer a serving app owns, for any of those record kinds. Thread-safety, blocking
// and accounting are JsonlRecordWriter's; see jsonl.writer.
template <class Record = boost::json::value>
class PerfMetricsWriter : public JsonlRecordWriter<Record> {
 public:
  PerfMetricsWriter(std::optional<std::filesystem::path> output_dir, std::string_view server_kind,
                    LogSink log_sink = log_to_stderr)
      : PerfMetricsWriter(perf_metrics_options(std::move(output_dir), server_kind, std::move(log_sink))) {}
  // With options from perf_metrics_options, possibly adjusted.
  explicit PerfMetricsWriter(WriterOptions options)
      : JsonlRecordWriter<Record>(std::move(options),
                                  std::make_shared<typename format_for<Record, PerfMetricsFormat>::type>()) {}
};

// The reference's name, for raw JSON records.
using PerfMetricsJsonlWriter = PerfMetricsWriter<boost::json::value>;
// Raw records in an arena of their own, built and freed in a few calls.
using ArenaPerfMetricsJsonlWriter = PerfMetricsWriter<ArenaRecord>;
// Typed records: writer.submit(jsonl::perf::PerfMetricsRecord{...}).
using TypedPerfMetricsJsonlWriter = PerfMetricsWriter<perf::PerfMetricsRecord>;

}  // namespace jsonl

namespace jsonl {

// The text half of PerfMetricsFormat: appends the shaped record's JSON text to `out` and
// returns whether invalid UTF-8 was replaced. Throws as shape_perf_metrics_record, then
// as append_json.
bool append_shaped_json(const boost::json::value& record, std::string& out);

}  // namespace jsonl

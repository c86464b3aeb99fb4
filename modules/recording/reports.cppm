// What a recording handler is configured with and reports: the recorder's options, how a
// request ended, and what an engine or a disaggregated front end knows of a request at
// its end.
module;

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

export module jsonl.recording:reports;

import jsonl.perf_metrics;  // and jsonl.writer, which it exports

export namespace jsonl::recording {

using Headers = std::vector<std::pair<std::string, std::string>>;

struct RecorderOptions {
  // perf_metrics/ and request_trace/ go under it, as a deployment's attempt directory
  // lays them out. Empty: the recorder is inert (every call does nothing).
  std::optional<std::filesystem::path> output_dir;
  std::string server_kind = "server";  // perf_metrics-<server_kind>-<host>-<pid>-<time>.jsonl
  bool traces = true;                  // request traces; a disaggregated deployment's workers
                                       // leave them to the proxy, which alone sees the client
  bool durable_traces = true;          // the reference's default for traces
  bool durable_perf_metrics = false;   // and for perf metrics
  std::optional<int> zstd_level;       // compressed files, both streams
  // Each writer's WriterOptions::linger: a server's records can wait a few ms for the
  // next, and each wake-up of a writer's thread costs the server's core more than the
  // record it writes.
  std::chrono::milliseconds linger{10};
  // Each writer's WriterOptions::hold_for: at a GPU server's rate a request's records
  // would otherwise pay a commit of their own (a wake-up of each writer's threads, an
  // append and, durable, an fsync per file); held, a commit carries the requests of that
  // long. At a high rate a round fills first and nothing is held.
  std::chrono::milliseconds hold_for{250};
  // The perf-metrics writer's own file: rotation by size and by age, and how many of its
  // files to keep (WriterOptions' limits of the same names). None by default: one file
  // for the process's life, as the reference writes it.
  struct Rotation {
    std::optional<std::uint64_t> max_file_bytes;
    std::optional<std::chrono::seconds> max_file_age;
    std::optional<std::size_t> max_files;
  } perf_metrics_rotation;
  // Request traces are files per hour, not rotated: with this set, a trace file no record
  // went to for this long is deleted (WriterOptions::max_routed_file_idle), so the current
  // hour's files and those of about this many hours before it are kept. None: every one.
  std::optional<std::chrono::hours> request_trace_retention;
  // Both writers' WriterOptions::clock, the wall clock they name, age and keep files by:
  // the system's unless a test drives it (the lines' own times are the system's).
  std::function<std::chrono::system_clock::time_point()> writer_clock = [] {
    return std::chrono::system_clock::now();
  };
  // Both writers' WriterOptions::rotation_requests: a server's SIGHUP asks for rotation
  // through it. None: only the limits above rotate.
  std::shared_ptr<RotationRequests> rotation_requests;
  // Each writer's WriterOptions::on_thread_start: called on each of the writers' threads
  // as it starts, to name it or set its priority as the process's policy says (the
  // recorder sets nothing of its own). Empty: nothing.
  std::function<void()> on_writer_thread_start;
  // An aggregated server has no proxy to assign a disagg_request_id, and the reference's
  // server leaves it null there; but the reference's analysis joins a response line to
  // perf records on it alone (keying a record by its disagg_request_id, else its
  // request_id), so with that null it joins none. On: the response line's
  // disagg_request_id is the engine's request id, and the analysis joins each response
  // to its record. Off: null, the reference's bytes.
  bool engine_id_as_disagg_request_id = true;
};

// How a request ended, as the response line's status says it. conversion_error: the
// engine finished the request, but its answer could not be converted to the route's (a
// Messages answer from a chat one); the client got an error, and the line holds what the
// engine answered.
enum class Outcome { completed, client_disconnected, error, conversion_error };

// What the engine reports of a request at its end: its id (the perf record's request_id
// and the response line's client_id) and its own timings, seconds on the steady clock.
struct EngineReport {
  std::int64_t request_id = 0;
  double arrival_time = 0;
  double first_scheduled_time = 0;
  std::optional<double> first_token_time;  // empty: no token was produced
  std::optional<double> last_token_time;
  std::int64_t first_iter = 0;
  std::int64_t last_iter = 0;
  std::int64_t total_blocks = 0;
  std::int64_t new_blocks = 0;
  std::int64_t reused_blocks = 0;
  std::int64_t missed_blocks = 0;
  // A worker of a disaggregated deployment: the proxy's id and the context worker's
  // request id, from the request body's disaggregated_params (the context worker's own
  // id for a context_only request), carried into the record.
  std::optional<std::int64_t> disagg_request_id;
  std::optional<std::int64_t> ctx_request_id;
  // A generation worker's transfer of the context's KV cache; a size of 0: none.
  std::optional<double> kv_cache_transfer_start;
  std::optional<double> kv_cache_transfer_end;
  std::int64_t kv_cache_size = 0;
};

// One worker's hop as a disaggregated front end read it from the worker's metrics
// (its Server-Timing and X-TRTLLM-Start-End-Time fields), on the proxy's steady clock.
struct HopTimes {
  std::optional<double> arrival_time;
  std::optional<double> first_scheduled_time;
  std::optional<double> first_token_time;
  std::optional<double> last_token_time;
};

// What a disaggregated front end reports of a request at its end.
struct ProxyReport {
  std::int64_t disagg_request_id = 0;
  std::optional<std::int64_t> ctx_request_id;  // the context worker's, from its answer
  std::string ctx_server;                      // host:port of each hop's worker; "" for none
  std::string gen_server;
  double ctx_dispatch_time = 0;
  std::optional<HopTimes> ctx;  // empty: that worker sent no metrics (or was not asked)
  std::optional<HopTimes> gen;
};

// Why a stream stopped, when it did not complete: the response line's "termination".
struct Termination {
  std::string cause;
  std::string detail;
};

// Seconds on the steady clock: the clock of server_arrival_time and the perf timings.
double steady_seconds();

}  // namespace jsonl::recording

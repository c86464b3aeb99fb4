// The serve benchmark's peers: what the recorder's lines cost a server written some
// other way than by this project's writers, in the same files' bytes.
#pragma once

#include <memory>
#include "recording.hpp"



namespace jsonl_perf::serve {

enum class RecordingPeer {
  none,    // this project's writers
  spdlog,  // serialized on the request's thread, handed to spdlog's async logger
  floor,   // serialized and written by the request's thread: the least work for the bytes
};

// spdlog's async logger (overflow policy: overrun the oldest; no fsync), which is what a
// team without this project would write: lines into
// DIR/perf_metrics/perf_metrics-<kind>-spdlog.jsonl and DIR/request_trace/{requests,responses}.jsonl
// (no hour buckets).
std::unique_ptr<jsonl::recording::RecordingDestination> spdlog_destination(
    const jsonl::recording::RecorderOptions& options);

// The floor: each line made by the writers' own formats on the request's thread and
// appended to its file's batch; the thread that completes a batch of lines_a_write lines
// writes it with one write(2), and close writes what is left. No queue, no thread, no
// books: the least work that puts the writers' bytes in files, which the writers are
// measured against. It blocks a request on its file (it breaks RecordingDestination's
// contract on purpose) and loses a batch a write fails: a measure, never a way to
// record. Files as spdlog's, with "floor" for "spdlog"; a file the options make durable
// (durable_traces, durable_perf_metrics) has each batch fdatasync()ed before its lines
// count as written.
std::unique_ptr<jsonl::recording::RecordingDestination> floor_destination(
    const jsonl::recording::RecorderOptions& options);
inline constexpr std::size_t lines_a_write = 16;  // the bench's floors' requests a write

// A recorder into this project's writers, or into `peer`; nothing recorded without an
// output directory.
inline std::unique_ptr<jsonl::recording::RequestRecorder> make_recorder(
    const jsonl::recording::RecorderOptions& options, RecordingPeer peer) {
  std::unique_ptr<jsonl::recording::RecordingDestination> destination;
  if (options.output_dir && peer == RecordingPeer::spdlog) destination = spdlog_destination(options);
  if (options.output_dir && peer == RecordingPeer::floor) destination = floor_destination(options);
  return std::make_unique<jsonl::recording::RequestRecorder>(options, std::move(destination));
}

}  // namespace jsonl_perf::serve

// The serve benchmark's peer: the recorder's lines serialized on the request's thread and
// handed to spdlog's async logger (overflow policy: overrun the oldest; no fsync), which is
// what a team without this project would write.
#pragma once

#include <memory>
#include "recording.hpp"



namespace jsonl_perf::serve {

// A recorder into this project's writers, or with `with_spdlog` into spdlog's async
// logger: lines into DIR/perf_metrics/perf_metrics-<kind>-spdlog.jsonl and
// DIR/request_trace/{requests,responses}.jsonl (no hour buckets).
std::unique_ptr<jsonl::recording::RequestRecorder> make_recorder(const jsonl::recording::RecorderOptions& options,
                                                                bool with_spdlog);

}  // namespace jsonl_perf::serve

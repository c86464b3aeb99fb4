// Module jsonl.recording: what a serving process's request handlers call so that every
// request leaves the reference server's two streams, a perf-metrics record and a request
// and a response trace line, joinable on the engine's request id.
//
// It knows nothing of HTTP or of the model. A handler calls, per request:
//
//   recorder.arrive(route, headers)        as the request's headers are read
//   recorder.accept(request, body)         once the body is parsed and valid
//     or recorder.reject(request, body, errors)   when it is refused with 400
//   recorder.first_token(request)          as the server has the first token
//   recorder.sent(request, frame)          for each streamed frame that went out
//   recorder.finish(request, outcome, EngineReport{...})   at the end
//
// (a disaggregated front end finishes with a ProxyReport instead). The parts:
//   - :reports      the options, how a request ended, what an engine or a proxy reports;
//   - :trace_lines  the request and response lines as typed records, their one spelling
//                   (append_trace_line) and the session policy (session_of);
//   - :destination  where records go (RecordingDestination): this project's writers by
//                   default (jsonl_writers), or a destination of the caller's;
//   - :recorder     RequestRecorder, the calls above.
export module jsonl.recording;

export import jsonl.perf_metrics;
export import jsonl.request_trace;
export import :reports;
export import :trace_lines;
export import :destination;
export import :recorder;

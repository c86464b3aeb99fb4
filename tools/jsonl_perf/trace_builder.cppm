// Request traces as a chat-completion server records them through jsonl.recording: a
// request line when a request arrives (the body with non-ASCII text, repeated headers) and
// a response line when it ends (the streamed reply as SSE frames; now and then a client
// that hung up). The lines are the recording layer's typed lines, spelt as a server's.
module;

#include <cstdint>
#include <optional>
#include <random>
#include <string>

export module jsonl_perf.trace_builder;

export import jsonl.recording;

export namespace jsonl_perf {

class TraceBuilder {
 public:
  TraceBuilder(std::uint64_t seed, std::uint64_t stream);

  // The next trace line, made now: a request, then its response, in turn.
  jsonl::TraceRecord<jsonl::recording::TraceLine> next(double server_arrival_time);

 private:
  jsonl::TraceRecord<jsonl::recording::TraceLine> request(double server_arrival_time);
  jsonl::TraceRecord<jsonl::recording::TraceLine> response();
  std::size_t pick(std::size_t count);

  std::mt19937_64 random_;
  std::uint64_t stream_;
  std::uint64_t sequence_ = 0;
  // The request whose response comes next.
  struct Pending {
    std::string trace_id;
    std::string session;
    std::int64_t client_id;
    std::size_t answer;
  };
  std::optional<Pending> pending_;
};

}  // namespace jsonl_perf

// One client connection of `jsonl-perf serve`, and what it shares with the server.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "disaggregation.hpp"
#include "hop.hpp"
#include "openai.hpp"
#include "proxy.hpp"
#include "server.hpp"
#include "server_metrics.hpp"
#include "recording.hpp"

namespace jsonl_perf::serve {

// What every connection uses: the options, the model, the recorder and the metrics;
// and the registry the server stops its connections through.
class ServerContext {
 public:
  virtual ~ServerContext() = default;
  virtual const ServeOptions& options() const = 0;
  virtual SimulatedModel& model() = 0;
  virtual const jsonl::recording::RequestRecorder& recorder() const = 0;
  // A proxy's workers; null for a server that answers requests itself.
  virtual Upstreams* upstreams() = 0;
  virtual ServerMetrics& metrics() = 0;
  virtual bool stopping() const = 0;
  virtual void opened(const std::shared_ptr<class Connection>& connection) = 0;
  virtual void closed(const Connection* connection) = 0;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(boost::asio::ip::tcp::socket socket, ServerContext& server);
  ~Connection();

  void start();
  // Called at a stop: an idle connection closes at once; one in a request closes when
  // `now` is true (the drain timeout passed), its request ending as an error.
  void stop(bool now);

 private:
  struct InFlightRequest;
  using Next = std::function<void()>;

  void read_request();
  void on_header(boost::beast::error_code error);
  void on_body(boost::beast::error_code error);
  void dispatch();
  void answer_clock_probe();
  void generate(Route route);
  // Answers 400 and records the body's text with `parsed`, its value; or, with
  // `parse_error`, as a body that is not JSON.
  void reject(boost::json::array errors, const boost::json::value& parsed, std::optional<std::string> parse_error);
  // While an answer sent whole is made, whether the client hangs up (a stream finds it
  // when a frame's write fails): the end of its stream, or a reset, ends the request
  // client_disconnected. Bytes that come instead (a next request, pipelined) are left
  // for the next read, and the watch ends. Ends when the answer begins to go out.
  void watch_for_hang_up();
  void on_hang_up();
  void schedule_next_token();
  void produce_token();
  void after_token();
  boost::json::value whole_answer();
  MetricFields worker_metrics();
  // The stream's head (200, text/event-stream), then `next`.
  void begin_stream(Next next);
  // One chunk of the stream, recorded as sent when `recorded`, then `next`.
  void write_frame(std::string frame, bool recorded, Next next);
  // The end of the chunked body; the request ends as `outcome` once it is out.
  void end_stream(jsonl::recording::Outcome outcome = jsonl::recording::Outcome::completed,
                  std::optional<jsonl::recording::Termination> termination = std::nullopt);
  void finish(jsonl::recording::Outcome outcome, std::optional<jsonl::recording::Termination> termination,
              std::optional<boost::json::value> payload = std::nullopt);
  void respond_text(unsigned status, std::string content_type, std::string body, bool close = false,
                    const MetricFields& fields = {}, std::function<void(bool)> written = nullptr);

  // A proxy's request (proxy_connection.cpp): the context hop, then the generation hop
  // relayed to the client as it comes.
  void forward();
  void on_context_answer(std::shared_ptr<Hop> hop, std::optional<HopFailure> failed);
  void answer_from_context(boost::json::value answer, std::string finish_reason);
  void on_generation_head(std::shared_ptr<Hop> hop, std::optional<HopFailure> failed);
  void relay(std::shared_ptr<Hop> hop);
  void relay_events(std::shared_ptr<Hop> hop, std::string events);
  void fail_upstream(unsigned status, std::string message, jsonl::recording::Termination termination);
  void after_response(bool close);
  void close_now();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  boost::asio::steady_timer timer_;
  ServerContext& server_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::unique_ptr<InFlightRequest> generation_;  // the request being answered, if any
  bool in_request_ = false;
  bool closed_ = false;
  std::uint64_t watch_ = 0;  // the hang-up watch that may act; another's wait is stale
};

// The request being answered, by the model or, on a proxy, by its workers: from its
// headers (arrival) to its last byte.
struct Connection::InFlightRequest {
  Route route = Route::chat_completions;
  jsonl::recording::RequestRecorder::Request record;
  RequestShape shape;
  Plan plan;
  std::optional<Answer> answer;
  double engine_arrival = 0;
  double scheduled = 0;
  std::optional<double> first_token;
  std::optional<double> last_token;
  std::size_t next_token = 0;
  bool hung_up = false;  // the client left before the answer went out
  std::optional<DisaggregatedParams> disagg;  // a worker's hop of a disaggregated request
  bool return_metrics = false;                // the client asked for the worker's metrics
  std::unique_ptr<ProxyState> proxy;          // a proxy's request: its hops
  std::string frame;  // the frame being written; it must live until the write ends
  std::optional<boost::beast::http::response<boost::beast::http::empty_body>> head;
  std::optional<boost::beast::http::response_serializer<boost::beast::http::empty_body>> head_writer;
};

}  // namespace jsonl_perf::serve

// What answers a request, apart from the connection it came on (Beast's
// http_server_async shape: the session does I/O, what to answer is decided elsewhere).
//
// Lifecycle of one request: the session reads its head and asks ServerContext::arrive
// for a generation route's handler (its arrival is stamped then), or makes the service
// handler once the body is in; calls answer() with the request's Exchange; the handler
// writes through the Exchange and ends with Exchange::done(). The session calls cancel()
// when it closes while the answer is made (a stop, the drain timeout), and failed() when
// an exception escapes a step of the handler (the exception boundary): that request
// ends, the server goes on.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "disaggregation.hpp"
#include "model.hpp"
#include "openai.hpp"
#include "proxy.hpp"
#include "routes.hpp"
#include "server.hpp"
#include "server_metrics.hpp"
#include "recording.hpp"

namespace jsonl_perf::serve {

class Session;
class Exchange;
using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // The request is read whole: answer it through `exchange`, ending with its done().
  virtual void answer(std::shared_ptr<Exchange> exchange) = 0;
  // Stop what the answer waits for (a timer, a hop) now; that step then fails.
  virtual void cancel() {}
  // What the client gets when an exception ended its request before anything was sent.
  struct FailedAnswer {
    unsigned status = 500;
    std::string body;
  };
  // `what` escaped a step of this handler: record the request as ended by it, and say
  // what the client gets.
  virtual FailedAnswer failed(std::string_view what) = 0;
};

// What every session uses: the options, the model, the recorder, the metrics and the
// handlers; and the registry the server stops its sessions through.
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
  virtual void opened(const std::shared_ptr<Session>& session) = 0;
  virtual void closed(const Session* session) = 0;
  // The handler of a POST to a generation route whose head was just read (its arrival),
  // as the server's role answers it (the model's, or the proxy's).
  virtual std::shared_ptr<RequestHandler> arrive(Route route, jsonl::recording::Headers headers) = 0;
};

// The handlers each role answers with.
std::shared_ptr<RequestHandler> model_request(ServerContext& server, Route route, jsonl::recording::Headers headers);
std::shared_ptr<RequestHandler> proxy_request(ServerContext& server, Route route, jsonl::recording::Headers headers);
// /health, /metrics, /v1/models, /steady_clock_offset, and 404 or 405 for what the
// routes table does not take.
std::shared_ptr<RequestHandler> service_request(ServerContext& server, const RouteEntry* entry);

// One request's I/O, as its handler sees it. Each write takes a callback, called with
// the write's error (none: it went out); a handler's own asynchronous steps go through
// guard(). A step of a request that already ended (done, failed or closed) is not run.
class Exchange : public std::enable_shared_from_this<Exchange> {
 public:
  using Written = std::function<void(boost::beast::error_code)>;

  Exchange(std::shared_ptr<Session> session, std::uint64_t number);

  HttpRequest& request() const;
  boost::asio::any_io_executor executor() const;
  // The server stops this session: the answer should end as soon as it can.
  bool closing() const;

  // A whole answer; `written` (when given) instead of done() once it is out.
  void respond(unsigned status, std::string content_type, std::string body, bool close = false,
               const MetricFields& fields = {}, Written written = nullptr);
  // A stream: its head (200, text/event-stream), its chunks, its end.
  void begin_stream(Written written);
  void write_frame(const std::string& frame, Written written);  // `frame` lives until `written`
  void end_stream(Written written);
  bool stream_begun() const { return head_.has_value(); }
  // Whether the client hangs up while an answer sent whole is made: `hung_up` on the end
  // of its stream or a reset. Bytes that come instead (a next request, pipelined) are
  // left for the next read, and the watch ends. Ends when the answer begins to go out.
  void watch_for_hang_up(std::function<void()> hung_up);
  // The answer is over: the session reads the next request, or closes when `close`.
  void done(bool close);

  // `step` as a completion of the handler's own: run inside the exception boundary, and
  // only while this request is being answered.
  template <class Step>
  auto guard(Step step) {
    return [self = shared_from_this(), step = std::move(step)](auto&&... arguments) mutable {
      self->run_step([&] { step(std::forward<decltype(arguments)>(arguments)...); });
    };
  }

 private:
  void run_step(const std::function<void()>& step) const;

  std::shared_ptr<Session> session_;
  const std::uint64_t number_;  // the session's count of requests when this one began
  std::optional<boost::beast::http::response<boost::beast::http::empty_body>> head_;
  std::optional<boost::beast::http::response_serializer<boost::beast::http::empty_body>> head_writer_;
};

}  // namespace jsonl_perf::serve

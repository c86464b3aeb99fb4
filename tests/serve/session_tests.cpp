// The exception boundary: a session driven in process by handlers that throw, beside a
// request the model answers. An exception ends its own request only: the client gets a
// 500 whole (or, once part of the answer went out, the connection closes), the request is
// traced `error` with the exception's text, /metrics counts it, and the server goes on.
// And the hang-up watch's look at the peer, which must never wait.
#define BOOST_TEST_MODULE session_tests
#include <boost/asio/connect.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <latch>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "session.hpp"
#include "recording_peers.hpp"
#include "traced_request.hpp"

namespace {

using namespace jsonl_perf::serve;
namespace net = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
using tcp = net::ip::tcp;

// Where a test's handler throws.
enum class Fault { none, in_its_answer, in_a_later_step, once_its_stream_began, while_a_frame_is_written };

// A generation handler that throws where its fault says (the header X-Fault names it).
class FaultyRequest final : public TracedRequest {
 public:
  FaultyRequest(ServerContext& server, Route route, jsonl::recording::Headers headers, Fault fault,
                std::atomic<int>& steps_after_the_end)
      : TracedRequest(server, route, std::move(headers), 500), fault_(fault), steps_after_the_end_(steps_after_the_end) {}

 private:
  void begin(json::value) override {
    if (fault_ == Fault::in_its_answer) throw std::runtime_error("the handler's own fault, in its answer");
    if (fault_ == Fault::once_its_stream_began) {
      return begin_stream([] { throw std::runtime_error("the handler's own fault, once its stream began"); });
    }
    if (fault_ == Fault::while_a_frame_is_written) {
      return begin_stream([this] {
        // Once the request ended, the frame's completion is not its step to take.
        send_frame("data: {}\n\n", true, [this] { ++steps_after_the_end_; });
        throw std::runtime_error("the handler's own fault, while a frame is written");
      });
    }
    timer_.emplace(exchange_->executor());
    timer_->expires_after(std::chrono::milliseconds(1));
    timer_->async_wait(guard([](boost::system::error_code) { throw std::runtime_error("the handler's own fault, later"); }));
  }
  void record_end(Outcome outcome, std::optional<Termination> termination, std::optional<json::value> payload) override {
    server_.recorder().finish(record_, outcome, jsonl::recording::EngineReport{}, std::move(payload), std::move(termination));
  }

  Fault fault_;
  std::atomic<int>& steps_after_the_end_;
  std::optional<net::steady_timer> timer_;
};

// A server of one thread whose generation requests go to the model, or to a FaultyRequest
// when they carry X-Fault; recording under a scratch directory.
class InProcessServer final : public ServerContext {
 public:
  explicit InProcessServer(const std::string& first_token = "const:0")
      : options_(make_options(scratch_.path(), first_token)),
        model_(options_.model),
        recorder_(make_recorder(options_.recording, RecordingPeer::none)),
        metrics_(*recorder_) {
    if (!recorder_->start()) throw std::runtime_error("the recorder did not start");
    acceptor_.open(tcp::v4());
    acceptor_.bind({net::ip::make_address("127.0.0.1"), 0});
    acceptor_.listen();
    accept();
    thread_ = std::thread([this] { context_.run(); });
  }
  ~InProcessServer() { stop(); }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }

  std::atomic<int> steps_after_the_end{0};  // steps a handler took after its request ended

  // Stops serving and closes the recorder: its lines are then on disk.
  void stop() {
    if (!thread_.joinable()) return;
    net::post(context_, [this] {
      stopping_ = true;
      acceptor_.close();
      for (auto& weak : sessions_) {
        if (auto session = weak.lock()) session->stop(true);
      }
    });
    thread_.join();
    recorder_->close();
  }

  // Every response line's status, termination cause and detail.
  std::vector<std::string> traced_endings() const {
    std::vector<std::string> endings;
    for (const auto& file : std::filesystem::recursive_directory_iterator(scratch_.path() / "request_trace")) {
      if (!file.is_regular_file() || file.path().extension() != ".jsonl") continue;
      std::ifstream in(file.path());
      for (std::string line; std::getline(in, line);) {
        const json::object object = json::parse(line).as_object();
        if (!object.contains("status")) continue;
        std::string ending(object.at("status").as_string());
        if (const json::value* termination = object.if_contains("termination")) {
          ending += std::string(" ") + termination->at("cause").as_string().c_str() + ": " +
                    termination->at("detail").as_string().c_str();
        }
        endings.push_back(ending);
      }
    }
    return endings;
  }

  const ServeOptions& options() const override { return options_; }
  SimulatedModel& model() override { return model_; }
  const jsonl::recording::RequestRecorder& recorder() const override { return *recorder_; }
  Upstreams* upstreams() override { return nullptr; }
  ServerMetrics& metrics() override { return metrics_; }
  bool stopping() const override { return stopping_; }
  void opened(const std::shared_ptr<Session>& session) override { sessions_.push_back(session); }
  void closed(const Session*) override {}

  std::shared_ptr<RequestHandler> arrive(Route route, jsonl::recording::Headers headers) override {
    Fault fault = Fault::none;
    for (const auto& [name, value] : headers) {
      if (name != "X-Fault") continue;
      fault = value == "answer"  ? Fault::in_its_answer
              : value == "later" ? Fault::in_a_later_step
              : value == "frame" ? Fault::while_a_frame_is_written
                                 : Fault::once_its_stream_began;
    }
    if (fault == Fault::none) return model_request(*this, route, std::move(headers));
    return std::make_shared<FaultyRequest>(*this, route, std::move(headers), fault, steps_after_the_end);
  }

 private:
  static ServeOptions make_options(const std::filesystem::path& dir, const std::string& first_token) {
    ServeOptions options;
    options.recording.output_dir = dir;
    options.recording.durable_traces = false;
    options.model.queue = Distribution::parse("const:0");
    options.model.first_token = Distribution::parse(first_token);
    options.model.between_tokens = Distribution::parse("const:0");
    return options;
  }

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code error, tcp::socket socket) {
      if (error) return;
      std::make_shared<Session>(std::move(socket), *this)->start();
      accept();
    });
  }

  jsonl_test::ScratchDirectory scratch_;
  ServeOptions options_;
  SimulatedModel model_;
  std::unique_ptr<jsonl::recording::RequestRecorder> recorder_;
  ServerMetrics metrics_;
  net::io_context context_;
  tcp::acceptor acceptor_{context_};
  bool stopping_ = false;
  std::vector<std::weak_ptr<Session>> sessions_;
  std::thread thread_;
};

struct Answered {
  unsigned status = 0;  // 0: the connection closed before a whole answer
  std::string body;
};

// One request on a connection of its own; `fault` names where its handler throws.
Answered post(unsigned short port, const std::string& fault, bool stream = false) {
  net::io_context context;
  tcp::socket socket(context);
  socket.connect({net::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> request(http::verb::post, "/v1/chat/completions", 11);
  request.set(http::field::host, "127.0.0.1");
  request.set(http::field::content_type, "application/json");
  if (!fault.empty()) request.set("X-Fault", fault);
  request.body() = json::serialize(json::object{{"model", "m"},
                                                {"stream", stream},
                                                {"messages", json::array{json::object{{"role", "user"}, {"content", "hi"}}}}});
  request.prepare_payload();
  http::write(socket, request);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  boost::system::error_code error;
  http::read(socket, buffer, response, error);
  if (error) return {};
  return {response.result_int(), response.body()};
}

std::string get(unsigned short port, const std::string& target) {
  net::io_context context;
  tcp::socket socket(context);
  socket.connect({net::ip::make_address("127.0.0.1"), port});
  http::request<http::empty_body> request(http::verb::get, target, 11);
  request.set(http::field::host, "127.0.0.1");
  http::write(socket, request);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  return response.body();
}

double metric(unsigned short port, const std::string& name) {
  const std::string text = get(port, "/metrics");
  const std::size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + name.size() + 2));
}

const std::string chat_errors = R"(jsonl_serve_requests_total{route="/v1/chat/completions",status="error"})";

}  // namespace

BOOST_AUTO_TEST_CASE(an_exception_in_a_handlers_answer_ends_its_request_as_500_traced_error_and_the_server_goes_on) {
  InProcessServer server;
  const Answered failed = post(server.port(), "answer");
  BOOST_TEST(failed.status == 500u);
  BOOST_TEST(failed.body == R"({"detail":"the server failed to answer"})");
  const Answered next = post(server.port(), "");
  BOOST_TEST(next.status == 200u);
  BOOST_TEST(metric(server.port(), "jsonl_serve_exceptions_total") == 1);
  BOOST_TEST(metric(server.port(), chat_errors) == 1);
  server.stop();
  const std::vector<std::string> endings = server.traced_endings();
  BOOST_TEST(std::ranges::count(endings, "error handler_error: the handler's own fault, in its answer") == 1);
  BOOST_TEST(std::ranges::count(endings, "completed") == 1);
}

BOOST_AUTO_TEST_CASE(an_exception_in_a_later_step_of_a_handler_ends_its_request_only) {
  InProcessServer server("const:1500");
  // A request the model answers is in flight while another's handler throws.
  auto answered = std::async(std::launch::async, [&] { return post(server.port(), ""); });
  const Answered failed = post(server.port(), "later");
  BOOST_TEST(failed.status == 500u);
  BOOST_TEST(answered.get().status == 200u);
  BOOST_TEST(metric(server.port(), "jsonl_serve_exceptions_total") == 1);
  server.stop();
  const std::vector<std::string> endings = server.traced_endings();
  BOOST_TEST(std::ranges::count(endings, "error handler_error: the handler's own fault, later") == 1);
  BOOST_TEST(std::ranges::count(endings, "completed") == 1);
}

BOOST_AUTO_TEST_CASE(an_exception_once_a_stream_began_closes_its_connection_and_is_traced_error) {
  InProcessServer server;
  const Answered cut = post(server.port(), "stream", true);
  BOOST_TEST(cut.status == 0u);  // the head went out; the body never ends
  BOOST_TEST(post(server.port(), "").status == 200u);
  BOOST_TEST(metric(server.port(), "jsonl_serve_exceptions_total") == 1);
  server.stop();
  const std::vector<std::string> endings = server.traced_endings();
  BOOST_TEST(std::ranges::count(endings, "error handler_error: the handler's own fault, once its stream began") == 1);
}

BOOST_AUTO_TEST_CASE(an_exception_while_a_frame_is_written_ends_its_request_once) {
  InProcessServer server;
  BOOST_TEST(post(server.port(), "frame", true).status == 0u);
  BOOST_TEST(post(server.port(), "").status == 200u);
  BOOST_TEST(metric(server.port(), "jsonl_serve_exceptions_total") == 1);
  BOOST_TEST(metric(server.port(), chat_errors) == 1);
  server.stop();
  BOOST_TEST(server.steps_after_the_end == 0);
  const std::vector<std::string> endings = server.traced_endings();
  BOOST_TEST(std::ranges::count(endings, "error handler_error: the handler's own fault, while a frame is written") == 1);
}

namespace {

// Both ends of a loopback connection: the server's socket and its client's.
struct ConnectedPair {
  net::io_context context;
  tcp::socket server{context};
  tcp::socket client{context};
  ConnectedPair() {
    tcp::acceptor acceptor(context, {net::ip::make_address("127.0.0.1"), 0});
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
  }
};

}  // namespace

// A readiness wake-up may come with nothing to read (a reactor's stale event when its
// threads race); looking must then neither wait, which would hold the session's strand
// for good, nor take it for a hang-up.
BOOST_AUTO_TEST_CASE(a_wake_up_with_nothing_to_read_is_neither_a_wait_nor_a_hang_up) {
  ConnectedPair pair;
  auto looked = std::async(std::launch::async, [&pair] { return peek_at_peer(pair.server); });
  const bool answered = looked.wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  BOOST_TEST(answered, "peek_at_peer waited for the peer");
  if (!answered) pair.client.close();  // releases the wait, so the test ends
  BOOST_TEST((looked.get() == PeerActivity::nothing));
}

BOOST_AUTO_TEST_CASE(a_peer_that_sent_more_is_told_from_one_that_hung_up_and_nothing_is_consumed) {
  ConnectedPair sent;
  net::write(sent.client, net::buffer(std::string_view("G")));
  sent.server.wait(tcp::socket::wait_read);
  BOOST_TEST((peek_at_peer(sent.server) == PeerActivity::sent_more));
  char byte = 0;
  BOOST_TEST(sent.server.receive(net::buffer(&byte, 1)) == 1u);
  BOOST_TEST(byte == 'G');
  ConnectedPair hung;
  hung.client.close();
  hung.server.wait(tcp::socket::wait_read);
  BOOST_TEST((peek_at_peer(hung.server) == PeerActivity::hung_up));
}

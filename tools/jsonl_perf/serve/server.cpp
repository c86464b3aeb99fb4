#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <csignal>
#include <iostream>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "library_names.hpp"
#include "session.hpp"
#include "spdlog_destination.hpp"

namespace jsonl_perf::serve {
namespace {

class Server final : public ServerContext {
 public:
  explicit Server(const ServeOptions& options)
      : options_(options),
        model_(options.model),
        recorder_(make_recorder(options.recording, options.record_with_spdlog)),
        answer_generation_(options.proxy ? proxy_request : model_request),
        control_(net::make_strand(context_)),
        acceptor_(control_),
        signals_(control_, SIGINT, SIGTERM),
        drain_timer_(control_) {}

  int run(std::ostream& out, std::ostream& err) {
    if (options_.proxy) {
      try {
        upstreams_ = std::make_unique<Upstreams>(*options_.proxy, context_);
      } catch (const std::invalid_argument& error) {
        err << "jsonl-perf serve: " << error.what() << '\n';
        return 2;
      }
      upstreams_->align_clocks(err);
    }
    if (!recorder_->start()) {
      err << "jsonl-perf serve: cannot record into " << options_.recording.output_dir->string() << '\n';
      return 1;
    }
    boost::system::error_code error;
    const tcp::endpoint endpoint(net::ip::make_address(options_.host, error), options_.port);
    if (!error) acceptor_.open(endpoint.protocol(), error);
    if (!error) acceptor_.set_option(net::socket_base::reuse_address(true), error);
    if (!error) acceptor_.bind(endpoint, error);
    if (!error) acceptor_.listen(net::socket_base::max_listen_connections, error);
    if (error) {
      err << "jsonl-perf serve: cannot listen on " << options_.host << ':' << options_.port << ": " << error.message() << '\n';
      return 1;
    }
    out << "listening on http://" << options_.host << ':' << acceptor_.local_endpoint().port() << std::endl;
    signals_.async_wait([this](boost::system::error_code error, int) {
      if (!error) begin_stop();
    });
    accept();
    std::vector<std::jthread> threads;
    for (unsigned i = 1; i < options_.threads; ++i) threads.emplace_back([this] { context_.run(); });
    context_.run();
    threads.clear();
    recorder_->close();
    err << "jsonl-perf serve: stopped; " << recorder_->accounting_line() << '\n';
    return 0;
  }

  const ServeOptions& options() const override { return options_; }
  SimulatedModel& model() override { return model_; }
  const jsonl::recording::RequestRecorder& recorder() const override { return *recorder_; }
  ServerMetrics& metrics() override { return metrics_; }
  Upstreams* upstreams() override { return upstreams_.get(); }
  bool stopping() const override { return stopping_.load(); }

  void opened(const std::shared_ptr<Session>& session) override {
    const std::lock_guard lock(mutex_);
    sessions_.emplace(session.get(), session);
  }

  void closed(const Session* session) override {
    const std::lock_guard lock(mutex_);
    sessions_.erase(session);
    if (stopping_ && sessions_.empty()) net::post(control_, [this] { drain_timer_.cancel(); });
  }

  std::shared_ptr<RequestHandler> arrive(Route route, jsonl::recording::Headers headers) override {
    return answer_generation_(*this, route, std::move(headers));
  }

 private:
  void accept() {
    acceptor_.async_accept(net::make_strand(context_), [this](boost::system::error_code error, tcp::socket socket) {
      if (!acceptor_.is_open()) return;
      // Out of file descriptors (EMFILE) or an aborted handshake: that connection only.
      if (!error) std::make_shared<Session>(std::move(socket), *this)->start();
      accept();
    });
  }

  void begin_stop() {
    stopping_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    for_each_session([](Session& session) { session.stop(false); });
    drain_timer_.expires_after(options_.drain_timeout);
    drain_timer_.async_wait([this](boost::system::error_code error) {
      if (!error) for_each_session([](Session& session) { session.stop(true); });
    });
    const std::lock_guard lock(mutex_);
    if (sessions_.empty()) drain_timer_.cancel();
  }

  template <class Action>
  void for_each_session(Action action) {
    std::vector<std::shared_ptr<Session>> live;
    {
      const std::lock_guard lock(mutex_);
      for (auto& [key, weak] : sessions_) {
        if (auto session = weak.lock()) live.push_back(std::move(session));
      }
    }
    for (auto& session : live) action(*session);
  }

  const ServeOptions& options_;
  SimulatedModel model_;
  std::unique_ptr<jsonl::recording::RequestRecorder> recorder_;
  // The role's handler of generation requests, chosen once.
  std::shared_ptr<RequestHandler> (*const answer_generation_)(ServerContext&, Route, jsonl::recording::Headers);
  // After the recorder it reads, before the context whose sessions count themselves out
  // of it as they are destroyed.
  ServerMetrics metrics_{*recorder_};
  std::atomic<bool> stopping_{false};
  // Sessions unregister as they go, so the registry outlives the context.
  std::mutex mutex_;
  std::unordered_map<const Session*, std::weak_ptr<Session>> sessions_;
  net::io_context context_;
  std::unique_ptr<Upstreams> upstreams_;
  // Accepting, the stop signal and the drain timer, one at a time whatever --threads.
  net::strand<net::io_context::executor_type> control_;
  tcp::acceptor acceptor_;
  net::signal_set signals_;
  net::steady_timer drain_timer_;
};

}  // namespace

int run_serve(const ServeOptions& options, std::ostream& out, std::ostream& err) {
  Server server(options);
  return server.run(out, err);
}

}  // namespace jsonl_perf::serve

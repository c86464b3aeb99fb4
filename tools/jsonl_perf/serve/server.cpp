#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <csignal>
#include <functional>
#include <iostream>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "library_names.hpp"
#include "session.hpp"
#include "recording_peers.hpp"

namespace jsonl_perf::serve {
namespace {

// The sessions open now, which a stop reaches. Any thread; a session unregisters as it
// is destroyed, so the registry outlives the context that runs them.
class Sessions {
 public:
  void add(const std::shared_ptr<Session>& session) {
    const std::lock_guard lock(mutex_);
    open_.emplace(session.get(), session);
  }
  void remove(const Session* session) {
    const std::lock_guard lock(mutex_);
    open_.erase(session);
    if (stopping_ && open_.empty() && drained_) drained_();
  }
  // Begins the stop: idle sessions close now, the others as their request ends;
  // `drained` is called once the last is gone (at once when none is open). Once.
  void begin_stop(std::function<void()> drained) {
    {
      const std::lock_guard lock(mutex_);
      drained_ = std::move(drained);
      stopping_ = true;
      if (open_.empty()) drained_();
    }
    stop_each(false);
  }
  // The drain timeout passed: every session closes now.
  void stop_now() { stop_each(true); }
  bool stopping() const { return stopping_.load(); }

 private:
  void stop_each(bool now) {
    std::vector<std::shared_ptr<Session>> live;
    {
      const std::lock_guard lock(mutex_);
      for (auto& [key, weak] : open_) {
        if (auto session = weak.lock()) live.push_back(std::move(session));
      }
    }
    for (auto& session : live) session->stop(now);
  }

  std::mutex mutex_;
  std::unordered_map<const Session*, std::weak_ptr<Session>> open_;
  std::atomic<bool> stopping_{false};
  std::function<void()> drained_;
};

// What the sessions share, for the server's life. Throws std::invalid_argument for a
// proxy's worker URL it cannot use.
class Server final : public ServerContext {
 public:
  Server(const ServeOptions& options, jsonl::recording::RequestRecorder& recorder)
      : options_(options),
        model_(options.model),
        recorder_(recorder),
        answer_generation_(options.proxy ? proxy_request : model_request),
        upstreams_(options.proxy ? std::make_unique<Upstreams>(*options.proxy, context_) : nullptr) {}

  net::io_context& context() { return context_; }
  Sessions& sessions() { return sessions_; }

  const ServeOptions& options() const override { return options_; }
  SimulatedModel& model() override { return model_; }
  const jsonl::recording::RequestRecorder& recorder() const override { return recorder_; }
  ServerMetrics& metrics() override { return metrics_; }
  Upstreams* upstreams() override { return upstreams_.get(); }
  bool stopping() const override { return sessions_.stopping(); }
  void opened(const std::shared_ptr<Session>& session) override { sessions_.add(session); }
  void closed(const Session* session) override { sessions_.remove(session); }
  std::shared_ptr<RequestHandler> arrive(Route route, jsonl::recording::Headers headers) override {
    return answer_generation_(*this, route, std::move(headers));
  }

 private:
  const ServeOptions& options_;
  SimulatedModel model_;
  jsonl::recording::RequestRecorder& recorder_;
  // The role's handler of generation requests, chosen once.
  std::shared_ptr<RequestHandler> (*const answer_generation_)(ServerContext&, Route, jsonl::recording::Headers);
  // Before the context, whose sessions count themselves out of both as they are destroyed.
  ServerMetrics metrics_{recorder_};
  Sessions sessions_;
  net::io_context context_;
  std::unique_ptr<Upstreams> upstreams_;
};

// Accepting, the stop and rotate signals and the drain timer, one at a time whatever
// --threads. `err` takes a line for each signal.
class Front {
 public:
  Front(Server& server, std::ostream& err)
      : server_(server),
        err_(err),
        control_(net::make_strand(server.context())),
        acceptor_(control_),
        signals_(control_, SIGINT, SIGTERM),
        rotate_signal_(control_, SIGHUP),
        drain_timer_(control_) {}

  // Binds and listens; the error's text when it cannot.
  std::string listen(const std::string& host, unsigned short port) {
    boost::system::error_code error;
    const tcp::endpoint endpoint(net::ip::make_address(host, error), port);
    if (!error) acceptor_.open(endpoint.protocol(), error);
    if (!error) acceptor_.set_option(net::socket_base::reuse_address(true), error);
    if (!error) acceptor_.bind(endpoint, error);
    if (!error) acceptor_.listen(net::socket_base::max_listen_connections, error);
    if (error) return error.message();
    signals_.async_wait([this](boost::system::error_code error, int) {
      if (!error) stop();
    });
    await_rotate_signal();
    accept();
    return {};
  }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }

 private:
  void accept() {
    acceptor_.async_accept(net::make_strand(server_.context()), [this](boost::system::error_code error, tcp::socket socket) {
      if (!acceptor_.is_open()) return;
      // Out of file descriptors (EMFILE) or an aborted handshake: that connection only.
      if (!error) std::make_shared<Session>(std::move(socket), server_)->start();
      accept();
    });
  }

  // SIGHUP, as logrotate's postrotate sends it: each writer's own file is left at its
  // next line (RecorderOptions::rotation_requests). A stop ends the wait.
  void await_rotate_signal() {
    rotate_signal_.async_wait([this](boost::system::error_code error, int) {
      if (error) return;
      if (const auto& requests = server_.options().recording.rotation_requests) requests->request();
      err_ << "jsonl-perf serve: SIGHUP: the perf-metrics file rotates at its next line" << std::endl;
      await_rotate_signal();
    });
  }

  void stop() {
    boost::system::error_code ignored;
    rotate_signal_.cancel(ignored);
    acceptor_.close(ignored);
    drain_timer_.expires_after(server_.options().drain_timeout);
    drain_timer_.async_wait([this](boost::system::error_code error) {
      if (!error) server_.sessions().stop_now();
    });
    server_.sessions().begin_stop([this] { net::post(control_, [this] { drain_timer_.cancel(); }); });
  }

  Server& server_;
  std::ostream& err_;
  net::strand<net::io_context::executor_type> control_;
  tcp::acceptor acceptor_;
  net::signal_set signals_;
  net::signal_set rotate_signal_;
  net::steady_timer drain_timer_;
};

}  // namespace

int run_serve(const ServeOptions& options, std::ostream& out, std::ostream& err) {
  const std::unique_ptr<jsonl::recording::RequestRecorder> recorder =
      make_recorder(options.recording, options.recording_peer);
  std::unique_ptr<Server> server;
  try {
    server = std::make_unique<Server>(options, *recorder);
  } catch (const std::invalid_argument& error) {
    err << "jsonl-perf serve: " << error.what() << '\n';
    return 2;
  }
  if (server->upstreams()) server->upstreams()->align_clocks(err);
  if (!recorder->start()) {
    err << "jsonl-perf serve: cannot record into " << options.recording.output_dir->string() << '\n';
    return 1;
  }
  Front front(*server, err);
  if (const std::string problem = front.listen(options.host, options.port); !problem.empty()) {
    err << "jsonl-perf serve: cannot listen on " << options.host << ':' << options.port << ": " << problem << '\n';
    return 1;
  }
  out << "listening on http://" << options.host << ':' << front.port() << std::endl;
  std::vector<std::jthread> threads;
  for (unsigned i = 1; i < options.threads; ++i) threads.emplace_back([&server] { server->context().run(); });
  server->context().run();
  threads.clear();
  recorder->close();
  err << "jsonl-perf serve: stopped; " << recorder->accounting_line() << '\n';
  return 0;
}

}  // namespace jsonl_perf::serve

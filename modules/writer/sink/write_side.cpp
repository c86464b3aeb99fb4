// WriteSide: hands jobs to the write worker (:write_worker) and starts, cancels and
// stops it.
module;

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

module jsonl.writer;

import :write_side;
import :write_worker;
import :posix_file;

namespace jsonl::detail {

WriteSide::WriteSide(std::shared_ptr<WriterState> state, std::shared_ptr<Sink> sink)
    : state_(std::make_shared<State>(std::move(state), std::move(sink))) {}

WriteSide::~WriteSide() { stop(); }

bool WriteSide::start() {
  if (state_->rotating ? !make_output_dir() : !state_->own_destination) return false;
  if (state_->rotating) state_->rotating->start();
  thread_ = state_->writer->launch([state = state_] { state->run(); });
  return true;
}

bool WriteSide::make_output_dir() {
  const WriterOptions& options = state_->writer->options;
  const std::filesystem::path& directory = *options.output_dir;
  std::error_code error;
  try {
    options.durability.calls->make_directories(directory);
  } catch (const std::system_error& failure) {
    error = failure.code();
  }
  if (!error && !std::filesystem::is_directory(directory, error) && !error) {
    error = std::make_error_code(std::errc::not_a_directory);
  }
  if (error) {
    const std::string& name = options.wording.disabled;
    state_->log(LogLevel::error, "Disabling " + (name.empty() ? options.subject + " JSONL" : name) +
                                     " output: cannot create directory '" + directory.string() +
                                     "': " + error.message());
    return false;
  }
  return true;
}

void WriteSide::hand_off(WriteJob job) {
  const std::size_t records = records_of(job);
  std::unique_lock lock(state_->mutex);
  state_->work_done.wait(lock, [&] { return state_->can_take(records) || state_->cancelled; });
  if (state_->cancelled) {
    state_->abandon(records);
    throw DrainCancelled{};
  }
  state_->pending.push_back(std::move(job));
  state_->pending_records += records;
  lock.unlock();
  state_->work_arrived.notify_one();
}

void WriteSide::wait_idle() {
  std::unique_lock lock(state_->mutex);
  state_->work_done.wait(lock, [this] { return state_->idle() || state_->cancelled; });
  if (state_->cancelled) {
    state_->abandon(0);
    throw DrainCancelled{};
  }
}

void WriteSide::finish() {
  if (state_->compressing) hand_off(WriteJob{.ends_frames = true});
  wait_idle();
}

void WriteSide::reclaim(std::vector<std::string>& texts, std::vector<FileAppend>& appends) {
  const std::lock_guard lock(state_->mutex);
  for (std::string& text : state_->spent_texts) texts.push_back(std::move(text));
  state_->spent_texts.clear();
  if (appends.capacity() != 0 || state_->spent_lists.empty()) return;
  appends = std::move(state_->spent_lists.back());
  state_->spent_lists.pop_back();
}

void WriteSide::cancel() noexcept {
  const std::lock_guard lock(state_->mutex);
  state_->cancelled = true;
  state_->work_done.notify_all();
}

void WriteSide::stop() noexcept {
  if (!thread_.joinable()) return;
  bool stuck;
  {
    const std::lock_guard lock(state_->mutex);
    state_->stopping = true;
    stuck = !state_->idle() || state_->publishing;
    state_->work_arrived.notify_one();
  }
  if (stuck) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

std::optional<std::filesystem::path> WriteSide::current_file() const {
  if (!state_->rotating) return std::nullopt;
  return state_->rotating->current();
}

std::optional<std::filesystem::path> WriteSide::books_file() const {
  if (!state_->publication) return std::nullopt;
  return state_->publication->document_file();
}

bool WriteSide::durable() const noexcept { return state_->durable(); }

void WriteSide::publish(bool urgent) { state_->publication->publish(urgent); }

void WriteSide::publish_closed(std::chrono::milliseconds timeout) {
  auto published = std::make_shared<std::promise<std::string>>();
  std::future<std::string> outcome = published->get_future();
  // The thread holds the state: a publication that outlives close touches nothing freed.
  std::thread publisher = state_->writer->launch([state = state_, published] {
    published->set_value(state->publication->publish_closed());
  });
  if (outcome.wait_for(timeout) != std::future_status::ready) {
    publisher.detach();
    state_->log(LogLevel::warning, "Timed out publishing the closed " + state_->subject() + " JSONL books");
    return;
  }
  publisher.join();
  if (const std::string error = outcome.get(); !error.empty()) {
    state_->log(LogLevel::warning, "Failed to publish " + state_->subject() + " JSONL books: " + error);
  }
}

}  // namespace jsonl::detail

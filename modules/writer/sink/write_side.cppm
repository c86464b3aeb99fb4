// The write side: the worker thread that performs appends through the sinks, rotation of
// the writer's own file, and with durability group commit and the books. It knows
// nothing of records: the drain hands it bytes. Not part of the public contract;
// exported only because JsonlRecordWriter's template code hands off to it.
module;

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

export module jsonl.writer:write_side;

import :stats;
import :sink;
import :writer_state;

export namespace jsonl::detail {

// Appends to perform, in order. Once they are performed, every record up to the
// `through`-th released by the drain is written or dropped. With `ends_frames`, every
// compressed file's frame is ended after them (the drain's last job).
struct WriteJob {
  std::vector<FileAppend> appends;
  std::uint64_t through = 0;
  bool ends_frames = false;
};

// Performs jobs one at a time on its own thread, so that the drain can serialize the
// next batch meanwhile and `close` can walk away from an append that never returns.
// With durability it takes every job waiting as one commit (group commit): while a
// commit runs it accepts further jobs up to the queue size in records. Its state is
// shared with the thread, so an abandoned append touches nothing freed.
class WriteSide {
 public:
  // `sink`: where appends go; a FileSink through the options' file calls when empty.
  WriteSide(std::shared_ptr<WriterState> state, std::shared_ptr<Sink> sink);
  WriteSide(const WriteSide&) = delete;
  WriteSide& operator=(const WriteSide&) = delete;
  ~WriteSide();

  // Starts the thread; with an output directory, first creates it and names the first
  // file. False without an output directory for a sink that writes files, or when the
  // directory cannot be created (logged at ERROR).
  bool start();
  // Waits until the worker can take `job` (it is idle, or with durability `job` fits
  // beside the jobs waiting), then gives it `job`. If cancel() comes first, counts `job`
  // and whatever the worker still holds as abandoned (with durability, a commit in
  // progress as unknown) and throws DrainCancelled.
  void hand_off(WriteJob job);
  // Waits until the worker is idle; on cancel() as hand_off.
  void wait_idle();
  // The drain's last word: with compression, every frame open is ended, so that the
  // files are whole frames; then waits until the worker is idle. On cancel() as hand_off.
  void finish();
  // Moves in what the worker is done with, emptied, their capacity kept: the texts of
  // the appends it performed into `texts`, and a list of appends into `appends` when
  // that has no capacity. The drain fills them again, so that in steady state neither
  // side allocates for them.
  void reclaim(std::vector<std::string>& texts, std::vector<FileAppend>& appends);
  // Makes a waiting or later hand_off/wait_idle throw DrainCancelled.
  void cancel() noexcept;
  // Ends the thread: joined when idle, detached when an abandoned append still runs.
  void stop() noexcept;

  // The writer's current file; empty before start() and when it failed.
  std::optional<std::filesystem::path> current_file() const;
  // With durability (and an output or books directory), where the books are published.
  std::optional<std::filesystem::path> books_file() const;
  bool durable() const noexcept;
  // Publishes the books when they changed (flush); a failure is logged (WARNING).
  void publish(bool urgent);
  // The closed document, published on a thread of its own within `timeout` (WARNING
  // otherwise, the thread left to finish): close's last step.
  void publish_closed(std::chrono::milliseconds timeout);

  struct State;

 private:
  // Creates the output directory; false, logged at ERROR, when it cannot be.
  bool make_output_dir();

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace jsonl::detail

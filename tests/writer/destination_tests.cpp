// Destinations that are not the writer's own files: a sink that writes no files (memory,
// a socket, one that refuses everything), and a file sink with durability of its own.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <latch>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "writer_fixture.hpp"

namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

using jsonl_test::accounting_holds;
using jsonl_test::Log;

// Options without an output directory: the supplied sink is the destination.
jsonl::WriterOptions destination_options(Log& log) {
  return {.output_dir = std::nullopt,
          .file_stem = "test",
          .subject = "test",
          .shutdown_timeout = std::chrono::seconds(10),
          .log_sink = log.sink()};
}

std::shared_ptr<const jsonl::JsonLineFormat> lines() { return std::make_shared<jsonl::JsonLineFormat>(); }

json::value numbered(int i) { return json::object{{"n", i}}; }

std::string numbered_lines(int from, int to) {
  std::string lines;
  for (int i = from; i < to; ++i) lines += json::serialize(numbered(i)) + "\n";
  return lines;
}

// Keeps every append in memory, and the file each outcome named.
class MemorySink : public jsonl::Sink {
 public:
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    const std::lock_guard lock(mutex_);
    text_ += append.bytes;
    files_named_.push_back(outcome.file);
  }
  std::string text() const {
    const std::lock_guard lock(mutex_);
    return text_;
  }
  std::vector<std::filesystem::path> files_named() const {
    const std::lock_guard lock(mutex_);
    return files_named_;
  }

 private:
  mutable std::mutex mutex_;
  std::string text_;
  std::vector<std::filesystem::path> files_named_;
};

// Sends each append down a connected stream socket; a refused send is a write error.
class SocketSink : public jsonl::Sink {
 public:
  explicit SocketSink(int fd) : fd_(fd) {}
  ~SocketSink() override { ::close(fd_); }
  void append(const jsonl::FileAppend& append, jsonl::AppendOutcome& outcome) override {
    std::size_t sent = 0;
    while (sent < append.bytes.size()) {
      // A send that would block says the buffer is full, then waits as a blocking one.
      ssize_t n = ::send(fd_, append.bytes.data() + sent, append.bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      full = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      if (full) n = ::send(fd_, append.bytes.data() + sent, append.bytes.size() - sent, MSG_NOSIGNAL);
      if (n >= 0) {
        sent += static_cast<std::size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if (sent == 0) throw std::system_error(errno, std::generic_category(), "send");
      outcome.error = "send: " + std::generic_category().message(errno);
      outcome.landed = sent;
      return;
    }
  }

 private:
  int fd_;

 public:
  // Whether the last send found the socket's buffer full: it blocks until the reader
  // reads or hangs up.
  std::atomic<bool> full{false};
};

// Memory that a replica acknowledges: a commit's appends are durable once acknowledged,
// and while `refusing` none is.
class ReplicatedMemorySink : public MemorySink {
 public:
  bool can_be_made_durable() const noexcept override { return true; }
  void make_durable(std::span<jsonl::AppendOutcome> outcomes) override {
    for (jsonl::AppendOutcome& outcome : outcomes) {
      if (!refusing || outcome.error) continue;
      outcome.error = "the replica did not acknowledge";
      outcome.landed = outcome.bytes;
      outcome.touched = outcome.records;
    }
  }
  std::atomic<bool> refusing{false};
};

// Files as FileSink writes them and makes them durable, but while `refusing` a commit's
// appends are refused, as by a replica that did not acknowledge them.
class AcknowledgedSink : public jsonl::FileSink {
 public:
  void make_durable(std::span<jsonl::AppendOutcome> outcomes) override {
    FileSink::make_durable(outcomes);
    if (!refusing) return;
    for (jsonl::AppendOutcome& outcome : outcomes) {
      if (outcome.error) continue;
      outcome.error = "the replica did not acknowledge";
      outcome.landed = outcome.bytes;
      outcome.touched = outcome.records;
    }
  }
  std::atomic<bool> refusing{false};
};

// Three commits of ten records, the second refused by the sink's make_durable: 20
// records persisted, 10 unknown, none lost.
template <class RefusingSink>
void three_commits_the_second_refused(jsonl::JsonlRecordWriter<>& writer, RefusingSink& sink) {
  writer.start();
  for (int commit = 0; commit < 3; ++commit) {
    sink.refusing = commit == 1;
    for (int i = 0; i < 10; ++i) BOOST_TEST_REQUIRE(writer.submit(numbered(commit * 10 + i)));
    BOOST_TEST_REQUIRE(writer.flush(10s));
  }
  writer.close();
  const jsonl::WriterStats stats = writer.stats();
  BOOST_TEST(stats.written == 20u);
  BOOST_TEST(stats.unknown == 10u);
  BOOST_TEST(accounting_holds(stats));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(destinations)

BOOST_AUTO_TEST_CASE(a_supplied_sink_without_an_output_directory_takes_every_line_and_no_file_is_named) {
  Log log;
  auto sink = std::make_shared<MemorySink>();
  jsonl::JsonlRecordWriter<> writer(destination_options(log), lines(), sink);
  writer.start();
  for (int i = 0; i < 1000; ++i) BOOST_TEST_REQUIRE(writer.submit(numbered(i)));
  writer.close();
  const jsonl::WriterStats stats = writer.stats();
  BOOST_TEST(sink->text() == numbered_lines(0, 1000));
  BOOST_TEST(stats.written == 1000u);
  BOOST_TEST(stats.lines_written == 1000u);
  BOOST_TEST(stats.bytes_written == sink->text().size());
  BOOST_TEST(stats.files_started == 0u);
  BOOST_TEST(accounting_holds(stats));
  BOOST_TEST(!writer.path().has_value());
  for (const std::filesystem::path& file : sink->files_named()) BOOST_TEST(file.empty());
  BOOST_TEST(log.entries().empty());
}

BOOST_AUTO_TEST_CASE(a_sink_that_writes_no_files_refuses_an_output_directory_at_construction) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  BOOST_CHECK_EXCEPTION(
      jsonl::JsonlRecordWriter<>(jsonl_test::test_options(directory.path(), log), lines(),
                                 std::make_shared<MemorySink>()),
      std::invalid_argument, [](const std::invalid_argument& error) {
        return std::string(error.what()).starts_with("a sink that writes no files takes no output directory");
      });
}

BOOST_AUTO_TEST_CASE(rotation_without_an_output_directory_is_refused_at_construction) {
  Log log;
  const auto refused = [](const std::invalid_argument& error) {
    return std::string(error.what()).starts_with("rotation needs an output directory");
  };
  std::vector<jsonl::WriterOptions> asking(3, destination_options(log));
  asking[0].max_file_bytes = 1 << 20;
  asking[1].max_file_age = std::chrono::seconds(60);
  asking[2].max_files = 3;
  for (jsonl::WriterOptions& options : asking) {
    BOOST_CHECK_EXCEPTION(jsonl::JsonlRecordWriter<>(std::move(options), lines(), std::make_shared<MemorySink>()),
                          std::invalid_argument, refused);
  }
}

BOOST_AUTO_TEST_CASE(durability_with_a_sink_that_writes_no_files_needs_a_books_directory) {
  Log log;
  jsonl::WriterOptions options = destination_options(log);
  options.durability.enabled = true;
  BOOST_CHECK_EXCEPTION(
      jsonl::JsonlRecordWriter<>(std::move(options), lines(), std::make_shared<ReplicatedMemorySink>()),
      std::invalid_argument, [](const std::invalid_argument& error) {
        return std::string(error.what()) == "durability with a sink that writes no files needs a books directory";
      });
}

BOOST_AUTO_TEST_CASE(a_sink_that_cannot_be_made_durable_is_refused_durability_at_construction) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::WriterOptions options = destination_options(log);
  options.durability.enabled = true;
  options.durability.books_dir = directory.path();
  BOOST_CHECK_EXCEPTION(jsonl::JsonlRecordWriter<>(std::move(options), lines(), std::make_shared<MemorySink>()),
                        std::invalid_argument, [](const std::invalid_argument& error) {
                          return std::string(error.what()).starts_with(
                              "durability needs a sink that can be made durable");
                        });
}

BOOST_AUTO_TEST_CASE(a_books_directory_is_refused_beside_an_output_directory_and_without_durability) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::WriterOptions beside_files = jsonl_test::test_options(directory.path(), log);
  beside_files.durability.enabled = true;
  beside_files.durability.books_dir = directory.path() / "books";
  BOOST_CHECK_EXCEPTION(jsonl::JsonlRecordWriter<>(std::move(beside_files), lines()), std::invalid_argument,
                        [](const std::invalid_argument& error) {
                          return std::string(error.what()).starts_with("a books directory is for a sink that "
                                                                       "writes no files");
                        });
  jsonl::WriterOptions not_durable = destination_options(log);
  not_durable.durability.books_dir = directory.path() / "books";
  BOOST_CHECK_EXCEPTION(
      jsonl::JsonlRecordWriter<>(std::move(not_durable), lines(), std::make_shared<ReplicatedMemorySink>()),
      std::invalid_argument, [](const std::invalid_argument& error) {
        return std::string(error.what()) == "a books directory needs durability";
      });
}

BOOST_AUTO_TEST_CASE(a_destination_that_refuses_every_append_drops_each_record_as_a_write_error) {
  class RefusingSink : public jsonl::Sink {
   public:
    void append(const jsonl::FileAppend&, jsonl::AppendOutcome&) override {
      throw std::system_error(ECONNREFUSED, std::generic_category(), "connect");
    }
  };
  Log log;
  jsonl::JsonlRecordWriter<> writer(destination_options(log), lines(), std::make_shared<RefusingSink>());
  writer.start();
  for (int i = 0; i < 100; ++i) BOOST_TEST_REQUIRE(writer.submit(numbered(i)));
  writer.close();
  const jsonl::WriterStats stats = writer.stats();
  BOOST_TEST(stats.written == 0u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::write_error) == 100u);
  BOOST_TEST(accounting_holds(stats));
  const auto entries = log.entries();
  BOOST_TEST_REQUIRE(entries.size() == 1u);
  BOOST_TEST(entries[0].message.starts_with("Failed to write test JSONL: connect: "));
}

// The reader takes the first lines, stalls while the writer fills the socket and its own
// queue, then hangs up: every record is written, dropped for a full queue, or dropped as
// a write error, and what the reader took is the first lines, whole and in order.
BOOST_AUTO_TEST_CASE(a_socket_whose_reader_stalls_then_hangs_up_loses_nothing_silently) {
  int ends[2];
  BOOST_TEST_REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0);
  const int small = 4096;
  BOOST_TEST_REQUIRE(::setsockopt(ends[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small) == 0);
  constexpr int before_stall = 50;
  std::latch stalled(1);
  std::latch hang_up(1);
  std::string received;
  std::thread reader([&, fd = ends[1]] {
    char buffer[4096];
    while (std::count(received.begin(), received.end(), '\n') < before_stall) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n <= 0) break;
      received.append(buffer, static_cast<std::size_t>(n));
    }
    stalled.count_down();
    hang_up.wait();
    ::close(fd);
  });

  Log log;
  jsonl::WriterOptions options = destination_options(log);
  options.queue_size = 64;
  auto socket = std::make_shared<SocketSink>(ends[0]);
  jsonl::JsonlRecordWriter<> writer(std::move(options), lines(), socket);
  writer.start();
  for (int i = 0; i < before_stall; ++i) BOOST_TEST_REQUIRE(writer.submit(numbered(i)));
  stalled.wait();
  // Records until the socket is full and the queue behind it too: the hang-up then
  // finds a send waiting, whatever the threads' pace. Nothing reads the socket now, so
  // once a send finds it full it stays full.
  socket->full = false;
  int submitted = before_stall;
  const auto backed_up = [&] { return socket->full && writer.stats().dropped(jsonl::DropReason::queue_full) > 0; };
  for (; submitted < 2'000'000 && (submitted % 64 != 0 || !backed_up()); ++submitted) {
    writer.submit(numbered(submitted));
  }
  BOOST_TEST_REQUIRE(backed_up());
  hang_up.count_down();
  reader.join();
  writer.close();

  const jsonl::WriterStats stats = writer.stats();
  BOOST_TEST(stats.submitted == static_cast<std::uint64_t>(submitted));
  BOOST_TEST(accounting_holds(stats));
  BOOST_TEST(stats.unknown == 0u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::queue_full) > 0u);
  BOOST_TEST(stats.dropped(jsonl::DropReason::write_error) > 0u);
  BOOST_TEST(stats.dropped() == stats.dropped(jsonl::DropReason::queue_full) +
                                    stats.dropped(jsonl::DropReason::write_error));
  const std::size_t whole = received.rfind('\n') + 1;
  BOOST_TEST(received.substr(0, whole) == numbered_lines(0, static_cast<int>(std::count(received.begin(),
                                                                                       received.end(), '\n'))));
  BOOST_TEST(std::count(received.begin(), received.end(), '\n') <= static_cast<std::ptrdiff_t>(stats.written));
}

BOOST_AUTO_TEST_CASE(a_sinks_own_make_durable_decides_which_records_are_persisted) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::WriterOptions options = jsonl_test::test_options(directory.path(), log);
  options.durability.enabled = true;
  auto sink = std::make_shared<AcknowledgedSink>();
  jsonl::JsonlRecordWriter<> writer(std::move(options), lines(), sink);
  three_commits_the_second_refused(writer, *sink);
  BOOST_TEST(jsonl_test::read_file(writer.path().value()) == numbered_lines(0, 30));
}

// The books of a destination that is not a file hold the counts, in the books directory
// given, and no shards.
BOOST_AUTO_TEST_CASE(a_durable_destination_of_its_own_publishes_its_counts_in_the_books_directory) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::WriterOptions options = destination_options(log);
  options.durability.enabled = true;
  options.durability.books_dir = directory.path() / "books";
  auto sink = std::make_shared<ReplicatedMemorySink>();
  jsonl::JsonlRecordWriter<> writer(std::move(options), lines(), sink);
  three_commits_the_second_refused(writer, *sink);
  BOOST_TEST(sink->text() == numbered_lines(0, 30));

  const std::optional<std::filesystem::path> books = writer.books_file();
  BOOST_TEST_REQUIRE(books.has_value());
  BOOST_TEST(books->parent_path() == directory.path() / "books");
  const json::object document = json::parse(jsonl_test::read_file(*books)).as_object();
  BOOST_TEST(document.at("closed").as_bool());
  BOOST_TEST(document.at("counts").at("persisted").to_number<std::uint64_t>() == 20u);
  BOOST_TEST(document.at("counts").at("unknown").to_number<std::uint64_t>() == 10u);
  BOOST_TEST(document.at("shards").as_array().empty());
}

BOOST_AUTO_TEST_SUITE_END()

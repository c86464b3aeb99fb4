// One served request's records written in a loop, through the recording layer a server
// embeds (RequestRecorder over this project's writers, as `jsonl-perf serve` records):
// a perf record, a request line and a response line holding 16 streamed frames. The
// writers' threads' CPU per request here is what the serve section compares a server's
// against: whatever a server adds to it is the server's doing.
#include <boost/json.hpp>

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "measure.hpp"
#include "openai.hpp"
#include "sections.hpp"
#include "writer_threads.hpp"

import jsonl.recording;

namespace jsonl_bench {
namespace {

namespace json = boost::json;
using jsonl_perf::serve::Answer;
using jsonl_perf::serve::Route;
using jsonl::recording::RequestRecorder;

constexpr std::size_t tokens = 16;
constexpr std::size_t burst_size = 16;

// What this process's threads named `name` have had of the CPU, from their schedstat:
// their time on it (ns) and how many times they were put on it (each wake-up one).
struct ThreadsCpu {
  double ns = 0;
  double runs = 0;
};

ThreadsCpu threads_cpu(const char* name) {
  ThreadsCpu total;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm"), stat(task.path() / "schedstat");
    std::string thread_name;
    std::uint64_t ns = 0, waited_ns = 0, runs = 0;
    if (std::getline(comm, thread_name) && thread_name == name && (stat >> ns >> waited_ns >> runs)) {
      total.ns += double(ns);
      total.runs += double(runs);
    }
  }
  return total;
}

std::uint64_t own_cpu_ns() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return std::uint64_t(now.tv_sec) * 1'000'000'000 + std::uint64_t(now.tv_nsec);
}

// The sum of each count the recorder's accounting line gives after `word` ("submitted",
// "written", ...), over its writers.
std::size_t counted(const std::string& line, const std::string& word) {
  std::size_t total = 0;
  for (std::size_t at = line.find(word + ' '); at != std::string::npos; at = line.find(word + ' ', at + 1)) {
    total += std::stoull(line.substr(at + word.size() + 1));
  }
  return total;
}

// A request as `jsonl-perf client` sends one (its headers as the server reads them, a chat
// body with a prompt of 20 to 400 words) and the frames serve streams back.
struct ServedRequest {
  jsonl::recording::Headers headers;
  std::string text;  // the body as sent
  json::value body;  // and as the handler parses it
  std::vector<std::string> frames;
};

ServedRequest served_request(std::mt19937_64& random) {
  static constexpr const char* words[] = {"tell", "me", "about", "the", "cache", "and", "how", "it", "holds", "tokens"};
  static constexpr const char* vocabulary[] = {" the", " cache", " holds", " tokens", " of", " a", " request", "."};
  std::string prompt;
  const std::size_t count = std::uniform_int_distribution<std::size_t>(20, 400)(random);
  for (std::size_t i = 0; i < count; ++i) {
    if (i) prompt += ' ';
    prompt += words[random() % std::size(words)];
  }
  ServedRequest served;
  served.body = {{"model", "simulated-llm"},
                 {"messages", json::array{json::object{{"role", "user"}, {"content", prompt}}}},
                 {"max_tokens", tokens},
                 {"stream", true},
                 {"stream_options", {{"include_usage", true}}}};
  served.text = json::serialize(served.body);
  served.headers = {{"Host", "jsonl-perf"},
                    {"Content-Type", "application/json"},
                    {"User-Agent", "jsonl-perf-client"},
                    {"Authorization", "Bearer sk-not-a-real-key"},
                    {"Content-Length", std::to_string(served.text.size())}};
  Answer answer(Route::chat_completions, "simulated-llm", std::int64_t(count), 0, true);
  if (std::string opening = answer.stream_opening(); !opening.empty()) served.frames.push_back(std::move(opening));
  for (std::size_t i = 0; i < tokens; ++i) served.frames.push_back(answer.stream_token(vocabulary[random() % 8]));
  served.frames.push_back(answer.stream_closing("length"));
  return served;
}

// What the recorder is told of one streamed request, from arrival to its perf record. The
// recorder takes the headers and the body's text; the parsed body and the frames stay
// the caller's, freed where a server frees its own, not in the recorder's calls.
void record_one(const RequestRecorder& recorder, ServedRequest& served, std::int64_t request_id) {
  RequestRecorder::Request request = recorder.arrive("/v1/chat/completions", std::move(served.headers));
  recorder.accept(request, std::move(served.text), served.body);
  const double arrival = jsonl::recording::steady_seconds();
  recorder.first_token(request);
  for (const std::string& frame : served.frames) recorder.sent(request, frame);
  const double now = jsonl::recording::steady_seconds();
  recorder.finish(request, jsonl::recording::Outcome::completed,
                  jsonl::recording::EngineReport{.request_id = request_id,
                                                .arrival_time = arrival,
                                                .first_scheduled_time = arrival,
                                                .first_token_time = arrival,
                                                .last_token_time = now,
                                                .first_iter = request_id,
                                                .last_iter = request_id + 15,
                                                .total_blocks = 8,
                                                .new_blocks = 5,
                                                .reused_blocks = 3,
                                                .missed_blocks = 4});
}

// Sleeps until request `request` of a run that began at `start` is due at `rate` a second.
void sleep_until_request(Clock::time_point start, std::size_t request, double rate) {
  std::this_thread::sleep_until(
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(double(request) / rate)));
}

struct LoopCost {
  double writers_us = 0;   // the writers' threads' CPU per request
  double writer_runs_per_burst = 0;  // the times a burst put a writer's thread on a core
  double recorder_us = 0;  // the recorder's calls' CPU on the request's own thread
  std::size_t lost = 0;
};

// `count` requests at `rate` a second, in bursts, the recorder set up as
// serve's is by default; the writers' CPU taken once every record is written.
LoopCost request_loop(const std::filesystem::path& directory, bool durable_traces, std::size_t count, double rate) {
  std::filesystem::remove_all(directory);
  RequestRecorder recorder(jsonl::recording::RecorderOptions{
      .output_dir = directory,
      .durable_traces = durable_traces,
      .on_writer_thread_start = jsonl_perf::serve::writer_thread_start(0)});
  recorder.start();
  std::mt19937_64 random(7);
  const ThreadsCpu writers_before = threads_cpu(jsonl_perf::serve::writer_thread_name);
  std::uint64_t recording_ns = 0;
  const auto start = Clock::now();
  // A burst of requests at a time, each built just before it is recorded (as a server's
  // is: its body and frames are in the cache), only the recorder's calls timed.
  std::vector<ServedRequest> burst;
  for (std::size_t first = 0; first < count; first += burst_size) {
    sleep_until_request(start, first, rate);
    burst.clear();
    for (std::size_t i = first; i < std::min(first + burst_size, count); ++i) burst.push_back(served_request(random));
    const std::uint64_t before = own_cpu_ns();
    for (std::size_t i = 0; i < burst.size(); ++i) record_one(recorder, burst[i], std::int64_t(first + i));
    recording_ns += own_cpu_ns() - before;
  }
  LoopCost cost;
  cost.recorder_us = double(recording_ns) / 1e3 / double(count);
  // Every record settled before the writers' threads are read: they end at close.
  const auto settled = [&] {
    const std::string line = recorder.accounting_line();
    return counted(line, "written") + counted(line, "unknown") + counted(line, "dropped") ==
           counted(line, "submitted");
  };
  while (!settled() && Clock::now() - start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const ThreadsCpu writers_after = threads_cpu(jsonl_perf::serve::writer_thread_name);
  cost.writers_us = (writers_after.ns - writers_before.ns) / 1e3 / double(count);
  cost.writer_runs_per_burst = (writers_after.runs - writers_before.runs) / std::ceil(double(count) / burst_size);
  recorder.close();
  const std::string line = recorder.accounting_line();
  cost.lost = counted(line, "unknown") + counted(line, "dropped") + (3 * count - counted(line, "submitted"));
  return cost;
}

// Keeps what a recorder hands over, for the writers' formats to be timed alone.
class KeptRecords final : public jsonl::recording::RecordingDestination {
 public:
  bool start() override { return true; }
  void close() override {}
  bool trace(jsonl::recording::TraceLine line) override {
    traces.push_back(std::move(line));
    return true;
  }
  bool perf(jsonl::perf::PerfMetricsRecord record) override {
    perfs.push_back(std::move(record));
    return true;
  }
  std::vector<jsonl::WriterMetrics> writer_metrics() const override { return {}; }
  std::string accounting_line() const override { return {}; }

  std::vector<jsonl::recording::TraceLine> traces;
  std::vector<jsonl::perf::PerfMetricsRecord> perfs;
};

// The CPU per request of the writers' formats alone, on this thread: the loop's records
// (the same requests, recorded the same way) made into their lines, a burst's lines of a
// file into one text, as a drain makes them; no hand-off, no wake-up, no file.
double formats_cpu_us(std::size_t count) {
  auto kept = std::make_unique<KeptRecords>();
  KeptRecords& records = *kept;
  RequestRecorder recorder(jsonl::recording::RecorderOptions{}, std::move(kept));
  recorder.start();
  std::mt19937_64 random(7);
  for (std::size_t i = 0; i < count; ++i) {
    ServedRequest served = served_request(random);
    record_one(recorder, served, std::int64_t(i));
  }
  const jsonl::recording::TraceLineFormat trace_format({});
  const jsonl::PerfMetricsTypedFormat perf_format;
  std::string requests_text, responses_text, perfs_text;
  // The least of three passes, each over a copy of the records (a format may move from
  // what it writes).
  std::uint64_t least_ns = UINT64_MAX;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<jsonl::recording::TraceLine> traces = records.traces;
    std::vector<jsonl::perf::PerfMetricsRecord> perfs = records.perfs;
    const std::uint64_t before = own_cpu_ns();
    for (std::size_t first = 0; first < count; first += burst_size) {
      requests_text.clear(), responses_text.clear(), perfs_text.clear();
      for (std::size_t i = first; i < std::min(first + burst_size, count); ++i) {
        trace_format.append_line(traces[2 * i], requests_text);
        trace_format.append_line(traces[2 * i + 1], responses_text);
        perf_format.append_line(perfs[i], perfs_text);
      }
    }
    least_ns = std::min(least_ns, own_cpu_ns() - before);
  }
  return double(least_ns) / 1e3 / double(count);
}

// What one wake-up costs a thread here: a thread asleep between bursts at the loop's
// pace and doing nothing else, its CPU per wake-up (the kernel's and, on a virtual
// machine, the hypervisor's share of waking it as this thread's time).
double wake_up_cpu_us(double rate) {
  constexpr std::size_t wake_ups = 200;
  const auto start = Clock::now();
  const std::uint64_t before = own_cpu_ns();
  for (std::size_t i = 1; i <= wake_ups; ++i) {
    sleep_until_request(start, i * burst_size, rate);
  }
  return double(own_cpu_ns() - before) / 1e3 / double(wake_ups);
}

// A line as the floors make it: whole, and for the escaped floor the text before and
// after a response line's streamed body and the body as it was sent (empty for a line
// copied whole there too).
struct FloorLine {
  std::string whole;
  std::string before;
  std::string body;
  std::string after;
};

// Every line of every line file the recorder wrote under `directory` (its books apart),
// a file's lines in its order, a response line's streamed body taken out of its JSON
// text: the lines the floors write again.
std::vector<std::vector<FloorLine>> floor_lines(const std::filesystem::path& directory) {
  constexpr std::string_view opening = "\"body\":\"", closing = "\"}}\n";
  std::vector<std::vector<FloorLine>> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(directory)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".jsonl") continue;
    std::ifstream in(entry.path());
    std::vector<FloorLine>& lines = files.emplace_back();
    for (std::string text; std::getline(in, text);) {
      FloorLine& line = lines.emplace_back(FloorLine{text + '\n', {}, {}, {}});
      const json::value parsed = json::parse(text);
      const json::value* response = parsed.as_object().if_contains("response");
      if (!response || response->at("kind") != "sse_text" || !line.whole.ends_with(closing)) continue;
      const std::size_t body_at = line.whole.rfind(opening) + opening.size();
      line.before = line.whole.substr(0, body_at);
      line.body = response->at("body").as_string();
      line.after = closing;
    }
  }
  return files;
}

// What each byte of a JSON string becomes, as json.dumps writes it without ensure_ascii:
// up to six bytes, and how many.
struct EscapeForm {
  char bytes[8];
  std::size_t length;
};
constexpr std::array<EscapeForm, 256> escape_forms = [] {
  std::array<EscapeForm, 256> forms{};
  constexpr char hex[] = "0123456789abcdef";
  for (unsigned c = 0; c < 256; ++c) {
    forms[c] = {{static_cast<char>(c)}, 1};
    if (c < 0x20) forms[c] = {{'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]}, 6};
  }
  const std::pair<char, char> short_forms[] = {{'"', '"'}, {'\\', '\\'}, {'\n', 'n'}, {'\r', 'r'},
                                               {'\t', 't'}, {'\b', 'b'}, {'\f', 'f'}};
  for (const auto& [c, letter] : short_forms) forms[static_cast<unsigned char>(c)] = {{'\\', letter}, 2};
  return forms;
}();

// The floors the writers' threads are judged against: the same lines, made before the
// clock starts, copied into a buffer per file and written `requests_a_write` requests a
// `write` per file, into files on the same file system; escaped, the response lines'
// streamed bodies escaped into the buffer by a loop over a table of each byte's form as
// they are copied. Back to back, or paced: a write's requests at a time at the loop's
// `rate`, this thread asleep between them as the writers' threads are (what writing
// costs a thread that comes to it cold); held, a write every hold of the recorder's
// writers, as often as they wake. This thread's CPU per request, and whether the files
// hold the recorded lines byte for byte.
struct Floor {
  double cpu_us = 0;
  bool same_bytes = true;
};

struct FloorKind {
  bool escaped = false;
  std::optional<double> paced_rate;  // requests a second
  std::size_t requests_a_write = burst_size;
};

Floor floor_per_request(const std::filesystem::path& directory, const std::vector<std::vector<FloorLine>>& files,
                        std::size_t requests, FloorKind kind) {
  const bool escaped = kind.escaped;
  const std::size_t group = kind.requests_a_write;
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  const auto file = [&](std::size_t f) { return directory / ("floor-" + std::to_string(f) + ".jsonl"); };
  std::vector<int> descriptors;
  std::size_t room = 0;  // the most a burst's lines of one file can take
  for (std::size_t f = 0; f < files.size(); ++f) {
    descriptors.push_back(::open(file(f).c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    for (std::size_t first = 0; first < files[f].size(); first += group) {
      std::size_t bytes = 0;
      for (std::size_t i = first; i < std::min(first + group, files[f].size()); ++i) {
        const FloorLine& line = files[f][i];
        bytes += std::max(line.whole.size(), line.before.size() + 6 * line.body.size() + line.after.size()) + 8;
      }
      room = std::max(room, bytes);
    }
  }
  const auto buffer = std::make_unique_for_overwrite<char[]>(room);
  const auto copy = [](char* to, const std::string& text) { return to + text.copy(to, text.size()); };
  const std::uint64_t before = own_cpu_ns();
  const auto start = Clock::now();
  for (std::size_t first = 0; first < requests; first += group) {
    if (kind.paced_rate) {
      sleep_until_request(start, first, *kind.paced_rate);
    }
    for (std::size_t f = 0; f < files.size(); ++f) {
      char* cursor = buffer.get();
      for (std::size_t i = first; i < std::min(first + group, files[f].size()); ++i) {
        const FloorLine& line = files[f][i];
        if (!escaped || line.body.empty()) {
          cursor = copy(cursor, line.whole);
          continue;
        }
        cursor = copy(cursor, line.before);
        for (const char c : line.body) {
          const EscapeForm& form = escape_forms[static_cast<unsigned char>(c)];
          std::memcpy(cursor, form.bytes, sizeof form.bytes);
          cursor += form.length;
        }
        cursor = copy(cursor, line.after);
      }
      const auto bytes = static_cast<std::size_t>(cursor - buffer.get());
      if (bytes != 0 && ::write(descriptors[f], buffer.get(), bytes) != ssize_t(bytes)) {
        std::perror("request_records_floor: write");
      }
    }
  }
  const std::uint64_t spent = own_cpu_ns() - before;
  for (const int descriptor : descriptors) ::close(descriptor);
  Floor floor{double(spent) / 1e3 / double(requests)};
  for (std::size_t f = 0; f < files.size(); ++f) {
    std::string expected;
    for (std::size_t i = 0; i < std::min(files[f].size(), (requests + group - 1) / group * group); ++i) {
      expected += files[f][i].whole;
    }
    std::ifstream in(file(f), std::ios::binary);
    floor.same_bytes &= std::string(std::istreambuf_iterator<char>(in), {}) == expected;
  }
  return floor;
}

}  // namespace

int request_records(const Settings& settings) {
  // The serve section's light load on the machines we measure on: every batch full.
  constexpr double rate = 1500;
  const std::size_t count = settings.quick ? 1500 : 15000;
  int failed = 0;
  double floor_us = 0, paced_floor_us = 0, held_escaped_floor_us = 0;
  for (const bool durable : {false, true}) {
    const LoopCost cost = request_loop(settings.disk_dir / "request_records", durable, count, rate);
    const std::string name = durable ? "request_records_loop_durable_" : "request_records_loop_";
    if (!durable) {
      const auto lines = floor_lines(settings.disk_dir / "request_records");
      const std::filesystem::path directory = settings.disk_dir / "request_records_floor";
      floor_us = floor_per_request(directory, lines, count, {}).cpu_us;
      figure("request_records_floor_cpu_per_request", floor_us, "us");
      // Beside it, what escaping the streamed bodies adds to the bare copy: a bound on
      // what any serializer pays for them.
      const Floor escaped = floor_per_request(directory, lines, count, {.escaped = true});
      figure("request_records_escaped_floor_cpu_per_request", escaped.cpu_us, "us");
      failed += target("request_records_escaped_floor_writes_the_recorded_bytes", escaped.same_bytes,
                       escaped.same_bytes ? "same bytes" : "the files differ");
      // And both at the loop's pace: the same writes, each burst to a cold thread.
      paced_floor_us = floor_per_request(directory, lines, count, {.paced_rate = rate}).cpu_us;
      figure("request_records_paced_floor_cpu_per_request", paced_floor_us, "us");
      const Floor paced_escaped = floor_per_request(directory, lines, count, {.escaped = true, .paced_rate = rate});
      figure("request_records_paced_escaped_floor_cpu_per_request", paced_escaped.cpu_us, "us");
      // And escaped, a write per file every hold: the least a thread woken as often as
      // the writers' threads can spend on these bytes.
      const auto held_requests = static_cast<std::size_t>(
          rate * std::chrono::duration<double>(jsonl::recording::RecorderOptions{}.hold_for).count());
      held_escaped_floor_us =
          floor_per_request(directory, lines, count,
                            {.escaped = true, .paced_rate = rate, .requests_a_write = held_requests})
              .cpu_us;
      figure("request_records_held_escaped_floor_cpu_per_request", held_escaped_floor_us, "us");
      figure("request_records_wake_up_cpu", wake_up_cpu_us(rate), "us");
      figure("request_records_formats_cpu_per_request", formats_cpu_us(count), "us");
    }
    figure((name + "writer_threads_cpu_per_request").c_str(), cost.writers_us, "us");
    figure((name + "recorder_cpu_per_request").c_str(), cost.recorder_us, "us");
    figure((name + "writer_threads_runs_per_burst").c_str(), cost.writer_runs_per_burst, "runs");
    const double to_floor = cost.writers_us / floor_us;
    figure((name + "writer_threads_to_floor").c_str(), to_floor, "x");
    figure((name + "writer_threads_to_paced_floor").c_str(), cost.writers_us / paced_floor_us, "x");
    figure((name + "writer_threads_to_held_escaped_floor").c_str(), cost.writers_us / held_escaped_floor_us, "x");
    const double most_to_floor = durable ? 6 : 4, most_us = durable ? 20 : 12;
    char detail[64];
    std::snprintf(detail, sizeof detail, "%.3gx", to_floor);
    failed += target((name + "writer_threads_at_most_" + std::to_string(int(most_to_floor)) + "x_floor").c_str(),
                     to_floor <= most_to_floor, detail);
    std::snprintf(detail, sizeof detail, "%.3g us", cost.writers_us);
    failed += target((name + "writer_threads_at_most_" + std::to_string(int(most_us)) + "us").c_str(),
                     cost.writers_us <= most_us, detail);
    std::snprintf(detail, sizeof detail, "%.3g us", cost.recorder_us);
    failed += target((name + "recorder_at_most_3us").c_str(), cost.recorder_us <= 3, detail);
    failed += target((name + "lost_nothing").c_str(), cost.lost == 0, std::to_string(cost.lost) + " records lost");
  }
  return failed;
}

}  // namespace jsonl_bench

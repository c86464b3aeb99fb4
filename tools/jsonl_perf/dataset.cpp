#include "dataset.hpp"

#include "bounded_lines.hpp"

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <mutex>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <thread>
#include <unistd.h>
#include <tuple>
#include <vector>

import jsonl.writer;

namespace jsonl_perf {
namespace {

// Lines are parsed with simdjson's DOM parser (exact doubles, as Python's json.loads
// reads them): twice as fast here as Boost.JSON into an arena a line.
using Element = simdjson::dom::element;

std::optional<Element> find(Element value, std::initializer_list<std::string_view> path) {
  for (std::string_view key : path) {
    simdjson::dom::object object;
    if (value.get_object().get(object) != simdjson::SUCCESS || object.at_key(key).get(value) != simdjson::SUCCESS) {
      return std::nullopt;
    }
  }
  return value;
}

bool number(std::optional<Element> value, double& out) {
  if (!value) return false;
  switch (value->type()) {
    case simdjson::dom::element_type::INT64:
      out = static_cast<double>(std::int64_t(*value));
      break;
    case simdjson::dom::element_type::UINT64:
      out = static_cast<double>(std::uint64_t(*value));
      break;
    case simdjson::dom::element_type::DOUBLE:
      out = double(*value);
      break;
    default:
      return false;
  }
  return std::isfinite(out);
}

void add_difference(Group& group, const std::string& metric, Element record,
                    std::initializer_list<std::string_view> end, std::initializer_list<std::string_view> start) {
  double a = 0, b = 0;
  if (number(find(record, end), b) && number(find(record, start), a)) group.samples[metric].push_back((b - a) * 1000);
}

// The server kind in "perf_metrics-<kind>-<host>-<pid>-<time>.jsonl" (kinds hold no '-').
std::string kind_of(const std::filesystem::path& file) {
  std::string name = file.filename().string();
  const std::string prefix = "perf_metrics-";
  if (name.rfind(prefix, 0) != 0) return "unknown";
  name = name.substr(prefix.size());
  return name.substr(0, name.find('-'));
}

using GroupKey = std::tuple<std::string, std::string>;  // (server kind, status)

void add_record(std::vector<double>& arrival_times, std::map<GroupKey, Group>& groups,
                const std::string& kind, Element record) {
  const std::optional<Element> status_value = find(record, {"status"});
  const std::string status = status_value && status_value->is_string() ? std::string(std::string_view(*status_value))
                             : status_value                            ? simdjson::minify(*status_value)
                                                                       : "(none)";
  Group& group = groups[{kind, status}];
  group.kind = kind;
  group.status = status;
  ++group.records;

  const bool disagg = find(record, {"ctx_server"}).has_value();
  if (disagg) {
    add_difference(group, "queue_ms", record, {"ctx_perf_metrics", "perf_metrics", "timing_metrics", "first_scheduled_time"},
                   {"ctx_perf_metrics", "perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "ttft_ms", record, {"ctx_perf_metrics", "perf_metrics", "timing_metrics", "first_token_time"},
                   {"ctx_perf_metrics", "perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "e2e_ms", record, {"gen_perf_metrics", "perf_metrics", "timing_metrics", "last_token_time"},
                   {"gen_perf_metrics", "perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "frontend_ttft_ms", record, {"disagg_server_first_token_time"}, {"disagg_server_arrival_time"});
    add_difference(group, "ctx_dispatch_ms", record, {"disagg_ctx_dispatch_time"}, {"disagg_server_arrival_time"});
  } else {
    add_difference(group, "queue_ms", record, {"perf_metrics", "timing_metrics", "first_scheduled_time"},
                   {"perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "ttft_ms", record, {"perf_metrics", "timing_metrics", "first_token_time"},
                   {"perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "e2e_ms", record, {"perf_metrics", "timing_metrics", "last_token_time"},
                   {"perf_metrics", "timing_metrics", "arrival_time"});
  }

  for (std::string_view phase : {"perf_metrics", "ctx_perf_metrics", "gen_perf_metrics"}) {
    const std::optional<Element> kv = disagg ? find(record, {phase, "perf_metrics", "kv_cache_metrics"})
                                   : find(record, {phase, "kv_cache_metrics"});
    double reused = 0, allocated = 0;
    if (kv && number(find(*kv, {"num_reused_blocks"}), reused) &&
        number(find(*kv, {"num_total_allocated_blocks"}), allocated)) {
      group.reused_blocks += reused;
      group.allocated_blocks += allocated;
    }
    if (!disagg) break;
  }

  double arrival = 0;
  if (number(disagg ? find(record, {"disagg_server_arrival_time"})
                    : find(record, {"perf_metrics", "timing_metrics", "arrival_time"}),
             arrival)) {
    arrival_times.push_back(arrival);
  }
}

// A stretch of one file that holds whole lines (of a compressed file, whole frames): the
// unit two threads share out. The last piece of a file ends at the file's end, a torn
// last line included; of a compressed file, at its last whole frame, with the bytes of
// a torn frame after it.
struct Piece {
  std::size_t file;
  std::uint64_t begin;
  std::uint64_t end;
  bool last;
  bool compressed = false;
};

// What one piece holds, merged with the others' in file order.
struct PieceResult {
  std::map<GroupKey, Group> groups;
  std::vector<double> arrival_times;
  std::uint64_t lines = 0;
  std::uint64_t bad_lines = 0;
  std::uint64_t torn_lines = 0;
  // A skipped line: its number within the piece (from 1) and what to say of it.
  std::vector<std::pair<std::uint64_t, std::string>> notes;
};

constexpr std::uint64_t piece_bytes = std::uint64_t{32} << 20;
constexpr std::size_t chunk_bytes = std::size_t{1} << 20;

class FileReader {
 public:
  explicit FileReader(const std::filesystem::path& file) : fd_(::open(file.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw std::runtime_error("cannot read " + file.string());
  }
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  ~FileReader() { ::close(fd_); }

  // Reads up to `size` bytes at `offset` into `out`; returns how many.
  std::size_t read(std::uint64_t offset, char* out, std::size_t size) const {
    std::size_t done = 0;
    while (done < size) {
      const ssize_t got = ::pread(fd_, out + done, size - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw std::runtime_error(std::string("read error: ") + std::strerror(errno));
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  }

 private:
  int fd_;
};

// The offset just after the first '\n' at or after `from`, or `size` when none follows.
std::uint64_t next_line_start(const FileReader& reader, std::uint64_t from, std::uint64_t size) {
  char buffer[4096];
  while (from < size) {
    const std::size_t got = reader.read(from, buffer, sizeof buffer);
    if (got == 0) break;
    if (const void* newline = std::memchr(buffer, '\n', got)) {
      return from + static_cast<std::uint64_t>(static_cast<const char*>(newline) - buffer) + 1;
    }
    from += got;
  }
  return size;
}

// A compressed file's pieces: frames, found by their headers (nothing is decoded), taken
// until a piece holds about `piece_bytes` of content at a usual ratio. What follows the
// last whole frame (the frame a writer is writing or left, or bytes that are no frame)
// is the last piece: decoded as far as its appends were written whole.
void add_frame_pieces(std::size_t f, const FileReader& reader, std::uint64_t size, std::vector<Piece>& pieces) {
  constexpr std::uint64_t compressed_piece_bytes = piece_bytes / 8;
  std::string window;  // bytes of the file from window_at
  std::uint64_t window_at = 0;
  std::uint64_t begin = 0;
  std::uint64_t at = 0;  // where the next frame starts
  while (at < size) {
    std::optional<std::size_t> frame;
    if (at >= window_at && at - window_at < window.size()) {
      try {
        frame = jsonl::zstd_frame_size(std::string_view(window).substr(at - window_at));
      } catch (const std::runtime_error&) {
        break;
      }
    }
    if (!frame) {
      // Read the frame from its start, into a window twice as long as the last one when
      // that one already started there.
      const bool from_here = window_at == at && !window.empty();
      if (from_here && window.size() >= size - at) break;  // the file ends inside the frame
      const auto length = static_cast<std::size_t>(
          std::min<std::uint64_t>(from_here ? window.size() * 2 : chunk_bytes, size - at));
      window.resize(length);
      window.resize(reader.read(at, window.data(), length));
      window_at = at;
      if (window.empty()) break;  // the file shrank under us
      continue;
    }
    at += *frame;
    if (at - begin >= compressed_piece_bytes || at == size) {
      pieces.push_back({f, begin, at, at == size, true});
      begin = at;
    }
  }
  if (at < size) pieces.push_back({f, begin, size, true, true});
}

std::vector<Piece> pieces_of(const std::vector<std::filesystem::path>& files) {
  std::vector<Piece> pieces;
  for (std::size_t f = 0; f < files.size(); ++f) {
    const FileReader reader(files[f]);
    const std::uint64_t size = std::filesystem::file_size(files[f]);
    if (jsonl::is_compressed_file(files[f])) {
      add_frame_pieces(f, reader, size, pieces);
      continue;
    }
    std::uint64_t begin = 0;
    do {
      const std::uint64_t end = size - begin <= piece_bytes ? size : next_line_start(reader, begin + piece_bytes, size);
      pieces.push_back({f, begin, end, end == size});
      begin = end;
    } while (begin < size);
  }
  return pieces;
}

// Ends `lines`, handing out nothing: the length of the line it held open, if any.
std::uint64_t cut_short_line_bytes(BoundedLines& lines) {
  std::uint64_t bytes = 0;
  lines.finish([&](const Line& line) { bytes = line.bytes; });
  return bytes;
}

// Reads a piece a chunk at a time, line by line: memory is the chunk, one line of at
// most `max_line_bytes` and the samples.
void load_piece(const Piece& piece, const std::filesystem::path& file, std::uint64_t max_line_bytes,
                PieceResult& result) {
  const FileReader reader(file);
  const std::string kind = kind_of(file);
  simdjson::dom::parser parser;
  // The parser reads up to SIMDJSON_PADDING bytes past a line: the chunk has room after
  // its last line, and so has the splitter's carry.
  std::vector<char> chunk(chunk_bytes + simdjson::SIMDJSON_PADDING);
  BoundedLines lines(max_line_bytes, simdjson::SIMDJSON_PADDING);
  const auto take_line = [&](const Line& line) {
    ++result.lines;
    if (line.overlong) {
      (line.terminated ? result.bad_lines : result.torn_lines) += 1;
      result.notes.emplace_back(line.number, std::string(line.terminated ? "" : "torn last line (no newline), ") +
                                                 std::to_string(line.bytes) + " bytes, longer than the " +
                                                 std::to_string(max_line_bytes) + " a line is read for, skipped");
      return;
    }
    if (!line.terminated) {
      ++result.torn_lines;
      result.notes.emplace_back(line.number, "torn last line (no newline), skipped");
      return;
    }
    Element record;
    const simdjson::error_code error = parser.parse(line.text.data(), line.text.size(), false).get(record);
    if (!error && record.is_object()) {
      add_record(result.arrival_times, result.groups, kind, record);
      return;
    }
    ++result.bad_lines;
    result.notes.emplace_back(line.number, (error ? std::string("not JSON: ") + simdjson::error_message(error)
                                                  : std::string("not a JSON object")) +
                                               ", skipped");
  };
  // A compressed piece's content is decoded into a buffer of its own, then copied into
  // the padded chunk a piece of the decoder's output at a time.
  std::optional<jsonl::ZstdDecoder> frames;
  std::vector<char> compressed;
  if (piece.compressed) {
    frames.emplace();
    compressed.resize(chunk_bytes);
  }
  for (std::uint64_t offset = piece.begin; offset < piece.end;) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_bytes, piece.end - offset));
    if (!frames) {
      const std::size_t got = reader.read(offset, chunk.data(), want);
      if (got == 0) break;
      offset += got;
      lines.feed(std::string_view(chunk.data(), got), take_line);
      continue;
    }
    const std::size_t got = reader.read(offset, compressed.data(), want);
    if (got == 0) break;
    try {
      frames->decode(std::string_view(compressed.data(), got), [&](std::string_view content) {
        std::memcpy(chunk.data(), content.data(), content.size());
        lines.feed(std::string_view(chunk.data(), content.size()), take_line);
      });
    } catch (const std::runtime_error& error) {
      // The piece's frames after this point cannot be trusted to decode: they and the
      // line in hand, cut short by them, are one bad stretch, and the rest of the piece
      // is skipped.
      const std::uint64_t cut_short = cut_short_line_bytes(lines);
      ++result.lines;
      ++result.bad_lines;
      result.notes.emplace_back(result.lines, "bytes [" + std::to_string(offset) + ", " + std::to_string(piece.end) +
                                                  "): " + error.what() + ", skipped" +
                                                  (cut_short == 0 ? std::string()
                                                                  : " with the " + std::to_string(cut_short) +
                                                                        " bytes of a line decoded before them"));
      return;
    }
    offset += got;
  }
  if (!frames) {
    lines.finish(take_line);
    return;
  }
  // A compressed file cut short ends in one torn tail, whatever the writer's blocks: the
  // line the last whole block leaves open and the bytes of the frame after that block.
  // The blocks of an append that spans several need not end on a line.
  const std::uint64_t cut_short = cut_short_line_bytes(lines);
  if (cut_short == 0 && frames->between_pieces()) return;
  ++result.lines;
  ++result.torn_lines;
  result.notes.emplace_back(result.lines, "torn tail at the end (" + std::to_string(cut_short) +
                                              " bytes of a line cut short, then " +
                                              std::to_string(frames->bytes_since_piece_end()) +
                                              " bytes of a zstd frame after its last whole block), skipped");
}

}  // namespace

Dataset load_dataset(const std::vector<std::filesystem::path>& paths, std::ostream& err, unsigned threads,
                     std::uint64_t max_line_bytes) {
  std::vector<std::filesystem::path> files;
  for (const auto& path : paths) {
    if (std::filesystem::is_directory(path)) {
      std::vector<std::filesystem::path> found;
      for (const auto& item : std::filesystem::directory_iterator(path)) {
        const std::string name = item.path().filename().string();
        if (name.rfind("perf_metrics-", 0) == 0 && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))) {
          found.push_back(item.path());
        }
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(path)) {
      files.push_back(path);
    } else {
      throw std::runtime_error("no such file or directory: " + path.string());
    }
  }

  // Pieces are shared out to the cores; merged in file order and sorted, the result is
  // the one reading them one after another gives.
  const std::vector<Piece> pieces = pieces_of(files);
  std::vector<PieceResult> results(pieces.size());
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  {
    std::vector<std::jthread> workers;
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned t = 0; t < std::min<std::size_t>(threads, pieces.size()); ++t) {
      workers.emplace_back([&] {
        for (std::size_t i; (i = next.fetch_add(1)) < pieces.size();) {
          try {
            load_piece(pieces[i], files[pieces[i].file], max_line_bytes, results[i]);
          } catch (...) {
            const std::lock_guard lock(failure_mutex);
            if (!failure) failure = std::current_exception();
          }
        }
      });
    }
  }
  if (failure) std::rethrow_exception(failure);

  Dataset dataset;
  dataset.files = files.size();
  std::map<GroupKey, Group> groups;
  std::uint64_t line_in_file = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    PieceResult& result = results[i];
    for (const auto& [line, note] : result.notes) {
      err << files[pieces[i].file].string() << ":" << line_in_file + line << ": " << note << '\n';
    }
    line_in_file = pieces[i].last ? 0 : line_in_file + result.lines;
    dataset.lines += result.lines;
    dataset.bad_lines += result.bad_lines;
    dataset.torn_lines += result.torn_lines;
    dataset.arrival_times.insert(dataset.arrival_times.end(), result.arrival_times.begin(), result.arrival_times.end());
    for (auto& [key, part] : result.groups) {
      Group& group = groups[key];
      group.kind = part.kind;
      group.status = part.status;
      group.records += part.records;
      group.reused_blocks += part.reused_blocks;
      group.allocated_blocks += part.allocated_blocks;
      for (auto& [metric, values] : part.samples) {
        std::vector<double>& all = group.samples[metric];
        all.insert(all.end(), values.begin(), values.end());
      }
    }
    result = PieceResult();
  }
  for (auto& [key, group] : groups) {
    for (auto& [metric, values] : group.samples) std::sort(values.begin(), values.end());
    dataset.groups.push_back(std::move(group));
  }
  std::sort(dataset.arrival_times.begin(), dataset.arrival_times.end());
  return dataset;
}

double percentile(const std::vector<double>& values, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * values.size()));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

}  // namespace jsonl_perf

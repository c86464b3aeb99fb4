// jsonl-perf replay: raw records, one JSON value a line, through a perf-metrics writer,
// read as Python's json.loads reads them (correctly rounded doubles, NaN and Infinity
// tokens, exact 64-bit integers).
#include <boost/json.hpp>

#include <istream>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bounded_lines.hpp"
#include "commands.hpp"
#include "python_json.hpp"

import jsonl.perf_metrics;

namespace jsonl_perf {

int run_replay(const ReplayOptions& options, std::istream& in, std::ostream& out, std::ostream& err) {
  jsonl::WriterOptions writer_options = jsonl::perf_metrics_options(options.output_dir, options.kind);
  if (options.zstd_level) writer_options.compression = jsonl::Compression::zstd(*options.zstd_level);
  jsonl::ArenaPerfMetricsJsonlWriter writer(std::move(writer_options));
  writer.start();
  if (!writer.path()) return 1;  // the writer logged why

  const boost::json::parse_options python_like = python_json_loads();

  std::uint64_t skipped = 0;
  BoundedLines lines(options.max_line_bytes);
  const auto take_line = [&](const Line& line) {
    if (line.overlong) {
      err << "line " << line.number << ": " << line.bytes << " bytes, longer than the " << options.max_line_bytes
          << " a line is read for, skipped\n";
      ++skipped;
      return;
    }
    boost::system::error_code error;
    // Each record in an arena of its own: built in a few blocks, freed in a few calls.
    jsonl::ArenaRecord record = jsonl::ArenaRecord::parse(line.text, error, python_like);
    if (error) {
      err << "line " << line.number << ": not JSON: " << error.message() << '\n';
      ++skipped;
      return;
    }
    writer.submit_wait(std::move(record));
  };
  std::vector<char> chunk(std::size_t{1} << 20);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    lines.feed(std::string_view(chunk.data(), static_cast<std::size_t>(in.gcount())), take_line);
  }
  lines.finish(take_line);
  const std::uint64_t read = lines.lines();
  const bool complete = in.eof() && !in.bad();
  writer.close();
  out << writer.path()->string() << '\n';
  const auto stats = writer.stats();
  err << "read " << read << ", submitted " << stats.submitted << ", written " << stats.written
      << ", dropped " << stats.dropped() << " (malformed " << stats.dropped(jsonl::DropReason::malformed) << ", serialize error "
      << stats.dropped(jsonl::DropReason::serialize_error) << ", write error " << stats.dropped(jsonl::DropReason::write_error) + stats.dropped(jsonl::DropReason::unexpected_write)
      << ", abandoned " << stats.dropped(jsonl::DropReason::abandoned) << "), skipped " << skipped << '\n';
  if (!complete) {
    err << "input: read error\n";
    return 2;
  }
  return 0;
}

}  // namespace jsonl_perf

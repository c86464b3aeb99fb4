// jsonl-perf replay: raw records, one JSON value a line, through a perf-metrics writer,
// read as Python's json.loads reads them (correctly rounded doubles, NaN and Infinity
// tokens, exact 64-bit integers).
#include <boost/json.hpp>

#include <istream>
#include <ostream>
#include <string>
#include <utility>

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

  std::uint64_t read = 0;
  std::uint64_t skipped = 0;
  std::string line;
  while (std::getline(in, line)) {
    ++read;
    boost::system::error_code error;
    // Each record in an arena of its own: built in a few blocks, freed in a few calls.
    jsonl::ArenaRecord record = jsonl::ArenaRecord::parse(line, error, python_like);
    if (error) {
      err << "line " << read << ": not JSON: " << error.message() << '\n';
      ++skipped;
      continue;
    }
    writer.submit_wait(std::move(record));
  }
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

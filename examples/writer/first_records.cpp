// A writer's first records: three JSON values to metrics/requests-<host>-<pid>-<time>.jsonl,
// every one accounted for. Writes under DIR (default "first_records_out"); exit 0 when
// every record submitted was written.
#include <boost/json.hpp>

#include <filesystem>
#include <string>

import jsonl.writer;

int main(int argc, char** argv) {
  const std::filesystem::path root = argc > 1 ? argv[1] : "first_records_out";
  // docs:begin writer
  jsonl::JsonlRecordWriter<> writer({.output_dir = root / "metrics", .file_stem = "requests",
                                     .subject = "request"});
  writer.start();  // creates metrics/, names requests-<host>-<pid>-<UTC time>.jsonl
  for (int id = 0; id < 3; ++id) {
    // Never blocks: false when the queue is full or the writer is closing.
    writer.submit(boost::json::object{{"request_id", id}, {"latency_s", 0.25}});
  }
  writer.close();  // writes everything queued, waiting at most the shutdown timeout
  const jsonl::WriterStats stats = writer.stats();
  const bool accounted = stats.submitted == stats.written + stats.dropped();
  // docs:end writer
  return accounted && stats.written == 3 ? 0 : 1;
}

module;

#include <cstddef>
#include <string>
#include <vector>

module jsonl.writer;

import :batch_serializer;

namespace jsonl::detail {

std::size_t SerializedBatch::count(WriterEngine& engine, std::size_t& accounted) {
  std::size_t dropped = 0;
  for (const LineOutcome& outcome : outcomes) {
    switch (outcome.kind) {
      case LineOutcome::written:
        continue;
      case LineOutcome::sanitized:
        engine.count_sanitized();
        continue;
      case LineOutcome::malformed:
        engine.count_malformed(outcome.error);
        break;
      case LineOutcome::unexpected:
        engine.count_serialize_errors(1, outcome.error);
        break;
    }
    ++dropped;
    ++accounted;
  }
  if (failure) appends.clear();
  std::erase_if(appends, [](const FileAppend& append) { return append.records == 0; });
  std::size_t written = 0;
  for (const FileAppend& append : appends) written += append.records;
  if (dropped + written < records) {
    const std::size_t lost = records - dropped - written;
    engine.count_serialize_errors(lost, failure ? *failure : "batch layout returned fewer lines than records");
    accounted += lost;
  }
  return written;
}

}  // namespace jsonl::detail

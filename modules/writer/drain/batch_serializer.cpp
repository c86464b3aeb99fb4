module;

#include <cstddef>
#include <string>
#include <vector>

module jsonl.writer;

import :batch_serializer;

namespace jsonl::detail {

void SerializedBatch::prepare(std::size_t batch_size, std::size_t room) {
  for (std::string& text : spare_texts) text.reserve(room);
  outcomes.reserve(batch_size);
  appends.reserve(1);
  chunk_texts.reserve(spare_texts.size());
}

std::size_t SerializedBatch::count(Accounts& accounts, std::size_t& accounted) {
  for (const LineOutcome& outcome : outcomes) {
    switch (outcome.kind) {
      case LineOutcome::written:
        continue;
      case LineOutcome::sanitized:
        accounts.sanitized();
        continue;
      case LineOutcome::malformed:
        accounts.malformed(outcome.error);
        break;
      case LineOutcome::unexpected:
        accounts.unexpected(Accounts::Stage::serializing, 1, outcome.error);
        break;
    }
    ++accounted;
  }
  std::erase_if(appends, [](const FileAppend& append) { return append.records == 0; });
  std::size_t written = 0;
  for (const FileAppend& append : appends) written += append.records;
  return written;
}

}  // namespace jsonl::detail

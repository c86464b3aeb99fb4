// Serializing one batch: the layout's groups become appends, and each record's outcome
// is noted rather than counted, so that batches can be serialized side by side and
// still be counted one after another, in submission order. Not part of the public
// contract; exported only because JsonlRecordWriter's template code uses it.
module;

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

export module jsonl.writer:batch_serializer;

import :format;
import :layout;
import :engine;

export namespace jsonl::detail {

// How serializing one record went.
struct LineOutcome {
  enum Kind : unsigned char { written, sanitized, malformed, unexpected } kind = written;
  std::string error;
};

// What serializing one batch came to, until it is counted.
struct SerializedBatch {
  std::vector<FileAppend> appends;
  std::vector<LineOutcome> outcomes;     // every serialized record's, in serialization order
  std::optional<std::string> failure;    // the layout threw: its appends are lost
  std::size_t records = 0;               // in the batch

  // Counts every outcome in order, so rate-limited log lines come out as they would one
  // record at a time. Records neither in an append nor dropped for a reason already
  // (a layout that threw, or returned fewer lines than records) count as serialize
  // errors. Leaves only the appends to perform and returns the records they hold; adds
  // each record counted as dropped to `accounted` as soon as it is counted.
  std::size_t count(WriterEngine& engine, std::size_t& accounted);
};

template <class Record>
class BatchSerializer final : public GroupSerializer<Record> {
 public:
  // `side_by_side`: whether a group's chunks may be serialized on several threads.
  BatchSerializer(const RecordFormat<Record>& format, SerializedBatch& result, bool side_by_side)
      : format_(format), result_(result), side_by_side_(side_by_side) {}

  // Lays `batch` out through `layout`. An exception from the layout is noted in the
  // result rather than thrown: it costs this batch only.
  void run(const BatchLayout<Record>& layout, std::vector<Record>& batch, const std::filesystem::path& file) {
    result_.records = batch.size();
    try {
      result_.appends = layout.lay_out(batch, file, *this);
    } catch (...) {
      result_.appends.clear();
      result_.failure = describe_current_exception();
    }
  }

  // Serializes a group's records, in chunks side by side when allowed (the format is
  // thread-safe), else into one text that becomes the append's without another copy.
  // A chunk's text is sized from its first line, as a batch's lines are much alike. Each
  // record is released as soon as it is serialized, by the thread that serialized it,
  // while it is still in that core's cache.
  FileAppend serialize(std::span<Record> group, std::filesystem::path file) override {
    const std::size_t per_chunk = std::max<std::size_t>(1, side_by_side_ ? records_per_chunk : group.size());
    const std::size_t chunks = (group.size() + per_chunk - 1) / per_chunk;
    std::vector<std::string> texts(chunks);
    const std::size_t first = result_.outcomes.size();
    result_.outcomes.resize(first + group.size());
    const std::span<LineOutcome> outcomes(result_.outcomes.data() + first, group.size());
    const auto serialize_chunk = [&](std::size_t chunk) {
      const std::size_t begin = chunk * per_chunk;
      const std::size_t end = std::min(group.size(), begin + per_chunk);
      std::string& text = texts[chunk];
      for (std::size_t i = begin; i < end; ++i) {
        outcomes[i] = serialize_one(group[i], text);
        group[i] = Record();
        if (i == begin) text.reserve(std::min(text.size() * (end - begin) * 9 / 8, max_reserve));
      }
    };
    if (side_by_side_ && chunks > 1) {
      tbb::parallel_for(std::size_t{0}, chunks, serialize_chunk);
    } else {
      for (std::size_t chunk = 0; chunk < chunks; ++chunk) serialize_chunk(chunk);
    }

    // The first chunk's text becomes the append's; the others follow it.
    FileAppend append{std::move(file), {}, 0};
    std::size_t bytes = 0;
    for (const std::string& text : texts) bytes += text.size();
    if (!texts.empty()) append.bytes = std::move(texts.front());
    append.bytes.reserve(bytes);
    for (std::size_t chunk = 1; chunk < texts.size(); ++chunk) append.bytes += texts[chunk];
    append.records = static_cast<std::size_t>(std::count_if(outcomes.begin(), outcomes.end(), [](const LineOutcome& o) {
      return o.kind == LineOutcome::written || o.kind == LineOutcome::sanitized;
    }));
    return append;
  }

 private:
  // Appends one record's line to `text`, or nothing if it fails, and says how it went.
  LineOutcome serialize_one(Record& record, std::string& text) const {
    const std::size_t mark = text.size();
    try {
      return {format_.append_line(record, text) ? LineOutcome::sanitized : LineOutcome::written, {}};
    } catch (const std::exception& error) {
      text.resize(mark);
      if (format_.is_malformed(error)) return {LineOutcome::malformed, error.what()};
      return {LineOutcome::unexpected, describe_current_exception()};
    } catch (...) {
      text.resize(mark);
      return {LineOutcome::unexpected, describe_current_exception()};
    }
  }

  // Records serialized by one task: enough to outweigh handing the task to another core.
  static constexpr std::size_t records_per_chunk = 32;
  // The most a chunk's text is sized ahead, so that one huge first line cannot make it
  // reserve many times what the chunk needs.
  static constexpr std::size_t max_reserve = std::size_t{1} << 20;

  const RecordFormat<Record>& format_;
  SerializedBatch& result_;
  bool side_by_side_;
};

}  // namespace jsonl::detail

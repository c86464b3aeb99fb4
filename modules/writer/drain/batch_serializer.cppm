// Serializing one batch: records routed to their files, each file's group serialized into
// one append, and each record's outcome noted rather than counted, so that batches can
// be serialized side by side and still be counted one after another, in submission
// order. Not part of the public contract; exported only because JsonlRecordWriter's
// template code uses it.
module;

#include <algorithm>
#include <cstddef>
#include <exception>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

export module jsonl.writer:batch_serializer;

import :accounts;
import :format;
import :route;
import :sink;
import :side_by_side;
import :writer_state;

export namespace jsonl::detail {

// How serializing (or routing) one record went.
struct LineOutcome {
  enum Kind : unsigned char { written, sanitized, malformed, unexpected } kind = written;
  std::string error;
};

// What serializing one batch came to, until it is counted.
struct SerializedBatch {
  std::vector<FileAppend> appends;
  std::vector<LineOutcome> outcomes;  // one per record of the batch

  // Counts every outcome in order, so rate-limited log lines come out as they would one
  // record at a time. Leaves only the appends that hold records, and returns how many
  // records they hold; adds each record counted as dropped to `accounted` as soon as it
  // is counted.
  std::size_t count(Accounts& accounts, std::size_t& accounted);
};

template <class Record>
class BatchSerializer {
 public:
  // `route` may be null: every record to the writer's file. `side_by_side`: whether a
  // group's chunks may be serialized on several threads.
  BatchSerializer(const RecordFormat<Record>& format, const RecordRoute<Record>* route, bool side_by_side)
      : format_(format), route_(route), side_by_side_(side_by_side) {}

  // Routes and serializes `batch` (reordered into its groups) into `result`.
  void run(std::vector<Record>& batch, SerializedBatch& result) const {
    if (!route_) {
      result.outcomes.resize(batch.size());
      result.appends.push_back(serialize(batch, result.outcomes, {}));
      return;
    }
    struct Group {
      std::filesystem::path file;
      std::vector<std::size_t> members;
    };
    std::vector<Group> groups;
    std::vector<LineOutcome> unrouted;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      std::filesystem::path file;
      if (!routed(batch[i], file, unrouted)) continue;
      auto group = std::find_if(groups.begin(), groups.end(), [&](const Group& g) { return g.file == file; });
      if (group == groups.end()) group = groups.insert(groups.end(), Group{std::move(file), {}});
      group->members.push_back(i);
    }
    std::vector<Record> ordered;
    ordered.reserve(batch.size());
    for (const Group& group : groups) {
      for (const std::size_t i : group.members) ordered.push_back(std::move(batch[i]));
    }
    batch = std::move(ordered);
    result.outcomes = std::move(unrouted);
    const std::size_t first = result.outcomes.size();
    result.outcomes.resize(first + batch.size());
    std::size_t begin = 0;
    for (Group& group : groups) {
      const std::span<Record> records(batch.data() + begin, group.members.size());
      const std::span<LineOutcome> outcomes(result.outcomes.data() + first + begin, group.members.size());
      begin += group.members.size();
      result.appends.push_back(serialize(records, outcomes, std::move(group.file)));
    }
  }

 private:
  // Whether `record` has a file; if not, notes why in `unrouted` and releases it.
  bool routed(Record& record, std::filesystem::path& file, std::vector<LineOutcome>& unrouted) const {
    try {
      file = route_->route(record);
      return true;
    } catch (const std::exception& error) {
      unrouted.push_back(format_.is_malformed(error) ? LineOutcome{LineOutcome::malformed, error.what()}
                                                     : LineOutcome{LineOutcome::unexpected, describe_current_exception()});
    } catch (...) {
      unrouted.push_back({LineOutcome::unexpected, describe_current_exception()});
    }
    record = Record();
    return false;
  }

  // Serializes a group's records, in chunks side by side when allowed (the format is
  // thread-safe), else into one text that becomes the append's without another copy.
  // A chunk's text is sized from its first line, as a batch's lines are much alike. Each
  // record is released as soon as it is serialized, by the thread that serialized it,
  // while it is still in that core's cache.
  FileAppend serialize(std::span<Record> group, std::span<LineOutcome> outcomes, std::filesystem::path file) const {
    const std::size_t per_chunk = std::max<std::size_t>(1, side_by_side_ ? records_per_chunk : group.size());
    const std::size_t chunks = (group.size() + per_chunk - 1) / per_chunk;
    std::vector<std::string> texts(chunks);
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
      run_side_by_side(chunks, serialize_chunk);
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
  const RecordRoute<Record>* route_;
  bool side_by_side_;
};

}  // namespace jsonl::detail

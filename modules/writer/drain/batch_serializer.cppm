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
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

export module jsonl.writer:batch_serializer;

import :accounts;
import :format;
import :route;
import :record_ring;
import :sink;
import :side_by_side;
import :writer_state;

export namespace jsonl::detail {

// Records serialized by one task when a batch is serialized side by side: enough to
// outweigh handing the task to another core. Each chunk has a text of its own.
inline constexpr std::size_t records_per_chunk = 32;
// The most a text is sized ahead of its use (a power of two), so that one huge line
// cannot make a text reserve many times what it needs.
inline constexpr std::size_t max_text_reserve = std::size_t{1} << 20;

// How serializing (or routing) one record went.
struct LineOutcome {
  enum Kind : unsigned char { written, sanitized, malformed, unexpected } kind = written;
  std::string error;
};

// What serializing one batch came to, until it is counted, and the buffers it serializes
// into: a drain keeps one per batch of a round and reuses them round after round.
struct SerializedBatch {
  std::vector<FileAppend> appends;
  std::vector<LineOutcome> outcomes;  // one per record of the batch
  // Emptied texts to serialize into, their capacity kept; the drain refills them with
  // the texts of appends the write side has finished with.
  std::vector<std::string> spare_texts;
  std::vector<std::string> chunk_texts;  // the texts of the group being serialized
  // The texts the current (or last) run took: one per chunk of each file's group.
  std::size_t texts_taken = 0;
  // The most texts one run has taken, at most one per record of a batch: how many
  // spare texts the drain gives the batch before each run.
  std::size_t texts_wanted = 0;

  // Sizes the buffers for a batch of up to `batch_size` records whose appends hold up
  // to `room` bytes of lines, so that serializing one allocates nothing; the spare
  // texts are the drain's to give.
  void prepare(std::size_t batch_size, std::size_t room);

  // Counts every outcome in order, so rate-limited log lines come out as they would one
  // record at a time. Leaves only the appends that hold records, and returns how many
  // records they hold; adds each record counted as dropped to `accounted` as soon as it
  // is counted.
  std::size_t count(Accounts& accounts, std::size_t& accounted);
};

template <class Record>
class BatchSerializer {
 public:
  using Records = typename RecordRing<Record>::Span;

  // `route` may be null: every record to the writer's file. `side_by_side`: whether a
  // group's chunks may be serialized on several threads.
  BatchSerializer(const RecordFormat<Record>& format, const RecordRoute<Record>* route, bool side_by_side)
      : format_(format), route_(route), side_by_side_(side_by_side) {}

  // Routes and serializes `batch` into `result`, in groups, and consumes its records.
  void run(const Records& batch, SerializedBatch& result) const {
    result.appends.clear();
    result.outcomes.clear();
    result.texts_taken = 0;
    if (!route_) {
      result.outcomes.resize(batch.size());
      result.appends.push_back(serialize(batch, identity_, result.outcomes, {}, result));
      return;
    }
    std::vector<Group> groups;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (Group* group = group_of(batch, i, groups, result.outcomes)) group->members.push_back(i);
    }
    std::size_t first = result.outcomes.size();
    result.outcomes.resize(batch.size());
    for (Group& group : groups) {
      const std::span<LineOutcome> outcomes(result.outcomes.data() + first, group.members.size());
      first += group.members.size();
      result.appends.push_back(serialize(batch, group.members, outcomes, std::move(group.file), result));
    }
  }

 private:
  // Positions 0, 1, 2, ... of a batch: a group of every record.
  struct Identity {
    std::size_t operator[](std::size_t i) const noexcept { return i; }
  };

  // A file's records in a batch; the first member stands for them all when the route
  // tells a record shares their file (RecordRoute::same_file).
  struct Group {
    std::filesystem::path file;
    std::vector<std::size_t> members;
  };

  // The group record `i` joins, added to `groups` if its file has none yet; null if the
  // record has no file, after noting why in `outcomes` and consuming it.
  Group* group_of(const Records& batch, std::size_t i, std::vector<Group>& groups,
                  std::vector<LineOutcome>& outcomes) const {
    try {
      for (Group& group : groups) {
        if (route_->same_file(batch[i], batch[group.members.front()])) return &group;
      }
      std::filesystem::path file = route_->route(batch[i]);
      for (Group& group : groups) {
        if (group.file == file) return &group;
      }
      return &groups.emplace_back(Group{std::move(file), {}});
    } catch (const std::exception& error) {
      outcomes.push_back(format_.is_malformed(error) ? LineOutcome{LineOutcome::malformed, error.what()}
                                                     : LineOutcome{LineOutcome::unexpected, describe_current_exception()});
    } catch (...) {
      outcomes.push_back({LineOutcome::unexpected, describe_current_exception()});
    }
    batch.consume(i);
    return nullptr;
  }

  // Serializes the records `members` names (as many as `outcomes` has), in chunks side
  // by side when allowed (the format is thread-safe), else into one text that becomes
  // the append's without another copy. A chunk's text is sized from its first line, as
  // a batch's lines are much alike. Each record is consumed as soon as it is
  // serialized, by the thread that serialized it, while it is still in that core's
  // cache.
  template <class Members>
  FileAppend serialize(const Records& batch, const Members& members, std::span<LineOutcome> outcomes,
                       std::filesystem::path file, SerializedBatch& buffers) const {
    const std::size_t records = outcomes.size();
    const std::size_t per_chunk = std::max<std::size_t>(1, side_by_side_ ? records_per_chunk : records);
    const std::size_t chunks = (records + per_chunk - 1) / per_chunk;
    std::vector<std::string>& texts = buffers.chunk_texts;
    texts.resize(chunks);
    buffers.texts_taken += chunks;
    buffers.texts_wanted = std::max(buffers.texts_wanted, buffers.texts_taken);
    for (std::string& text : texts) {
      if (buffers.spare_texts.empty()) continue;
      text = std::move(buffers.spare_texts.back());
      buffers.spare_texts.pop_back();
    }
    const auto serialize_chunk = [&](std::size_t chunk) {
      const std::size_t begin = chunk * per_chunk;
      const std::size_t end = std::min(records, begin + per_chunk);
      std::string& text = texts[chunk];
      for (std::size_t i = begin; i < end; ++i) {
        outcomes[i] = serialize_one(batch[members[i]], text);
        batch.consume(members[i]);
        if (i == begin) text.reserve(std::min(text.size() * (end - begin) * 9 / 8, max_text_reserve));
      }
    };
    if (side_by_side_ && chunks > 1) {
      run_side_by_side(chunks, serialize_chunk);
    } else {
      for (std::size_t chunk = 0; chunk < chunks; ++chunk) serialize_chunk(chunk);
    }

    // The first chunk's text becomes the append's; the others follow it, and are spare
    // again.
    FileAppend append{std::move(file), {}, 0};
    std::size_t bytes = 0;
    for (const std::string& text : texts) bytes += text.size();
    if (!texts.empty()) append.bytes = std::move(texts.front());
    append.bytes.reserve(bytes);
    for (std::size_t chunk = 1; chunk < texts.size(); ++chunk) {
      append.bytes += texts[chunk];
      texts[chunk].clear();
      buffers.spare_texts.push_back(std::move(texts[chunk]));
    }
    texts.clear();
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

  static constexpr Identity identity_{};

  const RecordFormat<Record>& format_;
  const RecordRoute<Record>* route_;
  bool side_by_side_;
};

}  // namespace jsonl::detail

// Where each record goes: the writer's own file, or a file a configuration names.
module;

#include <filesystem>

export module jsonl.writer:route;

export namespace jsonl {

// A configuration that spreads records over files (say, a file per hour and kind) names
// each record's file; the drain groups a batch by file, in the order each file first
// appears, records in submission order within a group, and serializes each group into
// one append. Without a route every record goes to the writer's own file.
template <class Record>
class RecordRoute {
 public:
  virtual ~RecordRoute() = default;

  // The file `record` goes to; an empty path means the writer's own file. Called on the
  // drain side, concurrently for different records: it must be thread-safe. An
  // exception costs this record alone, judged as the format's (RecordFormat::
  // is_malformed): malformed, or an unexpected serialization error.
  virtual std::filesystem::path route(const Record& record) const = 0;

  // Whether `record` goes to the file `earlier` went to, where that is cheaper to tell
  // than to name the file: the drain asks it of each record and the first record of
  // each of its batch's groups so far, and asks route() only when none says yes. True
  // only when route() would name one file for both; false (the default) when it cannot
  // tell. Thread-safe as route(); an exception is judged as route()'s.
  virtual bool same_file(const Record& record, const Record& earlier) const { return false; }
};

}  // namespace jsonl

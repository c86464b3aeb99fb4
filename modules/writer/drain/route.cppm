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
};

}  // namespace jsonl

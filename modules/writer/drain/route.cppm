// Where each record goes: the writer's own file, or a file a configuration names.
module;

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

export module jsonl.writer:route;

export namespace jsonl {

// What tells a route's files apart, cheaper to find than the file: records whose keys
// are equal go to the same file.
struct FileKey {
  std::int64_t number = 0;
  std::string_view text;  // may refer to the record the key was taken from

  friend bool operator==(const FileKey&, const FileKey&) = default;
};

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

  // A key for `record`'s file, for a route that has one cheaper than naming the file:
  // records with equal keys must go to the same file. The drain then names the file once
  // for each key a batch holds, with route() of the first record that has it, and not
  // again for the others. None, by default: route() for every record. Called as route()
  // is, before it, for a record still held; an exception costs the record as route()'s.
  virtual std::optional<FileKey> file_key(const Record&) const { return std::nullopt; }
};

}  // namespace jsonl

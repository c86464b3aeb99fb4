// How a batch is laid out on disk.
//
// The drain thread asks the layout to turn each batch into appends (`lay_out`), taking
// the lines of each group of records that share a file from the writer's shared
// serialization step, so malformed-record accounting is the writer's for every layout.
// The write worker then performs each append (`append`); a failed append costs the
// records of that append only.
module;

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

export module jsonl.writer:layout;

export namespace jsonl {

// Lines bound for one file, appended with one write.
struct FileAppend {
  std::filesystem::path file;
  std::string bytes;         // whole lines, each ending in '\n'
  std::size_t records = 0;   // lines in `bytes`
};

struct AppendResult {
  std::size_t bytes = 0;  // bytes that reached the file
  std::size_t lines = 0;  // newline-terminated lines they hold
  // The file's size once they had: rotation's measure (0 when the appender does not
  // know it; rotation then adds `bytes` to what it counted).
  std::uint64_t file_size = 0;
  bool recreated_directory = false;  // the file's directory was gone and was created again
};

// Appends `bytes` to `file`: opened with O_RDWR|O_APPEND|O_CREAT|O_CLOEXEC|O_NOFOLLOW
// and mode 0644 (before umask) for this append only, so a removed or renamed file is
// recreated at its name and a symlink planted there is refused. When the file's
// directory is gone (removed or renamed by a cleanup job), it is created again, with
// its parents, and the open retried once. If the file's last byte is not '\n' (an append
// cut short), a '\n' is written first, so the fragment stays one bad line. The lines go
// in one write, continued after a partial write. No fsync. Blocking. Throws
// std::system_error on any filesystem error.
AppendResult append_to_file(const std::filesystem::path& file, std::string_view bytes,
                            std::size_t lines);

// The writer's shared step: serializes `group`, in order, into one append to `file`.
// Records that cannot be serialized are dropped and counted by the writer; the append
// holds the rest. The records are consumed: the format may move from them, and each is
// released (reset to a default Record) once serialized.
template <class Record>
class GroupSerializer {
 public:
  virtual FileAppend serialize(std::span<Record> group, std::filesystem::path file) = 0;

 protected:
  ~GroupSerializer() = default;
};

// Performs appends on the write worker. The default appends to a local file.
class FileAppender {
 public:
  virtual ~FileAppender() = default;

  // Called on the write worker before each append, in both modes: a configuration's
  // preparation of the file (say, creating its directory once). An exception counts as
  // the append failing, before any byte of it was written.
  virtual void prepare(const FileAppend&) const {}

  // Performs one append, without durability (with it, the writer appends to the local
  // file itself, through WriterOptions::durability.calls). std::system_error and its kin mean the filesystem refused it
  // (counted as a write error, warned once per run of failed appends); any other exception is
  // unexpected (counted, logged at ERROR). `close` may abandon a call that outlives the
  // shutdown timeout; the object stays alive until the call returns.
  virtual AppendResult append(const FileAppend& append) const {
    return append_to_file(append.file, append.bytes, append.records);
  }
};

// The default layout: a batch is one append to the writer's file. A configuration
// overrides `lay_out` to spread a batch over several files (say, a file per record key)
// and may override `append` to write somewhere other than a local file.
template <class Record>
class BatchLayout : public FileAppender {
 public:
  // Drain thread. Turns `batch` (records in submission order; the layout may reorder
  // it) into appends, serializing each group through `serialize`. `file` names the
  // writer's file, in the output directory: an append to it is performed on the file
  // current when it is written (rotation may start a new one between appends). Appends
  // are performed in the order returned.
  virtual std::vector<FileAppend> lay_out(std::vector<Record>& batch,
                                          const std::filesystem::path& file,
                                          GroupSerializer<Record>& serialize) const {
    std::vector<FileAppend> appends;
    appends.push_back(serialize.serialize(batch, file));
    return appends;
  }
};

}  // namespace jsonl

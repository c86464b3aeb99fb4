// A books document as the verifier reads it: every field checked for its type and range
// and named by its path when it is wrong, then the claims checked against one another
// before any file is read. A document comes from a directory other processes wrote, so
// nothing in it is trusted: a module implementation partition, nothing of it exported.
module;

#include <boost/json/value.hpp>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

module jsonl.writer:books_document;

namespace jsonl::detail {

// A field of the wrong type or range, or a document not of our schema; what() names the
// field by its path ("shards[3].start_offset: expected a non-negative integer").
class DocumentError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExtentClaim {
  std::uint64_t start = 0;
  std::uint64_t landed = 0;
};

// One entry of the document's shards ("files" in our first schema). `inconsistency` is
// set, and the entry is not read, when its own fields contradict each other or another
// entry for the same file: a file that is not a plain relative path inside the
// directory, a range that ends before it starts, an unknown extent outside what the
// entry can claim, or a range that overlaps another entry's.
struct FileClaim {
  std::string file;
  std::uint64_t start_offset = 0;
  std::uint64_t persisted_end = 0;
  std::uint64_t persisted_records = 0;
  std::uint64_t fragments_isolated = 0;
  std::vector<ExtentClaim> unknown_extents;  // by start
  bool deleted = false;
  std::optional<std::string> inconsistency;
};

struct BooksDocument {
  std::string schema;  // ours, one of our previous ones, or the reference writer's
  std::string generation;
  bool closed = false;
  std::uint64_t submitted = 0, persisted = 0, dropped = 0, unknown = 0, pending = 0;
  std::vector<FileClaim> files;
  // Files retention let go, deleted once this document landed: none of the writer's
  // bytes are unaccounted in one still there.
  std::vector<std::string> deleting;
};

// Marks every entry whose persisted range overlaps one an earlier document of
// `documents` (in that order) claims in the same file: generations append after one
// another, so two documents never truly claim the same bytes, and a byte is then read
// once however many documents name it. `names` names each document in the message.
void mark_claimed_elsewhere(std::vector<BooksDocument*>& documents, const std::vector<std::string>& names);

// Reads `document`, of our schema (any version) or the reference writer's; throws
// DocumentError naming the first field that is missing, of the wrong type or out of
// range, or a drop reason the schema does not have. Then marks every inconsistent entry
// (see FileClaim).
BooksDocument read_books_document(const boost::json::value& document);

}  // namespace jsonl::detail

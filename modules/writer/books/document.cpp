module;

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

module jsonl.writer;

import :books_document;
import :books_schema;
import :stats;

namespace jsonl::detail {
namespace {

namespace field = books_schema;

// A JSON object read at `path` ("" for the document, "files[3]", ...): each accessor
// checks the field's type and range and throws DocumentError naming it.
class Fields {
 public:
  Fields(const boost::json::value& value, std::string path) : path_(std::move(path)) {
    if (!value.is_object()) fail(path_.empty() ? std::string("the document") : path_, "expected an object");
    object_ = &value.get_object();
  }

  std::string path_of(std::string_view key) const { return path_.empty() ? std::string(key) : path_ + "." + std::string(key); }

  const boost::json::value& at(std::string_view key) const {
    const boost::json::value* value = object_->if_contains(key);
    if (!value) fail(path_of(key), "missing");
    return *value;
  }
  std::uint64_t count(std::string_view key) const { return count_at(at(key), path_of(key)); }
  std::string text(std::string_view key) const {
    const boost::json::value& value = at(key);
    if (!value.is_string()) fail(path_of(key), "expected a string");
    return std::string(value.get_string());
  }
  bool flag(std::string_view key) const {
    const boost::json::value& value = at(key);
    if (!value.is_bool()) fail(path_of(key), "expected true or false");
    return value.get_bool();
  }
  bool optional_flag(std::string_view key) const { return object_->contains(key) && flag(key); }
  const boost::json::array& list(std::string_view key) const {
    const boost::json::value& value = at(key);
    if (!value.is_array()) fail(path_of(key), "expected an array");
    return value.get_array();
  }
  Fields object(std::string_view key) const { return Fields(at(key), path_of(key)); }
  const boost::json::object& members() const noexcept { return *object_; }

  static std::uint64_t count_at(const boost::json::value& value, const std::string& path) {
    if (value.is_uint64()) return value.get_uint64();
    if (value.is_int64() && value.get_int64() >= 0) return static_cast<std::uint64_t>(value.get_int64());
    fail(path, "expected a non-negative integer");
  }
  [[noreturn]] static void fail(const std::string& path, std::string_view what) {
    throw DocumentError(path + ": " + std::string(what));
  }

 private:
  const boost::json::object* object_ = nullptr;
  std::string path_;
};

std::uint64_t checked_sum(std::uint64_t a, std::uint64_t b, const std::string& path) {
  if (a > std::numeric_limits<std::uint64_t>::max() - b) Fields::fail(path, "adds up past the largest count");
  return a + b;
}

// Why `file` is not a plain relative path inside the directory, if it is not.
std::optional<std::string> unsafe_path(const std::string& file) {
  if (file.empty()) return "an empty file name";
  if (file.find('\0') != std::string::npos) return "a file name with a NUL byte";
  const std::filesystem::path path(file);
  if (path.has_root_path()) return "an absolute path (" + file + "), not one inside the directory";
  for (const std::filesystem::path& part : path) {
    if (part == "..") return "a path that leaves the directory (" + file + ")";
  }
  if (path.lexically_normal().generic_string() != file) return "a path not in its plain form (" + file + ")";
  return std::nullopt;
}

// Whether `reason` names a drop reason of the document's schema `id`: the reference
// writer's, or ours (every reason the books count, and since retention left the shards,
// "retention").
bool is_drop_reason(std::string_view reason, std::string_view id) {
  if (id == field::reference_id) {
    return std::find(field::reference_drop_reasons.begin(), field::reference_drop_reasons.end(), reason) !=
           field::reference_drop_reasons.end();
  }
  if (id == field::id && reason == field::retention) return true;
  return std::any_of(drop_reasons.begin(), drop_reasons.end(),
                     [&](const DropReasonInfo& info) { return info.booked && info.name == reason; });
}

// The files a document names under "deleting", each a plain relative path.
std::vector<std::string> read_deleting(const Fields& top) {
  std::vector<std::string> files;
  const boost::json::array& list = top.list(field::deleting);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = top.path_of(field::deleting) + "[" + std::to_string(i) + "]";
    if (!list[i].is_string()) Fields::fail(path, "expected a string");
    std::string file(list[i].get_string());
    if (const auto unsafe = unsafe_path(file)) Fields::fail(path, *unsafe);
    files.push_back(std::move(file));
  }
  return files;
}

FileClaim read_claim(const boost::json::value& value, const std::string& path) {
  const Fields fields(value, path);
  FileClaim claim;
  claim.file = fields.text(field::file);
  claim.start_offset = fields.count(field::start_offset);
  claim.persisted_end = fields.count(field::persisted_end);
  claim.persisted_records = fields.count(field::persisted_records);
  claim.fragments_isolated = fields.count(field::fragments_isolated);
  claim.deleted = fields.optional_flag(field::deleted);
  const boost::json::array& extents = fields.list(field::unknown_extents);
  for (std::size_t k = 0; k < extents.size(); ++k) {
    const Fields extent(extents[k], fields.path_of(field::unknown_extents) + "[" + std::to_string(k) + "]");
    const std::uint64_t start = extent.count(field::start);
    const std::uint64_t landed = extent.count(field::landed);
    checked_sum(start, landed, extent.path_of(field::landed));
    extent.count(field::records);
    claim.unknown_extents.push_back({start, landed});
  }
  std::sort(claim.unknown_extents.begin(), claim.unknown_extents.end(),
            [](const ExtentClaim& a, const ExtentClaim& b) { return a.start < b.start; });
  return claim;
}

// The end of the bytes `claim` may speak for, or why its own fields contradict each
// other. Each append begins where the file ends, after at most one newline that
// isolates a cut line: an unknown extent lies at or after the start offset, overlaps no
// other, and past the persisted end follows what came before it.
std::uint64_t claim_end(FileClaim& claim) {
  if (const auto unsafe = unsafe_path(claim.file)) {
    claim.inconsistency = *unsafe;
    return claim.start_offset;
  }
  if (claim.persisted_end < claim.start_offset) {
    claim.inconsistency = "persisted_end (" + std::to_string(claim.persisted_end) + ") is before start_offset (" +
                          std::to_string(claim.start_offset) + ")";
    return claim.start_offset;
  }
  std::uint64_t reach = claim.persisted_end;
  std::uint64_t previous_end = claim.start_offset;
  for (const ExtentClaim& extent : claim.unknown_extents) {
    const std::string where = "an unknown extent at " + std::to_string(extent.start);
    if (extent.start < claim.start_offset) {
      claim.inconsistency = where + " starts before start_offset (" + std::to_string(claim.start_offset) + ")";
    } else if (extent.start < previous_end) {
      claim.inconsistency = where + " overlaps the one before it";
    } else if (extent.start >= claim.persisted_end && extent.start > reach + 1) {
      claim.inconsistency = where + " lies past where the writer's appends reached (" + std::to_string(reach) + ")";
    }
    if (claim.inconsistency) return claim.start_offset;
    previous_end = extent.start + extent.landed;
    reach = std::max(reach, previous_end);
  }
  return reach;
}

// Marks the entries whose own fields contradict each other, then every two entries for
// the same file whose ranges overlap (a file listed twice included): sorted by file and
// offset, each entry is compared with the one before it, so the check costs n log n
// however many entries name one file.
void mark_inconsistent(std::vector<FileClaim>& files, std::string_view list) {
  std::vector<std::uint64_t> ends(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) ends[i] = claim_end(files[i]);
  std::vector<std::size_t> order(files.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::tie(files[a].file, files[a].start_offset, a) < std::tie(files[b].file, files[b].start_offset, b);
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const std::size_t before = order[k - 1], now = order[k];
    if (files[before].file != files[now].file) continue;
    if (files[now].start_offset >= ends[before] && files[now].start_offset != files[before].start_offset) continue;
    const std::string overlap = std::string(list) + "[" + std::to_string(before) + "] and " + std::string(list) + "[" +
                                std::to_string(now) + "] claim overlapping bytes of " + files[now].file;
    for (const std::size_t i : {before, now}) {
      if (!files[i].inconsistency) files[i].inconsistency = overlap;
    }
  }
}

}  // namespace

void mark_claimed_elsewhere(std::vector<BooksDocument*>& documents, const std::vector<std::string>& names) {
  struct Claim {
    const std::string* file;
    std::uint64_t begin, end;
    std::size_t document;
    FileClaim* entry;
  };
  std::vector<Claim> claims;
  for (std::size_t d = 0; d < documents.size(); ++d) {
    for (FileClaim& entry : documents[d]->files) {
      if (entry.inconsistency || entry.deleted || entry.persisted_end == entry.start_offset) continue;
      claims.push_back({&entry.file, entry.start_offset, entry.persisted_end, d, &entry});
    }
  }
  std::sort(claims.begin(), claims.end(), [](const Claim& a, const Claim& b) {
    return std::tie(*a.file, a.begin, a.document) < std::tie(*b.file, b.begin, b.document);
  });
  const Claim* reach = nullptr;  // of this file's claims so far, the one that ends last
  for (Claim& claim : claims) {
    if (reach && *reach->file == *claim.file && claim.begin < reach->end) {
      const std::size_t later = std::max(claim.document, reach->document);
      FileClaim& entry = *(later == claim.document ? claim.entry : reach->entry);
      const std::size_t earlier = std::min(claim.document, reach->document);
      if (earlier != later && !entry.inconsistency) {
        entry.inconsistency = "claims bytes of " + entry.file + " that " + names[earlier] + " claims too";
      }
    }
    if (!reach || *reach->file != *claim.file || claim.end > reach->end) reach = &claim;
  }
}

BooksDocument read_books_document(const boost::json::value& document) {
  const Fields top(document, "");
  const boost::json::value* schema = top.members().if_contains(field::schema);
  const std::string_view id = schema && schema->is_string() ? std::string_view(schema->get_string()) : "";
  if (id != field::id && id != field::id_before_retention && id != field::id_before_shards &&
      id != field::reference_id) {
    throw DocumentError("schema: not one of " + std::string(field::id) + ", " +
                        std::string(field::id_before_retention) + ", " + std::string(field::id_before_shards) +
                        " or " + std::string(field::reference_id));
  }
  const std::string_view list = id == field::id_before_shards ? field::files_before_shards : field::shards;
  BooksDocument books;
  books.schema = id;
  books.generation = top.text(field::generation);
  books.closed = top.flag(field::closed);
  const Fields counts = top.object(field::counts);
  books.submitted = counts.count(field::submitted);
  books.persisted = counts.count(field::persisted);
  const Fields dropped = counts.object(field::dropped);
  for (const auto& [reason, count] : dropped.members()) {
    const std::string path = dropped.path_of(reason);
    if (!is_drop_reason(reason, id)) Fields::fail(path, "not a drop reason of " + std::string(id));
    books.dropped = checked_sum(books.dropped, Fields::count_at(count, path), path);
  }
  books.unknown = counts.count(field::unknown);
  books.pending = counts.count(field::pending);
  const boost::json::array& files = top.list(list);
  books.files.reserve(files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    books.files.push_back(read_claim(files[i], std::string(list) + "[" + std::to_string(i) + "]"));
  }
  mark_inconsistent(books.files, list);
  if (id == field::id) books.deleting = read_deleting(top);
  return books;
}

}  // namespace jsonl::detail

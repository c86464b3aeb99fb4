// Records that cost little to build and free, in an arena (Boost.JSON's
// monotonic_resource): built in a few large blocks instead of a node at a time.
//
// Two ways, for two needs:
//   - ArenaRecord owns its arena, and its value refers to it without a reference count:
//     releasing it frees the arena's blocks and nothing else (no walk of the tree). The
//     fast way, for a record built on its own (JsonlRecordWriter<ArenaRecord>, with
//     ArenaRecordFormat around a JSON format).
//   - make_record_arena() gives a reference-counted arena for boost::json::value records:
//     several records may share it, and it goes with the last of them, on whichever
//     thread drops it. Every node then holds a counted reference, so building and
//     releasing such a record costs about what the default allocator costs.
//
//   jsonl::ArenaRecord record = jsonl::ArenaRecord::make();
//   boost::json::object& fields = record.value().emplace_object();
//   fields["request_id"] = 42;               // members are built in the record's arena
//   writer.submit(std::move(record));
//
// An arena is not thread-safe for building: build a record on one thread, then submit it.
module;

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

export module jsonl.writer:arena;

import :format;

export namespace jsonl {

// Room in the first block for a typical per-request record (about 2 KB of JSON text,
// 5 KB as a DOM); later blocks grow geometrically.
inline constexpr std::size_t record_arena_first_block = 6144;

// A JSON value and the arena it lives in. Move-only. A default-constructed or moved-from
// record holds null in the default storage and no arena: what the writer leaves behind.
class ArenaRecord {
 public:
  ArenaRecord() = default;
  ArenaRecord(ArenaRecord&& other) noexcept : arena_(std::move(other.arena_)), value_(std::move(other.value_)) {
    other.forget_storage();
  }
  ArenaRecord& operator=(ArenaRecord&& other) noexcept {
    if (this != &other) {
      value_.~value();  // gone before the arena it lives in
      arena_ = std::move(other.arena_);
      ::new (&value_) boost::json::value(std::move(other.value_));
      other.forget_storage();
    }
    return *this;
  }
  // Members go in reverse order: the value, then its arena.
  ~ArenaRecord() = default;

  // A null value in a fresh arena, ready to be built.
  static ArenaRecord make(std::size_t first_block = record_arena_first_block) {
    ArenaRecord record;
    record.arena_ = std::make_unique<boost::json::monotonic_resource>(first_block);
    record.forget_storage();
    return record;
  }

  // Parses `text` into a fresh arena sized from it. On a syntax error sets `error` and
  // holds null.
  static ArenaRecord parse(std::string_view text, boost::system::error_code& error,
                           const boost::json::parse_options& options = {});

  boost::json::value& value() noexcept { return value_; }
  const boost::json::value& value() const noexcept { return value_; }
  // The arena, for building values that go into this record (assigning a value from
  // another storage copies it in); the default storage when there is no arena. Valid
  // while the record lives.
  boost::json::storage_ptr storage() const noexcept {
    return arena_ ? boost::json::storage_ptr(arena_.get()) : boost::json::storage_ptr();
  }

 private:
  // Makes the value a null in this record's storage: after a move, so that a moved-from
  // record never builds in the arena that went elsewhere.
  void forget_storage() noexcept {
    value_.~value();
    ::new (&value_) boost::json::value(storage());
  }

  std::unique_ptr<boost::json::monotonic_resource> arena_;
  boost::json::value value_;
};

// Writes an ArenaRecord's value with a format for boost::json::value records.
template <class JsonFormat>
class ArenaRecordFormat : public RecordFormat<ArenaRecord> {
 public:
  template <class... Arguments>
  explicit ArenaRecordFormat(Arguments&&... arguments) : format_(std::forward<Arguments>(arguments)...) {}

  bool append_line(ArenaRecord& record, std::string& out) const override {
    return format_.append_line(record.value(), out);
  }
  bool is_malformed(const std::exception& error) const noexcept override { return format_.is_malformed(error); }

 private:
  JsonFormat format_;
};

// A fresh reference-counted arena for boost::json::value records, one or a few.
boost::json::storage_ptr make_record_arena(std::size_t first_block = record_arena_first_block);

// Parses one JSON text into a fresh reference-counted arena whose first block is sized
// from the text. On a syntax error sets `error` and returns null.
boost::json::value parse_record(std::string_view text, boost::system::error_code& error,
                                const boost::json::parse_options& options = {});

}  // namespace jsonl

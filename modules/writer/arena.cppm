// Records that cost little to build and free: a boost::json::value whose memory is one
// arena (Boost.JSON's monotonic_resource behind a reference-counted storage_ptr). Building
// or parsing it takes a few large blocks instead of a node at a time, and releasing it
// frees those blocks in a few calls, on whichever thread drops the last value that uses
// the arena. Several records may share one arena; it goes with the last of them.
//
//   boost::json::object record(jsonl::make_record_arena());   // every member built in it
//   record["request_id"] = 42;
//   writer.submit(std::move(record));
//
// Everything put into such a record must be built with its storage (record.storage()),
// or Boost.JSON copies it in. The arena is not thread-safe for building: build a record
// on one thread, then submit it.
module;

#include <boost/json/parse_options.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string_view>

export module jsonl.writer:arena;

export namespace jsonl {

// Room in the first block for a typical per-request record (about 2 KB of JSON text);
// later blocks grow geometrically.
inline constexpr std::size_t record_arena_first_block = 8192;

// A fresh arena for one record, or for a few freed together.
boost::json::storage_ptr make_record_arena(std::size_t first_block = record_arena_first_block);

// Parses one JSON text into a fresh arena whose first block is sized from the text. On a
// syntax error sets `error` and returns null; the arena goes with the value.
boost::json::value parse_record(std::string_view text, boost::system::error_code& error,
                                const boost::json::parse_options& options = {});

}  // namespace jsonl

module;

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/storage_ptr.hpp>
#include <boost/json/value.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <string_view>

module jsonl.writer;

import :arena;

namespace jsonl {

boost::json::storage_ptr make_record_arena(std::size_t first_block) {
  return boost::json::make_shared_resource<boost::json::monotonic_resource>(first_block);
}

namespace {

// A DOM takes about two and a half times its text; a little more saves a second block.
std::size_t first_block_for(std::string_view text) { return text.size() * 3 + 512; }

}  // namespace

boost::json::value parse_record(std::string_view text, boost::system::error_code& error,
                                const boost::json::parse_options& options) {
  return boost::json::parse(text, error, make_record_arena(first_block_for(text)), options);
}

ArenaRecord ArenaRecord::parse(std::string_view text, boost::system::error_code& error,
                               const boost::json::parse_options& options) {
  ArenaRecord record = make(first_block_for(text));
  record.value() = boost::json::parse(text, error, record.storage(), options);
  return record;
}

}  // namespace jsonl

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

boost::json::value parse_record(std::string_view text, boost::system::error_code& error,
                                const boost::json::parse_options& options) {
  // A DOM takes about twice its text; a little more saves a second block.
  const std::size_t first_block = text.size() * 2 + 1024;
  return boost::json::parse(text, error, make_record_arena(first_block), options);
}

}  // namespace jsonl

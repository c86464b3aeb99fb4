// Python's int() applied to a JSON value, as the reference applies it to request_id.
module;

#include <boost/json/value.hpp>
#include <optional>
#include <string_view>

module jsonl.perf_metrics:python_int;

namespace jsonl {

// The integer int(value) gives, or empty where int() raises TypeError or ValueError
// (null, arrays, objects, NaN, strings that are not integer literals) or where the
// result would leave the int64/uint64 range. Throws std::overflow_error for infinity.
std::optional<boost::json::value> python_int(const boost::json::value& value);
// int(text) for a string.
std::optional<boost::json::value> python_int(std::string_view text);

}  // namespace jsonl

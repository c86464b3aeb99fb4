// Python's reading of JSON values, for tables computed by the reference's analysis
// rules: what `d.get(k)`, `x or {}`, truthiness, `float(x)`, `str(x)` and
// `datetime.fromisoformat(...).timestamp()` make of a value, and how its csv module and
// helpers spell a cell. A value is a boost::json::value: null stands for None.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jsonl_perf::python {

using Value = boost::json::value;

// `object.get(key)`: none when the key is missing; value_at the same as a value, None
// for a missing key.
const Value* get(const boost::json::object& object, std::string_view key);
Value value_at(const boost::json::object& object, std::string_view key);
// The value when it is a dict, else none (isinstance(value, dict)).
const boost::json::object* object_at(const boost::json::object& object, std::string_view key);
// `value or {}` where value should be a dict: an empty dict for anything else.
const boost::json::object& object_or_empty(const Value* value);
bool truthy(const Value* value);
// float(value): a number, a bool or a string that spells one; none otherwise.
std::optional<double> to_float(const Value* value);
// str(value) and repr(value).
std::string str(const Value& value);
std::string repr(const Value& value);

// Each SSE block's `data:` lines, stripped and joined with newlines.
std::vector<std::string> sse_data(std::string_view text);

// Seconds since the epoch of an ISO 8601 time with an offset (or Z), as Python 3.11's
// datetime.fromisoformat(text).timestamp() computes them (a fraction of any number of
// digits, those past six dropped); none for anything else.
std::optional<double> parse_iso(const Value* value);
// "2026-09-03T14:05:09Z": the second `epoch` falls in, as strftime spells a datetime made
// from it (microseconds rounded half to even first); empty for none.
std::string utc_iso(std::optional<double> epoch);

// A CSV cell as the analysis writes one: empty for None, a float with four decimals and
// no trailing zeros, anything else as str() spells it.
std::string cell(const Value& value);
// `fields` as a CSV row, each quoted where it holds a comma, a quote or a line break, CRLF.
std::string csv_row(const std::vector<std::string>& fields);

}  // namespace jsonl_perf::python

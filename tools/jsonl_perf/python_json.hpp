// Reading JSON text as Python's json.loads does: correctly rounded doubles, the NaN and
// Infinity tokens, integers exact across the 64-bit ranges.
#pragma once

#include <boost/json/parse_options.hpp>

namespace jsonl_perf {

inline boost::json::parse_options python_json_loads() {
  boost::json::parse_options options;
  options.numbers = boost::json::number_precision::precise;
  options.allow_infinity_and_nan = true;
  return options;
}

}  // namespace jsonl_perf

// The JSON Lines format of each record kind: what a writer uses when it is given none,
// and what a configuration composes (the request trace writes a payload with it).
module;

#include <boost/json/value.hpp>

export module jsonl.writer:format_for;

import :format;
import :arena;
import :described;

export namespace jsonl {

// format_for<Record>::type is a RecordFormat<Record>, constructible from JsonTextOptions:
// boost::json::value records, ArenaRecord, and structs described with Boost.Describe.
template <class Record>
struct format_for {};

template <>
struct format_for<boost::json::value> {
  using type = JsonLineFormat;
};

template <>
struct format_for<ArenaRecord> {
  using type = ArenaRecordFormat<JsonLineFormat>;
};

template <DescribedStruct Record>
struct format_for<Record> {
  using type = DescribedFormat<Record>;
};

template <class Record>
concept has_default_format = requires { typename format_for<Record>::type; };

}  // namespace jsonl

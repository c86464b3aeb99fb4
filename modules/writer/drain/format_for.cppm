// The JSON Lines format of each record kind: what a writer uses when it is given none,
// and what a configuration composes (the request trace writes a payload with it).
module;

#include <boost/json/value.hpp>

export module jsonl.writer:format_for;

import :format;
import :arena;
import :described;

export namespace jsonl {

// format_for<Record, JsonFormat>::type is the RecordFormat<Record> of a configuration
// that writes raw JSON records with JsonFormat: JsonFormat itself for boost::json::value,
// ArenaRecordFormat<JsonFormat> for ArenaRecord, so that both kinds write the same bytes.
// With the default JsonLineFormat, structs described with Boost.Describe get
// DescribedFormat, and every type is constructible from JsonTextOptions. A configuration
// with a typed record of its own specializes it for that record and its JsonFormat, as
// jsonl.perf_metrics does for perf::PerfMetricsRecord.
template <class Record, class JsonFormat = JsonLineFormat>
struct format_for {};

template <class JsonFormat>
struct format_for<boost::json::value, JsonFormat> {
  using type = JsonFormat;
};

template <class JsonFormat>
struct format_for<ArenaRecord, JsonFormat> {
  using type = ArenaRecordFormat<JsonFormat>;
};

template <DescribedStruct Record>
struct format_for<Record, JsonLineFormat> {
  using type = DescribedFormat<Record>;
};

template <class Record>
concept has_default_format = requires { typename format_for<Record>::type; };

}  // namespace jsonl

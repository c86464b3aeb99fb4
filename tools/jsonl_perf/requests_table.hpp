// requests.csv: one row per request line of a run's attempt directory, with the columns
// of the reference's large-scale-serving analysis (its requests table), each computed
// by that table's rules from the same lines, so that a notebook written for the
// reference's requests.csv reads ours: the request line joined to its response line on
// trace_id and to the perf records on the response's disagg_request_id; started_at the
// arrival on the steady clock moved onto the wall clock by the least (recorded_at -
// server_arrival_time) of the run; tokens from the usage the client received; each
// latency phase in ms. A column our runs leave nothing for (the attention-DP routing,
// the GPU's forward time) is empty, as the reference leaves a missing value; `session`
// (the request line's) follows the reference's columns.
//
// The text is RFC 4180 as Python's csv module writes it: a header row, CRLF line ends,
// a field quoted where it holds a comma, a quote or a line break; an empty field for a
// missing value; a float with at most four decimals (trailing zeros dropped), a time
// as 2026-09-03T14:05:09Z (whole seconds), a boolean as True or False.
#pragma once

#include <boost/json/value.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace jsonl_perf {

// A perf record and the name of the file it was read from: the reference reads a
// record's hop from its file's name where the name says it (perf_metrics-disagg-...,
// perf_metrics-ctx-..., perf_metrics-gen-...), else from its fields.
struct PerfRecordLine {
  const boost::json::value* record;
  std::string file_name;
};

// The table's columns, in order.
const std::vector<std::string>& requests_table_columns();

struct RequestsTable {
  // One row for each trace_id (a later request line of one takes its row), by start time,
  // then rid, as the reference sorts them; a row's cells in the columns' order, a time as
  // seconds since the epoch, None as null.
  std::vector<std::vector<boost::json::value>> rows;
  std::string csv;  // the header, then the rows
};

RequestsTable requests_table(const std::vector<boost::json::value>& request_lines,
                             const std::vector<boost::json::value>& response_lines,
                             const std::vector<PerfRecordLine>& perf_records);

}  // namespace jsonl_perf

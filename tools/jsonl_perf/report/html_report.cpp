// summary's HTML report: a percentile table per group of perf records, then a histogram
// of each metric with p50/p90/p99 marks. No scripts, no external resources.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "dataset.hpp"
#include "svg_charts.hpp"

namespace jsonl_perf {
namespace {

using charts::escape;
using charts::number;

std::string percentile_table(const Group& group) {
  std::ostringstream table;
  table << "<table>\n<tr><th>metric (ms)</th><th>count</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>\n";
  for (const std::string& name : metric_names) {
    const auto found = group.samples.find(name);
    if (found == group.samples.end() || found->second.empty()) continue;
    const auto& values = found->second;
    table << "<tr><td>" << escape(name) << "</td><td>" << values.size() << "</td><td>" << number(percentile(values, 50))
          << "</td><td>" << number(percentile(values, 90)) << "</td><td>" << number(percentile(values, 99))
          << "</td><td>" << number(values.back()) << "</td></tr>\n";
  }
  table << "</table>\n";
  return table.str();
}

}  // namespace

std::string html_report(const Dataset& dataset) {
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<title>jsonl-perf report</title>\n<style>body{font-family:sans-serif;margin:2em}"
          "figure{display:inline-block;margin:1em}figcaption{font-weight:bold}"
          "table{border-collapse:collapse;margin:0.5em 1em}th,td{padding:0.2em 0.8em;text-align:right}"
          "th:first-child,td:first-child{text-align:left}tr:nth-child(even){background:#f2f4f7}"
          "th{border-bottom:1px solid #888}</style>\n</head>\n<body>\n"
       << "<h1>Performance metrics</h1>\n<p>" << dataset.files << " files, " << dataset.lines << " lines, "
       << dataset.bad_lines << " bad, " << dataset.torn_lines << " torn.</p>\n";
  for (const Group& group : dataset.groups) {
    page << "<h2>" << escape(group.kind) << " / " << escape(group.status) << " (" << group.records << " records";
    if (group.allocated_blocks > 0) page << ", KV-cache reuse " << number(group.reused_blocks / group.allocated_blocks);
    page << ")</h2>\n" << percentile_table(group);
    for (const std::string& name : metric_names) {
      const auto found = group.samples.find(name);
      if (found == group.samples.end() || found->second.empty()) continue;
      const auto& values = found->second;
      page << charts::histogram(name + " (" + std::to_string(values.size()) + " samples)", values,
                        charts::Axis(values.front(), values.back()), "ms",
                        {{"p50", percentile(values, 50)}, {"p90", percentile(values, 90)}, {"p99", percentile(values, 99)}});
    }
  }
  if (!dataset.arrival_times.empty()) {
    const double first = dataset.arrival_times.front();
    const double last = dataset.arrival_times.back();
    const double seconds = std::max(1.0, std::ceil(last - first));
    std::vector<double> since_first;
    since_first.reserve(dataset.arrival_times.size());
    for (const double arrival : dataset.arrival_times) since_first.push_back(arrival - first);
    page << "<h2>Records over time</h2>\n"
         << charts::histogram("records by time of arrival", since_first, charts::Axis(0, seconds), "s since the first", {});
  }
  page << "</body>\n</html>\n";
  return page.str();
}

}  // namespace jsonl_perf

// jsonl-perf summary: percentiles per server kind and status, as a table or JSON, and
// optionally an HTML report.
#include <boost/json.hpp>

#include <fstream>
#include <iomanip>
#include <ostream>
#include <stdexcept>

#include "commands.hpp"
#include "dataset.hpp"

import jsonl.writer;

namespace jsonl_perf {
namespace {

constexpr double reported_percentiles[] = {50, 90, 99};

boost::json::value to_json(const Dataset& dataset) {
  boost::json::array groups;
  for (const Group& group : dataset.groups) {
    boost::json::object metrics;
    for (const std::string& name : metric_names) {
      const auto found = group.samples.find(name);
      if (found == group.samples.end() || found->second.empty()) continue;
      const auto& values = found->second;
      metrics[name] = {{"count", values.size()},          {"p50", percentile(values, 50)},
                       {"p90", percentile(values, 90)},   {"p99", percentile(values, 99)},
                       {"max", values.back()}};
    }
    boost::json::object entry{{"kind", group.kind}, {"status", group.status}, {"records", group.records},
                              {"metrics", std::move(metrics)}};
    entry["kv_cache_reuse_ratio"] =
        group.allocated_blocks > 0 ? boost::json::value(group.reused_blocks / group.allocated_blocks) : nullptr;
    groups.push_back(std::move(entry));
  }
  return {{"files", dataset.files},           {"lines", dataset.lines},
          {"bad_lines", dataset.bad_lines},   {"torn_lines", dataset.torn_lines},
          {"groups", std::move(groups)}};
}

void print_table(const Dataset& dataset, std::ostream& out) {
  out << std::fixed << std::setprecision(3);
  for (const Group& group : dataset.groups) {
    out << group.kind << " / " << group.status << ": " << group.records << " records";
    if (group.allocated_blocks > 0) out << ", KV-cache reuse " << group.reused_blocks / group.allocated_blocks;
    out << '\n';
    out << "  " << std::left << std::setw(18) << "metric (ms)" << std::right << std::setw(8) << "count";
    for (double p : reported_percentiles) out << std::setw(12) << ("p" + std::to_string(int(p)));
    out << std::setw(12) << "max" << '\n';
    for (const std::string& name : metric_names) {
      const auto found = group.samples.find(name);
      if (found == group.samples.end() || found->second.empty()) continue;
      const auto& values = found->second;
      out << "  " << std::left << std::setw(18) << name << std::right << std::setw(8) << values.size();
      for (double p : reported_percentiles) out << std::setw(12) << percentile(values, p);
      out << std::setw(12) << values.back() << '\n';
    }
  }
  out << dataset.files << " files, " << dataset.lines << " lines, " << dataset.bad_lines << " bad, "
      << dataset.torn_lines << " torn\n";
}

}  // namespace

int run_summary(const SummaryOptions& options, std::ostream& out, std::ostream& err) {
  Dataset dataset;
  try {
    dataset = load_dataset(options.paths, err, options.threads, options.max_line_bytes);
  } catch (const std::exception& error) {
    err << "jsonl-perf summary: " << error.what() << '\n';
    return 2;
  }
  if (options.json) {
    out << jsonl::to_json_text(to_json(dataset)) << '\n';
  } else {
    print_table(dataset, out);
  }
  if (options.html) {
    std::ofstream page(*options.html, std::ios::binary);
    page << html_report(dataset);
    if (!page) {
      err << "jsonl-perf summary: cannot write " << options.html->string() << '\n';
      return 1;
    }
  }
  return 0;
}

}  // namespace jsonl_perf

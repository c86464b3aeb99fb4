// The HTML report: a percentile table per group, then inline SVG charts with axis
// ticks and p50/p90/p99 marks. No scripts, no external resources.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "dataset.hpp"

namespace jsonl_perf {
namespace {

constexpr int width = 600;
constexpr int height = 240;
constexpr int left = 56;    // room for the count ticks
constexpr int right = 20;
constexpr int top = 28;     // room for the percentile labels
constexpr int bottom = 40;  // room for the value ticks
constexpr int bins = 40;

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value);
  return text;
}

// Where values go along a chart: linear, or logarithmic when they span more than two
// decades (the log axis starts at the smallest positive value; smaller ones sit at it).
class Axis {
 public:
  Axis(double low, double high) : low_(low), high_(high > low ? high : low + 1) {
    const double smallest = low > 0 ? low : 0;
    log_ = smallest > 0 && high_ / smallest > 100;
  }
  // A value's place, 0 at the low end and 1 at the high end.
  double place(double value) const {
    if (log_) return std::clamp(std::log10(std::max(value, low_) / low_) / std::log10(high_ / low_), 0.0, 1.0);
    return std::clamp((value - low_) / (high_ - low_), 0.0, 1.0);
  }
  // The value at a place: bins are equal in place, not in value, on a log axis.
  double value_at(double place) const {
    return log_ ? low_ * std::pow(high_ / low_, place) : low_ + place * (high_ - low_);
  }
  // Round values to label: decades (and their 2 and 5 multiples when few) on a log axis,
  // steps of 1, 2 or 5 times a power of ten otherwise.
  std::vector<double> ticks() const {
    std::vector<double> ticks;
    if (log_) {
      const int first = static_cast<int>(std::ceil(std::log10(low_)));
      const int last = static_cast<int>(std::floor(std::log10(high_)));
      for (int decade = first; decade <= last; ++decade) {
        for (const double multiple : last - first < 3 ? std::vector<double>{1, 2, 5} : std::vector<double>{1}) {
          const double tick = multiple * std::pow(10.0, decade);
          if (tick >= low_ && tick <= high_) ticks.push_back(tick);
        }
      }
      return ticks;
    }
    const double rough = (high_ - low_) / 5;
    const double power = std::pow(10.0, std::floor(std::log10(rough)));
    const double step = rough / power < 2 ? power : rough / power < 5 ? 2 * power : 5 * power;
    for (double tick = std::ceil(low_ / step) * step; tick <= high_ + step * 1e-9; tick += step) ticks.push_back(tick);
    return ticks;
  }
  bool logarithmic() const { return log_; }

 private:
  double low_;
  double high_;
  bool log_ = false;
};

double x_of(double place) { return left + place * (width - left - right); }

// A histogram of sorted `values` on `axis`, with count and value ticks and a mark at
// each of `marks` (label, value).
std::string histogram(const std::string& title, const std::vector<double>& values, const Axis& axis,
                      const std::string& unit, const std::vector<std::pair<std::string, double>>& marks) {
  std::vector<std::size_t> counts(bins, 0);
  for (const double value : values) counts[std::min(bins - 1, static_cast<int>(axis.place(value) * bins))] += 1;
  const std::size_t tallest = std::max<std::size_t>(1, *std::max_element(counts.begin(), counts.end()));
  const int plot_height = height - top - bottom;
  const double bar_width = double(width - left - right) / bins;
  std::ostringstream svg;
  svg << "<figure><figcaption>" << escape(title) << (axis.logarithmic() ? " (log scale)" : "") << "</figcaption>\n"
      << "<svg width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << ' ' << height
      << "\" role=\"img\" font-size=\"11\">\n";
  for (int i = 0; i < bins; ++i) {
    const double bar_height = double(plot_height) * counts[i] / tallest;
    svg << "<rect x=\"" << left + i * bar_width << "\" y=\"" << height - bottom - bar_height << "\" width=\""
        << std::max(1.0, bar_width - 1) << "\" height=\"" << bar_height << "\" fill=\"#4a7ab5\"><title>"
        << number(axis.value_at(double(i) / bins)) << "–" << number(axis.value_at(double(i + 1) / bins)) << ' '
        << escape(unit) << ": " << counts[i] << "</title></rect>\n";
  }
  // Axes, count ticks (0, half, the tallest bar) and value ticks.
  svg << "<line x1=\"" << left << "\" y1=\"" << height - bottom << "\" x2=\"" << width - right << "\" y2=\""
      << height - bottom << "\" stroke=\"#444\"/>\n"
      << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << height - bottom
      << "\" stroke=\"#444\"/>\n";
  for (const std::size_t count : {std::size_t{0}, tallest / 2, tallest}) {
    const double y = height - bottom - double(plot_height) * count / tallest;
    svg << "<line x1=\"" << left - 4 << "\" y1=\"" << y << "\" x2=\"" << left << "\" y2=\"" << y
        << "\" stroke=\"#444\"/><text x=\"" << left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << count
        << "</text>\n";
  }
  for (const double tick : axis.ticks()) {
    const double x = x_of(axis.place(tick));
    svg << "<line x1=\"" << x << "\" y1=\"" << height - bottom << "\" x2=\"" << x << "\" y2=\"" << height - bottom + 4
        << "\" stroke=\"#444\"/><text x=\"" << x << "\" y=\"" << height - bottom + 16 << "\" text-anchor=\"middle\">"
        << number(tick) << "</text>\n";
  }
  svg << "<text x=\"" << (left + width - right) / 2 << "\" y=\"" << height - 6 << "\" text-anchor=\"middle\">"
      << escape(unit) << "</text>\n";
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const double x = x_of(axis.place(marks[i].second));
    svg << "<line x1=\"" << x << "\" y1=\"" << top - 4 << "\" x2=\"" << x << "\" y2=\"" << height - bottom
        << "\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/><text x=\"" << x << "\" y=\"" << top - 8 - 10 * (i % 2)
        << "\" text-anchor=\"middle\" fill=\"#c0392b\">" << escape(marks[i].first) << "</text>\n";
  }
  svg << "</svg></figure>\n";
  return svg.str();
}

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
      page << histogram(name + " (" + std::to_string(values.size()) + " samples)", values,
                        Axis(values.front(), values.back()), "ms",
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
         << histogram("records by time of arrival", since_first, Axis(0, seconds), "s since the first", {});
  }
  page << "</body>\n</html>\n";
  return page.str();
}

}  // namespace jsonl_perf

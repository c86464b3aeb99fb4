// The HTML report: inline SVG charts, no scripts, no external resources.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "dataset.hpp"

namespace jsonl_perf {
namespace {

constexpr int width = 560;
constexpr int height = 220;
constexpr int margin = 40;
constexpr int bins = 30;

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
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

// Bars of `counts` over [low, high], labelled on the x axis.
std::string bar_chart(const std::string& title, const std::vector<std::size_t>& counts, double low, double high,
                      const std::string& unit) {
  const std::size_t tallest = std::max<std::size_t>(1, *std::max_element(counts.begin(), counts.end()));
  const double bar_width = double(width - 2 * margin) / counts.size();
  std::ostringstream svg;
  svg << "<figure><figcaption>" << escape(title) << "</figcaption>\n"
      << "<svg width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height << "\" role=\"img\">\n"
      << "<line x1=\"" << margin << "\" y1=\"" << height - margin << "\" x2=\"" << width - margin << "\" y2=\""
      << height - margin << "\" stroke=\"#444\"/>\n";
  for (std::size_t i = 0; i < counts.size(); ++i) {
    const double bar_height = double(height - 2 * margin) * counts[i] / tallest;
    svg << "<rect x=\"" << margin + i * bar_width << "\" y=\"" << height - margin - bar_height << "\" width=\""
        << std::max(1.0, bar_width - 1) << "\" height=\"" << bar_height << "\" fill=\"#4a7ab5\"><title>"
        << counts[i] << "</title></rect>\n";
  }
  svg << "<text x=\"" << margin << "\" y=\"" << height - margin / 3 << "\" font-size=\"11\">" << number(low) << ' '
      << escape(unit) << "</text>\n"
      << "<text x=\"" << width - margin << "\" y=\"" << height - margin / 3
      << "\" font-size=\"11\" text-anchor=\"end\">" << number(high) << ' ' << escape(unit) << "</text>\n"
      << "<text x=\"" << margin << "\" y=\"" << margin / 2 << "\" font-size=\"11\">max " << tallest << "</text>\n"
      << "</svg></figure>\n";
  return svg.str();
}

std::vector<std::size_t> histogram(const std::vector<double>& sorted, double low, double high, int count) {
  std::vector<std::size_t> counts(count, 0);
  const double span = high > low ? high - low : 1;
  for (double value : sorted) {
    counts[std::min(count - 1, static_cast<int>((value - low) / span * count))] += 1;
  }
  return counts;
}

}  // namespace

std::string html_report(const Dataset& dataset) {
  std::ostringstream page;
  page << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
       << "<title>jsonl-perf report</title>\n<style>body{font-family:sans-serif;margin:2em}"
          "figure{display:inline-block;margin:1em}figcaption{font-weight:bold}</style>\n</head>\n<body>\n"
       << "<h1>Performance metrics</h1>\n<p>" << dataset.files << " files, " << dataset.lines << " lines, "
       << dataset.bad_lines << " bad, " << dataset.torn_lines << " torn.</p>\n";
  if (!dataset.arrival_times.empty()) {
    const double first = dataset.arrival_times.front();
    const double last = dataset.arrival_times.back();
    const int seconds = std::max(1, static_cast<int>(std::ceil(last - first)));
    page << "<h2>Records over time</h2>\n"
         << bar_chart("records per second of arrival", histogram(dataset.arrival_times, first, first + seconds,
                                                                 std::min(seconds, 600)),
                      0, seconds, "s");
  }
  for (const Group& group : dataset.groups) {
    page << "<h2>" << escape(group.kind) << " / " << escape(group.status) << " (" << group.records
         << " records)</h2>\n";
    for (const std::string& name : metric_names) {
      const auto found = group.samples.find(name);
      if (found == group.samples.end() || found->second.empty()) continue;
      const auto& values = found->second;
      page << bar_chart(name + " (" + std::to_string(values.size()) + " samples)",
                        histogram(values, values.front(), values.back(), bins), values.front(), values.back(), "ms");
    }
  }
  page << "</body>\n</html>\n";
  return page.str();
}

}  // namespace jsonl_perf

#include "svg_charts.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace jsonl_perf::charts {
namespace {

constexpr int width = 600;
constexpr int height = 240;
constexpr int left = 56;    // room for the y ticks
constexpr int right = 20;
constexpr int top = 28;     // room for the marks' labels and the legend
constexpr int bottom = 40;  // room for the x ticks and unit
constexpr int bins = 40;
constexpr std::size_t most_samples_drawn = 600;  // about one a pixel of the plot's width
constexpr int plot_height = height - top - bottom;
constexpr const char* colours[] = {"#4a7ab5", "#c0392b", "#27ae60", "#8e44ad", "#d68910"};

double x_of(double place) { return left + place * (width - left - right); }
double y_of(double place) { return height - bottom - place * plot_height; }

void open_chart(std::ostringstream& svg, const std::string& title, std::size_t points) {
  svg << "<figure><figcaption>" << escape(title) << "</figcaption>\n"
      << "<svg class=\"chart\" data-points=\"" << points << "\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << ' ' << height << "\" role=\"img\" font-size=\"11\">\n";
}

// The two axes, the y ticks at `y_ticks` (value, label) and the x ticks of `x_axis`,
// the x unit under them and the y unit above the y axis.
void axes(std::ostringstream& svg, const std::vector<std::pair<double, std::string>>& y_ticks, const Axis& x_axis,
          const std::string& x_unit, const std::string& y_unit) {
  svg << "<line x1=\"" << left << "\" y1=\"" << height - bottom << "\" x2=\"" << width - right << "\" y2=\""
      << height - bottom << "\" stroke=\"#444\"/>\n"
      << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << height - bottom
      << "\" stroke=\"#444\"/>\n";
  for (const auto& [place, label] : y_ticks) {
    const double y = y_of(place);
    svg << "<line x1=\"" << left - 4 << "\" y1=\"" << y << "\" x2=\"" << left << "\" y2=\"" << y
        << "\" stroke=\"#444\"/><text x=\"" << left - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">" << label
        << "</text>\n";
  }
  for (const double tick : x_axis.ticks()) {
    const double x = x_of(x_axis.place(tick));
    svg << "<line x1=\"" << x << "\" y1=\"" << height - bottom << "\" x2=\"" << x << "\" y2=\"" << height - bottom + 4
        << "\" stroke=\"#444\"/><text x=\"" << x << "\" y=\"" << height - bottom + 16 << "\" text-anchor=\"middle\">"
        << number(tick) << "</text>\n";
  }
  svg << "<text x=\"" << (left + width - right) / 2 << "\" y=\"" << height - 6 << "\" text-anchor=\"middle\">"
      << escape(x_unit) << "</text>\n";
  if (!y_unit.empty()) {
    const int middle = (top + height - bottom) / 2;
    svg << "<text x=\"12\" y=\"" << middle << "\" transform=\"rotate(-90 12 " << middle
        << ")\" text-anchor=\"middle\">" << escape(y_unit) << "</text>\n";
  }
}

}  // namespace

std::string escape(std::string_view text) {
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

Axis::Axis(double low, double high, bool may_be_logarithmic) : low_(low), high_(high > low ? high : low + 1) {
  log_ = may_be_logarithmic && low > 0 && high_ / low > 100;
}

double Axis::place(double value) const {
  if (log_) return std::clamp(std::log10(std::max(value, low_) / low_) / std::log10(high_ / low_), 0.0, 1.0);
  return std::clamp((value - low_) / (high_ - low_), 0.0, 1.0);
}

double Axis::value_at(double place) const {
  return log_ ? low_ * std::pow(high_ / low_, place) : low_ + place * (high_ - low_);
}

std::vector<double> Axis::ticks() const {
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

std::string histogram(const std::string& title, const std::vector<double>& values, const Axis& axis,
                      const std::string& unit, const std::vector<Mark>& marks) {
  std::vector<std::size_t> counts(bins, 0);
  for (const double value : values) counts[std::min(bins - 1, static_cast<int>(axis.place(value) * bins))] += 1;
  const std::size_t tallest = std::max<std::size_t>(1, *std::max_element(counts.begin(), counts.end()));
  const double bar_width = double(width - left - right) / bins;
  std::ostringstream svg;
  open_chart(svg, title + (axis.logarithmic() ? " (log scale)" : ""), bins);
  for (int i = 0; i < bins; ++i) {
    const double bar_height = double(plot_height) * counts[i] / tallest;
    svg << "<rect class=\"point\" x=\"" << left + i * bar_width << "\" y=\"" << height - bottom - bar_height
        << "\" width=\"" << std::max(1.0, bar_width - 1) << "\" height=\"" << bar_height << "\" fill=\"" << colours[0]
        << "\"><title>" << number(axis.value_at(double(i) / bins)) << "–" << number(axis.value_at(double(i + 1) / bins))
        << ' ' << escape(unit) << ": " << counts[i] << "</title></rect>\n";
  }
  std::vector<std::pair<double, std::string>> count_ticks;
  for (const std::size_t count : {std::size_t{0}, tallest / 2, tallest}) {
    count_ticks.emplace_back(double(count) / tallest, std::to_string(count));
  }
  axes(svg, count_ticks, axis, unit, "");
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const double x = x_of(axis.place(marks[i].value));
    svg << "<line x1=\"" << x << "\" y1=\"" << top - 4 << "\" x2=\"" << x << "\" y2=\"" << height - bottom
        << "\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/><text x=\"" << x << "\" y=\"" << top - 8 - 10 * (i % 2)
        << "\" text-anchor=\"middle\" fill=\"#c0392b\">" << escape(marks[i].label) << "</text>\n";
  }
  svg << "</svg></figure>\n";
  return svg.str();
}

namespace {

// `series` with at most most_samples_drawn points each: a longer one as the highest of
// each run of neighbours, at the run's first x.
std::vector<Series> thinned(const std::vector<Series>& series) {
  std::vector<Series> drawn;
  for (const Series& line : series) {
    const std::size_t run = (line.points.size() + most_samples_drawn - 1) / most_samples_drawn;
    if (run <= 1) {
      drawn.push_back(line);
      continue;
    }
    Series thin{line.name, {}};
    for (std::size_t at = 0; at < line.points.size(); at += run) {
      const auto end = line.points.begin() + static_cast<std::ptrdiff_t>(std::min(at + run, line.points.size()));
      const auto highest = std::max_element(line.points.begin() + static_cast<std::ptrdiff_t>(at), end,
                                            [](const auto& a, const auto& b) { return a.second < b.second; });
      thin.points.emplace_back(line.points[at].first, highest->second);
    }
    drawn.push_back(std::move(thin));
  }
  return drawn;
}

}  // namespace

std::string line_chart(const std::string& title, const std::vector<Series>& all_series, const std::string& x_unit,
                       const std::string& y_unit) {
  const std::vector<Series> series = thinned(all_series);
  double first = 0, last = 0, highest = 0;
  std::size_t points = 0;
  bool any = false;
  for (const Series& line : series) {
    for (const auto& [x, y] : line.points) {
      first = any ? std::min(first, x) : x;
      last = any ? std::max(last, x) : x;
      highest = std::max(highest, y);
      any = true;
      ++points;
    }
  }
  if (!any) return "<figure><figcaption>" + escape(title) + "</figcaption><p>No data.</p></figure>\n";
  const Axis x_axis(first, last, false);  // time runs evenly
  const Axis y_axis(0, highest > 0 ? highest : 1);
  std::ostringstream svg;
  open_chart(svg, title, points);
  std::vector<std::pair<double, std::string>> y_ticks;
  for (const double tick : y_axis.ticks()) y_ticks.emplace_back(y_axis.place(tick), number(tick));
  axes(svg, y_ticks, x_axis, x_unit, y_unit);
  for (std::size_t i = 0; i < series.size(); ++i) {
    const char* colour = colours[i % std::size(colours)];
    std::ostringstream line;
    for (const auto& [x, y] : series[i].points) line << x_of(x_axis.place(x)) << ',' << y_of(y_axis.place(y)) << ' ';
    svg << "<polyline fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"1.5\" points=\"" << line.str()
        << "\"/>\n";
    for (const auto& [x, y] : series[i].points) {
      svg << "<circle class=\"point\" cx=\"" << x_of(x_axis.place(x)) << "\" cy=\"" << y_of(y_axis.place(y))
          << "\" r=\"2\" fill=\"" << colour << "\"><title>" << escape(series[i].name) << " at " << number(x) << ' '
          << escape(x_unit) << ": " << number(y) << "</title></circle>\n";
    }
    const double legend_x = width - right - 130.0 * (series.size() - i);
    svg << "<rect x=\"" << legend_x << "\" y=\"" << top - 20 << "\" width=\"10\" height=\"10\" fill=\"" << colour
        << "\"/><text x=\"" << legend_x + 14 << "\" y=\"" << top - 11 << "\">" << escape(series[i].name) << "</text>\n";
  }
  svg << "</svg></figure>\n";
  return svg.str();
}

}  // namespace jsonl_perf::charts

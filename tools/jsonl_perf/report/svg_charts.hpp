// Inline SVG charts for the HTML reports: no script, no external resource, each with
// axes, ticks, units and (for several series) a legend. Every chart is an <svg
// class="chart"> whose data-points attribute counts the elements of class "point" it
// draws (a histogram's bars, a line's samples), so a browser's DOM shows that each
// datum was drawn.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jsonl_perf::charts {

// `text` with &, <, > and " spelt as HTML entities.
std::string escape(std::string_view text);
// A value with at most four significant digits.
std::string number(double value);

// Where values go along a chart: linear, or (where `may_be_logarithmic`) logarithmic
// when they span more than two decades (the log axis starts at the smallest positive
// value; smaller ones sit at it).
class Axis {
 public:
  Axis(double low, double high, bool may_be_logarithmic = true);
  // A value's place, 0 at the low end and 1 at the high end.
  double place(double value) const;
  // The value at a place: bins are equal in place, not in value, on a log axis.
  double value_at(double place) const;
  // Round values to label: decades (and their 2 and 5 multiples when few) on a log axis,
  // steps of 1, 2 or 5 times a power of ten otherwise.
  std::vector<double> ticks() const;
  bool logarithmic() const { return log_; }

 private:
  double low_;
  double high_;
  bool log_ = false;
};

struct Mark {
  std::string label;
  double value;
};

// A histogram of sorted `values` on `axis` in `unit`, a dashed line at each mark.
std::string histogram(const std::string& title, const std::vector<double>& values, const Axis& axis,
                      const std::string& unit, const std::vector<Mark>& marks);

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
};

// Lines over a linear x axis from the first x to the last and a y axis from zero, each
// sample a dot, the series named in a legend. A series of more samples than the chart
// has room for is drawn as the highest of each run of neighbours (a peak stays seen);
// a chart of no sample is its title and a line saying so.
std::string line_chart(const std::string& title, const std::vector<Series>& series, const std::string& x_unit,
                       const std::string& y_unit);

}  // namespace jsonl_perf::charts

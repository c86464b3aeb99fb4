module;

#include <charconv>
#include <chrono>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

module jsonl.writer;

import :prometheus;

namespace jsonl {
namespace {

void check_label_names(const std::vector<MetricLabel>& labels) {
  for (std::size_t i = 0; i < labels.size(); ++i) {
    const std::string& name = labels[i].name;
    const auto first_ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    const auto rest_ok = [&](char c) { return first_ok(c) || (c >= '0' && c <= '9'); };
    bool valid = !name.empty() && first_ok(name[0]) && !name.starts_with("__") && name != "subject" &&
                 name != "reason";
    for (std::size_t c = 1; valid && c < name.size(); ++c) valid = rest_ok(name[c]);
    for (std::size_t j = 0; valid && j < i; ++j) valid = labels[j].name != name;
    if (!valid) throw std::invalid_argument("unusable Prometheus label name: \"" + name + "\"");
  }
}

// A label value as the text format requires: backslash, double quote and line feed escaped.
void append_label(std::string& out, std::string_view name, std::string_view value) {
  out += name;
  out += "=\"";
  for (const char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  out += '"';
}

template <class Number>
void append_number(std::string& out, Number value) {
  char text[32];
  out.append(text, std::to_chars(text, text + sizeof text, value).ptr);
}

class Exposition {
 public:
  explicit Exposition(std::span<const WriterMetrics> writers) : writers_(writers) {}

  void family(std::string_view name, std::string_view type, std::string_view help) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  // A sample of `name` for `writer`, with an extra label when `extra_name` is not empty.
  template <class Number>
  void sample(std::string_view name, const WriterMetrics& writer, Number value, std::string_view extra_name = {},
              std::string_view extra_value = {}) {
    out_ += name;
    out_ += '{';
    append_label(out_, "subject", writer.subject);
    if (!extra_name.empty()) {
      out_ += ',';
      append_label(out_, extra_name, extra_value);
    }
    for (const MetricLabel& label : writer.labels) {
      out_ += ',';
      append_label(out_, label.name, label.value);
    }
    out_ += "} ";
    append_number(out_, value);
    out_ += '\n';
  }

  // A counter's family, one sample per writer.
  void counts(const CounterInfo& counter) {
    family(counter.family, counter.type, counter.help);
    for (const WriterMetrics& writer : writers_) sample(counter.family, writer, writer.stats[counter.counter]);
  }

  std::string take() { return std::move(out_); }

 private:
  std::span<const WriterMetrics> writers_;
  std::string out_;
};

}  // namespace

std::string prometheus_text(std::span<const WriterMetrics> writers) {
  for (const WriterMetrics& writer : writers) check_label_names(writer.labels);
  Exposition out(writers);
  for (const CounterInfo& counter : counters) {
    if (!counter.family.empty()) out.counts(counter);
    if (counter.counter != Counter::unknown) continue;
    out.family("jsonl_records_dropped_total", "counter", "Records dropped, by reason.");
    for (const WriterMetrics& writer : writers) {
      for (const DropReasonInfo& drop : drop_reasons) {
        out.sample("jsonl_records_dropped_total", writer, writer.stats.dropped(drop.reason), "reason", drop.name);
      }
    }
  }
  out.family("jsonl_last_append_timestamp_seconds", "gauge", "When the last append reached a file, in Unix time.");
  for (const WriterMetrics& writer : writers) {
    if (!writer.stats.last_append) continue;
    // Whole seconds and the fraction apart, so that a time with few fractional digits
    // prints with as few, not as the nearest double to its nanosecond count.
    const auto since_epoch = writer.stats.last_append->time_since_epoch();
    const auto seconds = std::chrono::floor<std::chrono::seconds>(since_epoch);
    const double fraction = std::chrono::duration<double>(since_epoch - seconds).count();
    out.sample("jsonl_last_append_timestamp_seconds", writer, static_cast<double>(seconds.count()) + fraction);
  }
  return out.take();
}

std::string prometheus_text(const WriterStats& stats, const std::string& subject,
                            const std::vector<MetricLabel>& labels) {
  const WriterMetrics writer{stats, subject, labels};
  return prometheus_text(std::span(&writer, 1));
}

}  // namespace jsonl

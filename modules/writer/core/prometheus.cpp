module;

#include <charconv>
#include <chrono>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
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

void append_number(std::string& out, const ExposedValue& value) {
  char text[32];
  std::visit([&](auto number) { out.append(text, std::to_chars(text, text + sizeof text, number).ptr); }, value);
}

std::vector<MetricLabel> sample_labels(const WriterMetrics& writer, std::string_view reason = {}) {
  std::vector<MetricLabel> labels{{"subject", writer.subject}};
  if (!reason.empty()) labels.push_back({"reason", std::string(reason)});
  labels.insert(labels.end(), writer.labels.begin(), writer.labels.end());
  return labels;
}

// When the last append reached a file, in Unix seconds to the microsecond: the double
// nearest its decimal digits (a count of microseconds divided by a million, both exact),
// so that a time with few fractional digits prints with as few, and a printer that keeps
// fewer digits than the shortest round trip (prometheus-cpp's) prints the same number.
double unix_seconds(std::chrono::system_clock::time_point time) {
  return std::chrono::duration<double>(std::chrono::floor<std::chrono::microseconds>(time.time_since_epoch())).count();
}

}  // namespace

std::vector<ExposedFamily> exposed_families(std::span<const WriterMetrics> writers) {
  for (const WriterMetrics& writer : writers) check_label_names(writer.labels);
  std::vector<ExposedFamily> families;
  for (const CounterInfo& counter : counters) {
    if (!counter.family.empty()) {
      ExposedFamily& family = families.emplace_back(ExposedFamily{counter.family, counter.type, counter.help, {}});
      for (const WriterMetrics& writer : writers) {
        family.samples.push_back({sample_labels(writer), writer.stats[counter.counter]});
      }
    }
    if (counter.counter != Counter::unknown) continue;
    ExposedFamily& dropped =
        families.emplace_back(ExposedFamily{"jsonl_records_dropped_total", "counter", "Records dropped, by reason.", {}});
    for (const WriterMetrics& writer : writers) {
      for (const DropReasonInfo& drop : drop_reasons) {
        dropped.samples.push_back({sample_labels(writer, drop.name), writer.stats.dropped(drop.reason)});
      }
    }
  }
  ExposedFamily& last_append = families.emplace_back(ExposedFamily{
      "jsonl_last_append_timestamp_seconds", "gauge", "When the last append reached a file, in Unix time.", {}});
  for (const WriterMetrics& writer : writers) {
    if (writer.stats.last_append) last_append.samples.push_back({sample_labels(writer), unix_seconds(*writer.stats.last_append)});
  }
  return families;
}

std::string prometheus_text(std::span<const WriterMetrics> writers) {
  std::string out;
  for (const ExposedFamily& family : exposed_families(writers)) {
    out.append("# HELP ").append(family.name).append(" ").append(family.help);
    out.append("\n# TYPE ").append(family.name).append(" ").append(family.type).append("\n");
    for (const ExposedSample& sample : family.samples) {
      out.append(family.name).append("{");
      for (const MetricLabel& label : sample.labels) {
        if (&label != &sample.labels.front()) out += ',';
        append_label(out, label.name, label.value);
      }
      out.append("} ");
      append_number(out, sample.value);
      out += '\n';
    }
  }
  return out;
}

std::string prometheus_text(const WriterStats& stats, const std::string& subject,
                            const std::vector<MetricLabel>& labels) {
  const WriterMetrics writer{stats, subject, labels};
  return prometheus_text(std::span(&writer, 1));
}

}  // namespace jsonl

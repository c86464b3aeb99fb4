// Writers' counters in Prometheus's text exposition format (version 0.0.4), for a
// server's /metrics handler or a node exporter's textfile collector.
module;

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

export module jsonl.writer:prometheus;

import :stats;

export namespace jsonl {

struct MetricLabel {
  std::string name;
  std::string value;
};

// One writer's counters and the labels that tell its samples apart from other writers'.
struct WriterMetrics {
  WriterStats stats;
  std::string subject;              // the writer's subject: label subject="..."
  std::vector<MetricLabel> labels;  // constant labels of every sample, after subject
};

// A sample's value: a count exactly (every counter, the queue's gauges), or a time.
using ExposedValue = std::variant<std::uint64_t, double>;

struct ExposedSample {
  std::vector<MetricLabel> labels;  // subject, then reason (dropped records), then the writer's
  ExposedValue value;
};

// A family as an exposition shows it: the one place that reads the counter table, so
// that every renderer (prometheus_text here, jsonl.prometheus's collectable) exposes the
// same families, values and labels.
struct ExposedFamily {
  std::string_view name;
  std::string_view type;  // "counter" or "gauge"
  std::string_view help;
  std::vector<ExposedSample> samples;
};

// The families of `writers`, in exposition order, a sample per writer in each:
//   jsonl_records_submitted_total, jsonl_records_written_total,
//   jsonl_records_unknown_total, jsonl_records_dropped_total{reason="<name>"} for each
//   of drop_reasons, jsonl_records_sanitized_total, jsonl_lines_written_total,
//   jsonl_bytes_written_total, jsonl_uncompressed_bytes_written_total,
//   jsonl_appends_total, jsonl_files_started_total, jsonl_directories_recreated_total,
//   jsonl_books_publications_total, jsonl_books_publication_errors_total (counters);
//   jsonl_queue_depth, jsonl_submits_waiting_for_room and
//   jsonl_last_append_timestamp_seconds (gauges; the last only for writers that have
//   appended). Throws std::invalid_argument for a label name that is not
//   [a-zA-Z_][a-zA-Z0-9_]*, starts with "__", is "subject" or "reason", or repeats
//   within a writer's labels.
std::vector<ExposedFamily> exposed_families(std::span<const WriterMetrics> writers);

// The families of exposed_families(writers), each with HELP and TYPE lines. Several
// writers go in one call: a family may appear only once in an exposition. Label values
// are escaped as the format requires. Throws as exposed_families does.
std::string prometheus_text(std::span<const WriterMetrics> writers);

// One writer's exposition.
std::string prometheus_text(const WriterStats& stats, const std::string& subject,
                            const std::vector<MetricLabel>& labels = {});

}  // namespace jsonl

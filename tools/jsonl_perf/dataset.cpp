#include "dataset.hpp"
#include "python_json.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace jsonl_perf {
namespace {

namespace json = boost::json;

const json::value* find(const json::value& value, std::initializer_list<std::string_view> path) {
  const json::value* current = &value;
  for (std::string_view key : path) {
    const json::object* object = current->if_object();
    if (!object) return nullptr;
    current = object->if_contains(key);
    if (!current) return nullptr;
  }
  return current;
}

bool number(const json::value* value, double& out) {
  if (!value || !value->is_number()) return false;
  out = value->to_number<double>();
  return std::isfinite(out);
}

void add_difference(Group& group, const std::string& metric, const json::value& record,
                    std::initializer_list<std::string_view> end, std::initializer_list<std::string_view> start) {
  double a = 0, b = 0;
  if (number(find(record, end), b) && number(find(record, start), a)) group.samples[metric].push_back((b - a) * 1000);
}

// The server kind in "perf_metrics-<kind>-<host>-<pid>-<time>.jsonl" (kinds hold no '-').
std::string kind_of(const std::filesystem::path& file) {
  std::string name = file.filename().string();
  const std::string prefix = "perf_metrics-";
  if (name.rfind(prefix, 0) != 0) return "unknown";
  name = name.substr(prefix.size());
  return name.substr(0, name.find('-'));
}

void add_record(Dataset& dataset, std::map<std::tuple<std::string, std::string>, Group>& groups,
                const std::string& kind, const json::value& record) {
  const json::value* status_value = find(record, {"status"});
  const std::string status = status_value && status_value->is_string()
                                 ? std::string(status_value->get_string())
                                 : status_value ? json::serialize(*status_value) : "(none)";
  Group& group = groups[{kind, status}];
  group.kind = kind;
  group.status = status;
  ++group.records;

  const bool disagg = find(record, {"ctx_server"}) != nullptr;
  if (disagg) {
    add_difference(group, "queue_ms", record, {"ctx_perf_metrics", "perf_metrics", "timing_metrics", "first_scheduled_time"},
                   {"ctx_perf_metrics", "perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "ttft_ms", record, {"ctx_perf_metrics", "perf_metrics", "timing_metrics", "first_token_time"},
                   {"ctx_perf_metrics", "perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "e2e_ms", record, {"gen_perf_metrics", "perf_metrics", "timing_metrics", "last_token_time"},
                   {"gen_perf_metrics", "perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "frontend_ttft_ms", record, {"disagg_server_first_token_time"}, {"disagg_server_arrival_time"});
    add_difference(group, "ctx_dispatch_ms", record, {"disagg_ctx_dispatch_time"}, {"disagg_server_arrival_time"});
  } else {
    add_difference(group, "queue_ms", record, {"perf_metrics", "timing_metrics", "first_scheduled_time"},
                   {"perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "ttft_ms", record, {"perf_metrics", "timing_metrics", "first_token_time"},
                   {"perf_metrics", "timing_metrics", "arrival_time"});
    add_difference(group, "e2e_ms", record, {"perf_metrics", "timing_metrics", "last_token_time"},
                   {"perf_metrics", "timing_metrics", "arrival_time"});
  }

  for (std::string_view phase : {"perf_metrics", "ctx_perf_metrics", "gen_perf_metrics"}) {
    const json::value* kv = disagg ? find(record, {phase, "perf_metrics", "kv_cache_metrics"})
                                   : find(record, {phase, "kv_cache_metrics"});
    double reused = 0, allocated = 0;
    if (kv && number(find(*kv, {"num_reused_blocks"}), reused) &&
        number(find(*kv, {"num_total_allocated_blocks"}), allocated)) {
      group.reused_blocks += reused;
      group.allocated_blocks += allocated;
    }
    if (!disagg) break;
  }

  double arrival = 0;
  if (number(disagg ? find(record, {"disagg_server_arrival_time"})
                    : find(record, {"perf_metrics", "timing_metrics", "arrival_time"}),
             arrival)) {
    dataset.arrival_times.push_back(arrival);
  }
}

void load_file(const std::filesystem::path& file, Dataset& dataset,
               std::map<std::tuple<std::string, std::string>, Group>& groups, std::ostream& err) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  std::stringstream content;
  content << in.rdbuf();
  const std::string text = content.str();
  ++dataset.files;
  const std::string kind = kind_of(file);
  const boost::json::parse_options python_like = python_json_loads();
  // Each line is parsed into an arena of its own whose first block is this buffer, reused
  // line after line: a record is read and gone. (A fresh arena a line, not one arena
  // released between lines: Boost 1.83's release() keeps doubling the next block's size.)
  std::vector<unsigned char> first_block(1 << 16);

  std::size_t line_number = 0;
  for (std::size_t begin = 0; begin < text.size();) {
    const std::size_t newline = text.find('\n', begin);
    const bool torn = newline == std::string::npos;
    const std::string_view line(text.data() + begin, (torn ? text.size() : newline) - begin);
    begin = torn ? text.size() : newline + 1;
    ++line_number;
    ++dataset.lines;
    boost::system::error_code error;
    json::monotonic_resource arena(first_block.data(), first_block.size());
    const json::value record = json::parse(line, error, boost::json::storage_ptr(&arena), python_like);
    if (!error && record.is_object() && !torn) {
      add_record(dataset, groups, kind, record);
      continue;
    }
    if (torn) {
      ++dataset.torn_lines;
      err << file.string() << ":" << line_number << ": torn last line (no newline), skipped\n";
    } else {
      ++dataset.bad_lines;
      err << file.string() << ":" << line_number << ": "
          << (error ? "not JSON: " + error.message() : std::string("not a JSON object")) << ", skipped\n";
    }
  }
}

}  // namespace

Dataset load_dataset(const std::vector<std::filesystem::path>& paths, std::ostream& err) {
  std::vector<std::filesystem::path> files;
  for (const auto& path : paths) {
    if (std::filesystem::is_directory(path)) {
      std::vector<std::filesystem::path> found;
      for (const auto& item : std::filesystem::directory_iterator(path)) {
        const std::string name = item.path().filename().string();
        if (name.rfind("perf_metrics-", 0) == 0 && item.path().extension() == ".jsonl") found.push_back(item.path());
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(path)) {
      files.push_back(path);
    } else {
      throw std::runtime_error("no such file or directory: " + path.string());
    }
  }
  Dataset dataset;
  std::map<std::tuple<std::string, std::string>, Group> groups;
  for (const auto& file : files) load_file(file, dataset, groups, err);
  for (auto& [key, group] : groups) {
    for (auto& [metric, values] : group.samples) std::sort(values.begin(), values.end());
    dataset.groups.push_back(std::move(group));
  }
  std::sort(dataset.arrival_times.begin(), dataset.arrival_times.end());
  return dataset;
}

double percentile(const std::vector<double>& values, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * values.size()));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

}  // namespace jsonl_perf

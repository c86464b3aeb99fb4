#include "join.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <map>
#include <ostream>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "python_json.hpp"
#include "requests_table.hpp"
#include "run_report.hpp"
#include "serve/openai.hpp"

namespace jsonl_perf {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

std::optional<double> number(const json::value* value) {
  if (!value) return std::nullopt;
  if (value->is_double()) return value->get_double();
  if (value->is_int64()) return static_cast<double>(value->get_int64());
  if (value->is_uint64()) return static_cast<double>(value->get_uint64());
  return std::nullopt;
}

const json::value* at_path(const json::value& root, std::initializer_list<std::string_view> keys) {
  const json::value* value = &root;
  for (std::string_view key : keys) {
    const json::object* object = value->if_object();
    if (!object || !(value = object->if_contains(key))) return nullptr;
  }
  return value;
}

// Every JSON object line of the files named `prefix*.jsonl` in `directory` (and, with
// `hours`, in its subdirectories); a line that is not one, or is longer than
// `max_line_bytes`, is counted bad. Numbers are read as Python reads them. With
// `file_names`, the name of each line's file beside it.
std::vector<json::value> read_lines(const fs::path& directory, std::string_view prefix, bool hours,
                                    std::uint64_t max_line_bytes, JoinFigures& figures,
                                    std::vector<std::string>* file_names = nullptr) {
  std::vector<fs::path> files;
  std::error_code error;
  const auto collect = [&](const fs::path& folder) {
    for (const auto& entry : fs::directory_iterator(folder, error)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_regular_file() && name.starts_with(prefix) && name.ends_with(".jsonl")) files.push_back(entry.path());
    }
  };
  if (hours) {
    for (const auto& entry : fs::directory_iterator(directory, error)) {
      if (entry.is_directory() && !entry.path().filename().string().starts_with('_')) collect(entry.path());
    }
  } else {
    collect(directory);
  }
  std::sort(files.begin(), files.end());
  std::vector<json::value> values;
  std::vector<char> chunk(std::size_t{1} << 20);
  for (const fs::path& file : files) {
    BoundedLines lines(max_line_bytes);
    const auto take_line = [&](const Line& line) {
      if (line.bytes == 0) return;
      json::value value;
      if (!line.overlong) value = json::parse(line.text, error, {}, python_json_loads());
      if (line.overlong || error || !value.is_object()) {
        ++figures.bad_lines;
        figures.problems.push_back(file.string() + ":" + std::to_string(line.number) +
                                   (line.overlong ? ": a line longer than " + std::to_string(max_line_bytes) + " bytes"
                                                  : std::string(": a line that is not a JSON object")));
        return;
      }
      values.push_back(std::move(value));
      if (file_names) file_names->push_back(file.filename().string());
    };
    std::ifstream input(file, std::ios::binary);
    while (input) {
      input.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
      lines.feed(std::string_view(chunk.data(), static_cast<std::size_t>(input.gcount())), take_line);
    }
    lines.finish(take_line);
  }
  return values;
}

std::string key_of(const json::value* id) {
  if (!id || id->is_null()) return {};
  return id->is_string() ? std::string(id->get_string()) : json::serialize(*id);
}

bool answer_carries_usage(std::string_view route_path, const json::value& response) {
  const std::optional<serve::Route> route = serve::route_at(route_path);
  const json::value* body = at_path(response, {"response", "body"});
  if (!route || !body) return false;
  if (const json::object* object = body->if_object()) return serve::carries_usage(*route, *object);
  bool found = false;
  if (const json::string* text = body->if_string()) {
    serve::for_each_event(*text, [&](const json::object& event) { found = found || serve::carries_usage(*route, event); });
  }
  return found;
}

std::string header(const json::value& request, std::string_view name) {
  const json::value* headers = at_path(request, {"headers"});
  if (!headers || !headers->is_array()) return {};
  for (const json::value& pair : headers->get_array()) {
    const json::array* fields = pair.if_array();
    if (fields && fields->size() == 2 && (*fields)[0].is_string() && (*fields)[1].is_string()) {
      std::string field((*fields)[0].get_string());
      std::transform(field.begin(), field.end(), field.begin(), [](unsigned char c) { return std::tolower(c); });
      if (field == name) return std::string((*fields)[1].get_string());
    }
  }
  return {};
}

// The load client's results: each request's E2E from send by the x-request-id it
// carried, and the outcomes other than ok (an HTTP error by its status).
struct ClientResults {
  std::unordered_map<std::string, double> e2e_by_request_id;
  std::map<std::string, std::size_t> failures;
};

ClientResults client_results(const fs::path& results) {
  std::ifstream input(results, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(input)), std::istreambuf_iterator<char>());
  ClientResults client;
  const json::value report = json::parse(text);
  for (const json::value& request : report.at("requests").as_array()) {
    if (const std::optional<double> value = number(at_path(request, {"e2e_from_send_ms"}))) {
      client.e2e_by_request_id.emplace(std::string(request.at("request_id").as_string()), *value);
    }
    const std::string outcome = key_of(at_path(request, {"outcome"}));
    if (outcome == "http_error") {
      ++client.failures["HTTP " + key_of(at_path(request, {"http_status"}))];
    } else if (outcome != "ok") {
      ++client.failures[outcome];
    }
  }
  return client;
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  if (!file.flush()) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

JoinFigures join_attempt(const JoinOptions& options) {
  JoinFigures figures;
  const std::vector<json::value> requests = read_lines(options.attempt_dir / "request_trace", "requests-", true, options.max_line_bytes, figures);
  const std::vector<json::value> responses = read_lines(options.attempt_dir / "request_trace", "responses-", true, options.max_line_bytes, figures);
  std::vector<std::string> record_files;
  const std::vector<json::value> records = read_lines(options.attempt_dir / "perf_metrics", "perf_metrics-", false,
                                                      options.max_line_bytes, figures, &record_files);
  figures.request_lines = requests.size();
  figures.response_lines = responses.size();
  figures.perf_records = records.size();

  // An engine's record by its request_id; a disaggregated deployment's by the proxy's id,
  // told apart as the reference's analysis tells them: the proxy's names its ctx_server,
  // the generation worker's has the KV-cache transfer.
  std::unordered_map<std::string, const json::value*> perf_by_id, proxy_by_id, ctx_by_id, gen_by_id;
  for (const json::value& record : records) {
    const std::string disagg_id = key_of(at_path(record, {"disagg_request_id"}));
    if (at_path(record, {"ctx_server"})) {
      proxy_by_id.emplace(disagg_id, &record);
    } else if (disagg_id.empty()) {
      perf_by_id.emplace(key_of(at_path(record, {"request_id"})), &record);
    } else {
      const bool gen = at_path(record, {"perf_metrics", "timing_metrics", "kv_cache_transfer_start"}) != nullptr;
      (gen ? gen_by_id : ctx_by_id).emplace(disagg_id, &record);
    }
  }
  const auto span = [&](const json::value* record, std::string_view from, std::string_view to) {
    if (!record) return;
    const std::optional<double> start = number(at_path(*record, {"perf_metrics", "timing_metrics", from}));
    const std::optional<double> end = number(at_path(*record, {"perf_metrics", "timing_metrics", to}));
    if (start && end) figures.min_hop_span_ms = std::min(figures.min_hop_span_ms.value_or(1e300), (*end - *start) * 1000);
  };
  const auto find = [](const auto& index, const std::string& key) -> const json::value* {
    const auto found = index.find(key);
    return found == index.end() ? nullptr : found->second;
  };
  std::unordered_map<std::string, const json::value*> response_by_trace;
  for (const json::value& response : responses) response_by_trace.emplace(key_of(at_path(response, {"trace_id"})), &response);

  const ClientResults client = options.client_results ? client_results(*options.client_results) : ClientResults{};
  // Each request line's client E2E by its trace_id, for the report, whether or not its
  // perf records joined.
  std::map<std::string, double> client_e2e_by_trace;
  for (const json::value& request : requests) {
    if (const auto sent = client.e2e_by_request_id.find(header(request, "x-request-id"));
        sent != client.e2e_by_request_id.end()) {
      client_e2e_by_trace[key_of(at_path(request, {"trace_id"}))] = sent->second;
    }
  }
  std::unordered_set<const json::value*> joined_records;
  std::unordered_set<std::string> joined_traces;  // completed requests that joined their records
  for (const json::value& request : requests) {
    const std::string status = key_of(at_path(request, {"status"}));
    if (status == "rejected_400") {
      ++figures.rejected_400;
      continue;
    }
    ++figures.accepted;
    const auto found = response_by_trace.find(key_of(at_path(request, {"trace_id"})));
    if (found == response_by_trace.end()) {
      ++figures.accepted_without_response;
      figures.problems.push_back("accepted request " + key_of(at_path(request, {"trace_id"})) + " has no response line");
      continue;
    }
    const json::value& response = *found->second;
    const std::string outcome = key_of(at_path(response, {"status"}));
    if (outcome != "completed") {
      ++(outcome == "client_disconnected" ? figures.client_disconnected : figures.errors);
      continue;
    }
    ++figures.completed;
    if (answer_carries_usage(key_of(at_path(request, {"route"})), response)) {
      ++figures.usage_found;
    } else {
      figures.problems.push_back("completed response " + found->first + " carries no usage");
    }
    if (const json::value* proxy = find(proxy_by_id, key_of(at_path(response, {"disagg_request_id"})))) {
      ++figures.disaggregated;
      const std::string id = key_of(at_path(response, {"disagg_request_id"}));
      const json::value* ctx = find(ctx_by_id, id);
      const json::value* gen = find(gen_by_id, id);
      const bool went_on = !key_of(at_path(*proxy, {"gen_server"})).empty();
      figures.joined_ctx += ctx != nullptr;
      figures.gen_expected += went_on;
      figures.joined_gen += went_on && gen;
      for (const json::value* joined : {proxy, ctx, went_on ? gen : nullptr}) {
        if (joined) joined_records.insert(joined);
      }
      if (!ctx) figures.problems.push_back("completed response " + found->first + " joins no context worker's record");
      if (went_on && !gen) figures.problems.push_back("completed response " + found->first + " joins no generation worker's record");
      span(ctx, "first_scheduled_time", "first_token_time");
      span(gen, "kv_cache_transfer_start", "kv_cache_transfer_end");
      span(gen, "first_token_time", "last_token_time");
    } else if (const json::value* record = find(perf_by_id, key_of(at_path(response, {"client_id"})))) {
      joined_records.insert(record);
    } else {
      figures.problems.push_back("completed response " + found->first + " joins no perf record");
      continue;
    }
    ++figures.completed_joined;
    joined_traces.insert(found->first);
  }
  figures.perf_records_unjoined = figures.perf_records - joined_records.size();

  // TTFT, E2E and the client's E2E of the joined requests as requests.csv computes them.
  std::vector<PerfRecordLine> record_lines;
  for (std::size_t i = 0; i < records.size(); ++i) record_lines.push_back({&records[i], record_files[i]});
  const RequestsTable table = requests_table(requests, responses, record_lines);
  const std::vector<report::Request> rows = report::requests_of(table, client_e2e_by_trace);
  std::vector<double> differences;
  for (const report::Request& row : rows) {
    if (!report::completed(row) || !joined_traces.contains(row.trace_id) || !row.ttft_ms || !row.e2e_ms) continue;
    const double decode_ms = *row.e2e_ms - *row.ttft_ms;
    figures.min_ttft_ms = std::min(figures.min_ttft_ms.value_or(*row.ttft_ms), *row.ttft_ms);
    figures.min_decode_ms = std::min(figures.min_decode_ms.value_or(decode_ms), decode_ms);
    if (row.client_e2e_ms) {
      ++figures.client_matched;
      differences.push_back(*row.client_e2e_ms - *row.e2e_ms);
    }
  }
  if (options.csv) {
    write_file(*options.csv, table.csv);
    figures.csv = options.csv;
    figures.csv_rows = table.rows.size();
  }
  if (options.html) {
    write_file(*options.html, report::run_report_html({.title = options.attempt_dir.string(),
                                                       .requests = rows,
                                                       .instances = options.instances,
                                                       .client_results = options.client_results.has_value(),
                                                       .client_failures = client.failures}));
    figures.html = options.html;
  }
  if (!differences.empty()) {
    std::sort(differences.begin(), differences.end());
    figures.median_e2e_difference_ms = differences[differences.size() / 2];
    figures.max_abs_e2e_difference_ms = std::max(std::abs(differences.front()), std::abs(differences.back()));
  }
  return figures;
}

void print_join(const JoinFigures& figures, bool json_output, std::ostream& out) {
  const auto optional = [](const std::optional<double>& value) { return value ? json::value(*value) : json::value(nullptr); };
  if (json_output) {
    json::array problems;
    for (const std::string& problem : figures.problems) problems.emplace_back(problem);
    out << json::serialize(json::object{{"request_lines", figures.request_lines},
                                        {"accepted", figures.accepted},
                                        {"rejected_400", figures.rejected_400},
                                        {"response_lines", figures.response_lines},
                                        {"completed", figures.completed},
                                        {"client_disconnected", figures.client_disconnected},
                                        {"errors", figures.errors},
                                        {"completed_joined", figures.completed_joined},
                                        {"disaggregated", figures.disaggregated},
                                        {"joined_ctx", figures.joined_ctx},
                                        {"gen_expected", figures.gen_expected},
                                        {"joined_gen", figures.joined_gen},
                                        {"min_hop_span_ms", optional(figures.min_hop_span_ms)},
                                        {"usage_found", figures.usage_found},
                                        {"accepted_without_response", figures.accepted_without_response},
                                        {"perf_records", figures.perf_records},
                                        {"perf_records_unjoined", figures.perf_records_unjoined},
                                        {"bad_lines", figures.bad_lines},
                                        {"min_ttft_ms", optional(figures.min_ttft_ms)},
                                        {"min_decode_ms", optional(figures.min_decode_ms)},
                                        {"client_matched", figures.client_matched},
                                        {"median_e2e_difference_ms", optional(figures.median_e2e_difference_ms)},
                                        {"max_abs_e2e_difference_ms", optional(figures.max_abs_e2e_difference_ms)},
                                        {"problems", std::move(problems)},
                                        {"csv", figures.csv ? json::value(figures.csv->string()) : json::value(nullptr)},
                                        {"csv_rows", figures.csv_rows},
                                        {"html", figures.html ? json::value(figures.html->string()) : json::value(nullptr)}})
        << '\n';
    return;
  }
  out << std::fixed << std::setprecision(2) << "join: " << figures.request_lines << " request lines (" << figures.accepted
      << " accepted, " << figures.rejected_400 << " rejected_400), " << figures.response_lines << " response lines, "
      << figures.perf_records << " perf records\n"
      << "  completed " << figures.completed << ": " << figures.completed_joined
      << " joined their perf records, usage on " << figures.usage_found << '\n'
      << "  client_disconnected " << figures.client_disconnected << ", error " << figures.errors
      << ", accepted without a response line " << figures.accepted_without_response << ", perf records unjoined "
      << figures.perf_records_unjoined << '\n';
  if (figures.disaggregated > 0) {
    out << "  disaggregated " << figures.disaggregated << " (joined the proxy's record on disagg_request_id): "
        << figures.joined_ctx << " joined a context worker's record, " << figures.joined_gen << " of "
        << figures.gen_expected << " a generation worker's; least hop span " << figures.min_hop_span_ms.value_or(0)
        << " ms\n";
  }
  if (figures.min_decode_ms) {
    out << "  trace TTFT min " << *figures.min_ttft_ms << " ms, decode (trace E2E - TTFT) min " << *figures.min_decode_ms
        << " ms\n";
  }
  if (figures.max_abs_e2e_difference_ms) {
    out << "  client E2E - trace E2E over " << figures.client_matched << " requests: median "
        << *figures.median_e2e_difference_ms << " ms, largest |difference| " << *figures.max_abs_e2e_difference_ms
        << " ms\n";
  }
  for (std::size_t i = 0; i < std::min<std::size_t>(figures.problems.size(), 5); ++i) out << "  " << figures.problems[i] << '\n';
  if (figures.csv) out << "requests.csv: " << figures.csv->string() << " (" << figures.csv_rows << " rows)\n";
  if (figures.html) out << "report: " << figures.html->string() << '\n';
}

int run_join(const JoinOptions& options, std::ostream& out, std::ostream& err) {
  JoinFigures figures;
  try {
    figures = join_attempt(options);
  } catch (const std::exception& error) {
    err << "jsonl-perf join: " << error.what() << '\n';
    return 2;
  }
  print_join(figures, options.json, out);
  const bool whole = figures.completed_joined == figures.completed && figures.usage_found == figures.completed &&
                     figures.accepted_without_response == 0 && figures.bad_lines == 0 &&
                     (!figures.min_decode_ms || *figures.min_decode_ms >= 0) &&
                     figures.joined_ctx == figures.disaggregated && figures.joined_gen == figures.gen_expected &&
                     (!figures.min_hop_span_ms || *figures.min_hop_span_ms >= 0);
  return whole ? 0 : 1;
}

}  // namespace jsonl_perf

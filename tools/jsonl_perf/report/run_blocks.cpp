#include "run_blocks.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "python_values.hpp"

namespace jsonl_perf::report {
namespace {

using Field = std::optional<double> Request::*;

std::vector<const Request*> completed_of(const std::vector<Request>& requests) {
  std::vector<const Request*> done;
  for (const Request& request : requests) {
    if (completed(request)) done.push_back(&request);
  }
  return done;
}

// The values of `value` over the requests where it gives one.
std::vector<double> values_of(const std::vector<const Request*>& requests,
                              const std::function<std::optional<double>(const Request&)>& value) {
  std::vector<double> values;
  for (const Request* request : requests) {
    if (const std::optional<double> found = value(*request)) values.push_back(*found);
  }
  return values;
}

std::function<std::optional<double>(const Request&)> field(Field member) {
  return [member](const Request& request) { return request.*member; };
}

// The first start to the last finish of the completed requests.
struct Window {
  double start = 0, end = 0;
  bool empty = true;
};

Window window_of(const std::vector<const Request*>& requests) {
  Window window;
  for (const Request* request : requests) {
    if (!request->started || !request->finished) continue;
    window.start = window.empty ? *request->started : std::min(window.start, *request->started);
    window.end = window.empty ? *request->finished : std::max(window.end, *request->finished);
    window.empty = false;
  }
  return window;
}

// A phase's spread and its share of E2E over the completed requests that have it.
Phase phase(const std::string& label, int depth, const std::vector<const Request*>& done,
            const std::function<std::optional<double>(const Request&)>& value) {
  double phase_sum = 0, e2e_sum = 0;
  for (const Request* request : done) {
    const std::optional<double> found = value(*request);
    if (!found || !request->e2e_ms) continue;
    phase_sum += *found;
    e2e_sum += *request->e2e_ms;
  }
  return {label, depth, spread(values_of(done, value)),
          e2e_sum > 0 ? std::optional(phase_sum / e2e_sum) : std::nullopt};
}

std::optional<double> sum_of(std::optional<double> a, std::optional<double> b) {
  return a && b ? std::optional(*a + *b) : std::nullopt;
}

std::optional<double> new_and_output(const Request& request) { return sum_of(request.isl_new, request.osl); }

}  // namespace

bool completed(const Request& request) { return request.status == "completed"; }

std::vector<Request> requests_of(const RequestsTable& table, const std::map<std::string, double>& client_e2e_ms) {
  const std::vector<std::string>& columns = requests_table_columns();
  const auto column = [&](std::string_view name) {
    const auto found = std::find(columns.begin(), columns.end(), name);
    if (found == columns.end()) throw std::logic_error("requests.csv has no column " + std::string(name));
    return static_cast<std::size_t>(found - columns.begin());
  };
  const auto text = [](const boost::json::value& value) {
    return value.is_string() ? std::string(value.get_string()) : value.is_null() ? std::string() : python::str(value);
  };
  const std::pair<std::size_t, Field> numbers[] = {
      {column("started_at"), &Request::started},       {column("finished_at"), &Request::finished},
      {column("parse_ms"), &Request::parse_ms},        {column("proxy_dispatch_ms"), &Request::proxy_dispatch_ms},
      {column("ttft_ms"), &Request::ttft_ms},          {column("e2e_ms"), &Request::e2e_ms},
      {column("decode_ms"), &Request::decode_ms},      {column("prefill_queue_ms"), &Request::prefill_queue_ms},
      {column("prefill_ms"), &Request::prefill_ms},    {column("kv_transfer_ms"), &Request::kv_transfer_ms},
      {column("gen_decode_ms"), &Request::gen_decode_ms}, {column("isl_total"), &Request::isl_total},
      {column("isl_cached"), &Request::isl_cached},    {column("isl_new"), &Request::isl_new},
      {column("osl"), &Request::osl},                  {column("cache_hit_ratio"), &Request::cache_hit_ratio}};
  const std::size_t trace_id = column("trace_id"), route = column("route"), status = column("status"),
                    session = column("session"), errors = column("validation_errors"), stream = column("stream");
  std::vector<Request> requests;
  for (const std::vector<boost::json::value>& row : table.rows) {
    Request request{.trace_id = text(row[trace_id]),
                    .route = text(row[route]),
                    .status = text(row[status]),
                    .session = text(row[session]),
                    .validation_errors = text(row[errors])};
    if (row[stream].is_bool()) request.stream = row[stream].get_bool();
    for (const auto& [at, member] : numbers) {
      // A value that is not finite (NaN or an infinity, which Python's reader takes) is
      // as good as missing: it would sort nowhere and place nothing.
      const std::optional<double> value = python::to_float(&row[at]);
      if (value && std::isfinite(*value)) request.*member = value;
    }
    if (const auto client = client_e2e_ms.find(request.trace_id);
        client != client_e2e_ms.end() && std::isfinite(client->second)) {
      request.client_e2e_ms = client->second;
    }
    requests.push_back(std::move(request));
  }
  return requests;
}

Spread spread(std::vector<double> values) {
  if (values.empty()) return {};
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) {
    // Python's round(): halves to even, as nearbyint in the default rounding mode.
    const double index = std::nearbyint(q * static_cast<double>(values.size() - 1));
    return values[std::clamp<std::size_t>(static_cast<std::size_t>(std::max(0.0, index)), 0, values.size() - 1)];
  };
  return {values.size(), std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size()),
          at(0.10), at(0.25), at(0.50), at(0.75), at(0.90), at(0.99), values.back()};
}

std::vector<Minute> whole_minutes(const std::vector<Request>& requests) {
  const std::vector<const Request*> done = completed_of(requests);
  const Window window = window_of(done);
  std::vector<Minute> minutes;
  if (window.empty) return minutes;
  const double first = std::ceil(window.start / 60) * 60;
  for (double start = first; start + 60 <= window.end; start += 60) minutes.push_back({.start = start});
  for (const Request* request : done) {
    if (!request->finished || minutes.empty()) continue;
    const double index = std::floor((*request->finished - first) / 60);
    if (index < 0 || index >= static_cast<double>(minutes.size())) continue;
    Minute& minute = minutes[static_cast<std::size_t>(index)];
    ++minute.requests;
    minute.osl += request->osl.value_or(0);
    minute.isl_new += request->isl_new.value_or(0);
    minute.e2e_s += request->e2e_ms.value_or(0) / 1000;
  }
  return minutes;
}

std::vector<Headline> headlines(const std::vector<Request>& requests, double instances) {
  const std::vector<const Request*> done = completed_of(requests);
  const std::vector<Minute> minutes = whole_minutes(requests);
  const Window window = window_of(done);
  const double seconds = window.empty ? 0 : window.end - window.start;
  double osl = 0, isl_new = 0, e2e_s = 0;
  for (const Request* request : done) {
    osl += request->osl.value_or(0);
    isl_new += request->isl_new.value_or(0);
    e2e_s += request->e2e_ms.value_or(0) / 1000;
  }
  const auto per_e2e = [](std::optional<double> tokens, const Request& request) -> std::optional<double> {
    if (!tokens || !request.e2e_ms || *request.e2e_ms <= 0) return std::nullopt;
    return *tokens / (*request.e2e_ms / 1000);
  };
  // A per-minute row: each whole minute's value (those where `skip` holds left out), its
  // mean the whole window's.
  const auto per_minute = [&](std::string block, std::string label, std::string unit,
                              const std::function<double(const Minute&)>& value,
                              const std::function<bool(const Minute&)>& skip, std::optional<double> whole) {
    std::vector<double> values;
    for (const Minute& minute : minutes) {
      if (!skip(minute)) values.push_back(value(minute));
    }
    Headline row{std::move(block), std::move(label), std::move(unit), true, spread(std::move(values))};
    row.spread.mean = whole;
    return row;
  };
  const auto never = [](const Minute&) { return false; };
  const auto without_e2e = [](const Minute& minute) { return minute.e2e_s <= 0; };
  const auto rate = [&](double total) {
    return seconds > 0 ? std::optional(total / seconds / instances) : std::nullopt;
  };
  const auto ratio = [](double total, double over) { return over > 0 ? std::optional(total / over) : std::nullopt; };
  return {
      {"E2E", "E2E latency", "ms", false, spread(values_of(done, field(&Request::e2e_ms)))},
      {"E2E", "Output tokens / E2E", "tokens/s", false,
       spread(values_of(done, [&](const Request& r) { return per_e2e(r.osl, r); }))},
      per_minute("E2E", "Σ output tokens / Σ E2E", "tokens/s", [](const Minute& m) { return m.osl / m.e2e_s; },
                 without_e2e, ratio(osl, e2e_s)),
      {"E2E", "(ISL new + OSL) / E2E", "tokens/s", false,
       spread(values_of(done, [&](const Request& r) { return per_e2e(new_and_output(r), r); }))},
      per_minute("E2E", "Σ (ISL new + OSL) / Σ E2E", "tokens/s",
                 [](const Minute& m) { return (m.isl_new + m.osl) / m.e2e_s; }, without_e2e,
                 ratio(isl_new + osl, e2e_s)),
      per_minute("Throughput", "Requests / s / instance", "requests/s",
                 [&](const Minute& m) { return m.requests / 60.0 / instances; }, never,
                 rate(static_cast<double>(done.size()))),
      per_minute("Throughput", "(ISL new + OSL) tokens / s / instance", "tokens/s",
                 [&](const Minute& m) { return (m.isl_new + m.osl) / 60 / instances; }, never, rate(isl_new + osl)),
      per_minute("Throughput", "Output tokens / s / instance", "tokens/s",
                 [&](const Minute& m) { return m.osl / 60 / instances; }, never, rate(osl)),
      per_minute("Throughput", "Input tokens (ISL new) / s / instance", "tokens/s",
                 [&](const Minute& m) { return m.isl_new / 60 / instances; }, never, rate(isl_new)),
      {"Token-level SLO", "TTFT", "ms", false, spread(values_of(done, field(&Request::ttft_ms)))},
      {"Token-level SLO", "TPS / user", "tokens/s", false,
       spread(values_of(done, [](const Request& r) -> std::optional<double> {
         if (!r.osl || *r.osl < 2 || !r.e2e_ms || !r.ttft_ms || *r.e2e_ms <= *r.ttft_ms) return std::nullopt;
         return (*r.osl - 1) / ((*r.e2e_ms - *r.ttft_ms) / 1000);
       }))},
  };
}

std::vector<Phase> phases(const std::vector<Request>& requests) {
  const std::vector<const Request*> done = completed_of(requests);
  std::vector<Phase> rows = {
      phase("E2E (arrival to response end)", 0, done, field(&Request::e2e_ms)),
      phase("TTFT (to the first token)", 1, done, field(&Request::ttft_ms)),
      phase("Body read and parse before the handler", 2, done, field(&Request::parse_ms)),
      phase("Proxy pre-dispatch (arrival to context dispatch)", 2, done, field(&Request::proxy_dispatch_ms)),
      phase("Prefill queue (engine arrival to scheduled)", 2, done, field(&Request::prefill_queue_ms)),
      phase("Prefill (scheduled to first token)", 2, done, field(&Request::prefill_ms)),
      phase("Decode (E2E less TTFT)", 1, done, field(&Request::decode_ms)),
      phase("KV transfer (generation worker)", 2, done, field(&Request::kv_transfer_ms)),
      phase("Decode on the generation worker (first to last token)", 2, done, field(&Request::gen_decode_ms)),
  };
  std::erase_if(rows, [](const Phase& row) { return row.spread.n == 0; });
  return rows;
}

std::vector<Phase> hops(const std::vector<Request>& requests) {
  std::vector<const Request*> proxied;
  for (const Request* request : completed_of(requests)) {
    if (request->proxy_dispatch_ms) proxied.push_back(request);
  }
  if (proxied.empty()) return {};
  return {phase("proxy: arrival to context dispatch", 0, proxied, field(&Request::proxy_dispatch_ms)),
          phase("context worker: queue and prefill", 0, proxied,
                [](const Request& r) { return sum_of(r.prefill_queue_ms, r.prefill_ms); }),
          phase("generation worker: KV transfer and decode", 0, proxied,
                [](const Request& r) { return sum_of(r.kv_transfer_ms, r.gen_decode_ms); })};
}

std::vector<TokenRow> tokens(const std::vector<Request>& requests) {
  const std::vector<const Request*> done = completed_of(requests);
  return {{"ISL total", spread(values_of(done, field(&Request::isl_total)))},
          {"ISL cached", spread(values_of(done, field(&Request::isl_cached)))},
          {"ISL new", spread(values_of(done, field(&Request::isl_new)))},
          {"OSL", spread(values_of(done, field(&Request::osl)))},
          {"Cache hit ratio (cached / total)", spread(values_of(done, field(&Request::cache_hit_ratio)))}};
}

std::vector<Breakdown> by_route_and_kind(const std::vector<Request>& requests) {
  std::map<std::pair<std::string, std::string>, std::vector<const Request*>> groups;
  for (const Request& request : requests) {
    const std::string kind = !request.stream ? "unknown" : *request.stream ? "streamed" : "whole";
    groups[{request.route, kind}].push_back(&request);
  }
  std::vector<Breakdown> rows;
  for (const auto& [key, members] : groups) {
    std::vector<const Request*> done;
    std::copy_if(members.begin(), members.end(), std::back_inserter(done), [](const Request* r) { return completed(*r); });
    rows.push_back({key.first, key.second, members.size(), done.size(), spread(values_of(done, field(&Request::ttft_ms))),
                    spread(values_of(done, field(&Request::e2e_ms))), spread(values_of(done, field(&Request::osl)))});
  }
  return rows;
}

ClientView client_view(const std::vector<Request>& requests) {
  std::vector<const Request*> matched;
  for (const Request* request : completed_of(requests)) {
    if (request->client_e2e_ms && request->e2e_ms) matched.push_back(request);
  }
  return {spread(values_of(matched, field(&Request::client_e2e_ms))), spread(values_of(matched, field(&Request::e2e_ms))),
          spread(values_of(matched, [](const Request& r) { return std::optional(*r.client_e2e_ms - *r.e2e_ms); }))};
}

std::vector<Cause> refusals_and_errors(const std::vector<Request>& requests,
                                       const std::map<std::string, std::size_t>& client_failures) {
  std::map<std::string, std::size_t> server;
  for (const Request& request : requests) {
    if (completed(request)) continue;
    std::string cause = request.status;
    if (!request.validation_errors.empty()) cause += ": " + request.validation_errors;
    ++server[cause];
  }
  std::vector<Cause> causes;
  for (const auto& [cause, count] : server) causes.push_back({"server", cause, count});
  for (const auto& [cause, count] : client_failures) causes.push_back({"client", cause, count});
  // The server's causes first, then the client's, each the most frequent first.
  std::sort(causes.begin(), causes.end(), [](const Cause& a, const Cause& b) {
    return std::tuple(a.seen_by != "server", b.requests, a.cause) < std::tuple(b.seen_by != "server", a.requests, b.cause);
  });
  return causes;
}

}  // namespace jsonl_perf::report

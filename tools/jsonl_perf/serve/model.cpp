#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "model.hpp"

namespace jsonl_perf::serve {
namespace {

constexpr std::int64_t tokens_per_block = 32;
constexpr double seconds_per_iteration = 0.005;
constexpr std::int64_t kv_bytes_per_block = 64 * 1024;
constexpr double kv_transfer_per_block = 20e-6;  // seconds
constexpr double kv_transfer_setup = 2e-4;

constexpr std::array<std::string_view, 16> vocabulary{
    " the", " cache", " holds", " tokens", " of", " a", " request", " and", " each", " step",
    " decodes", " one", " more", ",", " so", "."};

// The numbers after the distribution's name, as many as it takes.
std::vector<double> parameters(std::string_view text, std::string_view name, std::size_t count) {
  std::vector<double> values;
  std::string_view rest = text.substr(name.size());
  while (!rest.empty() && rest.front() == ':') {
    rest.remove_prefix(1);
    const std::size_t end = std::min(rest.find(':'), rest.size());
    double value = 0;
    const auto [at, error] = std::from_chars(rest.data(), rest.data() + end, value);
    if (error != std::errc() || at != rest.data() + end || !std::isfinite(value) || value < 0) {
      throw std::invalid_argument("distribution '" + std::string(text) + "': '" + std::string(rest.substr(0, end)) +
                                  "' is not a number >= 0");
    }
    values.push_back(value);
    rest.remove_prefix(end);
  }
  if (values.size() != count || !rest.empty()) {
    throw std::invalid_argument("distribution '" + std::string(text) + "': " + std::string(name) + " takes " +
                                std::to_string(count) + " number(s)");
  }
  return values;
}

}  // namespace

Distribution Distribution::parse(std::string_view text) {
  Distribution result;
  const std::string shown(text);
  const auto named = [&](std::string_view name) { return text.starts_with(name) && (text.size() == name.size() || text[name.size()] == ':'); };
  std::vector<double> values;
  if (named("const")) {
    values = parameters(text, "const", 1);
    result.kind_ = Kind::constant;
  } else if (named("exp")) {
    values = parameters(text, "exp", 1);
    result.kind_ = Kind::exponential;
  } else if (named("uniform")) {
    values = parameters(text, "uniform", 2);
    if (values[1] < values[0]) throw std::invalid_argument("distribution '" + shown + "': HIGH is below LOW");
    result.kind_ = Kind::uniform;
  } else if (named("lognormal")) {
    values = parameters(text, "lognormal", 2);
    result.kind_ = Kind::lognormal;
  } else {
    throw std::invalid_argument("distribution '" + shown +
                                "': expected const:X, exp:MEAN, uniform:LOW:HIGH or lognormal:MEDIAN:SIGMA (ms)");
  }
  result.text_ = shown;
  result.a_ = values[0] / 1000.0;
  result.b_ = values.size() > 1 ? values[1] : 0;
  if (result.kind_ == Kind::uniform) result.b_ /= 1000.0;
  return result;
}

double Distribution::draw_seconds(std::mt19937_64& random) const {
  switch (kind_) {
    case Kind::constant:
      return a_;
    case Kind::exponential:
      return a_ == 0 ? 0 : std::exponential_distribution<double>(1 / a_)(random);
    case Kind::uniform:
      return std::uniform_real_distribution<double>(a_, b_)(random);
    case Kind::lognormal:
      return a_ == 0 ? 0 : a_ * std::exp(b_ * std::normal_distribution<double>()(random));
  }
  return a_;
}

SimulatedModel::SimulatedModel(ModelOptions options)
    : options_(std::move(options)), started_(jsonl::recording::steady_seconds()), random_(options_.seed) {}

std::int64_t SimulatedModel::prompt_tokens(std::size_t prompt_bytes) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(prompt_bytes / 4));
}

Plan SimulatedModel::plan(std::size_t prompt_bytes, std::optional<std::int64_t> max_tokens, HopType hop) {
  const std::int64_t asked = std::clamp<std::int64_t>(max_tokens.value_or(options_.default_max_tokens), 1,
                                                      options_.max_tokens_cap);
  const std::int64_t wanted = hop == HopType::context_only ? 1 : asked;
  const std::lock_guard lock(mutex_);
  Plan plan;
  plan.request_id = next_request_id_++;
  plan.queue_seconds = options_.queue.draw_seconds(random_);
  plan.first_token_seconds = options_.first_token.draw_seconds(random_);
  plan.prompt_tokens = prompt_tokens(prompt_bytes);
  const double reuse = std::uniform_real_distribution<double>(0, std::min(1.0, 2 * options_.kv_reuse))(random_);
  plan.cached_tokens = static_cast<std::int64_t>(plan.prompt_tokens * reuse) / tokens_per_block * tokens_per_block;
  plan.tokens.reserve(wanted);
  plan.token_gaps.reserve(wanted);
  for (std::int64_t i = 0; i < wanted; ++i) {
    plan.tokens.emplace_back(vocabulary[random_() % vocabulary.size()]);
    if (i > 0) plan.token_gaps.push_back(options_.between_tokens.draw_seconds(random_));
  }
  plan.first_token_id = static_cast<std::int64_t>(random_() % 32000);
  if (hop == HopType::context_only && asked == 1) plan.finish_reason = "stop";
  if (hop == HopType::generation_only) {
    const std::int64_t blocks = (plan.prompt_tokens + tokens_per_block - 1) / tokens_per_block;
    plan.kv_cache_size = blocks * kv_bytes_per_block;
    plan.kv_transfer_seconds = kv_transfer_setup + blocks * kv_transfer_per_block;
    plan.first_token_seconds = plan.kv_transfer_seconds + options_.between_tokens.draw_seconds(random_);
  }
  return plan;
}

std::int64_t SimulatedModel::iteration(double at) const {
  return static_cast<std::int64_t>(std::max(0.0, at - started_) / seconds_per_iteration);
}

jsonl::recording::EngineReport SimulatedModel::report(const Plan& plan, double arrival, double scheduled,
                                                     std::optional<double> first_token,
                                                     std::optional<double> last_token) const {
  const auto blocks = [](std::int64_t tokens) { return (tokens + tokens_per_block - 1) / tokens_per_block; };
  const std::int64_t produced = first_token ? static_cast<std::int64_t>(plan.tokens.size()) : 0;
  jsonl::recording::EngineReport report{.request_id = plan.request_id,
                                       .arrival_time = arrival,
                                       .first_scheduled_time = scheduled,
                                       .first_token_time = first_token,
                                       .last_token_time = last_token};
  report.first_iter = iteration(scheduled);
  report.last_iter = iteration(last_token.value_or(scheduled));
  report.reused_blocks = plan.cached_tokens / tokens_per_block;
  report.missed_blocks = blocks(plan.prompt_tokens) - report.reused_blocks;
  report.total_blocks = blocks(plan.prompt_tokens + produced);
  report.new_blocks = report.total_blocks - report.reused_blocks;
  if (plan.kv_cache_size > 0) {
    report.kv_cache_transfer_start = scheduled;
    report.kv_cache_transfer_end = scheduled + plan.kv_transfer_seconds;
    report.kv_cache_size = plan.kv_cache_size;
  }
  return report;
}

}  // namespace jsonl_perf::serve

// The simulated model behind `jsonl-perf serve`: per request it decides its queueing,
// its time to first token, the time between tokens and the tokens themselves, drawn from
// configurable distributions with a seed, so that a run is repeatable and tokens can be
// sent at the pace a real engine would produce them.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "disaggregation.hpp"
#include "recording.hpp"


namespace jsonl_perf::serve {

// A duration in milliseconds drawn per request: "const:X", "exp:MEAN",
// "uniform:LOW:HIGH" or "lognormal:MEDIAN:SIGMA". X, MEAN, LOW, HIGH, MEDIAN >= 0.
class Distribution {
 public:
  // Throws std::invalid_argument naming what is wrong with `text`.
  static Distribution parse(std::string_view text);

  double draw_seconds(std::mt19937_64& random) const;
  // As it was written: what parse() took.
  const std::string& text() const { return text_; }

 private:
  enum class Kind { constant, exponential, uniform, lognormal };
  std::string text_;
  Kind kind_ = Kind::constant;
  double a_ = 0;
  double b_ = 0;
};

struct ModelOptions {
  std::uint64_t seed = 1;
  Distribution queue = Distribution::parse("exp:2");
  Distribution first_token = Distribution::parse("lognormal:40:0.3");  // prefill, after scheduling
  Distribution between_tokens = Distribution::parse("uniform:8:12");
  unsigned default_max_tokens = 16;  // a request that names no limit
  unsigned max_tokens_cap = 4096;    // a limit above it is cut to it
  double kv_reuse = 0.4;             // mean share of a prompt's blocks found in the cache
  std::string model_name = "simulated-llm";
};

// One request's course, decided when it is accepted.
struct Plan {
  std::int64_t request_id = 0;
  double queue_seconds = 0;
  double first_token_seconds = 0;      // from scheduling to the first token
  std::vector<double> token_gaps;      // seconds before each later token
  std::vector<std::string> tokens;     // the text of each token
  std::int64_t prompt_tokens = 0;
  std::int64_t cached_tokens = 0;
  std::string finish_reason = "length";
  std::int64_t first_token_id = 0;  // what a context worker hands on as first_gen_tokens
  // A generation worker's: the context's KV cache arrives before the first token.
  double kv_transfer_seconds = 0;
  std::int64_t kv_cache_size = 0;
};

class SimulatedModel {
 public:
  explicit SimulatedModel(ModelOptions options);

  // `prompt_bytes`: the size of the prompt's text (about four bytes a token);
  // `max_tokens`: what the request asked for, if it did. `hop`: a context worker's plan
  // is the prefill and the first token, ending "length" when more were asked for (the
  // generation worker makes them) and "stop" when one was; a generation worker's has no
  // prefill: the context's KV cache is transferred, then each token takes a step.
  Plan plan(std::size_t prompt_bytes, std::optional<std::int64_t> max_tokens,
            HopType hop = HopType::context_and_generation);

  // The engine's report of a request that was scheduled at `scheduled` and produced its
  // first and last tokens at those times (seconds on the steady clock).
  jsonl::recording::EngineReport report(const Plan& plan, double arrival, double scheduled,
                                       std::optional<double> first_token, std::optional<double> last_token) const;

  const ModelOptions& options() const { return options_; }
  // The tokens of a prompt of `prompt_bytes` (about four bytes a token, at least one).
  static std::int64_t prompt_tokens(std::size_t prompt_bytes);

 private:
  std::int64_t iteration(double at) const;

  ModelOptions options_;
  double started_;  // the engine's first iteration, on the steady clock
  std::mutex mutex_;
  std::mt19937_64 random_;
  std::int64_t next_request_id_ = 1;
};

}  // namespace jsonl_perf::serve

module;

#include <tbb/parallel_for.h>

#include <chrono>
#include <cstddef>
#include <memory>

#include "serialization_planner.hpp"

module jsonl.writer;

import :side_by_side;

namespace jsonl::detail {

void run_side_by_side(std::size_t count, IndexTask body) {
  tbb::parallel_for(std::size_t{0}, count, body);
}

struct RoundPlanner::Planner : SerializationPlanner {};

RoundPlanner::RoundPlanner() : planner_(std::make_unique<Planner>()) {}

RoundPlanner::~RoundPlanner() = default;

bool RoundPlanner::side_by_side(std::size_t records) {
  return planner_->plan(records) == SerializationPlanner::Mode::side_by_side;
}

void RoundPlanner::measured(bool side_by_side, std::size_t records, std::chrono::nanoseconds took) {
  planner_->measured(side_by_side ? SerializationPlanner::Mode::side_by_side : SerializationPlanner::Mode::alone,
                     records, took);
}

}  // namespace jsonl::detail

// Serializing side by side on oneTBB's threads, and the planner that says when to. Not
// part of the public contract; exported only because the drain's template code uses it.
// oneTBB stays in the implementation (side_by_side.cpp).
module;

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>

export module jsonl.writer:side_by_side;

export namespace jsonl::detail {

// Calls `body(i)` for every i in [0, count), side by side on oneTBB's threads, and
// returns when all have returned. An exception from one is rethrown.
void run_side_by_side(std::size_t count, const std::function<void(std::size_t)>& body);

// Whether the drain serializes a round alone or side by side (SerializationPlanner);
// the drain thread's alone.
class RoundPlanner {
 public:
  RoundPlanner();
  RoundPlanner(const RoundPlanner&) = delete;
  RoundPlanner& operator=(const RoundPlanner&) = delete;
  ~RoundPlanner();

  // Whether to serialize a round of `records` records side by side.
  bool side_by_side(std::size_t records);
  // What that round took, waiting for the write side included.
  void measured(bool side_by_side, std::size_t records, std::chrono::nanoseconds took);

 private:
  struct Planner;
  std::unique_ptr<Planner> planner_;
};

}  // namespace jsonl::detail

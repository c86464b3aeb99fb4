// Serializing side by side on oneTBB's threads, and the planner that says when to. Not
// part of the public contract; exported only because the drain's template code uses it.
// oneTBB stays in the implementation (side_by_side.cpp).
module;

#include <chrono>
#include <cstddef>
#include <memory>

export module jsonl.writer:side_by_side;

export namespace jsonl::detail {

// A reference to a callable taking an index, for run_side_by_side: unlike
// std::function it never allocates, whatever the callable captures. The callable must
// outlive the call it is passed to.
class IndexTask {
 public:
  template <class Body>
  IndexTask(const Body& body) noexcept  // implicit: a lambda is passed where a task is wanted
      : body_(&body), call_([](const void* target, std::size_t i) { (*static_cast<const Body*>(target))(i); }) {}
  void operator()(std::size_t i) const { call_(body_, i); }

 private:
  const void* body_;
  void (*call_)(const void*, std::size_t);
};

// Calls `body(i)` for every i in [0, count), side by side on oneTBB's threads, and
// returns when all have returned. An exception from one is rethrown.
void run_side_by_side(std::size_t count, IndexTask body);

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

// Records in any storage: the default allocator, an arena each, or an arena several
// records share, released by whichever thread drops the last of them.
#include <boost/container/pmr/memory_resource.hpp>
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "writer_fixture.hpp"

namespace json = boost::json;
using jsonl_test::Log;
using jsonl_test::test_options;

namespace {

// Boost.JSON's memory_resource is Boost.Container's (an alias that Boost 1.92 dropped).
using MemoryResource = boost::container::pmr::memory_resource;

// A monotonic arena that says when it is destroyed.
class WatchedArena : public MemoryResource {
 public:
  explicit WatchedArena(std::shared_ptr<std::atomic<bool>> destroyed) : destroyed_(std::move(destroyed)) {}
  ~WatchedArena() override { destroyed_->store(true); }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override { return arena_.allocate(bytes, alignment); }
  void do_deallocate(void*, std::size_t, std::size_t) override {}
  bool do_is_equal(const MemoryResource& other) const noexcept override { return this == &other; }

  json::monotonic_resource arena_;
  std::shared_ptr<std::atomic<bool>> destroyed_;
};

json::value record_in(const json::storage_ptr& storage, int i) {
  json::object record(storage);
  record["request_id"] = i;
  record["name"] = "request number " + std::to_string(i) + " with a name longer than the small-string buffer";
  json::array steps(storage);
  for (int s = 0; s < 8; ++s) steps.push_back(json::object({{"iter", s}, {"t", s * 0.125}}, storage));
  record["steps"] = std::move(steps);
  return record;
}

// Batches of 16 and a queue of 4096: rounds big enough to be serialized side by side.
jsonl::WriterOptions side_by_side_options(const std::filesystem::path& directory, Log& log) {
  auto options = test_options(directory, log);
  options.batch_size = 16;
  options.queue_size = 4096;
  return options;
}

// Writes `records` through a writer and returns the file's content.
std::string written(std::vector<json::value> records) {
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(side_by_side_options(directory.path(), log));
  for (auto& record : records) BOOST_TEST_REQUIRE(writer.submit(std::move(record)));
  writer.start();
  writer.close();
  BOOST_TEST(writer.stats().written == records.size());
  return jsonl_test::read_file(*writer.path());
}

}  // namespace

BOOST_AUTO_TEST_SUITE(arena_records)

BOOST_AUTO_TEST_CASE(records_in_default_storage_in_an_arena_each_or_in_one_shared_arena_write_the_same_lines) {
  std::vector<json::value> by_default, in_own_arenas, in_one_arena;
  const json::storage_ptr shared = jsonl::make_record_arena();
  for (int i = 0; i < 2000; ++i) {
    by_default.push_back(record_in({}, i));
    in_own_arenas.push_back(record_in(jsonl::make_record_arena(), i));
    in_one_arena.push_back(record_in(shared, i));
  }
  const std::string expected = written(std::move(by_default));
  BOOST_TEST(std::count(expected.begin(), expected.end(), '\n') == 2000);
  BOOST_TEST(written(std::move(in_own_arenas)) == expected);
  BOOST_TEST(written(std::move(in_one_arena)) == expected);
}

BOOST_AUTO_TEST_CASE(a_shared_arena_goes_with_the_last_record_the_writer_releases) {
  auto destroyed = std::make_shared<std::atomic<bool>>(false);
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<> writer(side_by_side_options(directory.path(), log));
  {
    const json::storage_ptr arena = json::make_shared_resource<WatchedArena>(destroyed);
    std::vector<json::value> records;
    for (int i = 0; i < 1000; ++i) records.push_back(record_in(arena, i));
    // Two producers submit the records built on this thread; the drain and oneTBB's
    // threads release them.
    std::latch go(2);
    std::vector<std::jthread> producers;
    for (int p = 0; p < 2; ++p) {
      producers.emplace_back([&, p] {
        go.arrive_and_wait();
        for (std::size_t i = p; i < records.size(); i += 2) writer.submit(std::move(records[i]));
      });
    }
  }
  BOOST_TEST(!destroyed->load());  // the queued records still hold it
  writer.start();
  writer.close();
  BOOST_TEST(destroyed->load());
  BOOST_TEST(writer.stats().written == 1000u);
}

BOOST_AUTO_TEST_CASE(parse_record_parses_into_an_arena_of_its_own_and_reports_bad_text) {
  boost::system::error_code error;
  const json::value record = jsonl::parse_record(R"({"a":[1,2.5,"x"],"b":{"c":null}})", error);
  BOOST_TEST(!error);
  BOOST_TEST(jsonl::to_json_text(record) == R"({"a":[1,2.5,"x"],"b":{"c":null}})");
  BOOST_TEST(record.storage().is_shared());
  BOOST_TEST(record.storage().is_deallocate_trivial());
  const json::value bad = jsonl::parse_record(R"({"a":)", error);
  BOOST_TEST(error.failed());
  BOOST_TEST(bad.is_null());
  json::parse_options python_like;
  python_like.allow_infinity_and_nan = true;
  const json::value nan = jsonl::parse_record("[NaN]", error, python_like);
  BOOST_TEST(!error);
  BOOST_TEST(std::isnan(nan.as_array()[0].as_double()));
}

BOOST_AUTO_TEST_CASE(arena_records_write_what_the_same_values_in_default_storage_write) {
  std::vector<json::value> by_default;
  jsonl_test::ScratchDirectory directory;
  Log log;
  jsonl::JsonlRecordWriter<jsonl::ArenaRecord> writer(side_by_side_options(directory.path(), log),
                                                      std::make_shared<jsonl::ArenaRecordFormat<jsonl::JsonLineFormat>>());
  for (int i = 0; i < 2000; ++i) {
    by_default.push_back(record_in({}, i));
    jsonl::ArenaRecord record = jsonl::ArenaRecord::make();
    record.value() = record_in(record.storage(), i);
    BOOST_TEST_REQUIRE(writer.submit(std::move(record)));
  }
  jsonl::ArenaRecord bad = jsonl::ArenaRecord::make();
  bad.value() = json::array({1.0, std::nan("")}, bad.storage());
  BOOST_TEST(writer.submit(std::move(bad)));
  writer.start();
  writer.close();
  BOOST_TEST(jsonl_test::read_file(*writer.path()) == written(std::move(by_default)));
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::malformed) == 1u);
  BOOST_TEST(jsonl_test::accounting_holds(writer.stats()));
}

BOOST_AUTO_TEST_CASE(an_arena_record_keeps_its_arena_through_moves_and_a_moved_from_one_has_none) {
  jsonl::ArenaRecord record = jsonl::ArenaRecord::make();
  record.value() = record_in(record.storage(), 1);
  const MemoryResource* arena = record.storage().get();
  BOOST_TEST(record.value().storage().get() == arena);
  jsonl::ArenaRecord moved(std::move(record));
  BOOST_TEST(moved.storage().get() == arena);
  BOOST_TEST(moved.value().storage().get() == arena);
  BOOST_TEST(jsonl::to_json_text(moved.value()) == jsonl::to_json_text(record_in({}, 1)));
  BOOST_TEST(record.value().is_null());
  BOOST_TEST(record.storage().get() == json::storage_ptr().get());  // builds in the default storage now
  jsonl::ArenaRecord assigned;
  assigned = std::move(moved);
  BOOST_TEST(assigned.value().storage().get() == arena);
  BOOST_TEST(moved.value().is_null());
  assigned = jsonl::ArenaRecord();  // the writer's release: value and arena go
  BOOST_TEST(assigned.value().is_null());
}

BOOST_AUTO_TEST_CASE(an_arena_record_parses_into_an_arena_of_its_own) {
  boost::system::error_code error;
  const jsonl::ArenaRecord record = jsonl::ArenaRecord::parse(R"({"a":[1,2.5,"x"]})", error);
  BOOST_TEST(!error);
  BOOST_TEST(jsonl::to_json_text(record.value()) == R"({"a":[1,2.5,"x"]})");
  BOOST_TEST(record.value().storage().get() == record.storage().get());
  BOOST_TEST(!record.storage().is_shared());
  BOOST_TEST(record.value().storage().is_deallocate_trivial());
  jsonl::ArenaRecord::parse("{", error);
  BOOST_TEST(error.failed());
}

BOOST_AUTO_TEST_SUITE_END()

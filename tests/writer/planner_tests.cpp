// How the drain chooses between serializing a round alone and side by side.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <latch>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "serialization_planner.hpp"
#include "writer_fixture.hpp"

namespace json = boost::json;
using namespace std::chrono_literals;
using Planner = jsonl::detail::SerializationPlanner;
using Mode = Planner::Mode;

namespace {

constexpr std::size_t round_size = 1024;

// Plans and measures `rounds` rounds, the side-by-side ones costing `side_by_side` per
// record and the others `alone`; returns how many were side by side.
int run(Planner& planner, int rounds, std::chrono::nanoseconds alone, std::chrono::nanoseconds side_by_side) {
  int side_by_side_rounds = 0;
  for (int i = 0; i < rounds; ++i) {
    const Mode mode = planner.plan(round_size);
    side_by_side_rounds += mode == Mode::side_by_side;
    planner.measured(mode, round_size, (mode == Mode::alone ? alone : side_by_side) * round_size);
  }
  return side_by_side_rounds;
}

// Lines as usual; counts `serialized` down for each of the first `records` records.
class CountingFormat : public jsonl::JsonLineFormat {
 public:
  CountingFormat(std::latch& serialized, int records) : serialized_(serialized), records_(records) {}
  bool append_line(json::value& record, std::string& out) const override {
    const bool sanitized = JsonLineFormat::append_line(record, out);
    if (seen_.fetch_add(1) < records_) serialized_.count_down();
    return sanitized;
  }

 private:
  std::latch& serialized_;
  const int records_;
  mutable std::atomic<int> seen_{0};
};

// A file per record's "file" field, in `directory`.
class FilePerFieldRoute : public jsonl::RecordRoute<json::value> {
 public:
  explicit FilePerFieldRoute(std::filesystem::path directory) : directory_(std::move(directory)) {}
  std::filesystem::path route(const json::value& record) const override {
    return directory_ / std::string(record.as_object().at("file").as_string());
  }

 private:
  std::filesystem::path directory_;
};

}  // namespace

BOOST_AUTO_TEST_SUITE(planner)

BOOST_AUTO_TEST_CASE(small_rounds_are_serialized_alone_and_not_measured) {
  Planner planner;
  BOOST_TEST((planner.plan(Planner::min_records_to_share - 1) == Mode::alone));
  planner.measured(Mode::alone, Planner::min_records_to_share - 1, 1s);
  BOOST_TEST(planner.cost(Mode::alone) == 0.0);
  BOOST_TEST((planner.plan(Planner::min_records_to_share) == Mode::side_by_side));
}

BOOST_AUTO_TEST_CASE(each_way_is_tried_once_side_by_side_first) {
  Planner planner;
  BOOST_TEST((planner.plan(round_size) == Mode::side_by_side));
  planner.measured(Mode::side_by_side, round_size, 3ms);
  BOOST_TEST((planner.plan(round_size) == Mode::alone));
  planner.measured(Mode::alone, round_size, 2ms);
  BOOST_TEST(planner.cost(Mode::side_by_side) == 3e6 / round_size);
  BOOST_TEST(planner.cost(Mode::alone) == 2e6 / round_size);
}

BOOST_AUTO_TEST_CASE(the_faster_way_is_kept_and_the_slower_retried_every_sixteenth_round) {
  Planner faster_alone;
  const int rounds = 2 + 10 * static_cast<int>(Planner::probe_interval);
  // The two trial rounds (one of them side by side), then one probe per interval.
  BOOST_TEST(run(faster_alone, rounds, 2us, 3us) == 1 + 10);
  Planner faster_side_by_side;
  BOOST_TEST(run(faster_side_by_side, rounds, 3us, 2us) == rounds - 1 - 10);
}

BOOST_AUTO_TEST_CASE(a_change_in_conditions_is_followed_within_a_few_probes) {
  Planner planner;
  run(planner, 100, 3us, 2us);  // side by side pays, say with a scalable allocator
  const int later = 8 * static_cast<int>(Planner::probe_interval);
  // Now side by side is the slower way: after a few probes of alone, alone is kept.
  BOOST_TEST(run(planner, later, 2us, 6us) < 4 * static_cast<int>(Planner::probe_interval));
  BOOST_TEST(run(planner, later, 2us, 6us) == later / static_cast<int>(Planner::probe_interval));
}

BOOST_AUTO_TEST_CASE(the_other_way_takes_over_only_when_cheaper_by_the_switch_margin) {
  Planner planner;
  run(planner, 100, 2us, 3us);  // alone is kept
  const int later = 40 * static_cast<int>(Planner::probe_interval);
  const auto within_margin = std::chrono::duration_cast<std::chrono::nanoseconds>(2us * (1 - Planner::switch_margin) * 1.02);
  // Side by side turns slightly cheaper, as noise alone can make it: only probed.
  BOOST_TEST(run(planner, later, 2us, within_margin) == later / static_cast<int>(Planner::probe_interval));
  const auto beyond_margin = std::chrono::duration_cast<std::chrono::nanoseconds>(2us * (1 - Planner::switch_margin) * 0.98);
  // Cheaper by more than the margin: it takes over.
  BOOST_TEST(run(planner, later, 2us, beyond_margin) > later / 2);
}

BOOST_AUTO_TEST_CASE(stats_say_how_records_were_serialized) {
  jsonl_test::ScratchDirectory directory;
  jsonl_test::Log log;
  auto options = jsonl_test::test_options(directory.path(), log);
  options.batch_size = 64;
  options.queue_size = 1024;
  std::latch first_round_serialized(200);
  jsonl::JsonlRecordWriter<> writer(options, std::make_shared<CountingFormat>(first_round_serialized, 200));
  for (int i = 0; i < 200; ++i) writer.submit(json::object{{"n", i}});
  writer.start();  // one round of all 200: the first round big enough is side by side
  first_round_serialized.wait();
  // Too few for two rounds big enough to plan: the first of them, if any, is alone.
  for (int i = 0; i < 100; ++i) writer.submit(json::object{{"n", i}});
  writer.close();
  const auto stats = writer.stats();
  BOOST_TEST(stats.serialized_side_by_side == 200u);
  BOOST_TEST(stats.serialized_alone == 100u);
  BOOST_TEST(stats.written == 300u);
}

// The path ThreadSanitizer (the tsan preset) must watch every run: records from several
// threads, routed to several files, in a first round serialized side by side, each
// file's group in chunks side by side too, in one batch or in two side by side. Every
// line lands once, in its file, in its producer's order. Which chunks oneTBB's threads
// take is theirs to decide: several writers in turn make it all but certain that chunks
// of one group run on different threads, so that two sharing memory are seen racing.
BOOST_AUTO_TEST_CASE(records_from_several_threads_routed_to_several_files_are_serialized_side_by_side) {
  constexpr int writers = 4, producers = 3, per_producer = 340, files = 3;
  for (int w = 0; w < writers; ++w) {
    jsonl_test::ScratchDirectory directory;
    jsonl_test::Log log;
    auto options = jsonl_test::test_options(directory.path(), log);
    options.batch_size = w % 2 == 0 ? 1024 : 512;  // a round of one batch, or of two
    options.queue_size = 8192;
    jsonl::JsonlRecordWriter<> writer(options, std::make_shared<jsonl::JsonLineFormat>(), nullptr,
                                      std::make_shared<FilePerFieldRoute>(directory.path()));
    std::atomic<int> refused{0};
    {
      std::latch go(producers);
      std::vector<std::jthread> threads;
      for (int p = 0; p < producers; ++p) {
        threads.emplace_back([&, p] {
          go.arrive_and_wait();
          for (int n = 0; n < per_producer; ++n) {
            refused += !writer.submit(json::object{{"file", "f" + std::to_string(n % files) + ".jsonl"},
                                                  {"producer", p},
                                                  {"n", n},
                                                  {"text", "\"quoted\"\tand\u00e9\n" + std::to_string(n)}});
          }
        });
      }
    }
    BOOST_TEST(refused == 0);
    writer.start();
    writer.close();
    const auto stats = writer.stats();
    BOOST_TEST(stats.serialized_side_by_side == std::uint64_t{producers * per_producer});
    BOOST_TEST(stats.written == std::uint64_t{producers * per_producer});
    for (int f = 0; f < files; ++f) {
      std::istringstream lines(jsonl_test::read_file(directory.path() / ("f" + std::to_string(f) + ".jsonl")));
      std::vector<int> next(producers, f);
      for (std::string line; std::getline(lines, line);) {
        const json::object record = json::parse(line).as_object();
        const auto p = record.at("producer").as_int64();
        BOOST_TEST_REQUIRE((p >= 0 && p < producers));
        const int n = static_cast<int>(record.at("n").as_int64());
        BOOST_TEST(n == next[p], "writer " << w << ", f" << f);
        BOOST_TEST(record.at("text").as_string() == "\"quoted\"\tand\u00e9\n" + std::to_string(n));
        next[p] = n + files;
      }
      for (int p = 0; p < producers; ++p) BOOST_TEST(next[p] >= per_producer);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

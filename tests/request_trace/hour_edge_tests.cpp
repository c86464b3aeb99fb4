// A UTC hour's edge crossed at full rate: records made on either side of it, submitted
// from several threads at once, each land in the file of the hour its stamp names, in
// each thread's order, none lost, and the books of both hours balance.
#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <filesystem>
#include <latch>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_support.hpp"

import jsonl.request_trace;

namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr int producers = 4;
constexpr int records_each = 2'000;
// 2026-09-03T14:59:59.900Z: the records' stamps run from here for a fifth of a second,
// half of them before three o'clock, interleaved across the threads.
const auto first_stamp = std::chrono::sys_days(std::chrono::year(2026) / 9 / 3) + 14h + 59min + 59s + 900ms;
constexpr auto stamp_step = std::chrono::microseconds(200ms) / (producers * records_each);

}  // namespace

BOOST_AUTO_TEST_SUITE(hour_edge)

BOOST_AUTO_TEST_CASE(records_from_several_threads_across_an_hours_edge_land_in_their_hours_and_the_books_balance) {
  jsonl_test::ScratchDirectory directory;
  jsonl_test::LogRecord<jsonl::LogLevel> log;
  auto options = jsonl::request_trace_options(directory.path(), log.sink());
  options.queue_size = 2 * producers * records_each;  // no record dropped for a full queue
  options.shutdown_timeout = 30s;
  jsonl::RequestTraceWriter<> writer(options, "-t");
  writer.start();
  std::latch start_together(producers);
  std::vector<std::jthread> threads;
  std::vector<int> refused(producers, 0);
  for (int thread = 0; thread < producers; ++thread) {
    threads.emplace_back([&, thread] {
      start_together.arrive_and_wait();
      for (int n = 0; n < records_each; ++n) {
        const int order = n * producers + thread;
        const std::string_view kind = n % 2 ? jsonl::trace_responses : jsonl::trace_requests;
        jsonl::TraceRecord<> record(std::string(kind), json::object{{"thread", thread}, {"n", n}, {"order", order}},
                                    first_stamp + order * stamp_step);
        if (!writer.submit(std::move(record))) ++refused[thread];
      }
    });
  }
  threads.clear();
  writer.close();
  BOOST_TEST(refused == std::vector<int>(producers, 0), boost::test_tools::per_element());
  BOOST_TEST(writer.stats().written == static_cast<std::uint64_t>(producers * records_each));
  BOOST_TEST(writer.stats().dropped() == 0u);

  // Every record once, in the file of its hour and kind, each thread's in its order.
  const int first_of_three = producers * records_each / 2;
  std::set<std::pair<int, int>> seen;
  for (const std::string hour : {"2026-09-03T14", "2026-09-03T15"}) {
    for (const std::string_view kind : {jsonl::trace_requests, jsonl::trace_responses}) {
      const std::filesystem::path file = directory.path() / hour / (std::string(kind) + "-t.jsonl");
      std::map<int, int> last_of_thread;
      for (const std::string& line : jsonl_test::read_lines(file)) {
        const json::object record = json::parse(line).as_object();
        const int thread = static_cast<int>(record.at("thread").as_int64());
        const int n = static_cast<int>(record.at("n").as_int64());
        const int order = static_cast<int>(record.at("order").as_int64());
        BOOST_TEST((order >= first_of_three) == (hour == "2026-09-03T15"), file.string() << " holds order " << order);
        BOOST_TEST((n % 2 == 1) == (kind == jsonl::trace_responses), file.string() << " holds n " << n);
        BOOST_TEST(n > last_of_thread.try_emplace(thread, -1).first->second, file.string() << " out of order");
        last_of_thread[thread] = n;
        BOOST_TEST(seen.emplace(thread, n).second, "thread " << thread << " record " << n << " twice");
      }
    }
  }
  BOOST_TEST(seen.size() == static_cast<std::size_t>(producers * records_each));

  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST_REQUIRE(reconciliation.generations.size() == 1u);
  BOOST_TEST(reconciliation.generations[0].persisted == static_cast<std::uint64_t>(producers * records_each));
  BOOST_TEST(reconciliation.generations[0].files.size() == 4u);  // two kinds in each of two hours
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

BOOST_AUTO_TEST_SUITE_END()

// jsonl.prometheus's collectable. That its families, values and labels are
// prometheus_text's is checked through prometheus_client (prometheus/same_families).
#define BOOST_TEST_MODULE prometheus
#include <boost/test/unit_test.hpp>

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/metric_type.h>

#include <boost/json/value.hpp>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "writer/writer_fixture.hpp"

import jsonl.writer;
import jsonl.prometheus;

namespace {

const prometheus::MetricFamily& family(const std::vector<prometheus::MetricFamily>& families, const std::string& name) {
  const auto found = std::find_if(families.begin(), families.end(), [&](const auto& f) { return f.name == name; });
  if (found == families.end()) throw std::runtime_error("no family " + name);
  return *found;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(collectable)

BOOST_AUTO_TEST_CASE(the_writers_are_asked_anew_at_each_collection) {
  jsonl::WriterStats stats;
  int asked = 0;
  const jsonl::WritersCollectable collectable([&] {
    ++asked;
    return std::vector<jsonl::WriterMetrics>{{stats, "s", {}}};
  });
  BOOST_TEST(asked == 0);
  stats.written = 5;
  BOOST_TEST(family(collectable.Collect(), "jsonl_records_written_total").metric.at(0).counter.value == 5.0);
  stats.written = 7;
  BOOST_TEST(family(collectable.Collect(), "jsonl_records_written_total").metric.at(0).counter.value == 7.0);
  BOOST_TEST(asked == 2);
}

BOOST_AUTO_TEST_CASE(counters_are_counters_gauges_gauges_each_labelled_like_prometheus_text) {
  jsonl::WriterStats stats;
  stats.queue_depth = 4;
  stats.dropped_by[jsonl::index_of(jsonl::DropReason::queue_full)] = 2;
  const jsonl::WritersCollectable collectable(
      [&] { return std::vector<jsonl::WriterMetrics>{{stats, "performance metrics", {{"host", "a"}}}}; });
  const std::vector<prometheus::MetricFamily> families = collectable.Collect();
  const prometheus::MetricFamily& depth = family(families, "jsonl_queue_depth");
  BOOST_TEST((depth.type == prometheus::MetricType::Gauge));
  BOOST_TEST(depth.metric.at(0).gauge.value == 4.0);
  const prometheus::MetricFamily& dropped = family(families, "jsonl_records_dropped_total");
  BOOST_TEST((dropped.type == prometheus::MetricType::Counter));
  BOOST_TEST(dropped.metric.size() == jsonl::drop_reasons.size());
  const std::vector<prometheus::ClientMetric::Label> labels{
      {"subject", "performance metrics"}, {"reason", "queue_full"}, {"host", "a"}};
  BOOST_TEST((dropped.metric.at(0).label == labels));
  BOOST_TEST(dropped.metric.at(0).counter.value == 2.0);
}

BOOST_AUTO_TEST_CASE(a_writer_whose_label_names_prometheus_text_refuses_is_left_out_not_thrown) {
  const std::vector<jsonl::WriterMetrics> writers{{jsonl::WriterStats{}, "bad", {{"reason", "x"}}},
                                                  {jsonl::WriterStats{}, "good", {}}};
  BOOST_CHECK_THROW(jsonl::prometheus_text(writers), std::invalid_argument);
  const jsonl::WritersCollectable collectable([&] { return writers; });
  std::vector<prometheus::MetricFamily> families;
  BOOST_CHECK_NO_THROW(families = collectable.Collect());
  const std::vector<prometheus::ClientMetric>& samples = family(families, "jsonl_records_written_total").metric;
  BOOST_TEST_REQUIRE(samples.size() == 1u);
  BOOST_TEST(samples.at(0).label.at(0).value == "good");
}

BOOST_AUTO_TEST_CASE(a_writer_stuck_in_an_append_is_collected_without_waiting_for_it) {
  jsonl_test::ScratchDirectory directory;
  jsonl_test::Log log;
  auto gates = std::make_shared<jsonl_test::StuckSink::Gates>();
  jsonl::JsonlRecordWriter<> writer(jsonl_test::test_options(directory.path(), log),
                                    std::make_shared<jsonl::JsonLineFormat>(), std::make_shared<jsonl_test::StuckSink>(gates));
  writer.start();
  BOOST_TEST_REQUIRE(writer.submit(boost::json::value(1)));
  gates->entered.wait();
  const jsonl::WritersCollectable collectable(
      [&] { return std::vector<jsonl::WriterMetrics>{{writer.stats(), "s", {}}}; });
  const std::vector<prometheus::MetricFamily> families = collectable.Collect();  // the append still waits
  BOOST_TEST(family(families, "jsonl_records_submitted_total").metric.at(0).counter.value == 1.0);
  BOOST_TEST(family(families, "jsonl_records_written_total").metric.at(0).counter.value == 0.0);
  gates->release.count_down();
  writer.close();
  BOOST_TEST(writer.stats().written == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

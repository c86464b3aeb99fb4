// jsonl.prometheus: writers' counters for a server that exports its metrics with
// prometheus-cpp (target jsonl::prometheus; a consumer of the installed package asks for
// it with find_package(jsonl COMPONENTS prometheus)).
//
//   auto writers = std::make_shared<jsonl::WritersCollectable>([&writer] {
//     return std::vector<jsonl::WriterMetrics>{{writer.stats(), "performance metrics", {}}};
//   });
//   exposer.RegisterCollectable(writers);
//
// The families, values and labels are prometheus_text's (both read
// jsonl::exposed_families): a scrape through prometheus-cpp and a page from
// prometheus_text say the same.
module;

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <functional>
#include <vector>

export module jsonl.prometheus;

export import jsonl.writer;

export namespace jsonl {

class WritersCollectable final : public ::prometheus::Collectable {
 public:
  // What to expose, asked anew at each collection on the collecting thread. A writer's
  // stats() reads its counters without a lock: collecting never blocks a writer, and
  // allocates only on the collecting thread.
  using Source = std::function<std::vector<WriterMetrics>()>;

  explicit WritersCollectable(Source writers);

  // The writers' families as prometheus_text exposes them. Never throws: a scrape's
  // handler (prometheus-cpp's Exposer) does not catch, so a writer whose label names
  // prometheus_text would refuse (std::invalid_argument) is left out of the collection.
  std::vector<::prometheus::MetricFamily> Collect() const override;

 private:
  Source writers_;
};

}  // namespace jsonl

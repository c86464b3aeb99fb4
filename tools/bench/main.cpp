// jsonl-bench SECTION [--quick] [--disk DIR] [--shm DIR]
//   SECTION: submit | serializer | end_to_end | overload | stuck_close | records | request_records |
//            durability | handoff | overload_pinned | compression | compression_ratio | corpus
// Each section runs in its own process (tools/bench/run), so peak RSS is its own.
#include <cstdio>
#include <cstring>
#include <string>

#include "sections.hpp"

namespace jsonl_bench {

void figure(const char* name, double value, const char* unit) {
  std::printf("%s: %.6g %s\n", name, value, unit);
  std::fflush(stdout);
}

int target(const char* name, bool pass, const std::string& detail) {
  std::printf("target %s: %s (%s)\n", name, pass ? "PASS" : "FAIL", detail.c_str());
  std::fflush(stdout);
  return pass ? 0 : 1;
}

}  // namespace jsonl_bench

int main(int argc, char** argv) {
  jsonl_bench::Settings settings{.quick = false, .disk_dir = "build/bench", .shm_dir = "/dev/shm/jsonl-bench"};
  std::string section;
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument == "--quick") {
      settings.quick = true;
    } else if (argument == "--disk" && i + 1 < argc) {
      settings.disk_dir = argv[++i];
    } else if (argument == "--shm" && i + 1 < argc) {
      settings.shm_dir = argv[++i];
    } else {
      section = argument;
    }
  }
  if (section == "submit") return jsonl_bench::submit_latency(settings);
  if (section == "serializer") return jsonl_bench::serializer(settings);
  if (section == "end_to_end") return jsonl_bench::end_to_end(settings);
  if (section == "overload") return jsonl_bench::overload(settings);
  if (section == "stuck_close") return jsonl_bench::stuck_close(settings);
  if (section == "records") return jsonl_bench::records(settings);
  if (section == "request_records") return jsonl_bench::request_records(settings);
  if (section == "durability") return jsonl_bench::durability(settings);
  if (section == "handoff") return jsonl_bench::handoff(settings);
  if (section == "overload_pinned") return jsonl_bench::overload_pinned(settings);
  if (section == "compression") return jsonl_bench::compression(settings);
  if (section == "compression_ratio") return jsonl_bench::compression_ratio(settings);
  if (section == "corpus") return jsonl_bench::corpus(settings);
  std::fprintf(stderr, "usage: jsonl-bench {submit|serializer|end_to_end|overload|stuck_close|records|request_records|durability|handoff|overload_pinned|compression|compression_ratio|corpus} [--quick]\n");
  return 2;
}

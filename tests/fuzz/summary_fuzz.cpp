// libFuzzer over summary's readers: the input is a performance-metrics file, plain or,
// when it begins with zstd's magic number, compressed. Whatever it holds, reading it
// must neither crash nor hang nor hold more than its bounds, and every line must be
// accounted for: a record, or a bad or torn line reported.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "dataset.hpp"
#include "test_support.hpp"

namespace {

const std::filesystem::path& scratch() {
  static const jsonl_test::ScratchDirectory made;
  return made.path();
}

// Small enough that the fuzzer's inputs reach it.
constexpr std::uint64_t max_line_bytes = 256;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const bool compressed = input.starts_with("\x28\xb5\x2f\xfd");
  const std::filesystem::path file =
      scratch() / (compressed ? "perf_metrics-server-h-1-t.jsonl.zst" : "perf_metrics-server-h-1-t.jsonl");
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(input.data(), static_cast<std::streamsize>(size));
  std::ostringstream reports;
  const jsonl_perf::Dataset dataset = jsonl_perf::load_dataset({file}, reports, 1, max_line_bytes);
  std::uint64_t records = 0;
  for (const jsonl_perf::Group& group : dataset.groups) records += group.records;
  if (records + dataset.bad_lines + dataset.torn_lines != dataset.lines) std::abort();
  std::filesystem::remove(file);
  return 0;
}

// jsonl-perf's readers on input nobody checked: the line splitter they share, and
// summary's reading of files with lines past the bound, torn lines, compressed files cut
// short and compressed bytes that do not decode.
#define BOOST_TEST_MODULE readers
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "bounded_lines.hpp"
#include "dataset.hpp"
#include "test_support.hpp"
#include "zstd_layout.hpp"

namespace {

struct Seen {
  std::string text;
  std::uint64_t number;
  std::uint64_t bytes;
  bool terminated;
  bool overlong;
  bool operator==(const Seen&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Seen& seen) {
  return out << "{'" << seen.text << "', " << seen.number << ", " << seen.bytes << ", "
             << (seen.terminated ? "terminated" : "torn") << (seen.overlong ? ", overlong" : "") << '}';
}

// Every line `input` splits into, fed `piece` bytes at a time.
std::vector<Seen> split(std::string_view input, std::uint64_t max_line_bytes, std::size_t piece) {
  jsonl_perf::BoundedLines lines(max_line_bytes);
  std::vector<Seen> seen;
  const auto take = [&](const jsonl_perf::Line& line) {
    seen.push_back({std::string(line.text), line.number, line.bytes, line.terminated, line.overlong});
  };
  for (std::size_t at = 0; at < input.size(); at += piece) lines.feed(input.substr(at, piece), take);
  lines.finish(take);
  return seen;
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

constexpr std::string_view record = R"({"status": "ok"})";

}  // namespace

BOOST_AUTO_TEST_SUITE(bounded_lines)

BOOST_AUTO_TEST_CASE(lines_come_out_whole_however_the_bytes_are_cut) {
  const std::string input = "{\"a\": 1}\n\n{\"bb\": 22}\n";
  const std::vector<Seen> expected{{"{\"a\": 1}", 1, 8, true, false},
                                   {"", 2, 0, true, false},
                                   {"{\"bb\": 22}", 3, 10, true, false}};
  for (std::size_t piece = 1; piece <= input.size(); ++piece) {
    BOOST_TEST(split(input, 64, piece) == expected, "fed " << piece << " bytes at a time");
  }
}

BOOST_AUTO_TEST_CASE(a_line_at_the_bound_is_kept) {
  BOOST_TEST((split("abcd\n", 4, 3) == std::vector<Seen>{{"abcd", 1, 4, true, false}}));
}

BOOST_AUTO_TEST_CASE(a_line_past_the_bound_is_handed_out_overlong_with_its_length_and_not_its_bytes) {
  for (std::size_t piece : {1, 3, 100}) {
    BOOST_TEST((split("abcde\n", 4, piece) == std::vector<Seen>{{"", 1, 5, true, true}}), "pieces of " << piece);
  }
}

BOOST_AUTO_TEST_CASE(lines_after_an_overlong_one_are_read_as_usual) {
  BOOST_TEST((split("ab\n0123456789\ncd\n", 4, 3) ==
              std::vector<Seen>{{"ab", 1, 2, true, false}, {"", 2, 10, true, true}, {"cd", 3, 2, true, false}}));
}

BOOST_AUTO_TEST_CASE(a_last_line_without_its_newline_is_handed_out_torn) {
  BOOST_TEST((split("ab\ncd", 4, 1) == std::vector<Seen>{{"ab", 1, 2, true, false}, {"cd", 2, 2, false, false}}));
  BOOST_TEST((split("ab\ncdefg", 4, 2) == std::vector<Seen>{{"ab", 1, 2, true, false}, {"", 2, 5, false, true}}));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(summary)

BOOST_AUTO_TEST_CASE(a_line_past_the_bound_is_reported_with_its_file_and_line_and_the_others_are_read) {
  const jsonl_test::ScratchDirectory scratch;
  const auto file = scratch.path() / "perf_metrics-server-h-1-t.jsonl";
  const std::string overlong = R"({"status": "long", "pad": ")" + std::string(100, 'a') + "\"}";
  write_file(file, std::string(record) + "\n" + overlong + "\n" + std::string(record) + "\n");
  std::ostringstream reports;
  const jsonl_perf::Dataset dataset = jsonl_perf::load_dataset({file}, reports, 1, 64);
  BOOST_TEST(dataset.lines == 3u);
  BOOST_TEST(dataset.bad_lines == 1u);
  BOOST_REQUIRE(dataset.groups.size() == 1u);
  BOOST_TEST(dataset.groups[0].status == "ok");
  BOOST_TEST(dataset.groups[0].records == 2u);
  BOOST_TEST(reports.str() == file.string() + ":2: " + std::to_string(overlong.size()) +
                                  " bytes, longer than the 64 a line is read for, skipped\n");
}

BOOST_AUTO_TEST_CASE(the_bound_is_the_callers) {
  const jsonl_test::ScratchDirectory scratch;
  const auto file = scratch.path() / "perf_metrics-server-h-1-t.jsonl";
  write_file(file, std::string(record) + "\n");
  std::ostringstream reports;
  BOOST_TEST(jsonl_perf::load_dataset({file}, reports, 1, record.size()).bad_lines == 0u);
  BOOST_TEST(jsonl_perf::load_dataset({file}, reports, 1, record.size() - 1).bad_lines == 1u);
}

BOOST_AUTO_TEST_CASE(a_torn_last_line_past_the_bound_is_reported_torn) {
  const jsonl_test::ScratchDirectory scratch;
  const auto file = scratch.path() / "perf_metrics-server-h-1-t.jsonl";
  write_file(file, std::string(record) + "\n" + std::string(200, 'x'));
  std::ostringstream reports;
  const jsonl_perf::Dataset dataset = jsonl_perf::load_dataset({file}, reports, 1, 64);
  BOOST_TEST(dataset.torn_lines == 1u);
  BOOST_TEST(dataset.bad_lines == 0u);
  BOOST_TEST(reports.str() ==
             file.string() + ":2: torn last line (no newline), 200 bytes, longer than the 64 a line is read for, skipped\n");
}

// Cut points of every kind a cut can make: at each block boundary inside an append that
// spans blocks (each ends mid-line), inside each of its blocks, and inside an append of
// one block. Each reads as one torn tail, after the whole lines libzstd decodes.
BOOST_AUTO_TEST_CASE(a_compressed_file_cut_anywhere_reads_as_one_torn_tail_after_the_lines_libzstd_decodes) {
  const jsonl_test::ScratchDirectory scratch;
  const jsonl_test::ZstdCuts layout = jsonl_test::zstd_cuts_of_every_kind();
  BOOST_TEST_REQUIRE(layout.mid_line_boundaries >= 2u);
  const std::string_view whole = layout.file.bytes;
  for (const std::size_t cut : layout.cuts) {
    BOOST_TEST_CONTEXT("cut at " << cut << " of " << whole.size()) {
      const auto file = scratch.path() / ("perf_metrics-server-h-" + std::to_string(cut) + "-t.jsonl.zst");
      write_file(file, whole.substr(0, cut));
      const std::string content = jsonl_test::zstd_decoded(whole.substr(0, cut)).content;
      const auto whole_lines = static_cast<std::uint64_t>(std::count(content.begin(), content.end(), '\n'));
      std::ostringstream reports;
      const jsonl_perf::Dataset dataset = jsonl_perf::load_dataset({file}, reports, 1);
      BOOST_TEST(dataset.torn_lines == 1u);
      BOOST_TEST(dataset.bad_lines == 0u);
      BOOST_TEST(dataset.lines == whole_lines + 1);
      BOOST_REQUIRE(dataset.groups.size() == 1u);
      BOOST_TEST(dataset.groups[0].records == whole_lines);
      const std::string report = reports.str();
      BOOST_TEST(report.starts_with(file.string() + ":" + std::to_string(whole_lines + 1) + ": torn tail at the end ("));
      BOOST_TEST(std::count(report.begin(), report.end(), '\n') == 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(compressed_bytes_that_do_not_decode_are_reported_and_the_other_files_are_read) {
  const jsonl_test::ScratchDirectory scratch;
  // A zstd frame header that declares 2^40 bytes of content in one segment, then a
  // run-length block: zstd refuses the window instead of allocating it.
  const std::string huge_frame{"\x28\xb5\x2f\xfd\xe0\x00\x00\x00\x00\x00\x01\x00\x00\x03\x00\x10\x61", 17};
  const auto compressed = scratch.path() / "perf_metrics-server-h-1-t.jsonl.zst";
  const auto plain = scratch.path() / "perf_metrics-server-h-2-t.jsonl";
  write_file(compressed, huge_frame);
  write_file(plain, std::string(record) + "\n");
  std::ostringstream reports;
  const jsonl_perf::Dataset dataset = jsonl_perf::load_dataset({compressed, plain}, reports, 1, 64);
  BOOST_TEST(dataset.bad_lines == 1u);
  BOOST_REQUIRE(dataset.groups.size() == 1u);
  BOOST_TEST(dataset.groups[0].records == 1u);
  BOOST_TEST(reports.str().starts_with(compressed.string() + ":1: bytes [0, 17): corrupt zstd data: "));
}

BOOST_AUTO_TEST_SUITE_END()

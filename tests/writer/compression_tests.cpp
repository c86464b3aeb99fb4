// Compressed output (WriterOptions::compression): every append one whole zstd frame,
// files that decode to the plain writer's bytes, never appended to by a successor,
// rotation by bytes on disk, a failed append never leaving part of a frame before the
// next, and books whose ranges are frames the verifier decodes.
#include <zstd.h>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "durability_fixture.hpp"

import jsonl.writer;

using namespace durability_test;

namespace {

// A file's frames, each decoded by libzstd on its own.
struct Frames {
  std::vector<std::string> contents;
  std::size_t whole_bytes = 0;  // where the last whole frame ends
  bool every_header_has_size_and_checksum = true;
};

Frames frames_of(const std::string& file) {
  Frames frames;
  std::string_view rest(file);
  while (!rest.empty()) {
    const std::size_t size = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
    if (ZSTD_isError(size)) break;
    // The frame header descriptor follows the 4-byte magic number; bit 2 is the
    // content checksum flag (RFC 8878, 3.1.1.1.1).
    const unsigned long long content_size = ZSTD_getFrameContentSize(rest.data(), size);
    const bool has_checksum = (static_cast<unsigned char>(rest[4]) & 0x04) != 0;
    frames.every_header_has_size_and_checksum &= content_size != ZSTD_CONTENTSIZE_UNKNOWN && has_checksum;
    BOOST_TEST_REQUIRE(content_size != ZSTD_CONTENTSIZE_ERROR);
    std::string content(content_size == ZSTD_CONTENTSIZE_UNKNOWN ? 0 : content_size, '\0');
    const std::size_t decoded = ZSTD_decompress(content.data(), content.size(), rest.data(), size);
    BOOST_TEST_REQUIRE(!ZSTD_isError(decoded));
    frames.contents.push_back(content);
    frames.whole_bytes += size;
    rest.remove_prefix(size);
  }
  return frames;
}

std::string content_of(const std::filesystem::path& file) {
  std::string content;
  for (const std::string& frame : frames_of(jsonl_test::read_file(file)).contents) content += frame;
  return content;
}

std::vector<std::filesystem::path> data_files(const std::filesystem::path& directory) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    if (entry.is_regular_file()) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

jsonl::WriterOptions compressed(jsonl::WriterOptions options, int level = 1) {
  options.compression = jsonl::Compression::zstd(level);
  return options;
}

// The lines of records [first, end).
std::string lines_of(int first, int end) {
  std::string lines;
  for (int index = first; index < end; ++index) lines += line_of(index, "ok");
  return lines;
}

// Three flushed runs of five records; the first write of the second (records 5, 6, ...,
// up to all five, as the drain took them) meets a full disk after 9 bytes landed, which
// with `truncates_fail` cannot be cut off again.
void write_through_a_full_disk(Writer& writer, ScriptedCalls& calls, bool truncates_fail) {
  writer.start();
  submit(writer, 5);
  BOOST_TEST_REQUIRE(writer.flush(10s));
  if (truncates_fail) calls.fail_truncates();
  calls.cut_next_write(9, ENOSPC);
  submit(writer, 5, 5);
  BOOST_TEST_REQUIRE(writer.flush(10s));
  submit(writer, 5, 10);
  writer.close();
}

void expect_reconciled(const std::filesystem::path& directory) {
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory);
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(compression, Durable)

BOOST_AUTO_TEST_CASE(a_compressed_file_decodes_to_the_bytes_a_plain_writer_writes) {
  jsonl_test::ScratchDirectory plain_directory;
  auto plain_options = jsonl_test::test_options(plain_directory.path(), log);
  auto plain = make_writer(plain_options);
  auto packed = make_writer(compressed(jsonl_test::test_options(directory.path(), log)));
  plain->start();
  packed->start();
  for (int index = 0; index < 500; ++index) {
    BOOST_TEST_REQUIRE(plain->submit(record(index, "naïve text")));
    BOOST_TEST_REQUIRE(packed->submit(record(index, "naïve text")));
  }
  plain->close();
  packed->close();
  const std::string lines = jsonl_test::read_file(*plain->path());
  BOOST_TEST(lines.size() > 0u);
  BOOST_TEST(content_of(*packed->path()) == lines);
  BOOST_TEST(packed->stats().uncompressed_bytes_written == plain->stats().bytes_written);
  BOOST_TEST(packed->stats().bytes_written == std::filesystem::file_size(*packed->path()));
  BOOST_TEST(packed->stats().bytes_written < packed->stats().uncompressed_bytes_written);
  BOOST_TEST(jsonl_test::accounting_holds(packed->stats()));
}

BOOST_AUTO_TEST_CASE(every_append_is_one_whole_frame_with_its_size_and_checksum) {
  auto options = compressed(jsonl_test::test_options(directory.path(), log));
  options.batch_size = 7;
  auto writer = make_writer(options);
  writer->start();
  submit(*writer, 100);
  writer->close();
  const std::string file = jsonl_test::read_file(*writer->path());
  const Frames frames = frames_of(file);
  BOOST_TEST(frames.whole_bytes == file.size());
  BOOST_TEST(frames.contents.size() == writer->stats().appends);
  BOOST_TEST(frames.contents.size() >= 100u / 7);
  BOOST_TEST(frames.every_header_has_size_and_checksum);
  for (const std::string& content : frames.contents) BOOST_TEST((!content.empty() && content.back() == '\n'));
}

BOOST_AUTO_TEST_CASE(compressed_file_names_end_in_jsonl_zst) {
  auto writer = make_writer(compressed(jsonl_test::test_options(directory.path(), log)));
  writer->start();
  submit(*writer, 1);
  writer->close();
  const std::string name = writer->path()->filename().string();
  BOOST_TEST(name.starts_with("test-"));
  BOOST_TEST(name.ends_with(".jsonl.zst"));
}

BOOST_AUTO_TEST_CASE(a_successor_never_appends_to_its_predecessors_compressed_file) {
  auto first = make_writer(compressed(durable()));
  first->start();
  submit(*first, 20);
  first->close();
  const std::string before = jsonl_test::read_file(*first->path());

  auto second = make_writer(compressed(durable()));
  second->start();
  submit(*second, 20, 20);
  second->close();
  BOOST_TEST(*second->path() != *first->path());
  BOOST_TEST(second->path()->filename().string().ends_with("-1.jsonl.zst"));
  BOOST_TEST(jsonl_test::read_file(*first->path()) == before);
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.all_books_balance());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST(reconciliation.unaccounted.empty());
}

BOOST_AUTO_TEST_CASE(rotation_counts_bytes_on_disk) {
  // Alike lines of about 300 bytes, in batches of ten, under a size limit.
  const auto write_alike = [&](const std::filesystem::path& where, int records, std::uint64_t max_file_bytes) {
    auto options = compressed(jsonl_test::test_options(where, log));
    options.batch_size = 10;
    options.max_file_bytes = max_file_bytes;
    auto writer = make_writer(options);
    submit(*writer, records, 0, std::string(250, 'x'));  // queued first: full batches
    writer->start();
    writer->close();
    return writer;
  };
  // 100 records compress far below the limit taken together, though ten of them exceed
  // it uncompressed.
  const auto writer = write_alike(directory.path(), 100, 2000);
  BOOST_TEST(writer->stats().uncompressed_bytes_written > 10u * 2000);
  BOOST_TEST(writer->stats().files_started == 1u);

  // A limit below two frames: each file holds what fits on disk, an append never split.
  jsonl_test::ScratchDirectory small_directory;
  const auto rotating = write_alike(small_directory.path(), 30, 1);
  const std::vector<std::filesystem::path> files = data_files(small_directory.path());
  BOOST_TEST(files.size() == rotating->stats().appends);
  for (const std::filesystem::path& file : files) BOOST_TEST(frames_of(jsonl_test::read_file(file)).contents.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_bad_level_is_a_clear_error_at_construction) {
  for (const int level : {0, ZSTD_maxCLevel() + 1, ZSTD_minCLevel() - 1}) {
    try {
      make_writer(compressed(jsonl_test::test_options(directory.path(), log), level));
      BOOST_FAIL("level " << level << " was accepted");
    } catch (const std::invalid_argument& error) {
      BOOST_TEST(jsonl_test::contains(error.what(), "zstd level " + std::to_string(level) + " is out of range"));
    }
  }
  BOOST_CHECK_NO_THROW(make_writer(compressed(jsonl_test::test_options(directory.path(), log), -5)));
  BOOST_CHECK_NO_THROW(make_writer(compressed(jsonl_test::test_options(directory.path(), log), ZSTD_maxCLevel())));
}

BOOST_AUTO_TEST_CASE(a_frame_cut_short_is_cut_off_so_the_file_stays_whole_frames) {
  auto options = compressed(durable());
  options.batch_size = 5;
  auto writer = make_writer(options);
  write_through_a_full_disk(*writer, *calls, false);

  const std::string file = jsonl_test::read_file(*writer->path());
  const Frames frames = frames_of(file);
  BOOST_TEST(frames.whole_bytes == file.size());
  const auto cut = static_cast<int>(writer->stats().dropped(jsonl::DropReason::write_error));
  BOOST_TEST_REQUIRE((cut >= 1 && cut <= 5));
  BOOST_TEST(content_of(*writer->path()) == lines_of(0, 5) + lines_of(5 + cut, 15));
  BOOST_TEST(writer->stats().written == 15u - cut);
  BOOST_TEST(writer->stats().unknown == 0u);
  expect_reconciled(directory.path());
}

BOOST_AUTO_TEST_CASE(a_frame_that_cannot_be_cut_off_closes_its_file_and_the_writer_moves_on) {
  auto options = compressed(durable());
  options.batch_size = 5;
  auto writer = make_writer(options);
  write_through_a_full_disk(*writer, *calls, true);

  const std::vector<std::filesystem::path> files = data_files(directory.path());
  BOOST_TEST_REQUIRE(files.size() == 2u);
  const std::filesystem::path torn = files[0] == *writer->path() ? files[1] : files[0];
  BOOST_TEST(writer->stats().files_started == 2u);
  const std::string first = jsonl_test::read_file(torn);
  BOOST_TEST(content_of(torn) == lines_of(0, 5));
  BOOST_TEST(frames_of(first).whole_bytes + 9 == first.size());
  const auto cut = static_cast<int>(writer->stats().unknown);
  BOOST_TEST_REQUIRE((cut >= 1 && cut <= 5));
  BOOST_TEST(content_of(*writer->path()) == lines_of(5 + cut, 15));
  BOOST_TEST(writer->stats().written == 15u - cut);
  expect_reconciled(directory.path());
}

BOOST_AUTO_TEST_CASE(a_routed_file_left_torn_takes_no_more_frames) {
  struct OneFile : jsonl::RecordRoute<json::value> {
    explicit OneFile(std::filesystem::path file) : file(std::move(file)) {}
    std::filesystem::path route(const json::value&) const override { return file; }
    std::filesystem::path file;
  };
  const std::filesystem::path routed = directory.path() / "routed.jsonl.zst";
  auto options = compressed(durable());
  options.batch_size = 5;
  Writer writer(std::move(options), std::make_shared<jsonl::JsonLineFormat>(), nullptr,
                std::make_shared<OneFile>(routed));
  write_through_a_full_disk(writer, *calls, true);

  const std::string file = jsonl_test::read_file(routed);
  BOOST_TEST(content_of(routed) == lines_of(0, 5));
  BOOST_TEST(frames_of(file).whole_bytes + 9 == file.size());
  const auto cut = writer.stats().unknown;
  BOOST_TEST_REQUIRE((cut >= 1 && cut <= 5));
  BOOST_TEST(writer.stats().written == 5u);
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::write_error) == 10u - cut);
  expect_reconciled(directory.path());
}

BOOST_AUTO_TEST_CASE(the_books_claim_frames_and_the_verifier_decodes_them) {
  auto options = compressed(durable());
  options.batch_size = 8;
  auto writer = make_writer(options);
  writer->start();
  submit(*writer, 50);
  writer->close();
  const json::value document = document_of(*writer);
  const json::object& file = only_file(document);
  BOOST_TEST(file.at("persisted_records") == 50);
  BOOST_TEST(file.at("persisted_end").to_number<std::uint64_t>() == std::filesystem::file_size(*writer->path()));
  const jsonl::FileCheck check = only_check(directory.path(), document);
  BOOST_TEST(check.records == 50u);
  BOOST_TEST(check.bad_lines == 0u);
  BOOST_TEST(check.verified());
}

BOOST_AUTO_TEST_CASE(persisted_bytes_ending_inside_a_frame_are_the_files_error) {
  auto writer = make_writer(compressed(durable()));
  writer->start();
  submit(*writer, 10);
  writer->close();
  json::value document = document_of(*writer);
  json::object& file = document.at("shards").as_array()[0].as_object();
  file["persisted_end"] = file.at("persisted_end").to_number<std::uint64_t>() - 1;
  const jsonl::BooksCheck books = jsonl::verify_books(directory.path(), document);
  BOOST_TEST_REQUIRE(books.files.size() == 1u);
  BOOST_TEST(!books.files[0].verified());
  BOOST_TEST(jsonl_test::contains(books.files[0].error.value_or(""), "end inside a zstd frame"));
}

BOOST_AUTO_TEST_CASE(a_torn_frame_no_books_claim_is_unaccounted) {
  auto writer = make_writer(compressed(durable()));
  submit(*writer, 10);  // queued first: one frame, which half the file cuts inside
  writer->start();
  writer->close();
  const std::string whole = jsonl_test::read_file(*writer->path());
  {
    std::ofstream out(*writer->path(), std::ios::binary | std::ios::app);
    out << whole.substr(0, whole.size() / 2);
  }
  const jsonl::Reconciliation reconciliation = jsonl::reconcile(directory.path());
  BOOST_TEST(reconciliation.all_files_verify());
  BOOST_TEST_REQUIRE(reconciliation.unaccounted.size() == 1u);
  BOOST_TEST(reconciliation.unaccounted[0].unclaimed_bytes == whole.size() / 2);
  BOOST_TEST(reconciliation.unaccounted[0].torn_frames == 1u);
}

BOOST_AUTO_TEST_CASE(the_decoder_says_where_frames_end_however_it_is_fed) {
  auto writer = make_writer(compressed(jsonl_test::test_options(directory.path(), log)));
  writer->start();
  submit(*writer, 40);
  writer->close();
  const std::string file = jsonl_test::read_file(*writer->path());
  const std::string lines = content_of(*writer->path());
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, file.size()}) {
    jsonl::ZstdDecoder decoder;
    std::string decoded;
    for (std::size_t at = 0; at < file.size(); at += piece) {
      decoder.decode(std::string_view(file).substr(at, piece), [&](std::string_view content) { decoded += content; });
    }
    BOOST_TEST(decoded == lines);
    BOOST_TEST(decoder.between_frames());
    BOOST_TEST(decoder.frames() == writer->stats().appends);
  }
  jsonl::ZstdDecoder torn;
  torn.decode(std::string_view(file).substr(0, file.size() - 1), [](std::string_view) {});
  BOOST_TEST(!torn.between_frames());
  BOOST_TEST(jsonl::zstd_frame_size(file).value() <= file.size());
  BOOST_TEST(!jsonl::zstd_frame_size(std::string_view(file).substr(0, 5)).has_value());
  BOOST_CHECK_THROW(jsonl::zstd_frame_size(R"({"not":"a frame"})"), std::runtime_error);
}

BOOST_AUTO_TEST_SUITE_END()

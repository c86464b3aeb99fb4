// Compressed output (WriterOptions::compression): a file's appends continue one zstd
// frame, each a flushed piece that decodes once written; frames end at their bounds, at
// rotation and at close; files decode to the plain writer's bytes and are never
// appended to by a successor; rotation by bytes on disk; a failed append cut off and its
// frame ended by hand after what landed; books whose ranges the verifier decodes, of a
// file being written too.
#include <zstd.h>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "zstd_layout.hpp"
#include "durability_fixture.hpp"

import jsonl.writer;

using namespace durability_test;

namespace {

using Decoded = jsonl_test::ZstdDecoded;

Decoded decoded(std::string_view bytes) { return jsonl_test::zstd_decoded(bytes); }

// A file's frames, each decoded by libzstd on its own.
struct Frames {
  std::vector<std::string> contents;
  std::size_t whole_bytes = 0;  // where the last whole frame ends
  bool every_header_has_a_checksum = true;
};

Frames frames_of(const std::string& file) {
  Frames frames;
  std::string_view rest(file);
  while (!rest.empty()) {
    const std::size_t size = ZSTD_findFrameCompressedSize(rest.data(), rest.size());
    if (ZSTD_isError(size)) break;
    // The frame header descriptor follows the 4-byte magic number; bit 2 is the
    // content checksum flag (RFC 8878, 3.1.1.1.1). libzstd checks the checksum.
    frames.every_header_has_a_checksum &= (static_cast<unsigned char>(rest[4]) & 0x04) != 0;
    const Decoded frame = decoded(rest.substr(0, size));
    BOOST_TEST_REQUIRE(frame.ends_a_frame);
    frames.contents.push_back(frame.content);
    frames.whole_bytes += size;
    rest.remove_prefix(size);
  }
  return frames;
}

std::string content_of(const std::filesystem::path& file) { return decoded(jsonl_test::read_file(file)).content; }

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

BOOST_AUTO_TEST_CASE(appends_continue_one_frame_and_each_decodes_once_written) {
  auto options = compressed(jsonl_test::test_options(directory.path(), log));
  options.batch_size = 7;
  options.queue_size = 28;  // a round of one batch: an append a batch
  auto writer = make_writer(options);
  writer->start();
  for (int run = 0; run < 4; ++run) {
    submit(*writer, 25, 25 * run);
    BOOST_TEST_REQUIRE(writer->flush(10s));
    const Decoded so_far = decoded(jsonl_test::read_file(*writer->path()));
    BOOST_TEST(so_far.content == lines_of(0, 25 * (run + 1)));
    BOOST_TEST(!so_far.ends_a_frame);
  }
  writer->close();
  const std::string file = jsonl_test::read_file(*writer->path());
  const Frames frames = frames_of(file);
  BOOST_TEST(frames.whole_bytes == file.size());
  BOOST_TEST(frames.contents.size() == 1u);
  BOOST_TEST(writer->stats().appends >= 100u / 7);
  BOOST_TEST(frames.every_header_has_a_checksum);
}

BOOST_AUTO_TEST_CASE(a_frame_ends_once_it_holds_its_size_bound) {
  auto options = compressed(jsonl_test::test_options(directory.path(), log));
  options.batch_size = 13;
  options.queue_size = 100;  // room for all, and a round of one batch: an append a batch
  options.compression.frame_bytes = 1000;
  auto writer = make_writer(options);
  submit(*writer, 100);  // queued first: full appends
  writer->start();
  writer->close();
  const Frames frames = frames_of(jsonl_test::read_file(*writer->path()));
  BOOST_TEST_REQUIRE(frames.contents.size() > 2u);
  std::string content;
  for (std::size_t i = 0; i < frames.contents.size(); ++i) {
    // Each frame but the last ended with the append that brought it to the bound.
    if (i + 1 < frames.contents.size()) BOOST_TEST(frames.contents[i].size() >= 1000u);
    BOOST_TEST(frames.contents[i].size() < 1000u + 13 * line_of(99, "ok").size());
    content += frames.contents[i];
  }
  BOOST_TEST(content == lines_of(0, 100));
}

BOOST_AUTO_TEST_CASE(a_frame_ends_once_it_is_as_old_as_its_age_bound) {
  jsonl_test::ManualClock clock;
  auto options = compressed(jsonl_test::test_options(directory.path(), log));
  options.clock = clock.function();
  auto writer = make_writer(options);
  writer->start();
  submit(*writer, 5);
  BOOST_TEST_REQUIRE(writer->flush(10s));
  submit(*writer, 5, 5);
  BOOST_TEST_REQUIRE(writer->flush(10s));
  BOOST_TEST(!decoded(jsonl_test::read_file(*writer->path())).ends_a_frame);
  // The next append after the bound ends the frame, whatever its file's other appends.
  clock.advance(options.compression.frame_age);
  submit(*writer, 5, 10);
  BOOST_TEST_REQUIRE(writer->flush(10s));
  const std::string file = jsonl_test::read_file(*writer->path());
  BOOST_TEST(frames_of(file).whole_bytes == file.size());
  BOOST_TEST(content_of(*writer->path()) == lines_of(0, 15));
  writer->close();
}

BOOST_AUTO_TEST_CASE(rotation_ends_the_frame_of_the_file_it_leaves) {
  jsonl_test::ManualClock clock;
  auto options = compressed(jsonl_test::test_options(directory.path(), log));
  options.clock = clock.function();
  // Rotation by age, before the frame's own age bound ends it.
  options.max_file_age = options.compression.frame_age / 2;
  auto writer = make_writer(options);
  writer->start();
  submit(*writer, 5);
  BOOST_TEST_REQUIRE(writer->flush(10s));
  const std::filesystem::path first = *writer->path();
  clock.advance(*options.max_file_age);
  submit(*writer, 5, 5);
  BOOST_TEST_REQUIRE(writer->flush(10s));
  BOOST_TEST_REQUIRE(*writer->path() != first);
  const std::string left = jsonl_test::read_file(first);
  BOOST_TEST(frames_of(left).whole_bytes == left.size());
  BOOST_TEST(content_of(first) == lines_of(0, 5));
  BOOST_TEST(!decoded(jsonl_test::read_file(*writer->path())).ends_a_frame);
  writer->close();
  const std::string last = jsonl_test::read_file(*writer->path());
  BOOST_TEST(frames_of(last).whole_bytes == last.size());
}

BOOST_AUTO_TEST_CASE(frame_bounds_of_zero_are_a_clear_error_at_construction) {
  auto no_bytes = compressed(jsonl_test::test_options(directory.path(), log));
  no_bytes.compression.frame_bytes = 0;
  BOOST_CHECK_EXCEPTION(make_writer(no_bytes), std::invalid_argument, [](const std::invalid_argument& error) {
    return jsonl_test::contains(error.what(), "frame's size bound");
  });
  auto no_age = compressed(jsonl_test::test_options(directory.path(), log));
  no_age.compression.frame_age = 0s;
  BOOST_CHECK_EXCEPTION(make_writer(no_age), std::invalid_argument, [](const std::invalid_argument& error) {
    return jsonl_test::contains(error.what(), "frame's age bound");
  });
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
    options.queue_size = records;  // room for all; under 80, a round of one batch
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

  // A limit below one append: each file holds one (of ten records) and its frame's end.
  jsonl_test::ScratchDirectory small_directory;
  write_alike(small_directory.path(), 30, 1);
  const std::vector<std::filesystem::path> files = data_files(small_directory.path());
  BOOST_TEST(files.size() == 3u);
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

BOOST_AUTO_TEST_CASE(a_piece_cut_short_is_cut_off_and_its_frame_ended_after_what_landed) {
  auto options = compressed(durable());
  options.batch_size = 5;
  auto writer = make_writer(options);
  write_through_a_full_disk(*writer, *calls, false);

  // The first frame, ended by hand after the first run, carries the checksum of that
  // run's lines alone (libzstd checks it); the third run began a frame of its own.
  const std::string file = jsonl_test::read_file(*writer->path());
  const Frames frames = frames_of(file);
  BOOST_TEST(frames.whole_bytes == file.size());
  BOOST_TEST_REQUIRE(frames.contents.size() == 2u);
  BOOST_TEST(frames.contents[0] == lines_of(0, 5));
  const auto cut = static_cast<int>(writer->stats().dropped(jsonl::DropReason::write_error));
  BOOST_TEST_REQUIRE((cut >= 1 && cut <= 5));
  BOOST_TEST(frames.contents[1] == lines_of(5 + cut, 15));
  BOOST_TEST(writer->stats().written == 15u - cut);
  BOOST_TEST(writer->stats().unknown == 0u);
  expect_reconciled(directory.path());
}

BOOST_AUTO_TEST_CASE(a_piece_that_cannot_be_cut_off_closes_its_file_and_the_writer_moves_on) {
  auto options = compressed(durable());
  options.batch_size = 5;
  auto writer = make_writer(options);
  write_through_a_full_disk(*writer, *calls, true);

  const std::vector<std::filesystem::path> files = data_files(directory.path());
  BOOST_TEST_REQUIRE(files.size() == 2u);
  const std::filesystem::path torn = files[0] == *writer->path() ? files[1] : files[0];
  BOOST_TEST(writer->stats().files_started == 2u);
  // The torn file's frame never ended: it decodes up to its first run, 9 bytes after.
  jsonl::ZstdDecoder decoder;
  std::string content;
  decoder.decode(jsonl_test::read_file(torn), [&](std::string_view piece) { content += piece; });
  BOOST_TEST(content == lines_of(0, 5));
  BOOST_TEST(decoder.bytes_since_piece_end() == 9u);
  const auto cut = static_cast<int>(writer->stats().unknown);
  BOOST_TEST_REQUIRE((cut >= 1 && cut <= 5));
  BOOST_TEST(content_of(*writer->path()) == lines_of(5 + cut, 15));
  BOOST_TEST(writer->stats().written == 15u - cut);
  expect_reconciled(directory.path());
}

BOOST_AUTO_TEST_CASE(a_routed_file_left_torn_takes_no_more_pieces) {
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

  jsonl::ZstdDecoder decoder;
  std::string content;
  decoder.decode(jsonl_test::read_file(routed), [&](std::string_view piece) { content += piece; });
  BOOST_TEST(content == lines_of(0, 5));
  BOOST_TEST(decoder.bytes_since_piece_end() == 9u);
  const auto cut = writer.stats().unknown;
  BOOST_TEST_REQUIRE((cut >= 1 && cut <= 5));
  BOOST_TEST(writer.stats().written == 5u);
  BOOST_TEST(writer.stats().dropped(jsonl::DropReason::write_error) == 10u - cut);
  expect_reconciled(directory.path());
}

BOOST_AUTO_TEST_CASE(the_books_claim_the_pieces_and_the_verifier_decodes_them) {
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

BOOST_AUTO_TEST_CASE(a_file_being_written_verifies_up_to_its_last_append) {
  auto writer = make_writer(compressed(durable()));
  writer->start();
  submit(*writer, 10);
  BOOST_TEST_REQUIRE(writer->flush(10s));
  submit(*writer, 10, 10);
  BOOST_TEST_REQUIRE(writer->flush(10s));
  BOOST_TEST(!decoded(jsonl_test::read_file(*writer->path())).ends_a_frame);
  const jsonl::FileCheck check = only_check(directory.path(), document_of(*writer));
  BOOST_TEST(check.records == 20u);
  BOOST_TEST(check.verified());
  expect_reconciled(directory.path());
  writer->close();
}

BOOST_AUTO_TEST_CASE(persisted_bytes_ending_inside_a_piece_are_the_files_error) {
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
  BOOST_TEST(jsonl_test::contains(books.files[0].error.value_or(""), "end inside a piece of a zstd frame"));
}

BOOST_AUTO_TEST_CASE(a_torn_piece_no_books_claim_is_unaccounted) {
  auto writer = make_writer(compressed(durable()));
  submit(*writer, 10);  // queued first: one piece, which half the file cuts inside
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

// A cut anywhere in a file no books claim (inside a block, at a block boundary mid-line,
// inside an append of one block) is one torn tail: the line it cut short is part of it,
// not a line of its own; the lines libzstd decodes before it are counted whole.
BOOST_AUTO_TEST_CASE(a_compressed_file_cut_anywhere_is_one_torn_tail_of_unclaimed_bytes) {
  const jsonl_test::ZstdCuts layout = jsonl_test::zstd_cuts_of_every_kind();
  BOOST_TEST_REQUIRE(layout.mid_line_boundaries >= 2u);
  const std::string_view whole = layout.file.bytes;
  for (const std::size_t cut : layout.cuts) {
    BOOST_TEST_CONTEXT("cut at " << cut << " of " << whole.size()) {
      const jsonl_test::ScratchDirectory cut_directory;
      {
        std::ofstream out(cut_directory.path() / "perf_metrics-h-1.jsonl.zst", std::ios::binary);
        out.write(whole.data(), static_cast<std::streamsize>(cut));
      }
      const std::string content = decoded(whole.substr(0, cut)).content;
      const jsonl::Reconciliation reconciliation = jsonl::reconcile(cut_directory.path());
      BOOST_TEST_REQUIRE(reconciliation.unaccounted.size() == 1u);
      const jsonl::UnaccountedBytes& tail = reconciliation.unaccounted[0];
      BOOST_TEST(tail.unclaimed_bytes == cut);
      BOOST_TEST(tail.torn_frames == 1u);
      BOOST_TEST(tail.cut_lines == 0u);
      BOOST_TEST(tail.whole_lines == static_cast<std::uint64_t>(std::count(content.begin(), content.end(), '\n')));
    }
  }
}

BOOST_AUTO_TEST_CASE(the_decoder_says_where_pieces_end_however_it_is_fed) {
  auto options = compressed(jsonl_test::test_options(directory.path(), log));
  options.compression.frame_bytes = 300;
  options.batch_size = 4;
  options.queue_size = 28;  // room for all, and a round of one batch: an append a batch
  auto writer = make_writer(options);
  submit(*writer, 28);  // queued first: seven appends, frames of a few
  writer->start();
  writer->close();
  const std::string file = jsonl_test::read_file(*writer->path());
  const Frames whole = frames_of(file);
  BOOST_TEST_REQUIRE(whole.contents.size() > 1u);
  for (const std::size_t piece : {std::size_t{1}, std::size_t{7}, file.size()}) {
    jsonl::ZstdDecoder decoder;
    std::string decoded;
    for (std::size_t at = 0; at < file.size(); at += piece) {
      decoder.decode(std::string_view(file).substr(at, piece), [&](std::string_view content) { decoded += content; });
    }
    BOOST_TEST(decoded == lines_of(0, 28));
    BOOST_TEST(decoder.between_frames());
    BOOST_TEST(decoder.between_pieces());
    BOOST_TEST(decoder.frames() == whole.contents.size());
  }
  BOOST_TEST(jsonl::zstd_frame_size(file).value() < file.size());
  BOOST_TEST(!jsonl::zstd_frame_size(std::string_view(file).substr(0, 5)).has_value());
  BOOST_CHECK_THROW(jsonl::zstd_frame_size(R"({"not":"a frame"})"), std::runtime_error);
}

BOOST_AUTO_TEST_CASE(a_frame_ended_at_close_is_past_its_last_piece_until_its_checksum_ends) {
  auto writer = make_writer(compressed(jsonl_test::test_options(directory.path(), log)));
  writer->start();
  submit(*writer, 10);
  writer->close();
  // Close ended the frame with an empty last block (3 bytes) and the checksum (4).
  const std::string file = jsonl_test::read_file(*writer->path());
  const auto decoder_of = [&](std::size_t cut) {
    auto decoder = std::make_unique<jsonl::ZstdDecoder>();
    decoder->decode(std::string_view(file).substr(0, file.size() - cut), [](std::string_view) {});
    return decoder;
  };
  BOOST_TEST(decoder_of(0)->between_frames());
  BOOST_TEST(decoder_of(7)->between_pieces());
  BOOST_TEST(!decoder_of(7)->between_frames());
  BOOST_TEST(decoder_of(4)->bytes_since_piece_end() == 3u);
  BOOST_TEST(decoder_of(1)->bytes_since_piece_end() == 6u);
  BOOST_TEST(!decoder_of(1)->between_pieces());
}

BOOST_AUTO_TEST_SUITE_END()

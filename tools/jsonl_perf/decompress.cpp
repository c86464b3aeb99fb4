// jsonl-perf decompress: a directory of compressed writers' files as plain ones, with
// books that describe the plain files, for readers that read only plain shards (the
// reference's analysis and reconciler).
#include <boost/json.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "commands.hpp"

import jsonl.writer;

namespace jsonl_perf {
namespace {

namespace json = boost::json;

constexpr std::string_view books_directory = "_writer";
constexpr std::size_t chunk_bytes = std::size_t{1} << 20;

// A document's list of files: "shards" (ours, and the reference writer's), or "files"
// (our first schema).
json::array* shards_of(json::object& document) {
  for (const char* key : {"shards", "files"}) {
    if (json::value* shards = document.if_contains(key); shards && shards->is_array()) return &shards->as_array();
  }
  return nullptr;
}

std::optional<std::uint64_t> offset(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  if (!value) return std::nullopt;
  if (value->is_uint64()) return value->as_uint64();
  if (value->is_int64() && value->as_int64() >= 0) return static_cast<std::uint64_t>(value->as_int64());
  return std::nullopt;
}

// Calls `take(begin, end)` for every offset range of a compressed file a shard names:
// its persisted range and its unknown extents.
template <class Take>
void for_each_range(const json::object& shard, const Take& take) {
  const auto start = offset(shard, "start_offset"), end = offset(shard, "persisted_end");
  if (start && end) take(*start, *end);
  const json::value* extents = shard.if_contains("unknown_extents");
  if (!extents || !extents->is_array()) return;
  for (const json::value& extent : extents->as_array()) {
    if (!extent.is_object()) continue;
    const auto at = offset(extent.as_object(), "start"), landed = offset(extent.as_object(), "landed");
    if (at && landed) take(*at, *at + *landed);
  }
}

struct Document {
  std::filesystem::path name;
  json::value value;
};

// One compressed file decoded: where each offset its books name falls in its content.
struct Decoded {
  std::map<std::uint64_t, std::uint64_t> plain_offsets;  // compressed offset -> content offset
  std::uint64_t whole_bytes = 0;  // through the end of its last whole block
  std::uint64_t content_bytes = 0;  // through the end of the last line those blocks end
  std::uint64_t cut_short_bytes = 0;  // of the line those blocks leave open, left out
};

// Where the last whole block of `file` (`size` bytes) ends: a first pass, decoding only.
std::uint64_t last_block_end(const std::filesystem::path& file, std::uint64_t size) {
  std::ifstream in(file, std::ios::binary);
  std::string chunk(chunk_bytes, '\0');
  jsonl::ZstdDecoder decoder;
  for (std::uint64_t at = 0; at < size;) {
    in.read(chunk.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(chunk.size(), size - at)));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) throw std::runtime_error("the file shrank while it was read");
    decoder.decode(std::string_view(chunk.data(), got), [](std::string_view) {});
    at += got;
  }
  return size - decoder.bytes_since_piece_end();
}

// Decodes `file` through the end of its last whole append into `plain`, stopping at each
// of `cuts` to note where it falls in the content. A torn append is left out whatever
// its blocks: the line its last whole block leaves open goes with the bytes after it.
// Throws std::runtime_error naming the offset when a cut is not where an append ends, or
// the bytes do not decode.
Decoded decode_file(const std::filesystem::path& file, const std::filesystem::path& plain,
                    std::set<std::uint64_t> cuts) {
  const std::uint64_t size = std::filesystem::file_size(file);
  Decoded decoded;
  decoded.whole_bytes = last_block_end(file, size);
  cuts.insert(decoded.whole_bytes);
  std::ifstream in(file, std::ios::binary);
  std::ofstream out(plain, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error("cannot write " + plain.string());
  std::string chunk(chunk_bytes, '\0');
  jsonl::ZstdDecoder decoder;
  decoded.plain_offsets[0] = 0;
  std::uint64_t at = 0;
  std::uint64_t line_end = 0;  // content offset after the last newline
  for (const std::uint64_t cut : cuts) {
    if (cut > decoded.whole_bytes) break;
    while (at < cut) {
      in.read(chunk.data(), static_cast<std::streamsize>(std::min<std::uint64_t>(chunk.size(), cut - at)));
      const auto got = static_cast<std::size_t>(in.gcount());
      if (got == 0) throw std::runtime_error("the file shrank while it was read");
      decoder.decode(std::string_view(chunk.data(), got), [&](std::string_view content) {
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        if (const std::size_t newline = content.rfind('\n'); newline != std::string_view::npos) {
          line_end = decoded.content_bytes + newline + 1;
        }
        decoded.content_bytes += content.size();
      });
      at += got;
    }
    if (!decoder.between_pieces()) {
      throw std::runtime_error("its books name offset " + std::to_string(cut) + ", where no append ends");
    }
    decoded.plain_offsets[cut] = decoded.content_bytes;
  }
  if (!out.flush()) throw std::runtime_error("cannot write " + plain.string());
  out.close();
  if (line_end < decoded.content_bytes) {
    decoded.cut_short_bytes = decoded.content_bytes - line_end;
    decoded.content_bytes = decoded.plain_offsets[decoded.whole_bytes] = line_end;
    std::filesystem::resize_file(plain, line_end);
  }
  return decoded;
}

std::string without_zst(const std::string& name) { return name.substr(0, name.size() - 4); }

bool is_deleted(const json::object& shard) {
  const json::value* deleted = shard.if_contains("deleted");
  return deleted && deleted->is_bool() && deleted->as_bool();
}

// Rewrites `shard` (of a compressed file, `decoded` unless rotation deleted it) for its
// plain file; false when an offset it names is not one the decoding noted. An unknown
// extent's bytes past the last whole append (a torn one) are none of the plain file's.
bool rewrite(json::object& shard, const Decoded* decoded) {
  shard["file"] = without_zst(std::string(shard.at("file").as_string()));
  if (is_deleted(shard)) return true;
  if (!decoded) return false;
  const auto plain = [&](std::uint64_t at) -> std::optional<std::uint64_t> {
    const auto found = decoded->plain_offsets.find(at);
    if (found == decoded->plain_offsets.end()) return std::nullopt;
    return found->second;
  };
  const auto start = offset(shard, "start_offset"), end = offset(shard, "persisted_end");
  if (!start || !end || !plain(*start) || !plain(*end)) return false;
  shard["start_offset"] = *plain(*start);
  shard["persisted_end"] = *plain(*end);
  if (json::value* extents = shard.if_contains("unknown_extents"); extents && extents->is_array()) {
    for (json::value& extent : extents->as_array()) {
      json::object& object = extent.as_object();
      const auto at = offset(object, "start"), landed = offset(object, "landed");
      if (!at || !landed) return false;
      const auto begin = plain(std::min(*at, decoded->whole_bytes)), finish = plain(std::min(*at + *landed, decoded->whole_bytes));
      if (!begin || !finish) return false;
      object["start"] = *begin;
      object["landed"] = *finish - *begin;
    }
  }
  return true;
}

// A document's "deleting" list (files retention is removing) by their plain names.
void rename_deleting(json::object& document) {
  json::value* deleting = document.if_contains("deleting");
  if (!deleting || !deleting->is_array()) return;
  for (json::value& file : deleting->as_array()) {
    if (file.is_string() && file.as_string().ends_with(".jsonl.zst")) file = without_zst(std::string(file.as_string()));
  }
}

bool is_compressed_shard(const json::value& shard) {
  const json::value* file = shard.is_object() ? shard.as_object().if_contains("file") : nullptr;
  return file && file->is_string() && file->as_string().ends_with(".jsonl.zst");
}

}  // namespace

int run_decompress(const DecompressOptions& options, std::ostream& out, std::ostream& err) {
  const std::filesystem::path& from = options.input_dir;
  const std::filesystem::path& to = options.output_dir;
  std::vector<Document> documents;
  std::map<std::string, std::set<std::uint64_t>> cuts;  // by file, relative to `from`
  std::vector<std::filesystem::path> data;              // relative to `from`
  try {
    if (std::filesystem::exists(to) && !std::filesystem::is_empty(to)) {
      err << "jsonl-perf: " << to.string() << " is not empty\n";
      return 2;
    }
    for (auto entry = std::filesystem::recursive_directory_iterator(from);
         entry != std::filesystem::recursive_directory_iterator(); ++entry) {
      if (!entry->is_regular_file() || entry->is_symlink()) continue;
      const std::filesystem::path relative = entry->path().lexically_relative(from);
      const std::string name = relative.filename().string();
      if (relative.parent_path() == books_directory && relative.extension() == ".json") {
        std::ifstream in(entry->path(), std::ios::binary);
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        documents.push_back({relative, json::parse(text)});
        continue;
      }
      if (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst")) data.push_back(relative);
    }
  } catch (const std::exception& error) {
    err << "jsonl-perf: " << error.what() << '\n';
    return 2;
  }
  for (Document& document : documents) {
    json::array* shards = document.value.is_object() ? shards_of(document.value.as_object()) : nullptr;
    if (!shards) continue;
    for (const json::value& shard : *shards) {
      if (!is_compressed_shard(shard)) continue;
      auto& file_cuts = cuts[std::string(shard.as_object().at("file").as_string())];
      for_each_range(shard.as_object(), [&](std::uint64_t begin, std::uint64_t end) {
        file_cuts.insert(begin);
        file_cuts.insert(end);
      });
    }
  }
  std::sort(data.begin(), data.end());
  bool failed = false;
  std::map<std::string, Decoded> decoded;
  for (const std::filesystem::path& relative : data) {
    const std::string name = relative.generic_string();
    try {
      std::filesystem::create_directories((to / relative).parent_path());
      if (!jsonl::is_compressed_file(relative)) {
        std::filesystem::copy_file(from / relative, to / relative);
        out << name << ": copied\n";
        continue;
      }
      const std::uint64_t size = std::filesystem::file_size(from / relative);
      const Decoded& file = decoded[name] = decode_file(from / relative, to / without_zst(name), cuts[name]);
      out << name << ": " << file.content_bytes << " bytes of lines from " << file.whole_bytes << " bytes";
      if (file.whole_bytes < size || file.cut_short_bytes != 0) {
        out << "; a torn append left out: the " << file.cut_short_bytes << " bytes of a line cut short and the "
            << size - file.whole_bytes << " bytes after its last whole block";
      }
      out << '\n';
    } catch (const std::exception& error) {
      failed = true;
      err << "jsonl-perf: " << name << ": " << error.what() << '\n';
    }
  }
  for (Document& document : documents) {
    if (document.value.is_object()) rename_deleting(document.value.as_object());
    if (json::array* shards = document.value.is_object() ? shards_of(document.value.as_object()) : nullptr) {
      for (json::value& shard : *shards) {
        if (!is_compressed_shard(shard)) continue;
        const std::string file(shard.as_object().at("file").as_string());
        const auto found = decoded.find(file);
        if (!rewrite(shard.as_object(), found == decoded.end() ? nullptr : &found->second)) {
          failed = true;
          err << "jsonl-perf: " << document.name.generic_string() << ": its shard " << file
              << " could not be described in plain offsets\n";
        }
      }
    }
    try {
      std::filesystem::create_directories((to / document.name).parent_path());
      std::ofstream written(to / document.name, std::ios::binary);
      written << json::serialize(document.value) << '\n';
      if (!written.flush()) throw std::runtime_error("cannot write " + (to / document.name).string());
    } catch (const std::exception& error) {
      failed = true;
      err << "jsonl-perf: " << error.what() << '\n';
    }
  }
  return failed ? 1 : 0;
}

}  // namespace jsonl_perf

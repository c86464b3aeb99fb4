// libFuzzer over the books verifier: the input is a document, then after the first NUL
// byte (if any) the bytes of the data file it may claim. Whatever they hold, the
// verifier must neither crash, nor hang, nor read outside its directory.
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "test_support.hpp"

import jsonl.writer;

namespace {

// The scratch directory, holding what a document may name besides the data file the
// input rewrites: a file in a subdirectory, a symbolic link out of the directory and a
// pipe.
struct Scratch : jsonl_test::ScratchDirectory {
  Scratch() {
    std::filesystem::create_directories(path() / "sub");
    std::ofstream(path() / "sub" / "b.jsonl") << "{\"b\":1}\n";
    std::filesystem::create_symlink("/etc", path() / "link");
    ::mkfifo((path() / "pipe.jsonl").c_str(), 0600);
  }
};

const std::filesystem::path& scratch() {
  static const Scratch made;
  return made.path();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t split = input.find('\0');
  const std::string_view document = input.substr(0, split);
  const std::string_view file = split == std::string_view::npos ? std::string_view{} : input.substr(split + 1);
  std::ofstream(scratch() / "data.jsonl", std::ios::binary | std::ios::trunc).write(file.data(), file.size());
  boost::system::error_code error;
  const boost::json::value value = boost::json::parse(document, error);
  if (error) return 0;
  const jsonl::BooksCheck books = jsonl::verify_books(scratch(), value);
  (void)books.verified();
  return 0;
}

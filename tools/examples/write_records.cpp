// Writes a few records with jsonl.writer and prints where they went.
#include <boost/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

import jsonl.writer;

int main(int argc, char** argv) {
  const std::filesystem::path directory = argc > 1 ? argv[1] : "jsonl_example_out";
  jsonl::JsonlRecordWriter<> writer({.output_dir = directory, .file_stem = "example"});
  writer.start();
  for (int i = 0; i < 5; ++i) {
    writer.submit(boost::json::object{{"request_id", i}, {"latency_s", 0.125 * (i + 1)},
                                      {"status", "complete"}});
  }
  writer.close();
  const jsonl::WriterStats stats = writer.stats();
  std::cout << "wrote " << stats.written << " of " << stats.submitted << " records ("
            << stats.bytes_written << " bytes) to " << writer.path()->string() << '\n';
  return stats.written == stats.submitted ? EXIT_SUCCESS : EXIT_FAILURE;
}

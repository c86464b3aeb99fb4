// The sections of jsonl-bench; each prints "name: value unit" lines and
// "target <name>: PASS|FAIL (...)" lines, and returns the number of failed targets.
#pragma once

#include <filesystem>

namespace jsonl_bench {

struct Settings {
  bool quick = false;
  std::filesystem::path disk_dir;  // a directory on the working disk
  std::filesystem::path shm_dir;   // a directory on /dev/shm
};

int submit_latency(const Settings& settings);
int serializer(const Settings& settings);
int end_to_end(const Settings& settings);
int overload(const Settings& settings);
int stuck_close(const Settings& settings);
int records(const Settings& settings);
int request_records(const Settings& settings);
int durability(const Settings& settings);
int handoff(const Settings& settings);
int overload_pinned(const Settings& settings);
int compression(const Settings& settings);
int compression_ratio(const Settings& settings);
// Writes a generated corpus of raw records, one JSON value a line, to <shm>/corpus.jsonl
// (for the replay figures, which tools/bench/run measures).
int corpus(const Settings& settings);

// Prints "name: value unit".
void figure(const char* name, double value, const char* unit);
// Prints "target name: PASS|FAIL (detail)" and returns 1 on FAIL.
int target(const char* name, bool pass, const std::string& detail);

}  // namespace jsonl_bench

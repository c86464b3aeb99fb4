// The recording writers' threads as jsonl-perf runs them: named, so that top, perf, /proc
// and the serve benchmark's per-thread CPU find them, and at a nice value of the
// server's choosing (RecorderOptions::on_writer_thread_start).
#pragma once

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>
#include <system_error>

namespace jsonl_perf::serve {

inline constexpr const char* writer_thread_name = "jsonl-writer";

// Names the calling thread writer_thread_name and lowers its scheduling priority to
// `nice` (Linux: a thread's own nice value, set through its id). Throws
// std::system_error when the priority cannot be set (the writer logs it and goes on).
inline std::function<void()> writer_thread_start(int nice) {
  return [nice] {
    ::pthread_setname_np(::pthread_self(), writer_thread_name);
    if (nice != 0 && ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), nice) != 0) {
      throw std::system_error(errno, std::generic_category(), "setpriority to nice " + std::to_string(nice));
    }
  };
}

}  // namespace jsonl_perf::serve

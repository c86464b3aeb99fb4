// The serve layer's headers reach jsonl.recording through this header, included last in
// each of them.
//
// GCC takes no outside header first included after an import (tools/module_rules.py, rule
// 1), and a unit includes several serve headers: so every outside header a serve header
// includes is included here, ahead of the import, and each serve header's own list
// repeats what it uses (a repeat after the import brings nothing); so is a serve header
// that a global module fragment includes too (sse.hpp, by the trace builder), which the
// rule counts as outside. A serve header that includes an outside header missing here
// fails the module-rules test, naming it.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <ranges>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sse.hpp"

import jsonl.recording;

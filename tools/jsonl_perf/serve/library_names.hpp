// The libraries' namespaces as the serve layer spells them, in one place.
#pragma once

#include <boost/asio/ip/tcp.hpp>

namespace boost::beast::http {}
namespace boost::json {}

namespace jsonl_perf::serve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace json = boost::json;
using tcp = net::ip::tcp;

}  // namespace jsonl_perf::serve

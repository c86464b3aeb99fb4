// libFuzzer over serve's reading of a request body: the input's first byte names the
// route, the rest is the body. Whatever it holds, reading it as Python does and
// validating it as the reference's models do must neither crash nor hang, and a request
// is either valid (a shape the model can plan from) or refused with errors in the
// reference's shape, each with its loc, type and msg.
#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "python_json.hpp"
#include "serve/disaggregation.hpp"
#include "serve/openai.hpp"

namespace {

namespace json = boost::json;
using namespace jsonl_perf::serve;

void require(bool condition) {
  if (!condition) std::abort();
}

void require_errors_in_shape(const json::array& errors) {
  for (const json::value& error : errors) {
    const json::object* object = error.if_object();
    require(object && object->contains("loc") && object->contains("type") && object->contains("msg"));
  }
  require(!bad_request_body(errors).empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const Route route = every_route[data[0] % every_route.size()];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  json::stream_parser parser({}, jsonl_perf::python_json_loads());
  boost::system::error_code error;
  const std::size_t used = parser.write(text.data(), text.size(), error);
  if (!error) parser.finish(error);
  if (error) {
    require(used <= text.size());
    require_errors_in_shape(json_error(used, error.message()));
    return 0;
  }
  const json::value body = parser.release();
  RequestShape shape;
  json::array errors = validate(route, body, shape);
  if (errors.empty()) {
    require(body.is_object());
    read_disaggregated_params(body.get_object(), errors);
  }
  require_errors_in_shape(errors);
  return 0;
}

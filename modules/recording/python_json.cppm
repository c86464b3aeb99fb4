// A request's body as the reference records it: the value Python's json.loads reads
// from the text, written as json.dumps writes it.
module;

#include <string_view>

module jsonl.recording:python_json;

import jsonl.writer;

namespace jsonl::recording {

// Writes the value of `text`, one JSON text as Python's json.loads reads it, into `out`:
// integers of any size exact, doubles correctly rounded, NaN and the infinities (a
// stream that allows them), a repeated key's last value in its first place. Throws
// MalformedRecord when `text` is not such a text.
void write_python_json(JsonTextStream& out, std::string_view text);

}  // namespace jsonl::recording

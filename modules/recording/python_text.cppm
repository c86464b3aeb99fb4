// JSON values as the reference's Python spells them where it applies str() to them: the
// trace's briefed validation errors and the session's conversation id.
module;

#include <boost/json/array.hpp>
#include <boost/json/string.hpp>
#include <boost/json/value.hpp>

module jsonl.recording:python_text;

namespace jsonl::recording {

// str(value): a string as it is; True, False, None; a number as json.dumps writes it;
// an array or an object as its JSON text.
boost::json::string python_str(const boost::json::value& value);

// The errors as the reference's brief_validation_errors keeps them: objects only, each
// with its loc (every part python_str of it), type and msg.
boost::json::array brief_validation_errors(const boost::json::array& errors);

}  // namespace jsonl::recording

// How a record becomes one line, and which errors mean the record cannot be represented.
module;

#include <boost/json/value.hpp>
#include <exception>
#include <string>

export module jsonl.writer:format;

import :json_text;

export namespace jsonl {

template <class Record>
class RecordFormat {
 public:
  virtual ~RecordFormat() = default;

  // Appends `record` to `out` as exactly one line ending in '\n' and returns whether
  // unencodable text was replaced on the way (the record then counts as sanitized).
  // The writer is done with `record` afterwards: the format may move from it. Called on
  // the drain side, concurrently for different records of a batch: it must be safe to
  // call from several threads at once. May throw; what the exception means is decided
  // by `is_malformed`. Text appended before a throw is discarded by the writer.
  virtual bool append_line(Record& record, std::string& out) const = 0;

  // Whether `error`, thrown by append_line, means "this record cannot be represented":
  // the record is dropped and counted as malformed, with a rate-limited WARNING. Any
  // other exception is an unexpected error: the record is dropped, counted, and logged
  // at ERROR with the exception's type and message. The default recognises
  // MalformedRecord.
  virtual bool is_malformed(const std::exception& error) const noexcept {
    return dynamic_cast<const MalformedRecord*>(&error) != nullptr;
  }
};

// The default format for JSON values: Python-exact compact JSON text plus '\n'.
class JsonLineFormat : public RecordFormat<boost::json::value> {
 public:
  explicit JsonLineFormat(JsonTextOptions options = {}) : options_(options) {}

  bool append_line(boost::json::value& record, std::string& out) const override {
    const bool sanitized = append_json(record, out, options_);
    out += '\n';
    return sanitized;
  }

 private:
  JsonTextOptions options_;
};

}  // namespace jsonl

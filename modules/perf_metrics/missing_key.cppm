// The schema's own error, in a partition of its own so that the shaping rules
// (:schema) can throw it without importing the whole module.
module;

#include <string_view>

export module jsonl.perf_metrics:missing_key;

import jsonl.writer;

export namespace jsonl {

// A key the schema needs is missing. what() names it as Python's KeyError prints it:
// "'server'". Malformed: the record is dropped with a WARNING, never an ERROR.
class MissingKey : public MalformedRecord {
 public:
  explicit MissingKey(std::string_view key);
};

}  // namespace jsonl

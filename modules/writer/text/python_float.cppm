// Python's repr(float), the text json.dumps writes for a double. A module implementation
// partition: nothing of it is exported.
module jsonl.writer:python_float;

namespace jsonl::detail {

// Writes repr(number) for a finite `number` at `at` and returns the end of it. Needs 64
// bytes of room: the digits are copied in fixed-size over-copies, so the room is larger
// than the longest repr (24 bytes).
char* python_float_repr(char* at, double number) noexcept;

}  // namespace jsonl::detail

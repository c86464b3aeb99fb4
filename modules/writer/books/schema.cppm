// The books document's schema: its identifier, where documents live, and every field
// name, read by the writer that publishes documents and by the verifier that reads
// them. The drop reasons come from the DropReason table. Where the reference's
// request-trace writer (TensorRT-LLM's RequestTraceWriter) describes the same thing,
// the name is its name, so that either side's reconciler reads the other's documents.
// A module implementation partition: nothing of it is exported.
module;

#include <array>
#include <string_view>

module jsonl.writer:books_schema;

import :stats;

namespace jsonl::detail::books_schema {

inline constexpr std::string_view id = "jsonl-writer-books/3";
// Documents the verifier also reads: ours before retention left the shards (a file it
// deleted stayed there, marked "deleted"), ours before the list of files was named
// "shards" (it was "files"), and the reference writer's, with its drop reasons.
inline constexpr std::string_view id_before_retention = "jsonl-writer-books/2";
inline constexpr std::string_view id_before_shards = "jsonl-writer-books/1";
inline constexpr std::string_view reference_id = "trtllm-request-trace-writer/1";
inline constexpr std::array<std::string_view, 4> reference_drop_reasons = {"queue_full", "unserializable",
                                                                          "write_error", "shutdown"};
// "<output_dir>/<directory>/<generation>.json"
inline constexpr std::string_view directory = "_writer";

// The document.
inline constexpr std::string_view schema = "schema", generation = "generation", subject = "subject",
                                  host = "host", pid = "pid", started_at = "started_at",
                                  published_at = "published_at", sequence = "sequence", closed = "closed",
                                  durability = "durability", counts = "counts", attributes = "attributes",
                                  shards = "shards", errors = "errors", deleting = "deleting",
                                  retention = "retention";
inline constexpr std::string_view files_before_shards = "files";
// counts: submitted == persisted + the dropped ones + unknown + pending. The counters'
// names are their rows' in `counters`. Persisted counts the records of the shards; the
// records of files retention deleted are dropped under "retention" (our schema's only
// reason that is not a DropReason: the writer wrote them), so that the reference's
// reconciler, which sums the shards and every reason, balances a writer that rotates.
inline constexpr std::string_view submitted = counter_info(Counter::submitted).books_name,
                                  persisted = counter_info(Counter::written).books_name, dropped = "dropped",
                                  unknown = counter_info(Counter::unknown).books_name, pending = "pending";
// attributes: the counters whose rows place them there
// shards[]: what one file holds of the writer's.
inline constexpr std::string_view file = "file", start_offset = "start_offset", persisted_end = "persisted_end",
                                  persisted_records = "persisted_records",
                                  fragments_isolated = "fragments_isolated", unknown_extents = "unknown_extents",
                                  deleted = "deleted";
// shards[].unknown_extents[]
inline constexpr std::string_view start = "start", landed = "landed", records = "records";
// deleting[]: the files retention let go that may still be on disk (each is deleted once
// a document naming it here landed). retention: what every file it let go held.
inline constexpr std::string_view retention_files = "files", retention_records = "records",
                                  retention_bytes = "bytes";
// errors, then the counters whose rows place them there
inline constexpr std::string_view failed_appends = "failed_appends", last_error = "last_error";

}  // namespace jsonl::detail::books_schema

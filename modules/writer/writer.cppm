// Module jsonl.writer: a bounded, non-blocking writer of JSON Lines records.
//
// Producers hand records to `JsonlRecordWriter::submit`, which never blocks, throws or
// does I/O of its own. One drain thread takes queued records in batches and serializes
// each record into one line, the batches waiting together in one round, alone or side
// by side on oneTBB's threads, whichever has lately cost less; one write worker appends
// each file's lines of a batch with a single write, through a sink. Every record
// submitted is accounted for: written, unknown (durability only), or dropped for a
// named reason (`WriterStats`, `DropReason`).
//
// What a configuration may change:
//   - how a record becomes one line, and which errors mean "malformed" (`RecordFormat`;
//     `format_for<Record>` names the default of each record kind: `JsonLineFormat` for
//     boost::json::value, `ArenaRecordFormat` for ArenaRecord, `DescribedFormat` for
//     structs described with Boost.Describe);
//   - which file each record goes to (`RecordRoute`), and where appends go (`Sink`;
//     `FileSink` for local files);
//   - the options in `WriterOptions` (directory, file stem, compression, rotation, queue
//     and batch sizes, shutdown timeout, durability, log sink).
//
// For monitoring, `prometheus_text` renders writers' `WriterStats` in Prometheus's text
// exposition format, from the families `exposed_families` lists (which jsonl.prometheus
// hands to prometheus-cpp). With durability (`WriterOptions::durability`) a writer publishes its
// books beside its files; `verify_books` and `reconcile` read them back. A reader of
// compressed files finds their frames with `zstd_frame_size` and decodes them with
// `ZstdDecoder`.
//
// The partitions below `jsonl::detail` are the writer's own parts that its templates
// use (admission, accounts, the drain, the write side); they are not a contract.
export module jsonl.writer;

export import :log;
export import :options;
export import :stats;
export import :json_text;
export import :format;
export import :format_for;
export import :described;
export import :arena;
export import :zstd_frames;
export import :file_calls;
export import :sink;
export import :route;
export import :record_writer;
export import :prometheus;
export import :utc_time;
export import :verify;

export import :accounts;
export import :admission;
export import :writer_state;
export import :side_by_side;
export import :record_ring;
export import :batch_serializer;
export import :write_side;
export import :drain;

// Module jsonl.writer: a bounded, non-blocking writer of JSON Lines records.
//
// Producers hand records to `JsonlRecordWriter::submit`, which never blocks, throws or
// does I/O of its own. One drain thread takes queued records in batches and serializes
// each record into one line, the batches waiting together in one round, alone or side
// by side on oneTBB's threads, whichever has lately cost less; one write worker appends
// each batch to disk with a single write. Every
// record submitted is accounted for: written, or dropped for a named reason
// (`WriterStats`).
//
// What a configuration may change:
//   - how a record becomes one line, and which errors mean "malformed" (`RecordFormat`;
//     `JsonLineFormat` for boost::json::value records, `DescribedFormat` for structs
//     described with Boost.Describe);
//   - how a batch is laid out on disk (`BatchLayout`);
//   - the options in `WriterOptions` (directory, file stem, rotation, queue and batch
//     sizes, shutdown timeout, log sink).
//
// For monitoring, `prometheus_text` renders writers' `WriterStats` in Prometheus's text
// exposition format. With durability (`WriterOptions::durability`) a writer publishes its
// books beside its files; `verify_books` and `reconcile` read them back.
export module jsonl.writer;

export import :log;
export import :options;
export import :stats;
export import :json_text;
export import :format;
export import :described;
export import :arena;
export import :file_calls;
export import :layout;
export import :record_writer;
export import :prometheus;
export import :verify;
export import :serialization_planner;

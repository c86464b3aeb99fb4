// jsonl-perf verify: every durable writer's books in a directory checked against the
// files they describe, and the bytes no document claims.
#include <boost/json.hpp>

#include <exception>
#include <ostream>
#include <string>

#include "commands.hpp"

import jsonl.writer;

namespace jsonl_perf {
namespace {

void print_report(const jsonl::Reconciliation& reconciliation, std::ostream& out) {
  for (const jsonl::BooksCheck& books : reconciliation.generations) {
    out << books.document.generic_string() << ": " << (books.closed ? "closed" : "not closed") << ", "
        << (books.balanced ? "balanced" : "NOT BALANCED") << "; submitted " << books.submitted << " = persisted "
        << books.persisted << " + dropped " << books.dropped << " + unknown " << books.unknown << " + pending "
        << books.pending << '\n';
    if (books.error) out << "  error: " << *books.error << '\n';
    for (const jsonl::FileCheck& file : books.files) {
      out << "  " << file.file << ": " << (file.verified() ? "verified" : "NOT VERIFIED") << ", " << file.records
          << " of " << file.persisted_records << " records in [" << file.start_offset << ", "
          << file.persisted_end << "), " << file.bad_lines << " bad lines, " << file.unknown_lines
          << " unknown lines, " << file.fragments_isolated << " fragments isolated\n";
      if (file.error) out << "    error: " << *file.error << '\n';
    }
  }
  for (const jsonl::UnaccountedBytes& bytes : reconciliation.unaccounted) {
    if (bytes.error) {
      out << "unreadable: " << bytes.file << ": " << *bytes.error << '\n';
      continue;
    }
    out << "unaccounted: " << bytes.file << ": " << bytes.unclaimed_bytes << " of " << bytes.size
        << " bytes claimed by no document (" << bytes.whole_lines << " whole lines, " << bytes.cut_lines << " cut";
    if (bytes.torn_frames != 0) out << ", " << bytes.torn_frames << " torn or undecodable zstd frames";
    out << ")\n";
  }
  out << "documents: " << reconciliation.generations.size()
      << "; all balance: " << (reconciliation.all_books_balance() ? "yes" : "NO")
      << "; all files verify: " << (reconciliation.all_files_verify() ? "yes" : "NO") << '\n';
}

}  // namespace

int run_verify(const VerifyOptions& options, std::ostream& out, std::ostream& err) {
  jsonl::Reconciliation reconciliation;
  try {
    reconciliation = jsonl::reconcile(options.output_dir);
  } catch (const std::exception& error) {
    err << "jsonl-perf: " << error.what() << '\n';
    return 2;
  }
  if (options.json) {
    out << boost::json::serialize(jsonl::to_json(reconciliation)) << '\n';
  } else {
    print_report(reconciliation, out);
  }
  return reconciliation.all_books_balance() && reconciliation.all_files_verify() ? 0 : 1;
}

}  // namespace jsonl_perf

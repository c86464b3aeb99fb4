// The drain: takes stored records from the ring in rounds of batches, serializes them
// where they lie (alone, or side by side as the planner says unless it holds records),
// releases their slots, counts their outcomes in submission order, and hands the
// appends to the write side.
// One way: nothing calls back into it. Not part of the public contract; exported only
// because JsonlRecordWriter's template code runs it.
module;

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

export module jsonl.writer:drain;

import :accounts;
import :format;
import :route;
import :record_ring;
import :batch_serializer;
import :side_by_side;
import :write_side;
import :writer_state;

export namespace jsonl::detail {

template <class Record>
class Drain {
 public:
  Drain(std::shared_ptr<WriterState> state, WriteSide& write_side,
        std::shared_ptr<const RecordFormat<Record>> format, std::shared_ptr<const RecordRoute<Record>> route)
      : state_(std::move(state)),
        write_side_(write_side),
        format_(std::move(format)),
        route_(std::move(route)),
        ring_(state_->options.queue_size),
        round_batches_(state_->round_batches()),
        // The texts of a round's batches and as many spare (prepare_buffers): enough
        // that a plain writer with one file never makes another.
        spare_texts_(2 * round_batches_ * chunks_per_batch()) {
    round_.reserve(round_batches_);
  }

  // Any thread, once admitted with `ticket`.
  void push(std::uint64_t ticket, Record&& record) noexcept { ring_.put(ticket, std::move(record)); }

  // The drain thread's body: rounds until the writer stops accepting and every record
  // admitted before is taken, then waits for the write side to finish. Cancelled by
  // close, it abandons what is still queued.
  void run() noexcept {
    try {
      drain_rounds();
    } catch (const DrainCancelled&) {
      abandon_queued();
    }
    state_->admission.finished_all();
  }

  // Counts every record admitted and not yet taken as abandoned, waiting for stores
  // still in progress. Only after admission stopped, and not beside a running drain.
  void abandon_queued() noexcept {
    const std::size_t records = state_->admission.admitted() - next_;
    while (ring_.filled(next_, records) < records) std::this_thread::yield();
    RecordRing<Record>::vacate(ring_.span(next_, records));
    next_ += records;
    state_->admission.release(records);
    state_->accounts.dropped(DropReason::abandoned, records);
    state_->admission.finished_all();
  }

 private:
  void drain_rounds() {
    for (unsigned empty_polls = 0;;) {
      const std::size_t records = take_round();
      if (records == 0) {
        if (!state_->admission.accepting() && state_->admission.depth() == 0) break;
        state_->admission.await_records(empty_polls++);
        continue;
      }
      empty_polls = 0;
      if (hold_for_more(records)) continue;
      write_round_contained(records);
    }
    write_side_.finish();
  }

  // Whether the drain held the `records` it found for more (WriterOptions::hold_for), to
  // take them again: while they are less than its target (a round; at most half the
  // queue), for up to hold_for after it first found them, unless a flush wants them or
  // the writer is closing.
  bool hold_for_more(std::size_t records) {
    if (state_->holds_records() && records < state_->admission.hold_target()) {
      const auto now = std::chrono::steady_clock::now();
      if (!held_since_) held_since_ = now;
      const auto deadline = *held_since_ + state_->hold_for();
      if (now < deadline && state_->admission.hold(deadline)) return true;
    }
    held_since_.reset();
    return false;
  }

  // Takes the records waiting, in batches, up to a round (WriterState::round_batches):
  // one round of serializing for all of them rather than one per batch.
  std::size_t take_round() {
    const std::size_t batch_size = state_->options.batch_size;
    const std::size_t records = ring_.filled(next_, round_batches_ * batch_size);
    round_.clear();
    for (std::size_t taken = 0; taken < records; taken += batch_size) {
      round_.push_back(ring_.span(next_ + taken, std::min(batch_size, records - taken)));
    }
    return records;
  }

  // An unexpected error anywhere in a round's journey to the write side costs the
  // records of that round not yet accounted for, never the drain thread. Cancellation
  // goes through. The round's tickets leave the admission's depth only once released,
  // so that the capacity bounds every record the writer holds, the drain's included.
  // Releasing returns the records released in all, the mark a flush waits for the write
  // side to pass.
  void write_round_contained(std::size_t records) {
    std::optional<std::uint64_t> through;
    const auto release = [&] {
      if (!through) {
        for (const Records& batch : round_) RecordRing<Record>::vacate(batch);
        next_ += records;
        through = state_->admission.release(records);
      }
      return *through;
    };
    std::size_t accounted = 0;
    try {
      write_round(records, accounted, release);
      return;
    } catch (const DrainCancelled&) {
      release();
      throw;
    } catch (...) {
      release();
      if (records > accounted) {
        state_->accounts.unexpected(Accounts::Stage::serializing, records - accounted,
                                    describe_current_exception());
      }
    }
    // Nothing of the round reaches the write side, but flush's mark must pass it in order.
    write_side_.hand_off(WriteJob{{}, *through});
  }

  // Serializes the round's batches, alone or side by side as the planner says, releases
  // the records, counts the batches in submission order, and hands all their appends to
  // the write side in one job. `accounted` ends as the records of the round handed off
  // or dropped. The planner is told how long all of it took, waiting for the write side
  // included: serializing side by side also slows the worker down when the cores are
  // short. A writer that holds records serializes alone: it has traded how soon its
  // lines reach the file for how little of the cores it takes, and oneTBB's threads
  // spend more of the cores than they save of the time.
  template <class Release>
  void write_round(std::size_t records, std::size_t& accounted, const Release& release) {
    const bool side_by_side = !state_->holds_records() && planner_.side_by_side(records);
    const auto began = std::chrono::steady_clock::now();
    prepare_buffers();
    const BatchSerializer<Record> serializer(*format_, route_.get(), side_by_side);
    const auto serialize_batch = [&](std::size_t i) { serializer.run(round_[i], serialized_[i]); };
    if (side_by_side && round_.size() > 1) {
      run_side_by_side(round_.size(), serialize_batch);
    } else {
      for (std::size_t i = 0; i < round_.size(); ++i) serialize_batch(i);
    }
    WriteJob job{std::move(spare_appends_), release()};
    job.appends.clear();
    std::size_t in_appends = 0;
    for (std::size_t i = 0; i < round_.size(); ++i) {
      SerializedBatch& batch = serialized_[i];
      in_appends += batch.count(state_->accounts, accounted);
      for (FileAppend& append : batch.appends) {
        largest_batch_text_ = std::max(largest_batch_text_, std::min(append.content_bytes(), max_text_reserve));
        job.appends.push_back(std::move(append));
      }
    }
    if (state_->options.compression.enabled()) merge_by_file(job.appends);
    // Handed off even when empty: the write side passes flush's mark in order.
    write_side_.hand_off(std::move(job));
    accounted += in_appends;
    planner_.measured(side_by_side, records, std::chrono::steady_clock::now() - began);
    state_->accounts.serialized(records, side_by_side);
  }

  // Compressed, a round's lines for one file go in one append, the piece of the file's
  // frame it adds: a piece of few lines compresses worse than one of many, and the
  // round's batches are only a bound on serializing. Lines of a file from several
  // batches are copied into a text of their own (take_merge_text), so that the texts
  // batches serialize into stay sized to a batch's lines; those are spare again at once.
  void merge_by_file(std::vector<FileAppend>& appends) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < appends.size(); ++i) {
      FileAppend& append = appends[i];
      if (append.records == 0) continue;  // merged into an earlier append of its file
      std::size_t bytes = 0;
      std::size_t parts = 0;
      for (std::size_t j = i; j < appends.size(); ++j) {
        if (appends[j].file != append.file) continue;
        bytes += appends[j].bytes.size();
        ++parts;
      }
      if (parts > 1) {
        std::string text = take_merge_text(bytes);
        for (std::size_t j = i; j < appends.size(); ++j) {
          FileAppend& part = appends[j];
          if (part.file != append.file) continue;
          text += part.bytes;
          if (j != i) append.records += std::exchange(part.records, 0);
          part.bytes.clear();
          spare_texts_.push_back(std::move(part.bytes));
        }
        append.bytes = std::move(text);
      }
      if (kept != i) appends[kept] = std::move(append);
      ++kept;
    }
    appends.erase(appends.begin() + static_cast<std::ptrdiff_t>(kept), appends.end());
  }

  // A text for a file's merged lines: the spare text with the least room that holds
  // `bytes`, else the one with the most, grown to fit them (rounded up to a power of
  // two). Only these texts take a round's size; batches take the spare texts with the
  // least room (prepare_buffers), so that those grown for merges stay for merges.
  std::string take_merge_text(std::size_t bytes) {
    if (spare_texts_.empty()) spare_texts_.emplace_back();
    const auto room = [](const std::string& text) { return text.capacity(); };
    auto chosen = spare_texts_.end();
    for (auto text = spare_texts_.begin(); text != spare_texts_.end(); ++text) {
      if (room(*text) >= bytes && (chosen == spare_texts_.end() || room(*text) < room(*chosen))) chosen = text;
    }
    if (chosen == spare_texts_.end()) chosen = std::ranges::max_element(spare_texts_, {}, room);
    std::string text = std::move(*chosen);
    spare_texts_.erase(chosen);
    if (room(text) < bytes) text.reserve(std::bit_ceil(bytes));
    return text;
  }

  // Readies every batch a round may hold, not only this round's: a batch serialized for
  // the first time, when the load first fills a round, finds its buffers as large as the
  // others'. Each batch gets as many texts as it has ever taken in one run (a text per
  // chunk of each file's group), from those the write side is done with (compressed, the
  // ones with the least room first, as merges take those with the most), so that in
  // steady state nothing is allocated for them. A text may serve as a chunk's one round
  // and as a batch's whole append the next: every text the drain holds is grown at once
  // to fit the longest append a batch made so far (rounded up to a power of two, up to a
  // bound), rather than again and again as its role changes.
  //
  // Bound: beside the texts its batches hold for the next round, the drain keeps at most
  // as many spare, for the round after it while the write side still performs one (and
  // for merges); the rest is freed (compressed, the texts with the least room first). A
  // text is at most max_text_reserve unless one line alone or a merged round is longer,
  // and the write side frees those past its own bound.
  void prepare_buffers() {
    write_side_.reclaim(spare_texts_, spare_appends_);
    spare_appends_.reserve(round_batches_);
    serialized_.resize(round_batches_);
    const std::size_t room = std::bit_ceil(largest_batch_text_);
    if (state_->options.compression.enabled()) {
      std::ranges::sort(spare_texts_, [](const std::string& a, const std::string& b) { return a.capacity() > b.capacity(); });
    }
    std::size_t round_texts = 0;
    for (SerializedBatch& batch : serialized_) {
      const std::size_t wanted = std::max(chunks_per_batch(), batch.texts_wanted);
      round_texts += wanted;
      while (batch.spare_texts.size() < wanted) {
        if (spare_texts_.empty()) spare_texts_.emplace_back();
        batch.spare_texts.push_back(std::move(spare_texts_.back()));
        spare_texts_.pop_back();
      }
      batch.prepare(state_->options.batch_size, room);
    }
    if (spare_texts_.size() > round_texts) spare_texts_.resize(round_texts);
    for (std::string& text : spare_texts_) text.reserve(room);
  }

  std::size_t chunks_per_batch() const noexcept {
    return (state_->options.batch_size + records_per_chunk - 1) / records_per_chunk;
  }

  using Records = typename RecordRing<Record>::Span;

  std::shared_ptr<WriterState> state_;
  WriteSide& write_side_;
  std::shared_ptr<const RecordFormat<Record>> format_;
  std::shared_ptr<const RecordRoute<Record>> route_;
  RecordRing<Record> ring_;
  const std::size_t round_batches_;  // the most batches a round takes
  // The drain thread's alone: the next ticket to take, the round taken, and the buffers
  // reused round after round.
  std::uint64_t next_ = 0;
  std::vector<Records> round_;
  std::vector<SerializedBatch> serialized_;
  std::vector<std::string> spare_texts_;
  std::size_t largest_batch_text_ = 0;  // the longest append a batch made so far, up to the bound
  std::vector<FileAppend> spare_appends_;
  RoundPlanner planner_;
  std::optional<std::chrono::steady_clock::time_point> held_since_;  // records held since
};

}  // namespace jsonl::detail

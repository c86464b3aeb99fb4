// Compressed files, as a decorator of the sink that writes them. A module
// implementation partition: nothing of it is exported.
module;

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <vector>

module jsonl.writer:compressing_sink;

import :options;
import :sink;
import :zstd_frames;

namespace jsonl::detail {

// Each file's appends continue one zstd frame (FrameStream): every append is a piece
// that ends in a flushed block, so that whatever was written decodes, and the frame is
// ended by the append that brings its lines to Compression::frame_bytes. Frames are also
// ended on the write worker's word, by an append of no records and no bytes (frame_end):
// after every commit, for a file rotation left and a frame Compression::frame_age old,
// and at close. So a file is whole frames, but for the one it is writing, whose pieces
// decode as far as they were written.
//
// A piece that did not land whole was cut off again by the file sink (or the file is
// torn: AppendOutcome::torn, and the file takes no more); the stream then holds lines
// the file does not. The frame is ended by hand after the pieces that landed (FrameStream
// ::end_after_landed): those bytes go first in the file's next append, or alone as the
// frame's end the write worker asks for, so that they are always an append's, booked.
class CompressingSink final : public Sink {
 public:
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  // `compression` (enabled) and `inner` must outlive it.
  CompressingSink(const Compression& compression, Sink& inner, Clock clock);

  void append(const FileAppend& append, AppendOutcome& outcome) override;
  bool can_be_made_durable() const noexcept override { return inner_.can_be_made_durable(); }
  void make_durable(std::span<AppendOutcome> outcomes) override { inner_.make_durable(outcomes); }
  void end_commit() noexcept override { inner_.end_commit(); }
  bool writes_files() const noexcept override { return inner_.writes_files(); }

  // The append that ends `file`'s frame, when one is open.
  static FileAppend frame_end(const std::filesystem::path& file) { return FileAppend{.file = file}; }
  // Files whose frames are to be ended now: those rotation left (the writer's own file
  // changed), those begun frame_age or more ago, and with `all` every one open.
  std::vector<std::filesystem::path> frames_to_end(bool all);
  // Forgets the frame of `file`, which retention let go: the file is deleted, and its
  // frame is never ended.
  void let_go(const std::filesystem::path& file);

 private:
  struct Frame {
    std::filesystem::path file;
    FrameStream stream;
    std::chrono::system_clock::time_point began{};
    bool open = false;    // a piece of it landed, and its end did not
    std::string ending;   // the end of the file's last frame, still to be written
    FileAppend piece;     // what is handed on, its buffer kept (its `file`: as routed)
    bool idle() const noexcept { return !open && ending.empty(); }
  };
  // The frame of `file` (as the outcome names it), appended to as `routed` names it.
  Frame& frame_for(const std::filesystem::path& file, const std::filesystem::path& routed);
  // A piece of `frame` did not land (`outcome`, or nothing written when zstd failed).
  void recover(Frame& frame, const AppendOutcome& outcome);

  const Compression& compression_;
  Sink& inner_;
  const Clock clock_;
  std::vector<Frame> frames_;  // frames open, and streams kept for the next ones
  std::filesystem::path own_file_;  // the last file the writer's own appends went to
  std::vector<std::filesystem::path> left_;
};

}  // namespace jsonl::detail

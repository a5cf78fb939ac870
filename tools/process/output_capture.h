// Bounded, UTF-8-clean capture of a command's output.
//
// A command's bytes become valid UTF-8 through Utf8StreamSanitizer
// (tools/runtime/utf8.h) before they reach HeadTail. HeadTail keeps the first `limit` and the last
// `limit` bytes of what it is given, whatever the total, and renders them with a marker saying how
// many bytes were dropped in between. BackgroundLog keeps the chunks of a background command that
// nobody has read yet, bounded too.
//
// Thread safety: none; each object belongs to one CommandRun (BackgroundLog
// is guarded by its owner's mutex).
#ifndef TOOLEXEC_TOOLS_PROCESS_OUTPUT_CAPTURE_H_
#define TOOLEXEC_TOOLS_PROCESS_OUTPUT_CAPTURE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>

#include "absl/strings/string_view.h"
#include "tools/runtime/model_content.h"

namespace toolexec::command {

// The marker put where command output was dropped: "[... 1,157,849 bytes
// omitted; <how to see them> ...]" on a line of its own.
std::string OmittedMarker(uint64_t bytes);

class HeadTail final {
 public:
  // Keeps up to `limit` bytes of head and `limit` bytes of tail.
  explicit HeadTail(size_t limit);

  // `text` must be valid UTF-8 (the head is filled by whole characters; the
  // tail's first partial character is dropped when rendering).
  void Append(absl::string_view text);

  // Head, then OmittedMarker(n) if n > 0 bytes were dropped, then tail; with
  // `max_chars`, at most that many characters (code points) in all, marker
  // included, keeping about as much of the head as of the tail.
  // `*cut` (optional) says whether anything is left out; `marker` replaces
  // OmittedMarker for a tool that reads files by other means.
  std::string Render(size_t max_chars = SIZE_MAX, bool* cut = nullptr,
                     OmittedMarkerFn marker = OmittedMarker) const;
  uint64_t total_bytes() const { return total_; }
  // Whether the capture dropped bytes (a Render(max_chars) may drop more).
  bool truncated() const;

 private:
  std::string TailText() const;

  const size_t limit_;
  std::string head_;
  bool head_closed_ = false;
  // A ring of the last `limit_` bytes appended after the head closed.
  std::string ring_;
  size_t ring_start_ = 0;
  size_t ring_size_ = 0;
  uint64_t after_head_ = 0;  // bytes appended after the head closed
  uint64_t total_ = 0;
};

// The unread output of a background command: chunks in arrival order, each
// with a sequence number, at most `limit` bytes; past it the oldest chunks are
// dropped and counted.
class BackgroundLog final {
 public:
  struct Chunk {
    uint64_t seq;
    bool is_stderr;
    std::string text;
  };
  struct Read {
    std::string stdout_text;
    std::string stderr_text;
    std::string combined;
    uint64_t first_seq = 0;      // 0 when nothing new
    uint64_t last_seq = 0;       // the newest seq handed out so far (also when nothing new)
    uint64_t omitted_bytes = 0;  // dropped before anyone read them
  };

  explicit BackgroundLog(size_t limit) : limit_(limit) {}
  void Append(bool is_stderr, absl::string_view text);
  // Everything not yet read, and marks it read.
  Read TakeUnread();
  uint64_t last_seq() const { return next_seq_ - 1; }

 private:
  const size_t limit_;
  std::deque<Chunk> chunks_;
  size_t bytes_ = 0;
  uint64_t next_seq_ = 1;
  uint64_t dropped_bytes_ = 0;
};

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_PROCESS_OUTPUT_CAPTURE_H_

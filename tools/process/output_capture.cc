#include "tools/process/output_capture.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/utf8.h"

namespace toolexec::command {

std::string OmittedMarker(uint64_t bytes) {
  return OmittedBytesMarker(bytes,
                            "rerun piped through | tail, | head or | grep, or redirect the output "
                            "to a file and read it with view_file");
}

HeadTail::HeadTail(size_t limit) : limit_(limit) {}

void HeadTail::Append(absl::string_view text) {
  total_ += text.size();
  if (!head_closed_) {
    size_t room = limit_ - head_.size();
    if (text.size() <= room) {
      head_.append(text.data(), text.size());
      return;
    }
    // Fill the head with whole characters only, then close it for good (a
    // later, shorter character must not jump ahead of earlier bytes).
    size_t cut = Utf8SafePrefix(text, room);
    head_.append(text.data(), cut);
    head_closed_ = true;
    text.remove_prefix(cut);
    ring_.resize(limit_);
  }
  after_head_ += text.size();
  if (limit_ == 0) return;
  if (text.size() >= limit_) {
    std::memcpy(ring_.data(), text.data() + text.size() - limit_, limit_);
    ring_start_ = 0;
    ring_size_ = limit_;
    return;
  }
  // Write at the end of the ring, wrapping; overwrite the oldest bytes.
  size_t end = (ring_start_ + ring_size_) % limit_;
  size_t first = std::min(text.size(), limit_ - end);
  std::memcpy(ring_.data() + end, text.data(), first);
  std::memcpy(ring_.data(), text.data() + first, text.size() - first);
  size_t new_size = ring_size_ + text.size();
  if (new_size > limit_) {
    ring_start_ = (ring_start_ + new_size - limit_) % limit_;
    new_size = limit_;
  }
  ring_size_ = new_size;
}

std::string HeadTail::TailText() const {
  std::string tail;
  tail.reserve(ring_size_);
  size_t first = std::min(ring_size_, limit_ - ring_start_);
  tail.append(ring_.data() + ring_start_, first);
  tail.append(ring_.data(), ring_size_ - first);
  if (after_head_ > ring_size_) {
    // The ring starts inside a character only when bytes before it were dropped.
    size_t skip = 0;
    while (skip < tail.size() && skip < 3 &&
           (static_cast<unsigned char>(tail[skip]) & 0xC0) == 0x80) {
      ++skip;
    }
    tail.erase(0, skip);
  }
  return tail;
}

bool HeadTail::truncated() const { return after_head_ > ring_size_; }

std::string HeadTail::Render(size_t max_chars, bool* cut, OmittedMarkerFn marker) const {
  if (!head_closed_) return CutMiddle(head_, max_chars, marker, cut);
  std::string tail = TailText();
  return JoinHeadTail(head_, tail, total_ - head_.size() - tail.size(), max_chars, marker, cut);
}

void BackgroundLog::Append(bool is_stderr, absl::string_view text) {
  if (text.empty()) return;
  chunks_.push_back(Chunk{next_seq_++, is_stderr, std::string(text)});
  bytes_ += text.size();
  while (bytes_ > limit_ && !chunks_.empty()) {
    bytes_ -= chunks_.front().text.size();
    dropped_bytes_ += chunks_.front().text.size();
    chunks_.pop_front();
  }
}

BackgroundLog::Read BackgroundLog::TakeUnread() {
  Read r;
  r.omitted_bytes = dropped_bytes_;
  if (dropped_bytes_ > 0) r.combined = OmittedMarker(dropped_bytes_);
  dropped_bytes_ = 0;
  for (Chunk& c : chunks_) {
    if (r.first_seq == 0) r.first_seq = c.seq;
    (c.is_stderr ? r.stderr_text : r.stdout_text) += c.text;
    r.combined += c.text;
  }
  chunks_.clear();
  bytes_ = 0;
  r.last_seq = next_seq_ - 1;
  return r;
}

}  // namespace toolexec::command

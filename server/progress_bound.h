// The bound on a call's progress that its client has not read yet: past
// kMaxEvents queued events, or kMaxBytes of their text, more progress is
// dropped (and counted, for the log) instead of queued, so a client that
// reads slowly cannot grow the daemon's memory. Results are never dropped.
// The one bound of every transport that queues progress for its client: the
// ExecuteBatch stream (server/execute_batch_reactor.h, which `toolexec mcp`'s
// calls go through too) and the MCP HTTP endpoint's calls
// (server/mcp_http.h).
//
// Thread safety: none; its owner's lock guards it.
#ifndef TOOLEXEC_SERVER_PROGRESS_BOUND_H_
#define TOOLEXEC_SERVER_PROGRESS_BOUND_H_

#include <cstddef>
#include <cstdint>

namespace toolexec {

class ProgressBound final {
 public:
  static constexpr size_t kMaxEvents = 4096;
  static constexpr size_t kMaxBytes = 8 << 20;

  // Whether an event with `bytes` of text may be queued: then it counts until
  // Release; else it counts as dropped.
  bool Admit(size_t bytes) {
    if (events_ >= kMaxEvents || bytes_ + bytes > kMaxBytes) {
      ++dropped_;
      return false;
    }
    ++events_;
    bytes_ += bytes;
    return true;
  }
  // An admitted event of `bytes` left the queue (written, or handed out).
  void Release(size_t bytes) {
    --events_;
    bytes_ -= bytes;
  }
  // Every admitted event left the queue.
  void Clear() {
    events_ = 0;
    bytes_ = 0;
  }
  // Events dropped so far.
  uint64_t dropped() const { return dropped_; }

 private:
  size_t events_ = 0;
  size_t bytes_ = 0;
  uint64_t dropped_ = 0;
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_PROGRESS_BOUND_H_

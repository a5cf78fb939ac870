// Cancellation that reaches a running tool: the runner cancels a call (client
// cancel, timeout, shutdown) and the tool either polls cancelled(), sleeps in
// WaitFor(), or registers a callback (e.g. to kill a process group).
#ifndef TOOLEXEC_TOOLS_RUNTIME_CANCELLATION_H_
#define TOOLEXEC_TOOLS_RUNTIME_CANCELLATION_H_

#include <atomic>
#include <functional>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace toolexec {

enum class CancelReason { kNone, kCancelled, kTimeout, kShutdown };

// Thread-safe. Cancel() is idempotent: the first reason wins.
class CancellationToken final {
 public:
  CancellationToken() = default;
  CancellationToken(const CancellationToken&) = delete;
  CancellationToken& operator=(const CancellationToken&) = delete;

  // Returns true if this call cancelled the token (it was not cancelled before).
  bool Cancel(CancelReason reason);

  bool cancelled() const { return reason_.load(std::memory_order_acquire) != CancelReason::kNone; }
  CancelReason reason() const { return reason_.load(std::memory_order_acquire); }

  // Sleeps up to `timeout` or until cancelled. Returns true if cancelled.
  bool WaitFor(absl::Duration timeout) const;

  // Runs `fn` once on cancellation (at once, on this thread, if already
  // cancelled). Callbacks run on the cancelling thread and must not block.
  // Returns an id for RemoveCallback; 0 if `fn` already ran.
  int AddCallback(std::function<void()> fn) const;
  // After it returns, the callback is not running and will not run.
  void RemoveCallback(int id) const;

 private:
  std::atomic<CancelReason> reason_{CancelReason::kNone};
  mutable absl::Mutex mu_;
  // Callbacks are registered through a const token (ToolContext hands tools a
  // const reference): registering does not change the token's state.
  mutable int next_id_ ABSL_GUARDED_BY(mu_) = 1;
  mutable std::map<int, std::function<void()>> callbacks_ ABSL_GUARDED_BY(mu_);
  // Serializes callback execution with RemoveCallback.
  mutable absl::Mutex callback_run_mu_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_CANCELLATION_H_

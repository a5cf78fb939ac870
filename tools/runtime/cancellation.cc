#include "tools/runtime/cancellation.h"

#include <utility>
#include <vector>

namespace toolexec {

bool CancellationToken::Cancel(CancelReason reason) {
  std::map<int, std::function<void()>> to_run;
  mu_.Lock();
  CancelReason expected = CancelReason::kNone;
  if (!reason_.compare_exchange_strong(expected, reason, std::memory_order_acq_rel)) {
    mu_.Unlock();
    return false;
  }
  to_run.swap(callbacks_);
  // Take callback_run_mu_ before releasing mu_: a RemoveCallback that misses
  // its callback in callbacks_ then waits until the callbacks have run.
  callback_run_mu_.Lock();
  mu_.Unlock();  // wakes every WaitFor sleeper (they await reason_ under mu_)
  for (auto& [id, fn] : to_run) fn();
  callback_run_mu_.Unlock();
  return true;
}

bool CancellationToken::WaitFor(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  auto is_cancelled = [this]() { return cancelled(); };
  mu_.AwaitWithTimeout(absl::Condition(&is_cancelled), timeout);
  return cancelled();
}

int CancellationToken::AddCallback(std::function<void()> fn) const {
  {
    absl::MutexLock lock(&mu_);
    if (!cancelled()) {
      int id = next_id_++;
      callbacks_.emplace(id, std::move(fn));
      return id;
    }
  }
  fn();
  return 0;
}

void CancellationToken::RemoveCallback(int id) const {
  {
    absl::MutexLock lock(&mu_);
    if (callbacks_.erase(id) > 0) return;
  }
  // Either never registered or taken by Cancel(): wait until Cancel() has
  // finished running callbacks so the caller may free what the callback uses.
  absl::MutexLock run(&callback_run_mu_);
}

}  // namespace toolexec

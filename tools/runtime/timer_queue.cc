#include "tools/runtime/timer_queue.h"

namespace toolexec {

TimerQueue::TimerQueue() : thread_([this] { Loop(); }) {}

TimerQueue::~TimerQueue() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    cv_.Signal();
  }
  thread_.join();
}

TimerQueue::TimerId TimerQueue::Schedule(absl::Time deadline, std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  TimerId id = next_id_++;
  auto it = timers_.emplace(deadline, std::make_pair(id, std::move(fn)));
  by_id_.emplace(id, it);
  if (deadline < wake_at_) cv_.Signal();
  return id;
}

bool TimerQueue::Cancel(TimerId id) {
  absl::MutexLock lock(&mu_);
  auto found = by_id_.find(id);
  if (found == by_id_.end()) return false;
  timers_.erase(found->second);
  by_id_.erase(found);
  return true;
}

void TimerQueue::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stop_) {
    auto first = timers_.begin();
    absl::Time now = absl::Now();
    if (timers_.empty() || first->first > now) {
      // Cancelled timers stay "due" in wake_at_ until we wake; that only costs
      // one spurious wake-up, never a missed one.
      wake_at_ = timers_.empty() ? absl::InfiniteFuture() : first->first;
      cv_.WaitWithDeadline(&mu_, wake_at_);
      wake_at_ = absl::InfinitePast();  // awake: Schedule need not signal
      continue;
    }
    std::function<void()> fn = std::move(first->second.second);
    by_id_.erase(first->second.first);
    timers_.erase(first);
    mu_.Unlock();
    fn();
    fn = nullptr;
    mu_.Lock();
  }
}

}  // namespace toolexec

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
  if (it == timers_.begin()) cv_.Signal();
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
    if (timers_.empty()) {
      cv_.Wait(&mu_);
      continue;
    }
    auto first = timers_.begin();
    absl::Time now = absl::Now();
    if (first->first > now) {
      cv_.WaitWithDeadline(&mu_, first->first);
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

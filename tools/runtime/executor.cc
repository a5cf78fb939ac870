#include "tools/runtime/executor.h"

#include <algorithm>
#include <utility>

namespace toolexec {

Executor::Executor(Options options) : options_(options) {
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < options_.min_threads; ++i) {
    ++threads_;
    workers_.emplace_back([this] { WorkerLoop(/*permanent=*/true); });
  }
}

Executor::~Executor() { Shutdown(); }

bool Executor::Submit(std::function<void()> task) {
  std::vector<std::thread> to_join;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return false;
    queue_.push_back(std::move(task));
    if (idle_ >= queue_.size()) {
      work_cv_.Signal();
    } else if (threads_ < options_.max_threads) {
      ++threads_;
      workers_.emplace_back([this] { WorkerLoop(/*permanent=*/false); });
    }
    to_join.swap(exited_);
  }
  for (auto& t : to_join) t.join();
  return true;
}

void Executor::WorkerLoop(bool permanent) {
  absl::MutexLock lock(&mu_);
  while (true) {
    while (queue_.empty() && !shutting_down_) {
      ++idle_;
      bool timed_out = work_cv_.WaitWithTimeout(&mu_, options_.idle_timeout);
      --idle_;
      if (timed_out && queue_.empty() && !permanent && !shutting_down_) {
        // Retire: move our own handle to exited_ so someone joins it.
        --threads_;
        auto self = std::find_if(workers_.begin(), workers_.end(), [](const std::thread& t) {
          return t.get_id() == std::this_thread::get_id();
        });
        if (self != workers_.end()) {
          exited_.push_back(std::move(*self));
          workers_.erase(self);
        }
        return;
      }
    }
    if (queue_.empty()) return;  // shutting down and drained
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    mu_.Unlock();
    task();
    task = nullptr;  // destroy captures outside the lock
    mu_.Lock();
  }
}

void Executor::Shutdown() {
  std::vector<std::thread> to_join;
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    work_cv_.SignalAll();
  }
  // Workers drain the queue, then exit; new ones are not started.
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      to_join.swap(workers_);
      for (auto& t : exited_) to_join.push_back(std::move(t));
      exited_.clear();
    }
    if (to_join.empty()) break;
    for (auto& t : to_join) {
      if (t.joinable()) t.join();
    }
    to_join.clear();
  }
}

size_t Executor::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

size_t Executor::threads() const {
  absl::MutexLock lock(&mu_);
  return threads_;
}

}  // namespace toolexec

#include "tools/runtime/executor.h"

#include <algorithm>
#include <iterator>
#include <new>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"

namespace toolexec {

absl::StatusOr<std::thread> StartThread(std::function<void()> body) {
  try {
    std::thread thread(std::move(body));
    return absl::StatusOr<std::thread>(std::move(thread));
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot start a thread: ", e.what(),
                     " (the daemon's user is at its process limit, RLIMIT_NPROC, or the daemon "
                     "at its address-space or memory limit)"));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("cannot start a thread: out of memory");
  }
}

Executor::Executor(Options options) : options_(options) {
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < options_.min_threads; ++i) {
    if (!StartWorkerLocked().ok()) break;  // Submit starts them on demand
  }
}

Executor::~Executor() { Shutdown(); }

absl::Status Executor::StartWorkerLocked() {
  Worker* w = nullptr;
  try {
    w = &workers_.emplace_back();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("cannot start a thread: out of memory");
  }
  w->self = std::prev(workers_.end());
  // The new thread waits for mu_, held here, before it touches its node.
  absl::StatusOr<std::thread> thread = StartThread([this, w] { WorkerLoop(w); });
  if (!thread.ok()) {
    workers_.erase(w->self);
    return thread.status();
  }
  w->thread = *std::move(thread);
  ++starting_;
  return absl::OkStatus();
}

absl::Status Executor::Submit(std::function<void()> task) {
  std::list<Worker> to_join;
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return absl::UnavailableError("the executor is shutting down");
    queue_.push_back(std::move(task));
    if (!idle_.empty()) {
      // The most recently idled worker: the longer idle ones can retire.
      Worker* w = idle_.back();
      idle_.pop_back();
      w->woken = true;
      w->wake.Signal();
    } else if (queue_.size() <= starting_) {
      // A worker that has just started takes it when it first looks.
    } else if (workers_.size() < options_.max_threads) {
      status = StartWorkerLocked();
      // Nothing free would run it soon: refuse it rather than let it wait
      // behind calls that may run for minutes.
      if (!status.ok()) queue_.pop_back();
    }
    to_join.splice(to_join.end(), exited_);
  }
  for (Worker& w : to_join) w.thread.join();
  return status;
}

bool Executor::WaitIdleLocked(Worker* w) {
  w->woken = false;
  idle_.push_back(w);
  absl::Time deadline = absl::Now() + options_.idle_timeout;
  while (!w->woken) {
    if (!w->wake.WaitWithDeadline(&mu_, deadline) || w->woken) continue;
    if (workers_.size() > options_.min_threads) {
      // Retire: someone else joins this thread (see exited_).
      idle_.erase(std::find(idle_.begin(), idle_.end(), w));
      exited_.splice(exited_.end(), workers_, w->self);
      return false;
    }
    deadline = absl::Now() + options_.idle_timeout;
  }
  return true;
}

void Executor::WorkerLoop(Worker* w) {
  absl::MutexLock lock(&mu_);
  --starting_;
  while (true) {
    if (!queue_.empty()) {
      std::function<void()> task = std::move(queue_.front());
      queue_.pop_front();
      mu_.Unlock();
      task();
      task = nullptr;  // destroy captures outside the lock
      mu_.Lock();
      continue;
    }
    if (shutting_down_) return;  // drained
    if (!WaitIdleLocked(w)) return;
  }
}

void Executor::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    for (Worker* w : idle_) {
      w->woken = true;
      w->wake.Signal();
    }
    idle_.clear();
  }
  // Workers drain the queue, then exit; none retires or starts from now on,
  // so a node moved here is only touched by its own thread, under mu_.
  while (true) {
    std::list<Worker> to_join;
    {
      absl::MutexLock lock(&mu_);
      to_join.splice(to_join.end(), workers_);
      to_join.splice(to_join.end(), exited_);
    }
    if (to_join.empty()) break;
    for (Worker& w : to_join) {
      if (w.thread.joinable()) w.thread.join();
    }
  }
}

size_t Executor::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

size_t Executor::threads() const {
  absl::MutexLock lock(&mu_);
  return workers_.size();
}

}  // namespace toolexec

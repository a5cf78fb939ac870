// The runtime's own executor: a thread pool that grows on demand up to
// `max_threads` and shrinks back to `min_threads` when idle. Tool calls block
// (sleep, read files, wait on processes), so each running call holds a thread;
// the cap bounds how many run at once and the rest wait in FIFO order.
#ifndef TOOLEXEC_TOOLS_RUNTIME_EXECUTOR_H_
#define TOOLEXEC_TOOLS_RUNTIME_EXECUTOR_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace toolexec {

class Executor final {
 public:
  struct Options {
    size_t min_threads = 2;
    size_t max_threads = 256;
    absl::Duration idle_timeout = absl::Seconds(30);
  };

  explicit Executor(Options options);
  // Runs every task already submitted, then joins all threads.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task`. Thread-safe. Tasks must not throw (the runner catches).
  // Returns false (and drops the task) once Shutdown() has begun.
  bool Submit(std::function<void()> task);

  // Stops accepting tasks, runs those queued, joins the threads. Idempotent.
  void Shutdown();

  size_t queued() const;
  size_t threads() const;

 private:
  void WorkerLoop(bool permanent);

  const Options options_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  size_t threads_ ABSL_GUARDED_BY(mu_) = 0;
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  // Threads that exited on idle timeout, joined lazily (by Submit/Shutdown).
  std::vector<std::thread> exited_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_ ABSL_GUARDED_BY(mu_);
  absl::CondVar work_cv_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_EXECUTOR_H_

// The runtime's own executor: a thread pool that grows on demand up to
// `max_threads` and shrinks back to `min_threads` when idle. Tool calls block
// (sleep, read files, wait on processes), so each running call holds a thread;
// the cap bounds how many run at once and the rest wait in FIFO order.
//
// Threads and ownership: every worker is a Worker node in `workers_` (a list,
// so a node never moves), owned by the executor; the worker's thread only
// touches its node under `mu_`. A worker with nothing to run pushes itself on
// the idle stack and waits on its own condition variable. Submit wakes the
// most recently idled worker (LIFO), so under light traffic the same few
// threads do the work and the others stay idle long enough to retire: a
// worker idle for `idle_timeout` exits while more than `min_threads` remain,
// moving its node to `exited_`, which Submit and Shutdown join outside the
// lock. Shutdown wakes every idle worker; workers drain the queue and exit.
//
// Thread creation can fail (the user's task limit, RLIMIT_NPROC; the address
// space limit; memory). Every thread the runtime starts goes through
// StartThread, which turns that into a status: a task with no thread to run it
// is refused, and the process stays up.
#ifndef TOOLEXEC_TOOLS_RUNTIME_EXECUTOR_H_
#define TOOLEXEC_TOOLS_RUNTIME_EXECUTOR_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace toolexec {

// Starts a thread running `body`, or ResourceExhausted saying why the system
// refused it. Never throws. (std::thread's constructor throws on failure, and
// an element it leaves half-built inside a container can terminate the
// process when the container destroys it: construct threads only here.)
absl::StatusOr<std::thread> StartThread(std::function<void()> body);

class Executor final {
 public:
  struct Options {
    size_t min_threads = 2;
    size_t max_threads = 256;
    absl::Duration idle_timeout = absl::Seconds(30);
  };

  // Starts `min_threads` workers; those the system refuses are started on
  // demand later.
  explicit Executor(Options options);
  // Runs every task already submitted, then joins all threads.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues `task`. Thread-safe. Tasks must not throw (the runner catches).
  // Unavailable once Shutdown() has begun; ResourceExhausted when no worker
  // is free and no new thread can be started. Either way the task is dropped.
  absl::Status Submit(std::function<void()> task);

  // Stops accepting tasks, runs those queued, joins the threads. Idempotent.
  void Shutdown();

  size_t queued() const;
  size_t threads() const;

 private:
  struct Worker {
    std::thread thread;
    absl::CondVar wake;
    bool woken = false;  // popped off the idle stack by Submit or Shutdown
    std::list<Worker>::iterator self;
  };

  absl::Status StartWorkerLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLoop(Worker* w);
  // Waits on the idle stack; false if `w` retired (its node is in exited_).
  bool WaitIdleLocked(Worker* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  // Started workers that have not looked at the queue yet.
  size_t starting_ ABSL_GUARDED_BY(mu_) = 0;
  std::list<Worker> workers_ ABSL_GUARDED_BY(mu_);
  // Idle workers, most recently idled last; each is woken at most once.
  std::vector<Worker*> idle_ ABSL_GUARDED_BY(mu_);
  // Workers that retired, joined lazily (by Submit and Shutdown).
  std::list<Worker> exited_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_EXECUTOR_H_

// One thread that runs callbacks at deadlines: per-call timeouts, session TTLs.
// Callbacks run on the timer thread and must be short and non-blocking.
#ifndef TOOLEXEC_TOOLS_RUNTIME_TIMER_QUEUE_H_
#define TOOLEXEC_TOOLS_RUNTIME_TIMER_QUEUE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace toolexec {

class TimerQueue final {
 public:
  using TimerId = uint64_t;

  TimerQueue();
  // Drops pending timers without running them and joins the thread.
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Runs `fn` at `deadline` (at once if past). Thread-safe.
  TimerId Schedule(absl::Time deadline, std::function<void()> fn);
  // Returns true if the timer was pending and will now never run. A timer
  // whose callback is running or ran returns false. Never blocks on a callback.
  bool Cancel(TimerId id);

 private:
  void Loop();

  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  TimerId next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::multimap<absl::Time, std::pair<TimerId, std::function<void()>>> timers_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<TimerId, decltype(timers_)::iterator> by_id_ ABSL_GUARDED_BY(mu_);
  // When the loop will next wake by itself; Schedule signals only for an
  // earlier deadline, so a far-off timer costs no thread wake-up.
  absl::Time wake_at_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  absl::CondVar cv_;
  std::thread thread_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TIMER_QUEUE_H_

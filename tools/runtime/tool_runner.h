// Runs tool calls [Batches] [Failures are results] [Arguments] [Context] [Display]:
// schedules the calls of each batch (batch.h holds what a batch is made of
// and what it reports) and delivers their results in call order.
//
// Concurrency design
// ------------------
// Owners: the ToolRunner owns the Executor (the threads tool code runs on), a
// one-thread delivery executor (results that timers complete), and the
// TimerQueue (per-call deadlines). Each started batch is a Batch object held
// by shared_ptr: by the caller's handle, by every queued or running call task,
// by every pending timer and delivery task, so it lives until the last of them
// lets go. The runner keeps weak references (to cancel running batches, and
// to wake batches waiting for room for results).
//
// One call's life: Start(), on the caller's thread, finds each call's tool,
// parses its arguments and asks the tool which resources the call acts on
// (Tool::resources). A call is submitted as one task on the executor once it
// is admitted (backpressure, below) and no earlier call of its batch still
// holds one of its resources. The task runs the call's pipeline
// (call_pipeline.h): the session's rules, the arguments coerced and
// validated, the context checked, the hooks asked, Tool::Call.
//
// Quick calls: a call whose tool is quick (ToolSpec::quick), or that fails
// before reaching its tool (unknown tool, refused by the policy, run
// elsewhere, unreadable arguments), runs on the thread that makes it ready
// instead of as a task: the gRPC thread that started the batch or whose write
// completed, or the worker that ended the call before it. Handing a call that
// takes microseconds to another thread costs more than the call. At most
// kMaxQuickCallsHere run per dispatch, so one thread never runs a long batch
// alone; the rest are tasks. Neither the timer thread, nor a thread freeing
// room for other batches' results (RoomFreed), nor one inside the batch's own
// delivery (an observer releasing results as it is handed them) runs calls.
// A batch whose interceptor may block (hooks other than the audit log, see
// CallInterceptor::MayRunOnAnyThread) runs every call as a task, since hooks
// never run on a gRPC thread.
//
// Resource order: per batch, each resource key has a queue of the calls that
// name it, in call order; the head holds the resource. A call is submitted
// when it heads all its queues; it releases them when its task returns (not
// when its result is decided: a timed-out tool that ignores cancellation keeps
// its resource until it returns, so two calls never overlap on one resource)
// or, for a call completed before it was submitted, at that completion. The
// release hands the resource to the next call in the queue; whichever thread
// releases submits the calls this makes ready. A cancelled batch submits
// nothing more. Calls with no shared key run concurrently.
//
// Completion: three things race to *complete* a call: the task returning, its
// timer firing (TIMEOUT) and Batch::Cancel() (CANCELLED, from a client cancel
// or shutdown). A per-call flag, flipped under the batch's observer mutex,
// lets exactly one win; the losers' results are dropped. A timeout or cancel
// also trips the call's CancellationToken, which is how it reaches the tool
// (WaitFor wakes, callbacks kill processes). So a batch always finishes by its
// deadline even if a tool ignores cancellation; that tool's thread stays busy
// until it returns, and the cap on threads bounds the harm.
//
// Ordered delivery: completed results go into a reorder buffer keyed by call
// index. Whichever thread completes a call becomes the deliverer if none is
// active, and hands the observer every result of the completed prefix, in call
// order, outside the lock; the last result goes through OnLastResult(), which
// ends the batch (an empty batch ends with OnBatchDone()). Results are
// therefore serialized and in order. The timer thread never delivers: when a
// timeout makes it the deliverer, it hands delivery to the delivery thread
// (which is not shared with tools, so it is free even when every executor
// thread is stuck in a tool). Progress for a call is delivered only while that
// call is not complete, under the same mutex that completion takes, so a
// call's progress always precedes its result. Once that final call has begun
// the runner never touches the observer again (the observer may even be
// destroyed during it, e.g. by gRPC's OnDone).
//
// Backpressure: a result counts (about its size in memory) from completion
// until it is released: when OnResult returns, or, for an observer that
// HoldsResults() (a stream queueing results for its client), when the
// observer calls BatchHandle::ResultsReleased. Calls are admitted in call
// order while the batch and all batches are under their caps (Options); a
// release or completion admits more, on the releasing thread (for a stream,
// the gRPC thread whose write completed). A batch refused for the total cap
// registers with the runner, which wakes it (RoomFreed) when a release brings
// the total under the cap. When a batch that held a lot is destroyed, the
// runner gives the freed heap back to the system (malloc_trim); so does a
// runner that has been idle for a second after calls ended.
//
// Threads a call can cause, all bounded: one executor thread per running call
// (Options::executor.max_threads, the daemon's --max_concurrent_calls; idle
// ones retire after idle_timeout, most recently used first); search walk
// helpers (a process-wide budget, workspace/walker.h); one output pump per
// background command (at most command::kMaxRunningBackground). Shared: the
// timer thread, the delivery thread (retires when idle).
//
// Cancellation and shutdown: Cancel() and CancelRunning() complete every
// unfinished call at once (running ones get their token tripped; waiting and
// unadmitted ones are ended without running). Shutdown() cancels, refuses new
// batches, and joins the executor and the delivery thread. WaitIdle waits on
// a condition that the last ending call signals.
//
// Measurement: the winning completion of each call reports it to
// Options::metrics (on the completing thread, no lock held but the sink's
// own atomics); running_calls() counts tool code running. A call's thread
// carries the batch's traceparent on its log lines (ScopedTraceLog) while
// the tool runs.
//
// Lock order: Batch::mu_ / Batch::observer_mu_ may be held while calling into
// the TimerQueue, CancellationToken and the runner's room_mu_ / idle_mu_,
// never the other way round; the executor and other batches are called with
// no Batch lock held; the observer is called with no Batch lock held except
// observer_mu_ (shared) for progress.
#ifndef TOOLEXEC_TOOLS_RUNTIME_TOOL_RUNNER_H_
#define TOOLEXEC_TOOLS_RUNTIME_TOOL_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/runtime/batch.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/json.h"
#include "tools/runtime/metrics.h"
#include "tools/runtime/session.h"
#include "tools/runtime/timer_queue.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

class Batch;

class ToolRunner final {
 public:
  // Quick calls one dispatch runs on its own thread (see "Quick calls").
  static constexpr size_t kMaxQuickCallsHere = 64;

  struct Options {
    Executor::Options executor;
    absl::Duration default_timeout = absl::Minutes(10);
    absl::Duration max_timeout = absl::Hours(1);
    // Calls running or queued across all batches, with those of batches that
    // hold room before they start (Reserve); a batch that would pass it is
    // refused with ResourceExhausted.
    size_t max_pending_calls = 16384;
    // Backpressure: while the results of a batch that are complete but not
    // yet released (see BatchObserver::HoldsResults) take more than
    // max_held_result_bytes_per_batch, or those of all batches more than
    // max_held_result_bytes, the batch starts no further call; it resumes as
    // results are released. A batch also keeps no more calls in flight than
    // the executor has threads, nor more than its room under the cap at its
    // average result size so far (before its first result, 1/64 of the cap
    // each). Calls in flight finish, so the cap may be passed by what they
    // return. A batch holding nothing with no call in flight may always start
    // its next call, so a client that reads is never stalled for good by
    // clients that do not.
    size_t max_held_result_bytes_per_batch = size_t{64} << 20;
    size_t max_held_result_bytes = size_t{256} << 20;
    // Where paths resolve for calls without a session (or whose session has
    // no workspace): the daemon's workspace, opened once. Null: none.
    std::shared_ptr<const fs::ConfinedRoot> default_workspace;
    // Given to every call's context (may be null).
    ArtifactStore* artifacts = nullptr;
    // model_content budget (characters) of a call whose batch asks for none,
    // and the most a batch may ask for.
    size_t model_content_default_chars = kDefaultModelContentChars;
    size_t model_content_max_chars = kDefaultModelContentMaxChars;
    // Told of every completed call (may be null); must outlive the runner.
    MetricsSink* metrics = nullptr;
  };

  // `registry` (the tools of batches that bring no snapshot) must outlive the
  // runner.
  ToolRunner(const ToolRegistry* registry, Options options);
  // Shutdown(), then joins.
  ~ToolRunner();
  ToolRunner(const ToolRunner&) = delete;
  ToolRunner& operator=(const ToolRunner&) = delete;

  // Starts `request`; events go to `observer`, which must stay valid until its
  // OnBatchDone() has returned. An empty batch calls OnBatchDone() at once.
  // Fails (without calling the observer) with ResourceExhausted when over
  // max_pending_calls, Unavailable after Shutdown().
  absl::StatusOr<std::shared_ptr<BatchHandle>> Start(BatchRequest request,
                                                     BatchObserver* observer);

  // Room for a batch's calls under max_pending_calls, taken before the batch
  // starts, so that a batch that waits first (for a permission answer)
  // counts toward the limit meanwhile and is not refused for it once it may
  // run. Start(request, observer, room) hands it to the batch; destroyed
  // unused, it gives the room back. Must not outlive the runner.
  class Room final {
   public:
    Room() = default;
    Room(Room&& other) noexcept { *this = std::move(other); }
    Room& operator=(Room&& other) noexcept;
    ~Room() { Release(); }
    size_t calls() const { return calls_; }

   private:
    friend class ToolRunner;
    Room(ToolRunner* runner, size_t calls) : runner_(runner), calls_(calls) {}
    void Release();
    ToolRunner* runner_ = nullptr;
    size_t calls_ = 0;
  };
  // ResourceExhausted (as Start) when `calls` more would pass
  // max_pending_calls.
  absl::StatusOr<Room> Reserve(size_t calls);
  // Start, in room this runner reserved for exactly the request's calls.
  absl::StatusOr<std::shared_ptr<BatchHandle>> Start(BatchRequest request,
                                                     BatchObserver* observer, Room room);

  // Runs a batch and waits for it: the results in call order.
  absl::StatusOr<std::vector<ToolCallResult>> Run(BatchRequest request);

  // Completes every unfinished call of every running batch as CANCELLED
  // ("the daemon is shutting down") and trips their cancellation tokens.
  // New batches are still accepted.
  void CancelRunning();

  // True once no call is running or queued, false if `deadline` passed first
  // (a tool that ignores cancellation keeps its thread until it returns).
  bool WaitIdle(absl::Time deadline) const;

  // CancelRunning(), refuses new batches, and joins the executor threads
  // (so it waits for tools that ignore cancellation). Idempotent.
  void Shutdown();

  // Calls running or queued, and those of rooms reserved (Reserve).
  size_t pending_calls() const { return pending_calls_.load(); }
  // Calls whose tool code is running now (the rest of pending_calls() wait).
  size_t running_calls() const { return running_calls_.load(std::memory_order_relaxed); }
  // Bytes (about) of completed results not yet released, across batches.
  size_t held_result_bytes() const { return held_result_bytes_.load(); }
  const ToolRegistry& registry() const { return *registry_; }
  const Options& options() const { return options_; }

 private:
  friend class Batch;

  static Executor::Options DeliveryThreadOptions();
  // `n` calls' tasks returned, or the calls completed without one.
  void CallsEnded(size_t n);
  // Batches that stopped starting calls because all batches together hold
  // too much get another look when results are released (WakeBatchesWaiting).
  void WaitForRoom(std::weak_ptr<Batch> batch);
  void WakeBatchesWaiting();
  // Gives freed heap back to the system after a large batch (once at a time).
  void TrimHeap();
  // When nothing is pending: trims once the runner has stayed idle for a
  // moment (a timer, then the delivery thread), so memory a burst of calls
  // freed does not stay with the daemon (glibc keeps freed pages of its
  // per-thread arenas resident).
  void TrimHeapWhenIdle();

  const ToolRegistry* registry_;
  const Options options_;
  std::atomic<size_t> pending_calls_{0};
  std::atomic<size_t> running_calls_{0};
  // Held by CallsEnded when pending_calls_ reaches 0, so WaitIdle wakes.
  mutable absl::Mutex idle_mu_;
  std::atomic<size_t> held_result_bytes_{0};
  std::atomic<bool> trimming_{false};
  std::atomic<bool> idle_trim_scheduled_{false};
  absl::Mutex room_mu_;
  std::vector<std::weak_ptr<Batch>> waiting_for_room_ ABSL_GUARDED_BY(room_mu_);
  // One thread (started on demand, retired when idle) that delivers the
  // results timers complete, so the timer thread only decides. Outlives
  // timers_, which may still use it while it is destroyed.
  Executor delivery_{DeliveryThreadOptions()};
  TimerQueue timers_;
  Executor executor_;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::weak_ptr<Batch>> batches_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TOOL_RUNNER_H_

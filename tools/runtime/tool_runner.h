// Runs tool calls [Batches] [Failures are results] [Arguments] [Context] [Display].
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
// holds one of its resources. The task coerces and validates the arguments,
// checks context and session rules, and runs Tool::Call.
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
#include "tools/runtime/executor.h"
#include "tools/runtime/json.h"
#include "tools/runtime/metrics.h"
#include "tools/runtime/session.h"
#include "tools/runtime/timer_queue.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

// Mirrors toolexec.v1.ResultStatus.
enum class ResultStatus { kSuccess, kError, kTimeout, kCancelled, kDenied };

// "success", "error", "timeout", "cancelled" or "denied": a status as the
// audit log, hooks' events and metric labels name it.
absl::string_view ResultStatusName(ResultStatus status);

// [Failures are results]: the structured error on a failed result.
struct ToolCallError {
  std::string message;
  std::string tool_name;
  std::string server_name;
  ErrorCode code = ErrorCode::kToolFailed;
};

struct ToolCallResult {
  uint32_t index = 0;
  std::string id;
  std::string name;
  std::string called_as;  // CallRequest::called_as
  std::string item_type;  // CallRequest::item_type
  std::string step_id;
  ResultStatus status = ResultStatus::kSuccess;
  // Success: the tool's object, {"result": v} for any other value, {} for null.
  // Failure: {"error": message}.
  Json payload;
  std::string error_message;           // empty on success
  std::optional<ToolCallError> error;  // set exactly when status != kSuccess
  EventActions actions;
  DisplayResult display;
  std::string compact_summary;
  // The text to send the model as the result, within the call's budget:
  // Tool::model_content for a success, FailureModelContent for a failure.
  std::string model_content;
  absl::Duration duration;

  bool ok() const { return status == ResultStatus::kSuccess; }
};

// One call as the harness sent it. `args` (already JSON) or `args_json` (text);
// neither means {}. `args_error` lets the transport report arguments it could
// not convert (e.g. nesting too deep); the call then fails INVALID_ARGUMENTS.
struct CallRequest {
  std::string id;
  std::string name;
  // The name the call was made by when that was the provider-safe name a
  // tool is declared under (ProviderNames: "docs_search" for "docs.search");
  // "" when it was `name`. The model's transcript must say it.
  std::string called_as;
  // ToolCall.item_type: the provider's item the call came as ("shell_call"),
  // "" for a function call. Kept on the result and in recordings.
  std::string item_type;
  std::string step_id;
  std::optional<Json> args;
  std::string args_json;
  absl::Status args_error;
  // Set by whoever decides what runs (the engine's policy, [Deciding what runs]): the call
  // fails with this status (its ErrorCode and message) without running.
  absl::Status refusal;
  // What decided that the call runs or is refused, for the audit log
  // (core/audit_log.h): e.g. "policy default: rule no rm", "user",
  // "timeout"; "" when nothing was decided (no policy).
  std::string decided_by;
  // Set by the same: the files the call reads without naming them (a
  // search's walk) that it must leave out (CallInfo::left_out_by_policy).
  LeftOutFn left_out_by_policy;
};

// Sees every call of a batch before its tool runs and every result before it
// is delivered: how the engine's hooks (core/hooks.h) reach the runner. One
// per batch; the batch holds it until its last task and timer have let go.
//
// Threads: BeforeCall runs on the executor thread running the call. OnError
// and AfterCall run exactly once per call, for the result that completes it
// (never for a result that lost the race, see "Completion" above), on the
// thread that completes it: the call's executor thread (`on_call_thread`
// true: it may block, bounded, and must honour `cancel`, tripped when the
// batch is cancelled or the runner shuts down), or a timer, delivery or
// cancelling thread (false: it must not block; hand slow work elsewhere).
class CallInterceptor {
 public:
  virtual ~CallInterceptor() = default;
  // After the arguments are prepared [Arguments] and the context checked, right
  // before Tool::Call. May replace `args` (and then validates them itself).
  // A non-OK status fails the call with that status's ErrorCode and message.
  // `cancel` is the call's own token (client cancel, timeout, shutdown).
  virtual absl::Status BeforeCall(uint32_t index, const RegisteredTool& tool,
                                  const CallRequest& call, Json& args,
                                  const CancellationToken& cancel) = 0;
  // A failed result: a new model-facing message, or nullopt to keep it. The
  // status and error code stay what they are.
  virtual std::optional<std::string> OnError(uint32_t index, const CallRequest& call,
                                             const JsonValue* args,
                                             const ToolCallResult& result, bool on_call_thread,
                                             const CancellationToken& cancel) = 0;
  // Every result, failures included, after OnError. `args`: the arguments
  // the tool got (or would have got), null when they never parsed.
  virtual void AfterCall(uint32_t index, const CallRequest& call, const JsonValue* args,
                         const ToolCallResult& result, bool on_call_thread,
                         const CancellationToken& cancel) = 0;
  // Whether a call may run on any thread, a gRPC thread included: none of
  // the above blocks for long even on the call's own thread (appending a line
  // to a local file, as the daemon's log does, is fine; running a program is
  // not). Then quick calls run where they are made ready.
  virtual bool MayRunOnAnyThread() const { return false; }
};

struct BatchRequest {
  // The registry snapshot the batch uses throughout (held until it ends);
  // null = the runner's registry.
  std::shared_ptr<const ToolRegistry> tools;
  std::shared_ptr<Session> session;  // may be null
  std::vector<CallRequest> calls;
  std::optional<absl::Duration> timeout;  // per call; unset = the runner's default
  // Characters of model_content per call; 0 = the runner's default. Capped
  // at the runner's maximum, raised to kMinModelContentChars.
  size_t model_content_max_chars = 0;
  // The batch's W3C traceparent, handed to every call (CallInfo) and on its
  // threads' log lines; "" = none.
  std::string traceparent;
  // The engine's hooks for this batch; null = none.
  std::shared_ptr<CallInterceptor> interceptor;
};

struct ProgressEvent {
  uint32_t index = 0;
  std::string id;
  std::string stream;
  std::string text;
  uint64_t seq = 0;  // per call, from 1
};

// The checkpoint of the session's workspace taken before a batch that can
// write (tools/workspace/checkpoint; mirrors toolexec.v1.Checkpoint).
struct CheckpointEvent {
  std::string id;
  std::string session_id;
  std::string batch_id;
  absl::Time created_at;
  std::vector<std::string> tools;
  uint32_t files_changed = 0;
  uint64_t bytes_stored = 0;
};

// Receives a batch's events, from any runner thread or from the thread calling
// Start() or Cancel(). OnResult calls are serialized and in call order;
// OnProgress may run concurrently with OnResult for another call (so the
// observer synchronizes internally), but one call's progress events are
// serialized, in seq order, and precede its result. None may block; OnResult
// and OnLastResult may call Cancel(), OnProgress may not call into the batch.
class BatchObserver {
 public:
  virtual ~BatchObserver() = default;
  virtual void OnProgress(ProgressEvent event) = 0;
  // [Deciding what runs]: a question the batch waits on before any of its calls starts (from
  // the engine, not the runner: always before the first result, on the thread
  // that started the batch). Default: ignored.
  virtual void OnPermissionRequest(const PermissionRequestEvent& /*event*/) {}
  // [Deciding what runs]: the answer to one of those questions ("allow_once", "allow_session",
  // "deny", or "timeout" when none came in time), before the batch goes on;
  // on the thread that answered (or the policy's timeout thread). Default:
  // ignored.
  virtual void OnPermissionAnswer(const std::string& /*request_id*/,
                                  absl::string_view /*decision*/,
                                  const std::string& /*reason*/) {}
  // The checkpoint taken before the batch's calls start (from the engine, on
  // the thread that starts them: before the first result). Default: ignored.
  virtual void OnCheckpoint(const CheckpointEvent& /*event*/) {}
  // In call order, each exactly once, except the batch's last result, which
  // comes through OnLastResult.
  virtual void OnResult(ToolCallResult result) = 0;
  // The last result; nothing follows it. The default hands it to OnResult and
  // then calls OnBatchDone. An observer may override it to finish its work in
  // one step (the gRPC stream writes the last result and its status together).
  virtual void OnLastResult(ToolCallResult result) {
    OnResult(std::move(result));
    OnBatchDone();
  }
  // Flow control. True if results stay in memory after OnResult returns (a
  // stream queues them until its client reads them); such an observer calls
  // BatchHandle::ResultsReleased as they leave it, in order. The runner counts
  // a result from its completion until then (false: until OnResult returns).
  // Asked once, by Start().
  virtual bool HoldsResults() const { return false; }
  // The end of an empty batch (with the default OnLastResult, of every batch);
  // nothing follows it.
  virtual void OnBatchDone() = 0;
};

class Batch;

// A running batch, returned by ToolRunner::Start.
class BatchHandle {
 public:
  virtual ~BatchHandle() = default;
  // Completes every unfinished call as CANCELLED and trips its cancellation
  // token. Safe from any thread, any number of times.
  virtual void Cancel() = 0;
  // For an observer that HoldsResults(): its oldest `count` results held are
  // gone (written to the client, or dropped). Lets the batch start the calls
  // it held back. Safe from any thread, also after the batch has ended.
  virtual void ResultsReleased(size_t count) = 0;
};

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

#include "tools/runtime/tool_runner.h"

#include <malloc.h>

#include <algorithm>
#include <deque>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "tools/runtime/call_pipeline.h"
#include "tools/runtime/call_result.h"
#include "tools/runtime/trace_context.h"

namespace toolexec {
namespace {

// A batch whose results held this much at once gives the freed heap back to
// the system when it ends.
constexpr size_t kTrimAfterHeldBytes = size_t{32} << 20;
// How long the runner stays idle (no call pending) before it gives the heap
// its calls freed back to the system: at most one trim per such pause.
constexpr absl::Duration kIdleTrimDelay = absl::Seconds(1);

// Counts a call as running (ToolRunner::running_calls) while it lives.
class RunningCall final {
 public:
  explicit RunningCall(std::atomic<size_t>* running) : running_(running) {
    running_->fetch_add(1, std::memory_order_relaxed);
  }
  ~RunningCall() { running_->fetch_sub(1, std::memory_order_relaxed); }
  RunningCall(const RunningCall&) = delete;
  RunningCall& operator=(const RunningCall&) = delete;

 private:
  std::atomic<size_t>* const running_;
};

}  // namespace

class Batch final : public BatchHandle, public std::enable_shared_from_this<Batch> {
 public:
  Batch(ToolRunner* runner, BatchRequest request, BatchObserver* observer)
      : runner_(runner),
        timeout_(std::min(request.timeout.value_or(runner->options_.default_timeout),
                          runner->options_.max_timeout)),
        start_(absl::Now()),
        pipeline_(ScopeOf(*runner, request, start_ + timeout_)),
        result_observer_(observer),
        holds_results_(observer->HoldsResults()),
        observer_(observer) {
    calls_.reserve(request.calls.size());
    for (auto& c : request.calls) {
      calls_.push_back(std::make_unique<Call>());
      calls_.back()->request = std::move(c);
    }
    slots_.resize(calls_.size());
    slot_bytes_.resize(calls_.size());
    if (Session* session = scope().session.get()) session->BeginBatch();
  }

  ~Batch() override {
    // Every reference is gone: no call of this batch runs any more.
    if (Session* session = scope().session.get()) session->EndBatch();
    size_t held, peak;
    {
      absl::MutexLock lock(&mu_);
      held = held_bytes_;
      peak = peak_held_bytes_;
    }
    if (held > 0) {
      runner_->held_result_bytes_.fetch_sub(held);
      runner_->WakeBatchesWaiting();
    }
    if (peak >= kTrimAfterHeldBytes) {
      runner_->TrimHeap();
    } else {
      runner_->TrimHeapWhenIdle();
    }
  }

  // Finds each call's tool, parses its arguments and orders the calls that
  // share a resource; then schedules every call's timer and starts the calls
  // that may run. Called once, right after construction.
  void Start() {
    for (auto& call : calls_) ResolveResources(*call);
    {
      absl::MutexLock lock(&mu_);
      for (uint32_t i = 0; i < calls_.size(); ++i) {
        Call& c = *calls_[i];
        for (const std::string& key : c.resources) {
          std::deque<uint32_t>& queue = resource_queues_[key];
          if (!queue.empty()) ++c.blocked_on;
          queue.push_back(i);
        }
      }
    }
    auto self = shared_from_this();
    absl::Time deadline = start_ + timeout_;
    for (uint32_t i = 0; i < calls_.size(); ++i) {
      Call& c = *calls_[i];
      c.timer = runner_->timers_.Schedule(deadline, [self, i] { self->OnTimeout(i); });
      // A call completed before its id was stored (cancelled at once) could
      // not cancel the timer itself, which would keep this batch alive until
      // the deadline. Both sides use seq_cst, so one of them always sees the other.
      if (c.done.load()) runner_->timers_.Cancel(c.timer.load());
    }
    Dispatch({});
    if (calls_.empty()) Deliver();
  }

  void Cancel() override { CancelAll(CancelReason::kCancelled); }

  void ResultsReleased(size_t count) override {
    size_t bytes = 0;
    {
      absl::MutexLock lock(&mu_);
      for (; count > 0 && !observer_held_.empty(); --count) {
        bytes += observer_held_.front();
        observer_held_.pop_front();
      }
      ReleaseLocked(bytes);
    }
    if (bytes == 0) return;
    runner_->WakeBatchesWaiting();
    Dispatch({});
  }

  // The runner found room for results again (see MayAdmitLocked). On the
  // thread that released it, which may be the timer thread or another
  // batch's deliverer: no call runs here.
  void RoomFreed() {
    {
      absl::MutexLock lock(&mu_);
      waiting_for_room_ = false;
    }
    Dispatch({}, /*may_run_here=*/false);
  }

  void CancelAll(CancelReason reason) {
    {
      // No call starts from now on, not even one whose resource a call
      // cancelled below releases before its own turn to be cancelled.
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    // Reaches the hooks of calls already complete (see CallInterceptor).
    hooks_cancel_.Cancel(reason);
    for (uint32_t i = 0; i < calls_.size(); ++i) {
      if (calls_[i]->done.load(std::memory_order_acquire)) continue;
      // Complete first, then wake the tool: the tool's own early return must
      // lose the race, or a cancelled call would report the tool's error. Only
      // the winner trips the token, so its reason matches the result.
      if (Complete(i, Failure(i, nullptr, ErrorCode::kCancelled, CancelledMessage(reason)))) {
        calls_[i]->token.Cancel(reason);
      }
    }
  }

 private:
  struct Call {
    CallRequest request;
    // Set by Start() for a call the daemon runs: its tool, its arguments as
    // parsed (or why they could not be), and the resources it acts on.
    const RegisteredTool* tool = nullptr;
    std::optional<absl::StatusOr<Json>> args;
    std::vector<std::string> resources;
    // Where the call is (under mu_): waiting (not admitted yet, or behind an
    // earlier call on one of its resources), submitted to the executor, or
    // ended (its task returned, or it completed without one). Ending releases
    // its resources.
    enum class Stage { kWaiting, kSubmitted, kEnded } stage = Stage::kWaiting;
    // How many of its resources an earlier call still holds (under mu_).
    size_t blocked_on = 0;
    // Admitted and not complete yet (under mu_).
    bool in_flight = false;
    CancellationToken token;
    std::atomic<bool> done{false};  // flipped under observer_mu_ (writer)
    std::atomic<TimerQueue::TimerId> timer{0};
    std::atomic<int64_t> started_ns{0};
    std::atomic<uint64_t> progress_seq{0};
    absl::Mutex progress_mu;
    // With an interceptor: the arguments the tool got (or would have got),
    // for OnError/AfterCall on whichever thread completes the call.
    std::shared_ptr<const Json> seen_args;
  };

  void ResolveResources(Call& c) {
    c.tool = scope().registry->Find(c.request.name);
    if (c.tool == nullptr || c.tool->tool->spec().executor != ToolExecutor::kDaemon) return;
    c.args = CallPipeline::ParseArgs(c.request);
    c.request.args.reset();
    std::string().swap(c.request.args_json);
    if (!c.args->ok()) return;
    try {
      c.resources = c.tool->tool->resources(**c.args);
    } catch (...) {
      c.resources.clear();  // a throwing declaration orders nothing; the call still runs
    }
    c.resources.erase(std::remove(c.resources.begin(), c.resources.end(), std::string()),
                      c.resources.end());
    std::sort(c.resources.begin(), c.resources.end());
    c.resources.erase(std::unique(c.resources.begin(), c.resources.end()), c.resources.end());
  }

  // Starts the calls in `ready` and every call that may start after them,
  // without recursion (a refused submission completes the call, which may
  // make the next call on its resources ready): quick calls here, unless
  // `may_run_here` is false (the timer thread), after the rest are submitted
  // as executor tasks, so slow calls start first.
  void Dispatch(std::vector<uint32_t> ready, bool may_run_here = true) {
    // Not inside this batch's own delivery either: an observer that releases
    // results as it is handed them (a stream whose client is gone drops them)
    // would start a fresh dispatch per result, all on this thread.
    const CallInterceptor* interceptor = scope().interceptor.get();
    size_t quick_here = may_run_here && delivering_here_ != this &&
                                (interceptor == nullptr || interceptor->MayRunOnAnyThread())
                            ? ToolRunner::kMaxQuickCallsHere
                            : 0;
    std::vector<uint32_t> here;
    while (true) {
      for (size_t k = 0; k < ready.size(); ++k) {
        uint32_t i = ready[k];
        if (quick_here > 0 && IsQuick(*calls_[i])) {
          --quick_here;
          here.push_back(i);
          continue;
        }
        auto self = shared_from_this();
        absl::Status queued = runner_->executor_.Submit([self, i] {
          self->RunCall(i);
          self->TaskEnded(i);
        });
        if (!queued.ok()) SubmitFailed(i, queued, &ready);
      }
      ready.clear();
      for (uint32_t i : here) {
        RunCall(i, &ready);  // collects the calls its completion makes ready
        absl::MutexLock lock(&mu_);
        EndLocked(i, &ready);
      }
      here.clear();
      absl::MutexLock lock(&mu_);
      AdmitLocked(&ready);
      if (ready.empty()) return;
    }
  }

  // Whether call `i` takes microseconds: its tool is quick, or it fails
  // before reaching a tool (see Execute).
  bool IsQuick(const Call& c) const {
    if (c.tool == nullptr || !c.request.refusal.ok()) return true;
    const ToolSpec& spec = c.tool->tool->spec();
    if (spec.executor != ToolExecutor::kDaemon) return true;
    return spec.quick || (c.args.has_value() && !c.args->ok());
  }

  // Admits calls in call order while the batch may start more; those not
  // waiting for a resource are ready.
  void AdmitLocked(std::vector<uint32_t>* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (admitted_ < calls_.size() && MayAdmitLocked()) {
      uint32_t i = admitted_++;
      Call& c = *calls_[i];
      if (!c.done.load()) {
        c.in_flight = true;
        ++in_flight_;
      }
      if (c.blocked_on == 0) ReadyLocked(i, ready);
    }
  }

  // Backpressure (ToolRunner::Options::max_held_result_bytes*). Admission is
  // in call order, so the earliest incomplete call is always admitted once
  // every result before it has been released: a batch whose client reads
  // never stalls for good.
  bool MayAdmitLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (cancelled_) return false;  // cancelling completes the rest
    if (held_bytes_ == 0 && in_flight_ == 0) return true;
    const ToolRunner::Options& o = runner_->options_;
    // More in flight than threads to run them only queues them. Each call in
    // flight will hold a result too: count it at the batch's average result
    // size so far (before any, at 1/64 of the cap, so at most 64 start
    // before the first result tells the size). Resumes on completion.
    if (in_flight_ >= o.executor.max_threads) return false;
    const size_t expected_result = completed_results_ > 0
                                       ? completed_bytes_ / completed_results_
                                       : o.max_held_result_bytes_per_batch / 64;
    if (held_bytes_ + in_flight_ * expected_result >= o.max_held_result_bytes_per_batch) {
      return false;  // resumes on release or completion
    }
    if (runner_->held_result_bytes_.load() < o.max_held_result_bytes) return true;
    if (!waiting_for_room_) {
      waiting_for_room_ = true;
      runner_->WaitForRoom(weak_from_this());
    }
    // Registered first, then checked again: a release in between either saw
    // this batch waiting or is seen here.
    return runner_->held_result_bytes_.load() < o.max_held_result_bytes;
  }

  void ReleaseLocked(size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    held_bytes_ -= bytes;
    runner_->held_result_bytes_.fetch_sub(bytes);
  }

  // `i` may start: submit it unless it is already complete (its completer
  // then ends it).
  void ReadyLocked(uint32_t i, std::vector<uint32_t>* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Call& c = *calls_[i];
    if (c.stage != Call::Stage::kWaiting || c.done.load() || cancelled_) return;
    c.stage = Call::Stage::kSubmitted;
    ready->push_back(i);
  }

  // The call's task returned or will never run: releases its resources, which
  // may make later calls on them ready.
  void EndLocked(uint32_t i, std::vector<uint32_t>* ready) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Call& c = *calls_[i];
    if (c.stage == Call::Stage::kEnded) return;
    c.stage = Call::Stage::kEnded;
    for (const std::string& key : c.resources) {
      auto it = resource_queues_.find(key);
      std::deque<uint32_t>& queue = it->second;
      if (queue.front() != i) {
        // Completed (cancelled) before its turn: the holder is unchanged.
        queue.erase(std::find(queue.begin(), queue.end(), i));
        continue;
      }
      queue.pop_front();
      if (queue.empty()) {
        resource_queues_.erase(it);
        continue;
      }
      uint32_t next = queue.front();
      if (--calls_[next]->blocked_on == 0 && next < admitted_) ReadyLocked(next, ready);
    }
    runner_->CallsEnded(1);
  }

  void TaskEnded(uint32_t i) {
    std::vector<uint32_t> ready;
    {
      absl::MutexLock lock(&mu_);
      EndLocked(i, &ready);
    }
    Dispatch(std::move(ready));
  }

  void SubmitFailed(uint32_t i, const absl::Status& queued, std::vector<uint32_t>* ready) {
    bool done;
    {
      absl::MutexLock lock(&mu_);
      calls_[i]->stage = Call::Stage::kWaiting;  // no task will run it
      done = calls_[i]->done.load();
      if (done) EndLocked(i, ready);
    }
    if (done) return;
    if (absl::IsUnavailable(queued)) {
      Complete(i, Failure(i, nullptr, ErrorCode::kCancelled, CancelledMessage(CancelReason::kShutdown)),
               ready);
    } else {
      const std::string& name = calls_[i]->request.name;
      Complete(i,
               Failure(i, calls_[i]->tool, ErrorCode::kInternal,
                       absl::StrCat("tool '", name, "' was not run: ", queued.message())),
               ready);
    }
  }

  void OnTimeout(uint32_t i) {
    Call& c = *calls_[i];
    if (c.done.load(std::memory_order_acquire)) return;
    // Complete first, then wake the tool (see CancelAll).
    // On the timer thread: the result is delivered (and converted by the
    // observer) on the runner's delivery thread instead.
    if (Complete(i,
                 Failure(i, c.tool, ErrorCode::kTimeout,
                         absl::StrCat("tool '", c.request.name, "' timed out after ",
                                      absl::FormatDuration(timeout_))),
                 nullptr, /*deliver_here=*/false)) {
      c.token.Cancel(CancelReason::kTimeout);
    }
  }

  // Runs call `i` on this thread. `here`: a quick call run where it was
  // made ready (Dispatch), which collects in `here` the calls its completion
  // makes ready; null: an executor task.
  void RunCall(uint32_t i, std::vector<uint32_t>* here = nullptr) {
    Call& c = *calls_[i];
    if (c.done.load(std::memory_order_acquire)) return;  // cancelled or timed out while queued
    ScopedTraceLog trace(scope().traceparent);  // the tool's log lines carry the batch's trace
    RunningCall running(&runner_->running_calls_);
    absl::Time started = absl::Now();
    c.started_ns.store(absl::ToUnixNanos(started), std::memory_order_release);
    PipelineCall call;
    call.index = i;
    call.request = &c.request;
    call.tool = c.tool;
    call.args = &c.args;
    call.token = &c.token;
    call.seen_args = &c.seen_args;
    auto self = shared_from_this();
    call.progress = [self, i](absl::string_view stream, absl::string_view text) {
      self->EmitProgress(i, stream, text);
    };
    ToolCallResult result = pipeline_.Run(call);
    Complete(i, std::move(result), here, true, /*on_call_thread=*/true);
  }

  // The interceptor's view of a result that has just won its call's race.
  void Intercept(uint32_t i, ToolCallResult& result, bool on_call_thread) {
    Call& c = *calls_[i];
    std::shared_ptr<const Json> args = std::atomic_load(&c.seen_args);
    if (!result.ok()) {
      std::optional<std::string> message =
          scope().interceptor->OnError(i, c.request, args.get(), result, on_call_thread,
                                       hooks_cancel_);
      if (message.has_value()) SetFailureMessage(result, *message, scope().budget.max_chars);
    }
    scope().interceptor->AfterCall(i, c.request, args.get(), result, on_call_thread,
                                   hooks_cancel_);
  }

  const BatchScope& scope() const { return pipeline_.scope(); }

  static BatchScope ScopeOf(const ToolRunner& runner, BatchRequest& request,
                            absl::Time deadline) {
    BatchScope scope;
    scope.registry = request.tools != nullptr ? std::move(request.tools)
                                              : UnownedSnapshot(runner.registry_);
    scope.session = std::move(request.session);
    scope.deadline = deadline;
    const ToolRunner::Options& o = runner.options_;
    const size_t asked = request.model_content_max_chars;
    const size_t chars = asked == 0 ? o.model_content_default_chars : asked;
    scope.budget = {std::max(std::min(chars, o.model_content_max_chars), kMinModelContentChars)};
    scope.traceparent = std::move(request.traceparent);
    scope.interceptor = std::move(request.interceptor);
    scope.artifacts = o.artifacts;
    scope.default_workspace = o.default_workspace;
    return scope;
  }

  ToolCallResult Failure(uint32_t i, const RegisteredTool* rt, ErrorCode code,
                         absl::string_view message) const {
    return pipeline_.Failure(calls_[i]->request, rt, code, message);
  }

  void EmitProgress(uint32_t i, absl::string_view stream, absl::string_view text) {
    Call& c = *calls_[i];
    // One call's progress (possibly from the tool's helper threads) goes out
    // serialized, so seq order is delivery order.
    absl::MutexLock call_lock(&c.progress_mu);
    absl::ReaderMutexLock lock(&observer_mu_);
    if (observer_ == nullptr || c.done.load(std::memory_order_acquire)) return;
    ProgressEvent e;
    e.index = i;
    e.id = c.request.id;
    e.stream = std::string(stream);
    e.text = std::string(text);
    e.seq = c.progress_seq.fetch_add(1) + 1;
    observer_->OnProgress(std::move(e));
  }

  // Exactly one completion per call wins (returns true); the rest are dropped.
  // A call completed before it was submitted ends here; the calls that this
  // makes ready go to `ready` when given, else are dispatched before returning.
  // `deliver_here` false: if this thread becomes the deliverer, it hands the
  // delivery to the runner's delivery thread.
  bool Complete(uint32_t i, ToolCallResult result, std::vector<uint32_t>* ready = nullptr,
                bool deliver_here = true, bool on_call_thread = false) {
    Call& c = *calls_[i];
    {
      absl::WriterMutexLock lock(&observer_mu_);
      if (c.done.load()) return false;
      c.done.store(true);
    }
    runner_->timers_.Cancel(c.timer.load());
    int64_t started_ns = c.started_ns.load(std::memory_order_acquire);
    absl::Time started = started_ns ? absl::FromUnixNanos(started_ns) : start_;
    result.index = i;
    result.id = c.request.id;
    result.name = c.request.name;
    result.called_as = c.request.called_as;
    result.item_type = c.request.item_type;
    result.step_id = c.request.step_id;
    result.duration = absl::Now() - started;
    if (MetricsSink* metrics = runner_->options_.metrics) {
      metrics->CallCompleted(c.tool, result.status,
                             result.error ? result.error->code : ErrorCode::kToolFailed,
                             result.duration);
    }
    if (scope().interceptor != nullptr) Intercept(i, result, on_call_thread);
    const size_t bytes = ResultBytes(result);
    std::vector<uint32_t> own_ready;
    bool deliver;
    {
      absl::MutexLock lock(&mu_);
      if (c.stage == Call::Stage::kWaiting) EndLocked(i, ready ? ready : &own_ready);
      if (c.in_flight) {
        c.in_flight = false;
        --in_flight_;
      }
      slot_bytes_[i] = bytes;
      ++completed_results_;
      completed_bytes_ += bytes;
      held_bytes_ += bytes;
      peak_held_bytes_ = std::max(peak_held_bytes_, held_bytes_);
      runner_->held_result_bytes_.fetch_add(bytes);
      slots_[i] = std::move(result);
      // Else the active deliverer will pick it up.
      deliver = !delivering_;
      delivering_ = true;
    }
    if (deliver && !deliver_here) {
      auto self = shared_from_this();
      deliver = !runner_->delivery_.Submit([self] { self->Deliver(); }).ok();
    }
    if (deliver) Deliver();  // here, or where no delivery thread is left
    // Started by the caller's own Dispatch loop, or here: released resources,
    // and room for results if the deliverer released some.
    if (ready == nullptr) Dispatch(std::move(own_ready), /*may_run_here=*/deliver_here);
    return true;
  }

  // Hands out the completed prefix in call order; only one thread at a time.
  // The final observer call may destroy the observer, so nothing here touches
  // it (or mu_'s guarded state) after that call.
  void Deliver() {
    DeliveringHere delivering(this);
    bool released = false;
    mu_.Lock();
    while (next_ < slots_.size() && slots_[next_].has_value()) {
      ToolCallResult r = std::move(*slots_[next_]);
      slots_[next_].reset();
      const size_t bytes = slot_bytes_[next_];
      // Counted before the observer sees it, so its release cannot come first.
      if (holds_results_) observer_held_.push_back(bytes);
      bool last = ++next_ == slots_.size();
      mu_.Unlock();
      if (last) {
        if (released) runner_->WakeBatchesWaiting();
        // Every call is complete, so no progress can race this; detach the
        // observer first, then make the final call. (Its bytes stay counted
        // until the batch is destroyed.)
        DetachObserver()->OnLastResult(std::move(r));
        return;
      }
      result_observer_->OnResult(std::move(r));
      mu_.Lock();
      if (!holds_results_) {
        ReleaseLocked(bytes);
        released = true;
      }
    }
    if (slots_.empty() && !empty_done_) {
      empty_done_ = true;
      mu_.Unlock();
      DetachObserver()->OnBatchDone();
      return;
    }
    delivering_ = false;
    mu_.Unlock();
    if (released) runner_->WakeBatchesWaiting();
  }

  // Marks this thread as delivering `batch`'s results while in scope.
  class DeliveringHere {
   public:
    explicit DeliveringHere(const Batch* batch) : outer_(delivering_here_) {
      delivering_here_ = batch;
    }
    ~DeliveringHere() { delivering_here_ = outer_; }

   private:
    const Batch* const outer_;
  };
  static thread_local const Batch* delivering_here_;

  BatchObserver* DetachObserver() {
    absl::WriterMutexLock lock(&observer_mu_);
    BatchObserver* observer = observer_;
    observer_ = nullptr;
    return observer;
  }

  ToolRunner* const runner_;
  const absl::Duration timeout_;
  const absl::Time start_;
  // What the calls run with (call_pipeline.h). Its registry is the tools this
  // batch sees from its start to its end: a tool removed meanwhile stays
  // alive for the calls of it here.
  const CallPipeline pipeline_;
  // Tripped by CancelAll: reaches hooks running for calls already complete.
  CancellationToken hooks_cancel_;
  BatchObserver* const result_observer_;  // used only by the single deliverer
  const bool holds_results_;
  std::vector<std::unique_ptr<Call>> calls_;

  absl::Mutex observer_mu_;
  BatchObserver* observer_ ABSL_GUARDED_BY(observer_mu_);

  absl::Mutex mu_;
  // Per resource, the calls that name it in call order; the first holds it.
  absl::flat_hash_map<std::string, std::deque<uint32_t>> resource_queues_ ABSL_GUARDED_BY(mu_);
  // Calls [0, admitted_) may start once their resources are free.
  uint32_t admitted_ ABSL_GUARDED_BY(mu_) = 0;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // Backpressure: bytes of completed results not yet released (in slots_ or
  // held by the observer: observer_held_, oldest first), the most at once,
  // admitted calls not complete, and whether the runner will call RoomFreed.
  size_t held_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  size_t peak_held_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<size_t> observer_held_ ABSL_GUARDED_BY(mu_);
  std::vector<size_t> slot_bytes_ ABSL_GUARDED_BY(mu_);
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  size_t completed_results_ ABSL_GUARDED_BY(mu_) = 0;
  size_t completed_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool waiting_for_room_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::optional<ToolCallResult>> slots_ ABSL_GUARDED_BY(mu_);
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;
  bool delivering_ ABSL_GUARDED_BY(mu_) = false;
  bool empty_done_ ABSL_GUARDED_BY(mu_) = false;
};

thread_local const Batch* Batch::delivering_here_ = nullptr;

ToolRunner::ToolRunner(const ToolRegistry* registry, Options options)
    : registry_(registry), options_(std::move(options)), executor_(options_.executor) {}

ToolRunner::~ToolRunner() { Shutdown(); }

ToolRunner::Room& ToolRunner::Room::operator=(Room&& other) noexcept {
  if (this != &other) {
    Release();
    runner_ = std::exchange(other.runner_, nullptr);
    calls_ = std::exchange(other.calls_, 0);
  }
  return *this;
}

void ToolRunner::Room::Release() {
  if (runner_ != nullptr) runner_->CallsEnded(calls_);
  runner_ = nullptr;
  calls_ = 0;
}

absl::StatusOr<ToolRunner::Room> ToolRunner::Reserve(size_t n) {
  size_t before = pending_calls_.fetch_add(n);
  if (before + n > options_.max_pending_calls && n > 0) {
    CallsEnded(n);
    return absl::ResourceExhaustedError(absl::StrCat(
        "the daemon is busy: ", before, " calls are running, queued or waiting to start and this "
        "batch of ", n, " would pass the limit of ", options_.max_pending_calls, "; retry later"));
  }
  return Room(this, n);
}

absl::StatusOr<std::shared_ptr<BatchHandle>> ToolRunner::Start(BatchRequest request,
                                                               BatchObserver* observer) {
  auto room = Reserve(request.calls.size());
  if (!room.ok()) return room.status();
  return Start(std::move(request), observer, *std::move(room));
}

absl::StatusOr<std::shared_ptr<BatchHandle>> ToolRunner::Start(BatchRequest request,
                                                               BatchObserver* observer,
                                                               Room room) {
  const size_t n = request.calls.size();
  if (room.runner_ != this || room.calls_ != n) {
    return absl::InternalError(absl::StrCat("a batch of ", n, " calls started in room for ",
                                            room.calls_, " of another runner or batch"));
  }
  // The batch's from here: each call ends its share as it completes.
  room.runner_ = nullptr;
  room.calls_ = 0;
  auto batch = std::make_shared<Batch>(this, std::move(request), observer);
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      CallsEnded(n);
      return absl::UnavailableError("the tool runner is shut down");
    }
    if (batches_.size() >= 64 && batches_.size() == batches_.capacity()) {
      batches_.erase(std::remove_if(batches_.begin(), batches_.end(),
                                    [](const std::weak_ptr<Batch>& b) { return b.expired(); }),
                     batches_.end());
    }
    batches_.push_back(batch);
  }
  batch->Start();
  return batch;
}

namespace {

class CollectingObserver final : public BatchObserver {
 public:
  void OnProgress(ProgressEvent) override {}
  void OnResult(ToolCallResult result) override { results.push_back(std::move(result)); }
  void OnBatchDone() override { done.Notify(); }

  std::vector<ToolCallResult> results;
  absl::Notification done;
};

}  // namespace

absl::StatusOr<std::vector<ToolCallResult>> ToolRunner::Run(BatchRequest request) {
  CollectingObserver observer;
  auto handle = Start(std::move(request), &observer);
  if (!handle.ok()) return handle.status();
  observer.done.WaitForNotification();
  return std::move(observer.results);
}

Executor::Options ToolRunner::DeliveryThreadOptions() {
  Executor::Options options;
  options.min_threads = 0;
  options.max_threads = 1;
  return options;
}

void ToolRunner::CallsEnded(size_t n) {
  if (n > 0 && pending_calls_.fetch_sub(n) == n) {
    // Wakes WaitIdle: releasing idle_mu_ re-evaluates its condition.
    absl::MutexLock lock(&idle_mu_);
  }
}

void ToolRunner::WaitForRoom(std::weak_ptr<Batch> batch) {
  absl::MutexLock lock(&room_mu_);
  waiting_for_room_.push_back(std::move(batch));
}

void ToolRunner::WakeBatchesWaiting() {
  if (held_result_bytes_.load() >= options_.max_held_result_bytes) return;
  std::vector<std::weak_ptr<Batch>> waiting;
  {
    absl::MutexLock lock(&room_mu_);
    waiting.swap(waiting_for_room_);
  }
  for (auto& weak : waiting) {
    if (auto batch = weak.lock()) batch->RoomFreed();
  }
}

void ToolRunner::TrimHeap() {
  if (trimming_.exchange(true)) return;
  malloc_trim(0);
  trimming_.store(false);
}

void ToolRunner::TrimHeapWhenIdle() {
  if (pending_calls_.load() != 0 || idle_trim_scheduled_.exchange(true)) return;
  timers_.Schedule(absl::Now() + kIdleTrimDelay, [this] {
    // On the delivery thread: the timer thread only decides.
    (void)delivery_.Submit([this] {
      idle_trim_scheduled_.store(false);
      if (pending_calls_.load() == 0) TrimHeap();
    });
  });
}

void ToolRunner::CancelRunning() {
  std::vector<std::shared_ptr<Batch>> running;
  {
    absl::MutexLock lock(&mu_);
    for (auto& weak : batches_) {
      if (auto b = weak.lock()) running.push_back(std::move(b));
    }
  }
  for (auto& b : running) b->CancelAll(CancelReason::kShutdown);
}

bool ToolRunner::WaitIdle(absl::Time deadline) const {
  auto idle = [this] { return pending_calls_.load() == 0; };
  absl::MutexLock lock(&idle_mu_);
  return idle_mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

void ToolRunner::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  CancelRunning();
  executor_.Shutdown();
  delivery_.Shutdown();
}

}  // namespace toolexec

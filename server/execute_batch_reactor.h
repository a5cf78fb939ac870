// The ExecuteBatch stream [Batches]. One reactor per call, per STYLE.md habit 3:
//
// - Producers: the ToolRunner calls OnResult (in call order) and OnProgress
//   from its threads; each converts the event to a response and queues it.
// - One write in flight: the write pump (NextActionLocked + Perform) starts a
//   write only when none is in flight; it runs after every enqueue and from
//   OnWriteDone, so the queue drains as fast as the client reads. The reorder buffer is the
//   runner's; what reaches this queue is already in call order.
// - Exactly one Finish: the last result goes out with StartWriteAndFinish (the
//   write and the status in one step); an empty batch, or a stream that broke
//   (a failed write), ends with Finish once the batch is done.
// - OnCancel (client cancelled, deadline passed, server shutting down) cancels
//   the batch, which completes every unfinished call as CANCELLED at once and
//   trips their cancellation tokens, so running tools see it.
// - Drain: the engine counts the batch as in flight while the reactor holds
//   its StartedBatch, which goes with the reactor in OnDone (after Finish).
// - Measurement: OnDone counts the RPC (server/metrics.h) and writes its log
//   line under the batch's trace; the engine measures calls and the batch.
// - Lifetime: gRPC deletes nothing; we `delete this` in OnDone, which gRPC calls
//   after Finish. Finish is only called once the runner has made its final
//   observer call (OnLastResult or OnBatchDone), after which it never touches
//   this observer again, so no runner thread can reach a deleted reactor.
// No reaction blocks: the mutex guards only the queue and flags, and
// StartWrite/Finish are called outside it. gRPC holds OnDone back while a
// write's OnWriteDone or OnCancel is running, and until the handler returns.
#ifndef TOOLEXEC_SERVER_EXECUTE_BATCH_REACTOR_H_
#define TOOLEXEC_SERVER_EXECUTE_BATCH_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/engine.h"
#include "server/progress_bound.h"
#include "tools/runtime/tool_runner.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec {

class ExecuteBatchReactor final : public grpc::ServerWriteReactor<v1::ExecuteBatchResponse>,
                                  public BatchObserver {
 public:
  // Starts the batch on the engine for `caller`, or finishes at once with
  // the engine's error (or `caller`'s: the call was not authenticated). Results are kept under `max_message_bytes` each. Returns the
  // reactor for the handler to return to gRPC.
  static ExecuteBatchReactor* Start(Engine* engine, grpc::CallbackServerContext* context,
                                    absl::StatusOr<CallerIdentity> caller,
                                    const v1::ExecuteBatchRequest& request,
                                    int max_message_bytes);

  // gRPC reactions.
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // BatchObserver (runner threads).
  void OnProgress(ProgressEvent event) override;
  void OnResult(ToolCallResult result) override;
  // [Deciding what runs]: written like a result (never dropped), before any result.
  void OnPermissionRequest(const PermissionRequestEvent& event) override;
  void OnCheckpoint(const CheckpointEvent& event) override;
  // Writes the last result and the status in one step (StartWriteAndFinish).
  void OnLastResult(ToolCallResult result) override;
  void OnBatchDone() override;
  // Results wait in queue_ until written; OnWriteDone tells the runner as
  // they leave, so it starts no more calls while a slow client owes reads.
  bool HoldsResults() const override { return true; }

 private:
  ExecuteBatchReactor(grpc::CallbackServerContext* context, size_t calls, int max_message_bytes);
  void Begin(Engine* engine, const absl::StatusOr<CallerIdentity>& caller,
             const v1::ExecuteBatchRequest& request);
  void Reject(const absl::Status& status);
  // What a queued response is: a result counts for the runner's flow control
  // until written; progress may be dropped; a notice (a permission request)
  // is neither.
  enum class Kind { kResult, kProgress, kNotice };
  void Enqueue(v1::ExecuteBatchResponse response, Kind kind, bool last);

  // The write pump. Every state change and the decision it leads to happen in
  // one critical section (NextActionLocked); the thread then performs the
  // action it owns outside the lock and touches nothing else: once any
  // thread has started the final write or Finish, OnDone may delete `this`.
  struct Action {
    enum Kind { kNone, kWrite, kWriteAndFinish, kFinish } kind = kNone;
    const v1::ExecuteBatchResponse* message = nullptr;
    bool more_queued = false;  // let gRPC coalesce this write with the next
    grpc::Status status;
  };
  Action NextActionLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Perform(const Action& action);

  grpc::CallbackServerContext* const context_;
  // The caller's trace with this RPC's span (server/unary.h RpcTrace): handed
  // to the tools, on every result (trace_id) and on the RPC's log lines.
  const std::string traceparent_;
  const std::string trace_id_;
  const absl::Time started_ = absl::Now();
  const size_t calls_;
  const size_t max_result_bytes_;
  std::string caller_name_;  // for the log line, set once in Begin

  absl::Mutex mu_;
  std::deque<v1::ExecuteBatchResponse> queue_ ABSL_GUARDED_BY(mu_);  // front = being written
  std::deque<Kind> queue_kind_ ABSL_GUARDED_BY(mu_);
  // Progress past it is dropped (counted and logged); results never are.
  ProgressBound progress_ ABSL_GUARDED_BY(mu_);
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool batch_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;  // a write failed: drop the rest
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<StartedBatch> batch_ ABSL_GUARDED_BY(mu_);
  // Outcome counters for the log line.
  size_t results_ ABSL_GUARDED_BY(mu_) = 0;
  size_t failures_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_EXECUTE_BATCH_REACTOR_H_

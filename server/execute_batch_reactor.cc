#include "server/execute_batch_reactor.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"

#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "server/metrics.h"
#include "server/unary.h"
#include "spdlog/spdlog.h"

namespace toolexec {

namespace {

// The largest encoded result that fits one response under the message size
// limit (what gRPC refuses to send would end the stream): a response is the
// result plus its field's tag and length.
size_t MaxResultBytes(int max_message_bytes) {
  constexpr size_t kEnvelopeBytes = 1 + 5;
  const size_t max_message = static_cast<size_t>(std::max(max_message_bytes, 0));
  return max_message > kEnvelopeBytes ? max_message - kEnvelopeBytes : 0;
}

}  // namespace

ExecuteBatchReactor::ExecuteBatchReactor(grpc::CallbackServerContext* context, size_t calls,
                                         int max_message_bytes)
    : context_(context),
      traceparent_(RpcTrace(context).Traceparent()),
      trace_id_(TraceIdOf(traceparent_)),
      calls_(calls),
      max_result_bytes_(MaxResultBytes(max_message_bytes)) {}

ExecuteBatchReactor* ExecuteBatchReactor::Start(Engine* engine,
                                                grpc::CallbackServerContext* context,
                                                absl::StatusOr<CallerIdentity> caller,
                                                const v1::ExecuteBatchRequest& request,
                                                int max_message_bytes) {
  auto* reactor = new ExecuteBatchReactor(context, request.calls_size(), max_message_bytes);
  reactor->Begin(engine, caller, request);
  return reactor;
}

void ExecuteBatchReactor::Begin(Engine* engine, const absl::StatusOr<CallerIdentity>& caller,
                                const v1::ExecuteBatchRequest& request) {
  if (!caller.ok()) return Reject(caller.status());
  caller_name_ = caller->name;
  ScopedTraceLog trace(traceparent_);
  BatchSpec spec = FromProto(request);
  spec.traceparent = traceparent_;
  auto batch = engine->StartBatch(*caller, std::move(spec), this);
  if (!batch.ok()) return Reject(batch.status());
  // gRPC runs no reaction (OnCancel included) before this handler returns, so
  // nothing can need the batch before it is stored.
  absl::MutexLock lock(&mu_);
  batch_ = *std::move(batch);
}

void ExecuteBatchReactor::Reject(const absl::Status& status) {
  grpc::Status wire = ToGrpcStatus(status);
  {
    absl::MutexLock lock(&mu_);
    finished_ = true;
    final_status_ = wire;
  }
  Finish(wire);
}

void ExecuteBatchReactor::OnResult(ToolCallResult result) {
  v1::ExecuteBatchResponse response;
  ToProto(std::move(result), response.mutable_result(), max_result_bytes_);
  response.mutable_result()->set_trace_id(trace_id_);
  Enqueue(std::move(response), Kind::kResult, /*last=*/false);
}

void ExecuteBatchReactor::OnPermissionRequest(const PermissionRequestEvent& event) {
  v1::ExecuteBatchResponse response;
  ToProto(event, response.mutable_permission_request());
  Enqueue(std::move(response), Kind::kNotice, /*last=*/false);
}

void ExecuteBatchReactor::OnCheckpoint(const CheckpointEvent& event) {
  v1::ExecuteBatchResponse response;
  ToProto(event, response.mutable_checkpoint());
  Enqueue(std::move(response), Kind::kNotice, /*last=*/false);
}

void ExecuteBatchReactor::OnLastResult(ToolCallResult result) {
  v1::ExecuteBatchResponse response;
  ToProto(std::move(result), response.mutable_result(), max_result_bytes_);
  response.mutable_result()->set_trace_id(trace_id_);
  Enqueue(std::move(response), Kind::kResult, /*last=*/true);
}

void ExecuteBatchReactor::OnProgress(ProgressEvent event) {
  v1::ExecuteBatchResponse response;
  ToProto(event, response.mutable_progress());
  Enqueue(std::move(response), Kind::kProgress, /*last=*/false);
}

void ExecuteBatchReactor::OnBatchDone() {  // an empty batch
  Action action;
  {
    absl::MutexLock lock(&mu_);
    batch_done_ = true;
    action = NextActionLocked();
  }
  Perform(action);
}

void ExecuteBatchReactor::Enqueue(v1::ExecuteBatchResponse response, Kind kind, bool last) {
  const bool is_progress = kind == Kind::kProgress;
  Action action;
  std::shared_ptr<BatchHandle> dropped_result_of;
  {
    absl::MutexLock lock(&mu_);
    if (kind == Kind::kResult) {
      ++results_;
      if (response.result().status() != v1::RESULT_STATUS_SUCCESS) ++failures_;
    }
    if (last) batch_done_ = true;
    bool keep = !broken_ && !finished_;
    if (keep && is_progress) keep = progress_.Admit(response.progress().text().size());
    if (keep) {
      queue_.push_back(std::move(response));
      queue_kind_.push_back(kind);
    } else if (kind == Kind::kResult) {
      if (batch_) dropped_result_of = batch_->handle();
    }
    action = NextActionLocked();
  }
  // Before Perform: once it has started the final write, `this` may be gone.
  if (dropped_result_of) dropped_result_of->ResultsReleased(1);
  Perform(action);
}

ExecuteBatchReactor::Action ExecuteBatchReactor::NextActionLocked() {
  Action action;
  if (finished_ || write_in_flight_) return action;
  if (!queue_.empty()) {
    write_in_flight_ = true;
    action.message = &queue_.front();  // deque: stays put while others are appended
    action.kind = Action::kWrite;
    action.more_queued = queue_.size() > 1;
    if (batch_done_ && queue_.size() == 1) {
      // The last response: send it with the status in one step.
      finished_ = true;
      action.kind = Action::kWriteAndFinish;
      action.status = final_status_;
    }
  } else if (batch_done_) {
    finished_ = true;
    action.kind = Action::kFinish;
    action.status = final_status_;
  }
  return action;
}

void ExecuteBatchReactor::Perform(const Action& action) {
  switch (action.kind) {
    case Action::kNone:
      return;
    case Action::kWrite:
      // With more responses already queued, hint gRPC to buffer this one and
      // send it with the next (fewer frames and syscalls for big batches).
      StartWrite(action.message, action.more_queued ? grpc::WriteOptions().set_buffer_hint()
                                                    : grpc::WriteOptions());
      return;
    case Action::kWriteAndFinish:
      StartWriteAndFinish(action.message, grpc::WriteOptions(), action.status);
      return;
    case Action::kFinish:
      Finish(action.status);
      return;
  }
}

void ExecuteBatchReactor::OnWriteDone(bool ok) {
  // A write is in flight, so no other thread can finish the stream until this
  // reaction has decided: `this` stays valid here.
  StartedBatch* to_cancel = nullptr;
  std::shared_ptr<BatchHandle> batch;
  size_t results_released = 0;
  {
    absl::MutexLock lock(&mu_);
    write_in_flight_ = false;
    if (queue_kind_.front() == Kind::kProgress) {
      progress_.Release(queue_.front().progress().text().size());
    } else if (queue_kind_.front() == Kind::kResult) {
      ++results_released;
    }
    queue_.pop_front();
    queue_kind_.pop_front();
    if (!ok) {
      results_released += std::count(queue_kind_.begin(), queue_kind_.end(), Kind::kResult);
      // The stream is gone (client cancelled or the connection broke): nothing
      // more can be delivered, so stop the tools and finish once they are done.
      broken_ = true;
      queue_.clear();
      queue_kind_.clear();
      progress_.Clear();
      final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke");
      to_cancel = batch_.get();
    }
    if (batch_) batch = batch_->handle();
  }
  // Cancelling completes the remaining calls; their results arrive through
  // Enqueue, which finishes the stream once the batch is done. Before the
  // release: room for results must not start calls for a client that is gone.
  if (to_cancel) to_cancel->Cancel();
  if (batch && results_released > 0) batch->ResultsReleased(results_released);
  Action action;
  {
    absl::MutexLock lock(&mu_);
    action = NextActionLocked();
  }
  Perform(action);
}

void ExecuteBatchReactor::OnCancel() {
  StartedBatch* to_cancel = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (final_status_.ok()) {
      final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the batch was cancelled");
    }
    to_cancel = batch_.get();
  }
  if (to_cancel) to_cancel->Cancel();
}

void ExecuteBatchReactor::OnDone() {
  ScopedTraceLog trace(traceparent_);
  {
    absl::MutexLock lock(&mu_);
    CountRpc("ExecuteBatch", final_status_.error_code());
    if (progress_.dropped() > 0) {
      spdlog::warn("ExecuteBatch peer={} dropped {} progress events: the client read too slowly",
                   context_->peer(), progress_.dropped());
    }
  }
  // The log line is built only when it will be written (this is the hot path).
  if (spdlog::should_log(spdlog::level::info)) {
    absl::MutexLock lock(&mu_);
    auto ms = absl::ToDoubleMilliseconds(absl::Now() - started_);
    LogLine line("ExecuteBatch");
    line.Add("peer", context_->peer());
    AddCallerField(caller_name_, &line);
    line.AddNumber("calls", calls_).AddNumber("results", results_).AddNumber("failed", failures_);
    AddStatusFields(final_status_, &line);
    line.AddNumber("ms", ms, 2).Write(spdlog::level::info);
  }
  delete this;
}

}  // namespace toolexec

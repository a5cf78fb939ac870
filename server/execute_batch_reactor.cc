#include "server/execute_batch_reactor.h"

#include <utility>

#include "absl/status/status.h"

#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "spdlog/spdlog.h"

namespace toolexec {

ExecuteBatchReactor::ExecuteBatchReactor(ServiceCore* core, grpc::CallbackServerContext* context,
                                         size_t calls)
    : core_(core), context_(context), calls_(calls) {}

ExecuteBatchReactor* ExecuteBatchReactor::Start(ServiceCore* core,
                                                grpc::CallbackServerContext* context,
                                                const v1::ExecuteBatchRequest* request) {
  auto* reactor = new ExecuteBatchReactor(core, context, request->calls_size());
  reactor->Begin(*request);
  return reactor;
}

void ExecuteBatchReactor::Begin(const v1::ExecuteBatchRequest& request) {
  const DaemonOptions& options = core_->options();
  if (core_->draining()) {
    return Reject(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                               "toolexecd is shutting down and accepts no new batches; retry on "
                               "another instance"));
  }
  if (static_cast<uint32_t>(request.calls_size()) > options.max_calls_per_batch) {
    return Reject(grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("the batch has ", request.calls_size(), " calls; the limit is ",
                     options.max_calls_per_batch, " (split it into several batches)")));
  }
  BatchRequest batch;
  if (!request.session_id().empty()) {
    auto session = core_->sessions().Get(request.session_id());
    if (!session.ok()) return Reject(ToGrpcStatus(session.status()));
    batch.session = std::move(*session);
  }
  if (request.has_timeout()) {
    absl::Duration timeout =
        absl::Seconds(request.timeout().seconds()) + absl::Nanoseconds(request.timeout().nanos());
    if (timeout <= absl::ZeroDuration()) {
      return Reject(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                 "timeout must be positive (leave it unset for the default)"));
    }
    batch.timeout = timeout;
  }
  batch.calls.reserve(request.calls_size());
  for (const auto& call : request.calls()) batch.calls.push_back(FromProto(call));

  core_->BatchStarted();
  counted_ = true;
  auto handle = core_->runner().Start(std::move(batch), this);
  if (!handle.ok()) return Reject(ToGrpcStatus(handle.status()));
  bool cancel_now;
  {
    absl::MutexLock lock(&mu_);
    batch_ = *handle;
    cancel_now = cancelled_;
  }
  // The client went away before the batch was registered: cancel it now.
  if (cancel_now) (*handle)->Cancel();
}

void ExecuteBatchReactor::Reject(const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    finished_ = true;
    final_status_ = status;
  }
  Finish(status);
}

void ExecuteBatchReactor::OnResult(ToolCallResult result) {
  bool failed = !result.ok();
  v1::ExecuteBatchResponse response;
  ToProto(std::move(result), response.mutable_result());
  {
    absl::MutexLock lock(&mu_);
    ++results_;
    if (failed || response.result().status() != v1::RESULT_STATUS_SUCCESS) ++failures_;
  }
  Enqueue(std::move(response), /*is_progress=*/false);
}

void ExecuteBatchReactor::OnProgress(ProgressEvent event) {
  v1::ExecuteBatchResponse response;
  ToProto(event, response.mutable_progress());
  Enqueue(std::move(response), /*is_progress=*/true);
}

void ExecuteBatchReactor::OnBatchDone() {
  {
    absl::MutexLock lock(&mu_);
    batch_done_ = true;
  }
  MaybeWrite();
}

void ExecuteBatchReactor::Enqueue(v1::ExecuteBatchResponse response, bool is_progress) {
  {
    absl::MutexLock lock(&mu_);
    if (broken_ || finished_) return;
    if (is_progress) {
      if (queued_progress_ >= kMaxQueuedProgress) {
        ++dropped_progress_;
        return;
      }
      ++queued_progress_;
    }
    queue_.push_back(std::move(response));
    queue_is_progress_.push_back(is_progress);
  }
  MaybeWrite();
}

void ExecuteBatchReactor::MaybeWrite() {
  const v1::ExecuteBatchResponse* to_write = nullptr;
  grpc::Status finish_status;
  {
    absl::MutexLock lock(&mu_);
    if (finished_ || write_in_flight_) return;
    if (!queue_.empty()) {
      write_in_flight_ = true;
      to_write = &queue_.front();  // deque: stays put while others are appended
    } else if (batch_done_) {
      finished_ = true;
      finish_status = final_status_;
    } else {
      return;
    }
  }
  if (to_write != nullptr) {
    StartWrite(to_write);
  } else {
    Finish(finish_status);
  }
}

void ExecuteBatchReactor::OnWriteDone(bool ok) {
  std::shared_ptr<BatchHandle> to_cancel;
  {
    absl::MutexLock lock(&mu_);
    write_in_flight_ = false;
    if (queue_is_progress_.front()) --queued_progress_;
    queue_.pop_front();
    queue_is_progress_.pop_front();
    if (!ok) {
      // The stream is gone (client cancelled or the connection broke): nothing
      // more can be delivered, so stop the tools and finish once they are done.
      broken_ = true;
      queue_.clear();
      queue_is_progress_.clear();
      queued_progress_ = 0;
      final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke");
      to_cancel = batch_;
    }
  }
  if (to_cancel) to_cancel->Cancel();
  MaybeWrite();
}

void ExecuteBatchReactor::OnCancel() {
  std::shared_ptr<BatchHandle> to_cancel;
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    if (final_status_.ok()) {
      final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the batch was cancelled");
    }
    to_cancel = batch_;
  }
  if (to_cancel) to_cancel->Cancel();
}

void ExecuteBatchReactor::OnDone() {
  if (counted_) core_->BatchFinished();
  {
    absl::MutexLock lock(&mu_);
    auto ms = absl::ToDoubleMilliseconds(absl::Now() - started_);
    if (dropped_progress_ > 0) {
      spdlog::warn("ExecuteBatch peer={} dropped {} progress events: the client read too slowly",
                   context_->peer(), dropped_progress_);
    }
    spdlog::info("ExecuteBatch peer={} calls={} results={} failed={} status={} {}ms={:.2f}",
                 context_->peer(), calls_, results_, failures_,
                 absl::StatusCodeToString(static_cast<absl::StatusCode>(final_status_.error_code())),
                 final_status_.error_message(), ms);
  }
  delete this;
}

}  // namespace toolexec

#include "server/watch_session_reactor.h"

#include <utility>

#include "absl/status/status.h"

#include "server/convert.h"
#include "server/metrics.h"
#include "server/unary.h"
#include "spdlog/spdlog.h"

namespace toolexec {

class WatchSessionReactor::Bridge final : public SessionListener {
 public:
  explicit Bridge(WatchSessionReactor* reactor) : reactor_(reactor) {}
  void OnMessage(const ContextMessage& message) override {
    absl::MutexLock lock(&mu_);
    if (reactor_ != nullptr) reactor_->Enqueue(message);
  }
  void OnPermissionRequest(const PermissionRequestEvent& event) override {
    absl::MutexLock lock(&mu_);
    if (reactor_ != nullptr) reactor_->Enqueue(event);
  }
  void OnSessionClosed() override {
    absl::MutexLock lock(&mu_);
    if (reactor_ != nullptr) reactor_->SessionClosed();
  }
  void Detach() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

 private:
  absl::Mutex mu_;
  WatchSessionReactor* reactor_ ABSL_GUARDED_BY(mu_);
};

WatchSessionReactor* WatchSessionReactor::Start(Engine* engine,
                                                grpc::CallbackServerContext* context,
                                                absl::StatusOr<CallerIdentity> caller,
                                                const v1::WatchSessionRequest& request) {
  auto* reactor = new WatchSessionReactor(context, request.session_id());
  reactor->bridge_ = std::make_shared<Bridge>(reactor);
  if (caller.ok()) reactor->caller_name_ = caller->name;
  // If the session closed meanwhile, this calls SessionClosed() at once.
  auto subscription =
      caller.ok() ? engine->Watch(*caller, request.session_id(), reactor->bridge_)
                  : absl::StatusOr<std::unique_ptr<Subscription>>(caller.status());
  if (!subscription.ok()) {
    grpc::Status status = ToGrpcStatus(subscription.status());
    {
      absl::MutexLock lock(&reactor->mu_);
      reactor->finished_ = true;
      reactor->final_status_ = status;
    }
    reactor->Finish(status);
    return reactor;
  }
  reactor->subscription_ = *std::move(subscription);
  return reactor;
}

bool WatchSessionReactor::Push(v1::SessionEvent event) {
  absl::MutexLock lock(&mu_);
  if (finished_ || closed_) return false;
  if (queue_.size() >= kMaxQueued) {
    ++dropped_;
    return false;
  }
  queue_.push_back(std::move(event));
  return true;
}

void WatchSessionReactor::Enqueue(const ContextMessage& message) {
  v1::SessionEvent event;
  auto* m = event.mutable_message();
  m->set_session_id(message.session_id);
  m->set_text(SanitizeUtf8(message.text));
  m->set_tool_name(message.tool_name);
  if (Push(std::move(event))) MaybeWrite();
}

void WatchSessionReactor::Enqueue(const PermissionRequestEvent& event) {
  v1::SessionEvent out;
  ToProto(event, out.mutable_permission_request());
  if (Push(std::move(out))) MaybeWrite();
}

void WatchSessionReactor::SessionClosed() {
  {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  MaybeWrite();
}

void WatchSessionReactor::MaybeWrite() {
  const v1::SessionEvent* to_write = nullptr;
  grpc::Status finish_status;
  {
    absl::MutexLock lock(&mu_);
    if (finished_ || write_in_flight_) return;
    if (!queue_.empty()) {
      write_in_flight_ = true;
      to_write = &queue_.front();
    } else if (closed_) {
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

void WatchSessionReactor::OnWriteDone(bool ok) {
  {
    absl::MutexLock lock(&mu_);
    write_in_flight_ = false;
    queue_.pop_front();
    ++sent_;
    if (!ok) {
      queue_.clear();
      closed_ = true;
      final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke");
    }
  }
  MaybeWrite();
}

void WatchSessionReactor::OnCancel() {
  {
    absl::MutexLock lock(&mu_);
    // Keep the message being written alive until its OnWriteDone.
    queue_.erase(write_in_flight_ ? queue_.begin() + 1 : queue_.begin(), queue_.end());
    closed_ = true;
    if (final_status_.ok()) {
      final_status_ = grpc::Status(grpc::StatusCode::CANCELLED, "the watch was cancelled");
    }
  }
  MaybeWrite();
}

void WatchSessionReactor::OnDone() {
  bridge_->Detach();
  subscription_.reset();
  {
    absl::MutexLock lock(&mu_);
    if (dropped_ > 0) {
      spdlog::warn("WatchSession peer={} dropped {} messages: the client read too slowly",
                   context_->peer(), dropped_);
    }
    CountRpc("WatchSession", final_status_.error_code());
    const std::string traceparent = RpcTrace(context_).Traceparent();
    ScopedTraceLog trace(traceparent);
    LogLine line("WatchSession");
    line.Add("peer", context_->peer());
    AddCallerField(caller_name_, &line);
    line.Add("session", session_id_).AddNumber("sent", sent_);
    AddStatusFields(final_status_, &line);
    line.Write(spdlog::level::info);
  }
  delete this;
}

}  // namespace toolexec

// The WatchSession stream: messages tools send() to the agent [Context] and the
// permission requests its batches wait on [Deciding what runs], in order,
// until the session closes (then the stream ends OK) or the client cancels.
//
// Ownership: the engine's subscription holds a Bridge (shared_ptr
// SessionListener) that points at this reactor; OnDone detaches the bridge
// under its mutex and ends the subscription before `delete this`, so a tool sending concurrently either reaches a live reactor
// or nothing. One write in flight; a bounded queue (a watcher that stops
// reading loses messages past kMaxQueued, counted in the log, rather than
// growing the daemon's memory).
#ifndef TOOLEXEC_SERVER_WATCH_SESSION_REACTOR_H_
#define TOOLEXEC_SERVER_WATCH_SESSION_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/engine.h"
#include "tools/runtime/session.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec {

class WatchSessionReactor final : public grpc::ServerWriteReactor<v1::SessionEvent> {
 public:
  // Subscribes `caller` to the session, or finishes at once with the
  // engine's error (or `caller`'s: the call was not authenticated).
  static WatchSessionReactor* Start(Engine* engine, grpc::CallbackServerContext* context,
                                    absl::StatusOr<CallerIdentity> caller,
                                    const v1::WatchSessionRequest& request);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  static constexpr size_t kMaxQueued = 1024;

 private:
  class Bridge;
  WatchSessionReactor(grpc::CallbackServerContext* context, std::string session_id)
      : context_(context), session_id_(std::move(session_id)) {}
  void Enqueue(const ContextMessage& message);
  void Enqueue(const PermissionRequestEvent& event);
  // Queues `event` unless the stream is done or full; true if queued.
  bool Push(v1::SessionEvent event);
  void SessionClosed();
  void MaybeWrite();

  grpc::CallbackServerContext* const context_;
  const std::string session_id_;
  std::string caller_name_;  // for the log line, set once in Start
  std::shared_ptr<Bridge> bridge_;
  std::unique_ptr<Subscription> subscription_;

  absl::Mutex mu_;
  std::deque<v1::SessionEvent> queue_ ABSL_GUARDED_BY(mu_);
  bool write_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;  // session closed: finish once drained
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t sent_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_WATCH_SESSION_REACTOR_H_

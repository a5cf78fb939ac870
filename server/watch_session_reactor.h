// The WatchSession stream: messages tools send() to the agent (S5), in order,
// until the session closes (then the stream ends OK) or the client cancels.
//
// Ownership: the Session holds a Bridge (shared_ptr SessionListener) that
// points at this reactor; OnDone detaches the bridge under its mutex before
// `delete this`, so a tool sending concurrently either reaches a live reactor
// or nothing. One write in flight; a bounded queue (a watcher that stops
// reading loses messages past kMaxQueued, counted in the log, rather than
// growing the daemon's memory).
#ifndef TOOLEXEC_SERVER_WATCH_SESSION_REACTOR_H_
#define TOOLEXEC_SERVER_WATCH_SESSION_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/service_core.h"
#include "tools/runtime/session.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec {

class WatchSessionReactor final : public grpc::ServerWriteReactor<v1::SessionEvent> {
 public:
  static WatchSessionReactor* Start(ServiceCore* core, grpc::CallbackServerContext* context,
                                    const v1::WatchSessionRequest* request);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  static constexpr size_t kMaxQueued = 1024;

 private:
  class Bridge;
  explicit WatchSessionReactor(grpc::CallbackServerContext* context) : context_(context) {}
  void Enqueue(const ContextMessage& message);
  void SessionClosed();
  void MaybeWrite();

  grpc::CallbackServerContext* const context_;
  std::shared_ptr<Session> session_;
  std::shared_ptr<Bridge> bridge_;
  int listener_id_ = 0;

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

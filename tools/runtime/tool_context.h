// What a running call can see and do besides its arguments: cancellation and
// deadline, progress output, the actions it reports [Actions], and, for tools that
// spec().needs_context, the session [Context].
//
// Ownership: created by the ToolRunner for one call and passed to Tool::Call;
// valid only during that call. It holds a weak handle to the session, so once
// the session is closed conversation_id() and is_idle() are empty and send()
// and the state methods fail.
// Thread safety: a tool may use its context from helper threads it joins
// before returning; state and send are internally synchronized, actions() is not.
#ifndef TOOLEXEC_TOOLS_RUNTIME_TOOL_CONTEXT_H_
#define TOOLEXEC_TOOLS_RUNTIME_TOOL_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/runtime/artifacts.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"
#include "tools/runtime/model_content.h"

namespace toolexec {

class Session;

namespace fs {
class ConfinedRoot;  // tools/workspace/confined.h
}  // namespace fs

// A call's workspace roots, the first being the default: directory handles
// opened once (the daemon's at start-up, a session's at OpenSession) and
// shared by every call that uses them. Paths resolve beneath these handles and
// never through a root's path name again, so replacing that path afterwards
// (a rename, a symlink, a new directory) changes nothing a call sees. The
// runtime only carries them; the confined-path layer opens and uses them.
using WorkspaceRoots = std::vector<std::shared_ptr<const fs::ConfinedRoot>>;

// [Actions]: what a call asks of the agent loop besides its result.
struct EventActions {
  Json state_delta = MakeObject();  // keys written during the call -> new values
  std::map<std::string, int64_t> artifact_delta;
  bool escalate = false;
  bool skip_summarization = false;
  std::string transfer_to_agent;
};

// Receives a call's progress output (e.g. command output chunks).
using ProgressFn = std::function<void(absl::string_view stream, absl::string_view text)>;

// Whether the policy keeps a call from reading a file it did not name (one a
// search walks over), given the file's absolute path as the kernel names it:
// true = leave it out. Thread-safe (a walk calls it from several threads).
using LeftOutFn = std::function<bool(absl::string_view absolute_path)>;

struct CallInfo {
  std::string call_id;
  std::string tool_name;
  std::string step_id;
  std::string session_id;
  // The session's user (OpenSessionRequest.user_id); "" without one.
  std::string user_id;
  // The authenticated caller that opened the session; "" without
  // authentication. A caller's users are its own: another caller naming the
  // same user_id reaches other per-user state.
  std::string caller;
  // Workspace root(s) for this call: the session's, or the daemon's default.
  WorkspaceRoots workspaces;
  absl::Time deadline = absl::InfiniteFuture();
  // The daemon's artifact store (may be null in embedded use).
  ArtifactStore* artifacts = nullptr;
  // How much text the result may carry for the model (model_content.h).
  ModelContentBudget model_content;
  // The W3C traceparent to hand on (trace_context.h): the batch's trace, with
  // the daemon's span as parent. Commands get it as TRACEPARENT; "" = none.
  std::string traceparent;
  // The files a walk must leave out (CallRequest::left_out_by_policy); empty
  // = none.
  LeftOutFn left_out_by_policy;
};

class ToolContext final {
 public:
  // `session` may be empty (no session, or a tool that does not need context).
  ToolContext(CallInfo info, std::weak_ptr<Session> session, const CancellationToken* cancellation,
              ProgressFn progress);

  // --- [Context]: the session ---
  std::optional<std::string> conversation_id() const;
  std::optional<bool> is_idle() const;
  // Delivered to the session's WatchSession subscribers.
  absl::Status send(absl::string_view text);
  // nullopt when the key is absent. FailedPrecondition without a live session.
  absl::StatusOr<std::optional<Json>> get_state(absl::string_view key) const;
  absl::Status set_state(absl::string_view key, const JsonValue& value);
  // Atomic read-modify-write (see StateStore::Update). Returns the new value.
  absl::StatusOr<Json> update_state(absl::string_view key,
                                    const std::function<Json(const JsonValue* current)>& fn);

  // --- [Artifacts]: artifacts of the session (its conversation; "user:" names are the
  // user's). A save is reported as the result's actions.artifact_delta.
  absl::StatusOr<int64_t> save_artifact(absl::string_view name, const Artifact& artifact);
  // version 0 = latest.
  absl::StatusOr<std::pair<Artifact, int64_t>> load_artifact(absl::string_view name,
                                                             int64_t version = 0) const;

  // --- the call ---
  const CallInfo& info() const { return info_; }
  const CancellationToken& cancellation() const { return *cancellation_; }
  bool cancelled() const { return cancellation_->cancelled(); }
  // Emits a progress chunk on the batch stream (ToolProgress), in order.
  void progress(absl::string_view stream, absl::string_view text) const;
  EventActions& actions() { return actions_; }
  EventActions TakeActions();

 private:
  absl::StatusOr<std::shared_ptr<Session>> LiveSession() const;
  absl::StatusOr<ArtifactScope> Scope(const Session& session) const;
  void RecordWrite(absl::string_view key, const JsonValue& value);

  const CallInfo info_;
  const std::weak_ptr<Session> session_;
  const CancellationToken* cancellation_;
  const ProgressFn progress_;
  absl::Mutex delta_mu_;  // state writes may come from the tool's helper threads
  EventActions actions_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TOOL_CONTEXT_H_

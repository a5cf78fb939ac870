// Sessions (S5): a conversation's context. A session owns the tool state store
// (and a separate hook state store), its workspaces, the subset of tools it may
// call, and the listeners (WatchSession streams) that receive what tools send().
//
// Ownership: the SessionManager holds each open session by shared_ptr; a
// running call's ToolContext holds only a weak_ptr, so closing a session is
// never blocked by a call and the call sees the close at once.
// Thread safety: every method of Session, StateStore and SessionManager is
// safe to call from any thread.
#ifndef TOOLEXEC_TOOLS_RUNTIME_SESSION_H_
#define TOOLEXEC_TOOLS_RUNTIME_SESSION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "tools/runtime/json.h"

namespace toolexec {

class ToolRegistry;

// S8 key rules: non-empty, at most 256 bytes, no '/', '\', ".." or NUL.
absl::Status ValidateStateKey(absl::string_view key);

// A thread-safe map from key to JSON value.
class StateStore final {
 public:
  std::optional<Json> Get(absl::string_view key) const;
  void Set(absl::string_view key, const JsonValue& value);
  // Atomic read-modify-write: `fn` sees the current value (nullptr if absent)
  // and returns the new one; no other write to this store interleaves. `fn`
  // must not call back into this store. Returns a copy of the new value.
  Json Update(absl::string_view key, const std::function<Json(const JsonValue* current)>& fn);
  // The listed keys (every key when `keys` is empty) as one JSON object.
  Json Snapshot(const std::vector<std::string>& keys = {}) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, Json, std::less<>> values_ ABSL_GUARDED_BY(mu_);
};

// A message a tool sends to the agent (ToolContext::send).
struct ContextMessage {
  std::string session_id;
  std::string text;
  std::string tool_name;
};

// Receives a session's messages; WatchSession streams implement it. Called on
// the sending tool's thread; must not block.
class SessionListener {
 public:
  virtual ~SessionListener() = default;
  virtual void OnMessage(const ContextMessage& message) = 0;
  // The session closed (or the daemon is stopping); no more calls follow.
  virtual void OnSessionClosed() = 0;
};

struct SessionOptions {
  std::string conversation_id;
  std::string user_id;
  // Absolute workspace roots; the first is where relative paths resolve.
  std::vector<std::string> workspaces;
  // The tools this session may call, in registration order; empty = all.
  std::vector<std::string> tools;
  std::string parent_session_id;
};

class Session final {
 public:
  Session(std::string id, SessionOptions options);

  const std::string& id() const { return id_; }
  const std::string& conversation_id() const { return options_.conversation_id; }
  const std::string& user_id() const { return options_.user_id; }
  const std::vector<std::string>& workspaces() const { return options_.workspaces; }
  const std::string& parent_session_id() const { return options_.parent_session_id; }
  // The tools this session may call; empty means every registered tool.
  const std::vector<std::string>& tools() const { return options_.tools; }
  bool AllowsTool(absl::string_view name) const;

  bool idle() const;
  void set_idle(bool idle);
  bool closed() const;

  StateStore& tool_state() { return tool_state_; }
  // Hooks keep their state apart from tools' state (S5).
  StateStore& hook_state() { return hook_state_; }

  // Delivers to every listener; FailedPrecondition once the session is closed.
  absl::Status Send(absl::string_view text, absl::string_view tool_name);

  // Registers a listener. If the session is already closed, the listener's
  // OnSessionClosed runs at once and 0 is returned.
  int AddListener(std::shared_ptr<SessionListener> listener);
  void RemoveListener(int id);

  // Marks the session closed and tells every listener. Idempotent.
  void MarkClosed();

 private:
  const std::string id_;
  const SessionOptions options_;
  absl::flat_hash_set<std::string> allowed_;
  StateStore tool_state_;
  StateStore hook_state_;

  mutable absl::Mutex mu_;
  bool idle_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int next_listener_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int, std::shared_ptr<SessionListener>> listeners_ ABSL_GUARDED_BY(mu_);
};

class SessionManager final {
 public:
  struct Options {
    size_t max_sessions = 10000;
  };
  // `registry` must outlive the manager; it names the tools a session may use
  // and receives cleanup_session calls.
  SessionManager(const ToolRegistry* registry, Options options);

  // Validates the options (known tool names) and opens a session.
  // ResourceExhausted past max_sessions.
  absl::StatusOr<std::shared_ptr<Session>> Open(SessionOptions options);
  // NotFound for an unknown or closed id.
  absl::StatusOr<std::shared_ptr<Session>> Get(absl::string_view id) const;
  // Closes: removes it, calls every tool's cleanup_session, tells listeners.
  absl::Status Close(absl::string_view id);
  // Closes every session (daemon shutdown).
  void CloseAll();
  size_t size() const;

 private:
  void Finish(const std::shared_ptr<Session>& session);

  const ToolRegistry* registry_;
  const Options options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_SESSION_H_

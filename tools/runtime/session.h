// Sessions [Context]: a conversation's context. A session owns the tool state store
// (and a separate hook state store), its workspaces, the subset of tools it may
// call, and the listeners (WatchSession streams) that receive what tools send().
//
// Ownership: the SessionManager holds each open session by shared_ptr; a
// running call's ToolContext holds only a weak_ptr, so closing a session is
// never blocked by a call and the call sees the close at once.
// Thread safety: every method of Session, StateStore and SessionManager is
// safe to call from any thread.
//
// Closing (SessionManager::Close) runs on the caller's thread. Closes of one
// session are serialised by the session's close_mu_: the first merges (a
// child) and removes the session from the manager's table; a close waiting
// behind it then finds the session gone (NotFound), or, if the first was
// refused and left the session open, tries again with its own options. So a
// child merges into its parent at most once. Lock order: a session's
// close_mu_, then the manager's mu_, then a session's mu_. The slow part of a
// close (every tool's cleanup_session) runs after those locks are released.
#ifndef TOOLEXEC_TOOLS_RUNTIME_SESSION_H_
#define TOOLEXEC_TOOLS_RUNTIME_SESSION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/runtime/artifacts.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_sets.h"

namespace toolexec {

class ToolRegistry;
class LiveToolRegistry;

// Sessions unused this long are closed unless the daemon is configured
// otherwise: long enough for a harness between turns, short enough that
// sessions a client forgot do not fill the session table for good.
inline constexpr absl::Duration kDefaultSessionIdleTtl = absl::Hours(1);

// [Actions] key rules: non-empty, at most 256 bytes, no '/', '\', ".." or NUL.
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

  // A logical clock: every write ticks it. VersionOf(key) is the clock value
  // of the key's last write (0 if never written), so "changed since T" is
  // VersionOf(key) > T ([Delegation] conflict detection).
  uint64_t clock() const;
  uint64_t VersionOf(absl::string_view key) const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, Json, std::less<>> values_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t, std::less<>> versions_ ABSL_GUARDED_BY(mu_);
  uint64_t clock_ ABSL_GUARDED_BY(mu_) = 0;
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
  // [Deciding what runs]: a batch of this session waits for this answer. Default: ignored.
  virtual void OnPermissionRequest(const PermissionRequestEvent& /*event*/) {}
};

struct SessionOptions {
  std::string conversation_id;
  std::string user_id;
  // The workspace roots, opened by whoever opens the session (OpenSession
  // resolves them beneath the daemon's workspace); the first is where
  // relative paths resolve. Held for the session's life. A child given none
  // shares its parent's handles.
  WorkspaceRoots workspaces;
  // The tools this session may call, by name (checked at open); empty = all.
  std::vector<std::string> tools;
  // More choices of tools, each applied to the tools registered when a call
  // is made (a parent's, a subagent's, the OpenSession lists): the session
  // may call a tool that every one of them and `tools` choose.
  std::vector<ToolSelection> selections;
  std::string parent_session_id;
  // With a parent: the parent keys copied into the child's state at open [Delegation].
  std::vector<std::string> state_keys;
  // Warnings to return to the caller (e.g. a dropped start_subagent).
  std::vector<std::string> warnings;
  std::string subagent;
  // Who opened it (CallerIdentity::name; "" = an unauthenticated caller).
  // Only that caller may use it; a child inherits its parent's owner.
  std::string owner;
};

// [Delegation]: how a child's writes merge back into its parent on close.
struct MergeOptions {
  std::vector<std::string> output_state_keys;
  bool reject_conflicts = false;
  std::vector<std::string> exempt_keys;
  std::vector<std::string> artifact_prefixes;
  // End the session merging nothing (its writes are dropped); excludes the
  // options above.
  bool discard = false;
};

// What a successful merge wrote into the parent.
struct MergeResult {
  Json state_delta = MakeObject();
  std::map<std::string, int64_t> artifact_delta;
};

class Session final {
 public:
  Session(std::string id, SessionOptions options);

  const std::string& id() const { return id_; }
  const std::string& conversation_id() const { return options_.conversation_id; }
  const std::string& user_id() const { return options_.user_id; }
  const WorkspaceRoots& workspaces() const { return options_.workspaces; }
  const std::string& parent_session_id() const { return options_.parent_session_id; }
  const std::vector<std::string>& warnings() const { return options_.warnings; }
  const std::string& subagent() const { return options_.subagent; }
  const std::string& owner() const { return options_.owner; }
  // 0 for a top-level session, parent's depth + 1 for a child.
  int depth() const { return depth_; }
  // Whose artifacts this session sees [Artifacts]: a top-level session with a
  // conversation_id shares its conversation's; one without, and every child,
  // has a space of its own, freed when it closes. A child stages its "user:"
  // saves there too until they merge into the parent on close [Delegation]. The
  // conversations and users of an owned session are its owner's alone.
  ArtifactScope artifact_scope() const;
  // Saves in this session's scope and notes the save for a child's merge.
  absl::StatusOr<int64_t> SaveArtifact(ArtifactStore& store, absl::string_view name,
                                       const Artifact& artifact);

  // The last time a call or RPC used the session (for the idle TTL); a
  // session with a batch running is never idle.
  absl::Time last_active() const;
  void Touch();
  void BeginBatch();
  void EndBatch();  // also touches
  bool busy() const;

  // [Delegation] bookkeeping of what this session wrote, for a child's merge.
  void NoteStateWrite(absl::string_view key);
  void NoteArtifactSave(absl::string_view name, int64_t version);
  // Whether the session may call `tool` (one of `registry`'s, the registry
  // the caller uses now), and the names of all it may call there, in
  // registration order.
  bool AllowsTool(const RegisteredTool& tool) const;
  std::vector<std::string> ToolNames(const ToolRegistry& registry) const;
  // Every choice of tools the session makes (for a child, which adds its own).
  const std::vector<ToolSelection>& selections() const { return selections_; }

  bool idle() const;
  void set_idle(bool idle);
  bool closed() const;

  StateStore& tool_state() { return tool_state_; }
  // Hooks keep their state apart from tools' state [Context].
  StateStore& hook_state() { return hook_state_; }

  // Delivers to every listener; FailedPrecondition once the session is closed.
  absl::Status Send(absl::string_view text, absl::string_view tool_name);
  // Delivers a permission request to every listener (none once closed).
  void NotifyPermissionRequest(const PermissionRequestEvent& event);

  // Registers a listener. If the session is already closed, the listener's
  // OnSessionClosed runs at once and 0 is returned.
  int AddListener(std::shared_ptr<SessionListener> listener);
  void RemoveListener(int id);

  // Marks the session closed and tells every listener. Idempotent.
  void MarkClosed();

 private:
  friend class SessionManager;

  const std::string id_;
  const SessionOptions options_;
  int depth_ = 0;
  // The parent's state clock when this child opened [Delegation].
  uint64_t parent_clock_at_open_ = 0;
  std::vector<ToolSelection> selections_;  // options_.tools included
  // Held by SessionManager::Close from its check that the session is open
  // until it has left the table: one close of a session at a time.
  absl::Mutex close_mu_;
  StateStore tool_state_;
  StateStore hook_state_;

  mutable absl::Mutex mu_;
  bool idle_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int next_listener_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int, std::shared_ptr<SessionListener>> listeners_ ABSL_GUARDED_BY(mu_);
  absl::Time last_active_ ABSL_GUARDED_BY(mu_) = absl::Now();
  int running_batches_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<std::string> written_keys_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> saved_artifacts_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> children_ ABSL_GUARDED_BY(mu_);
};

class SessionManager final {
 public:
  struct Options {
    size_t max_sessions = 10000;
    // Open sessions per non-empty owner (children included).
    size_t max_sessions_per_owner = 1000;
    int max_depth = 5;  // [Delegation]: how deep child sessions may nest
    // Sessions unused this long are closed by SweepIdle (0 = never).
    absl::Duration idle_ttl = kDefaultSessionIdleTtl;
  };
  // `registry` must outlive the manager; it names the tools a session may use
  // and receives cleanup_session calls. `artifacts` (may be null) receives a
  // child's approved artifacts on merge, and loses a session's own space
  // (see Session::artifact_scope) when the session closes.
  SessionManager(const ToolRegistry* registry, Options options,
                 ArtifactStore* artifacts = nullptr);
  // The same with tools that change at runtime: a session's tool names are
  // checked against the tools registered when it opens, and its cleanup goes
  // to the tools registered when it closes.
  SessionManager(const LiveToolRegistry* tools, Options options,
                 ArtifactStore* artifacts = nullptr);

  // Validates the options (known tool names; with a parent: it exists, the
  // depth limit, and the parent's user_id, which a child inherits and may not
  // change) and opens a session. ResourceExhausted past max_sessions.
  absl::StatusOr<std::shared_ptr<Session>> Open(SessionOptions options);
  // NotFound for an unknown or closed id.
  absl::StatusOr<std::shared_ptr<Session>> Get(absl::string_view id) const;
  // The same, and the same NotFound for a session `owner` did not open: to
  // another caller, someone else's session does not exist.
  absl::StatusOr<std::shared_ptr<Session>> Get(absl::string_view id,
                                               absl::string_view owner) const;
  // Closes a session: its children first (without merging), then every
  // tool's cleanup_session, then its listeners. A child's state writes and
  // artifacts merge into its parent under `merge` [Delegation]; any violation merges
  // nothing, leaves the child open and fails with FailedPrecondition naming
  // each write and how to allow it or discard it. With `merge.discard` the
  // session closes merging nothing. Of concurrent closes of one session, at
  // most one succeeds; the others get NotFound.
  absl::StatusOr<MergeResult> Close(absl::string_view id, const MergeOptions& merge = {});
  // Closes every session (daemon shutdown).
  void CloseAll();
  // Closes sessions idle longer than the TTL; returns how many.
  size_t SweepIdle(absl::Time now);
  size_t size() const;

 private:
  void Finish(const std::shared_ptr<Session>& session);
  // Checks the child's writes against `merge`, then applies all of them or none.
  absl::StatusOr<MergeResult> Merge(Session& child, Session& parent, const MergeOptions& merge);
  // Removes `id` and its descendants from the map; returns them, children first.
  std::vector<std::shared_ptr<Session>> DetachTree(absl::string_view id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The tools now: `live_`'s snapshot, or `registry_`.
  std::shared_ptr<const ToolRegistry> CurrentTools() const;

  const ToolRegistry* registry_ = nullptr;
  const LiveToolRegistry* live_ = nullptr;
  const Options options_;
  ArtifactStore* artifacts_;
  mutable absl::Mutex mu_;
  bool closed_all_ ABSL_GUARDED_BY(mu_) = false;  // shutting down: open no more
  absl::flat_hash_map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
  // Open sessions per non-empty owner, kept with sessions_.
  absl::flat_hash_map<std::string, size_t> per_owner_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_SESSION_H_

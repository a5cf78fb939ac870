// The Engine: everything toolexecd does, behind calls that know nothing of the
// transport. A transport (the gRPC service in server/, later MCP) converts its
// request, calls the engine, and converts the answer and the status back.
//
// Contract
// --------
// - Every call takes the caller's identity first, so authentication and
//   policy plug in here without touching the transports.
// - Errors are absl::Status with the wire's codes: INVALID_ARGUMENT for a bad
//   request (naming the field and what to do), NOT_FOUND for an unknown
//   session or artifact, RESOURCE_EXHAUSTED past a limit, UNAVAILABLE once
//   draining (StartBatch, OpenSession), FAILED_PRECONDITION for a refused
//   merge. A failing tool is never an error here: it is a result [Failures are results].
// - StartBatch checks the batch (limit on calls, timeout, session, drain) and
//   starts it; results reach the observer in call order ([Batches], see
//   tools/runtime/tool_runner.h for the observer's rules). The returned
//   StartedBatch counts the batch as in flight for Drain until it is
//   destroyed: the transport destroys it once the batch's outcome has reached
//   the caller, so a drain waits for delivery, not only for the tools.
// - OpenSession resolves the tools (a subagent's, the request's selection, or
//   the parent's), and opens each workspace beneath the daemon's workspace
//   handle (no path is checked first and opened later).
// - Sessions belong to the caller that opened them (CallerIdentity::name): to
//   any other caller a session, its batches, state, messages and artifacts
//   are NOT_FOUND, as if it did not exist. An authenticated caller may hold
//   max_sessions_per_caller open sessions (RESOURCE_EXHAUSTED past it).
// - Drain(deadline) and then, after the transport has stopped, Stop(): see
//   each below.
//
// Threads
// -------
// Every call may come from any thread at once; none blocks on tool code.
// Tools run on the ToolRunner's executor (bounded by max_concurrent_calls);
// a batch waiting for a permission answer holds no thread (core/policy.h),
// only its calls' room under max_pending_calls;
// per-call deadlines fire on the runner's timer thread. CloseSession runs
// each tool's cleanup (which may wait out a command's kill grace) on the
// engine's session-work executor and answers through its callback there;
// SaveArtifact writes (and syncs) there too. An
// idle-session sweeper thread exists when a session TTL is set. Drain() and
// Stop() are called once each, by the owner (the daemon's shutdown thread).
#ifndef TOOLEXEC_CORE_ENGINE_H_
#define TOOLEXEC_CORE_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "core/engine_options.h"
#include "core/recording_export.h"
#include "mcp/client/mcp_tools.h"
#include "tools/runtime/artifacts.h"
#include "tools/runtime/json.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"
#include "tools/workspace/checkpoint/store.h"

namespace toolexec {

// Who is calling, as the transport authenticated it. Every Engine call takes
// one so that policy, session ownership and logs can use it.
struct CallerIdentity {
  // "" when the daemon authenticates nobody (a loopback listener without
  // auth). Otherwise the token's name, the client certificate's subject (or
  // SAN), or "uid:N" for a unix-socket peer.
  std::string name;
  // The policy profile bound to the credential now; "" = none. It narrows
  // the config's policy for every call, in sessions opened before too.
  std::string profile;
};

// One batch as the caller sent it.
struct BatchSpec {
  std::string session_id;  // "" = no session
  std::vector<CallRequest> calls;
  std::optional<absl::Duration> timeout;  // per call; must be positive when set
  // model_content characters per call; 0 = the engine's default, capped by
  // its maximum.
  uint32_t model_content_max_chars = 0;
  // The W3C traceparent the tools hand on (tools/runtime/trace_context.h):
  // the caller's trace with the transport's span as parent. "" = the engine
  // starts a new trace.
  std::string traceparent;
};

// A started batch. Cancel() completes its unfinished calls as CANCELLED. The
// batch counts as in flight (Drain waits for it) until this is destroyed.
class StartedBatch final {
 public:
  StartedBatch(std::shared_ptr<BatchHandle> handle, std::function<void()> on_release)
      : handle_(std::move(handle)), on_release_(std::move(on_release)) {}
  ~StartedBatch() {
    if (on_release_) on_release_();
  }
  StartedBatch(const StartedBatch&) = delete;
  StartedBatch& operator=(const StartedBatch&) = delete;

  void Cancel() { handle_->Cancel(); }
  // The runner's handle, for an observer that releases held results
  // (BatchObserver::HoldsResults); it stays valid after this is destroyed.
  const std::shared_ptr<BatchHandle>& handle() const { return handle_; }

 private:
  std::shared_ptr<BatchHandle> handle_;
  std::function<void()> on_release_;
};

struct OpenSessionSpec {
  std::string conversation_id;
  std::string user_id;
  std::string parent_session_id;
  std::vector<std::string> state_keys;
  std::string subagent;
  std::vector<std::string> enabled_tools;
  std::vector<std::string> disabled_tools;
  // Relative to the daemon's workspace, or absolute inside it.
  std::vector<std::string> workspaces;
  // A policy profile (core/policy.h) that narrows the session's calls
  // beyond the config's policy, the caller's profile and the parent's; ""
  // = none.
  std::string policy_profile;
  // Record the session's batches and results (core/recorder.h); the
  // daemon's recording.all_sessions records every session anyway.
  bool record = false;
};

// What a caller sees of a session.
struct SessionInfo {
  std::string session_id;
  std::vector<std::string> warnings;
  std::string conversation_id;
  bool idle = false;
  std::string user_id;
  std::string parent_session_id;
  std::vector<std::string> workspaces;  // real paths
  std::vector<std::string> tools;       // every tool the session may call
  std::string recording;                // the recording's path; "" = not recorded
};

// A WatchSession subscription; destroying it unsubscribes.
class Subscription final {
 public:
  explicit Subscription(std::function<void()> end) : end_(std::move(end)) {}
  ~Subscription() {
    if (end_) end_();
  }
  Subscription(const Subscription&) = delete;
  Subscription& operator=(const Subscription&) = delete;

 private:
  std::function<void()> end_;
};

class Engine {
 public:
  // Serves `tools` (built by the composition root: server/tool_catalogue.h),
  // then the MCP servers' tools after them as they come and go; starts the
  // MCP servers, resolves the subagents [Subagents] (an unknown tool is an
  // error naming it), opens the workspace and the artifact store, and starts
  // the runtime.
  static absl::StatusOr<std::unique_ptr<Engine>> Create(EngineOptions options, ToolRegistry tools);
  // Stop() if it has not run.
  virtual ~Engine() = default;

  // The tools as registered at start-up, in registration order [Names and order]; what
  // the config was checked against. MCP servers' tools change later: see
  // tools().
  virtual const ToolRegistry& registry() const = 0;
  // The tools now: a snapshot that stays valid (and unchanged) while held.
  virtual std::shared_ptr<const ToolRegistry> tools() const { return UnownedSnapshot(&registry()); }
  // The configured MCP servers: ready or not, and their tools not registered.
  virtual std::vector<mcp::McpServerStatus> mcp_servers() const { return {}; }

  // The tools of `tool_set` ("" = all) that the session (if any) may call, in
  // registration order, from one snapshot of the tools now.
  virtual absl::StatusOr<ToolList> ListTools(
      const CallerIdentity& caller, const std::string& session_id,
      const std::string& tool_set) = 0;

  // `observer` must stay valid until the runner's final call to it (see
  // BatchObserver). On error the observer is never called.
  virtual absl::StatusOr<std::unique_ptr<StartedBatch>> StartBatch(const CallerIdentity& caller,
                                                                   BatchSpec spec,
                                                                   BatchObserver* observer) = 0;

  virtual absl::StatusOr<SessionInfo> OpenSession(const CallerIdentity& caller,
                                                  OpenSessionSpec spec) = 0;
  virtual absl::StatusOr<SessionInfo> UpdateSession(const CallerIdentity& caller,
                                                    const std::string& session_id,
                                                    bool idle) = 0;
  // Closes the session (merging a child into its parent, [Delegation]) off the
  // caller's thread; `done` runs exactly once, on an engine thread, or on the
  // caller's thread when no engine thread can take it.
  virtual void CloseSession(const CallerIdentity& caller, const std::string& session_id,
                            MergeOptions merge,
                            std::function<void(absl::StatusOr<MergeResult>)> done) = 0;
  // The session's tool state, or only `keys` of it.
  virtual absl::StatusOr<Json> GetState(const CallerIdentity& caller,
                                        const std::string& session_id,
                                        const std::vector<std::string>& keys) = 0;
  // Subscribes `listener` to the session's messages [Context] until the returned
  // subscription is destroyed; OnSessionClosed comes at once if it closed.
  virtual absl::StatusOr<std::unique_ptr<Subscription>> Watch(
      const CallerIdentity& caller, const std::string& session_id,
      std::shared_ptr<SessionListener> listener) = 0;

  // Artifacts [Artifacts], in the scope of `session_id` (required).
  // Saves off the caller's thread (a store on disk syncs each version);
  // `done` runs exactly once with the new version, like CloseSession's.
  virtual void SaveArtifact(const CallerIdentity& caller, const std::string& session_id,
                            const std::string& name, Artifact artifact,
                            std::function<void(absl::StatusOr<int64_t>)> done) = 0;
  // version 0 = the latest; returns the artifact and its version.
  virtual absl::StatusOr<std::pair<Artifact, int64_t>> LoadArtifact(
      const CallerIdentity& caller, const std::string& session_id, const std::string& name,
      int64_t version) = 0;
  virtual absl::StatusOr<std::vector<std::string>> ListArtifacts(
      const CallerIdentity& caller, const std::string& session_id) = 0;
  virtual absl::StatusOr<std::vector<int64_t>> ListVersions(const CallerIdentity& caller,
                                                            const std::string& session_id,
                                                            const std::string& name) = 0;
  // version 0 = every version.
  virtual absl::Status DeleteArtifact(const CallerIdentity& caller, const std::string& session_id,
                                      const std::string& name, int64_t version) = 0;

  // OK when `profile` names a policy profile of this engine (what a token
  // line or OpenSession may name); InvalidArgument naming the known ones
  // otherwise.
  virtual absl::Status CheckProfile(const std::string& /*profile*/) const {
    return absl::OkStatus();
  }

  // Checkpoints of the session's workspace (tools/workspace/checkpoint):
  // FAILED_PRECONDITION when the daemon takes none. A restore refuses
  // (FAILED_PRECONDITION) while a batch of the session, or of a child session
  // sharing its workspace, runs; it first takes an undo checkpoint, and the
  // policy judges it as a write of every path it changes. A restore holds the
  // file tools' write locks of every path it changes (CheckpointStore::Restore),
  // so it waits for, never interleaves with, a write of another session
  // sharing the workspace. Restores and diffs do file I/O: call them off the
  // transport's event threads.
  virtual absl::StatusOr<std::vector<checkpoint::CheckpointInfo>> ListCheckpoints(
      const CallerIdentity& /*caller*/, const std::string& /*session_id*/) {
    return absl::FailedPreconditionError(kCheckpointsOff);
  }
  virtual absl::StatusOr<checkpoint::DiffResult> DiffCheckpoint(
      const CallerIdentity& /*caller*/, const std::string& /*session_id*/,
      const std::string& /*from_id*/, const std::string& /*to_id*/,
      const std::vector<std::string>& /*paths*/) {
    return absl::FailedPreconditionError(kCheckpointsOff);
  }
  virtual absl::StatusOr<checkpoint::RestoreResult> RestoreCheckpoint(
      const CallerIdentity& /*caller*/, const std::string& /*session_id*/,
      const std::string& /*checkpoint_id*/, const std::vector<std::string>& /*paths*/,
      bool /*dry_run*/) {
    return absl::FailedPreconditionError(kCheckpointsOff);
  }
  static constexpr const char* kCheckpointsOff =
      "checkpoints are off: set checkpoints { enabled: true store_dir: \"...\" } in the config";

  // Answers a PermissionRequest a batch waits on ([Deciding what runs], core/policy.h).
  // NOT_FOUND when it is not pending.
  virtual absl::Status RespondPermission(const CallerIdentity& /*caller*/,
                                         const std::string& /*request_id*/,
                                         PermissionAnswer /*answer*/,
                                         const std::string& /*reason*/) {
    return absl::UnimplementedError("this engine asks no permission");
  }

  // The session's recording (open, closed, or from before a restart) as it
  // is (kNative) or as a provider transcript (core/recording_export.h).
  // NOT_FOUND when there is none for this caller; FAILED_PRECONDITION when
  // the daemon records nothing.
  virtual absl::StatusOr<std::string> ExportRecording(const CallerIdentity& /*caller*/,
                                                      const std::string& /*session_id*/,
                                                      RecordingFormat /*format*/) {
    return absl::FailedPreconditionError("this engine records no sessions");
  }

  // Refuses new batches and sessions with UNAVAILABLE from now on, waits for
  // the batches in flight until `deadline`, then cancels the rest (their
  // calls complete as CANCELLED and are still delivered) and waits briefly
  // for their delivery. Then waits, still within `deadline`, until no call
  // has reached the engine for the quiet period (drain_quiet_period), so the
  // calls on their way are refused and their callers have gone before the
  // transport stops listening. Last, ends what outlives
  // calls (background commands) and closes every session, which ends Watch
  // subscriptions. True if every batch finished before `deadline`.
  virtual bool Drain(absl::Time deadline) = 0;
  // After the transport has stopped: cancels whatever still runs and waits up
  // to tool_stop_grace for it. True if the runtime stopped; false if a tool
  // ignored cancellation (the destructor then waits for it).
  virtual bool Stop() = 0;

  virtual bool draining() const = 0;
  virtual int in_flight_batches() const = 0;

  // What an exporter shows when scraped (cheap: atomics and one lock each).
  struct Stats {
    size_t calls_running = 0;  // tool code running
    size_t calls_queued = 0;   // accepted, not running yet (or waiting for the client)
    size_t sessions_open = 0;
    int batches_in_flight = 0;
  };
  virtual Stats stats() const { return {}; }
};

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_ENGINE_H_

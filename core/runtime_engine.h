// The Engine's implementation, RuntimeEngine, declared for the files that
// define its members: engine.cc (creation, tools, batches, permission answers,
// drain and stop), engine_sessions.cc (sessions and their recordings),
// engine_artifacts.cc and engine_checkpoints.cc. Not an API: everything else
// reaches it through core/engine.h.
#ifndef TOOLEXEC_CORE_RUNTIME_ENGINE_H_
#define TOOLEXEC_CORE_RUNTIME_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/engine.h"
#include "core/engine_options.h"
#include "core/hooks.h"
#include "core/policy.h"
#include "core/recorder.h"
#include "core/recording_export.h"
#include "mcp/client/mcp_tools.h"
#include "tools/runtime/artifacts.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/json.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"
#include "tools/runtime/tool_sets.h"
#include "tools/workspace/checkpoint/store.h"
#include "tools/workspace/confined.h"

namespace toolexec {

// A subagent's tools, resolved against the registry at start-up [Subagents].
struct ResolvedSubagent {
  std::string description;
  // Its lists, then never start_subagent [Subagents]; applied when calls are made.
  std::vector<ToolSelection> selections;
  std::vector<std::string> warnings;  // e.g. start_subagent dropped
};

// A session's workspace: an existing directory inside the daemon's, resolved
// beneath the daemon's root handle (never by a path name checked first and
// opened later) and held open for the session's life. `path` is relative to
// the daemon's workspace, or absolute inside it. InvalidArgument naming
// `path` when it is outside, missing or not a directory.
absl::StatusOr<std::shared_ptr<const fs::ConfinedRoot>> OpenSessionWorkspace(
    const std::shared_ptr<const fs::ConfinedRoot>& daemon_root, const std::string& path);

class RuntimeEngine final : public Engine {
 public:
  explicit RuntimeEngine(EngineOptions options) : options_(std::move(options)) {}
  ~RuntimeEngine() override;

  absl::Status Init(ToolRegistry tools);

  const ToolRegistry& registry() const override { return *startup_tools_; }
  std::shared_ptr<const ToolRegistry> tools() const override { return tools_->Snapshot(); }
  std::vector<mcp::McpServerStatus> mcp_servers() const override {
    return mcp_servers_ != nullptr ? mcp_servers_->status() : std::vector<mcp::McpServerStatus>();
  }
  absl::StatusOr<ToolList> ListTools(
      const CallerIdentity& caller, const std::string& session_id,
      const std::string& tool_set) override;
  absl::StatusOr<std::unique_ptr<StartedBatch>> StartBatch(const CallerIdentity& caller,
                                                           BatchSpec spec,
                                                           BatchObserver* observer) override;
  absl::StatusOr<SessionInfo> OpenSession(const CallerIdentity& caller,
                                          OpenSessionSpec spec) override;
  absl::StatusOr<SessionInfo> UpdateSession(const CallerIdentity& caller,
                                            const std::string& session_id, bool idle) override;
  void CloseSession(const CallerIdentity& caller, const std::string& session_id,
                    MergeOptions merge,
                    std::function<void(absl::StatusOr<MergeResult>)> done) override;
  absl::StatusOr<Json> GetState(const CallerIdentity& caller, const std::string& session_id,
                                const std::vector<std::string>& keys) override;
  absl::StatusOr<std::unique_ptr<Subscription>> Watch(
      const CallerIdentity& caller, const std::string& session_id,
      std::shared_ptr<SessionListener> listener) override;
  void SaveArtifact(const CallerIdentity& caller, const std::string& session_id,
                    const std::string& name, Artifact artifact,
                    std::function<void(absl::StatusOr<int64_t>)> done) override;
  absl::StatusOr<std::pair<Artifact, int64_t>> LoadArtifact(const CallerIdentity& caller,
                                                            const std::string& session_id,
                                                            const std::string& name,
                                                            int64_t version) override;
  absl::StatusOr<std::vector<std::string>> ListArtifacts(const CallerIdentity& caller,
                                                         const std::string& session_id) override;
  absl::StatusOr<std::vector<int64_t>> ListVersions(const CallerIdentity& caller,
                                                    const std::string& session_id,
                                                    const std::string& name) override;
  absl::Status DeleteArtifact(const CallerIdentity& caller, const std::string& session_id,
                              const std::string& name, int64_t version) override;
  absl::Status RespondPermission(const CallerIdentity& caller, const std::string& request_id,
                                 PermissionAnswer answer, const std::string& reason) override;
  absl::StatusOr<std::vector<checkpoint::CheckpointInfo>> ListCheckpoints(
      const CallerIdentity& caller, const std::string& session_id) override;
  absl::StatusOr<checkpoint::DiffResult> DiffCheckpoint(
      const CallerIdentity& caller, const std::string& session_id, const std::string& from_id,
      const std::string& to_id, const std::vector<std::string>& paths) override;
  absl::StatusOr<checkpoint::RestoreResult> RestoreCheckpoint(
      const CallerIdentity& caller, const std::string& session_id, const std::string& checkpoint_id,
      const std::vector<std::string>& paths, bool dry_run) override;
  absl::Status CheckProfile(const std::string& profile) const override {
    return policy_->CheckProfile(profile);
  }
  absl::StatusOr<std::string> ExportRecording(const CallerIdentity& caller,
                                              const std::string& session_id,
                                              RecordingFormat format) override;
  bool Drain(absl::Time deadline) override;
  bool Stop() override;
  bool draining() const override { return draining_.load(std::memory_order_acquire); }
  int in_flight_batches() const override {
    absl::MutexLock lock(&mu_);
    return in_flight_;
  }
  Stats stats() const override {
    Stats s;
    s.calls_running = runner_->running_calls();
    size_t pending = runner_->pending_calls();
    s.calls_queued = pending > s.calls_running ? pending - s.calls_running : 0;
    s.sessions_open = sessions_->size();
    s.batches_in_flight = in_flight_batches();
    return s;
  }

 private:
  // Every call starts here: records when the last call arrived (Drain waits
  // for a quiet period).
  void NoteCall() {
    last_call_.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  }
  SessionInfo InfoOf(const Session& s) const;
  // Creates the session's recording file; its path.
  absl::StatusOr<std::string> StartRecording(Session& session, const SessionInfo& info,
                                             const CallerIdentity& caller,
                                             const OpenSessionSpec& spec);
  // The session `id`, marked as in use; artifacts need one.
  absl::StatusOr<std::shared_ptr<Session>> ArtifactSession(const CallerIdentity& caller,
                                                           const std::string& id);
  bool WaitForBatches(absl::Time deadline);
  // Before a batch of a session starts: a checkpoint of its workspace when
  // some call can write (a tool that is not read-only, runs here, and is not
  // quick; the policy did not refuse it), sent to `observer` first.
  absl::Status CheckpointBefore(const BatchRequest& batch, BatchObserver* observer);
  // What a session's checkpoints cover: its first workspace, or the daemon's.
  const std::shared_ptr<const fs::ConfinedRoot>& RootOf(const Session& session) const {
    return session.workspaces().empty() ? workspace_root_ : session.workspaces().front();
  }
  // The session `id` of `caller`, with checkpoints on: the open session, or,
  // for one no longer open (closed, or opened before a restart) whose
  // checkpoints `caller` took, a stand-in with its workspace and no policy
  // profile of its own (the caller's and the config's policy still judge).
  absl::StatusOr<std::shared_ptr<Session>> CheckpointSession(const CallerIdentity& caller,
                                                            const std::string& id);
  // A batch of `id` or of a session below it is accepted and not delivered.
  bool BatchesRunningIn(const std::string& id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const EngineOptions options_;
  // Session recordings (null: off). First, so it outlives every batch and
  // session that records into it.
  std::unique_ptr<Recorder> recorder_;
  // The tools now (snapshots, tools/runtime/tool_registry.h); before
  // mcp_servers_, which publish into it until they stop.
  std::unique_ptr<LiveToolRegistry> tools_;
  // The first snapshot: what the config (subagents, hooks, policy, metrics)
  // was checked against.
  std::shared_ptr<const ToolRegistry> startup_tools_;
  std::shared_ptr<const fs::ConfinedRoot> workspace_root_;
  std::unique_ptr<ArtifactStore> artifacts_;
  std::map<std::string, ResolvedSubagent> subagents_;
  // The MCP servers whose tools are registered; stopped after the calls.
  std::unique_ptr<mcp::McpServers> mcp_servers_;
  // Before runner_: the runner's batches hold the hooks' interceptors.
  std::shared_ptr<HookSet> hooks_;
  std::unique_ptr<ToolRunner> runner_;
  std::unique_ptr<SessionManager> sessions_;
  // Decides every batch before the runner sees it [Deciding what runs]. Destroyed before
  // the runner: it cancels the batches still waiting for an answer.
  std::unique_ptr<PolicyEngine> policy_;
  // Closes sessions past their idle TTL (only when a TTL is configured).
  std::thread sweeper_;
  absl::Notification stop_sweeper_;
  // Runs session work that may block (closing a session ends its background
  // commands: SIGTERM, the kill grace, SIGKILL) off the transport's threads.
  Executor session_work_{Executor::Options{/*min_threads=*/0, /*max_threads=*/64,
                                           /*idle_timeout=*/absl::Seconds(10)}};

  std::atomic<bool> draining_{false};
  std::atomic<int64_t> last_call_{0};  // unix ns; 0 = none yet
  mutable absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // Checkpoints of sessions' workspaces; null when they are off.
  std::unique_ptr<checkpoint::CheckpointStore> checkpoints_;
  // Batches accepted and not yet delivered, per session; and the sessions a
  // restore is changing the workspace of (no batch starts in them meanwhile).
  absl::flat_hash_map<std::string, int> session_batches_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> restoring_ ABSL_GUARDED_BY(mu_);
  bool stopped_ = false;
  bool runner_abandoned_ = false;  // tools ignored cancellation past the grace
};

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_RUNTIME_ENGINE_H_

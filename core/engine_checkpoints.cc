// RuntimeEngine's checkpoints of sessions' workspaces: the one taken before a
// batch that can write, and listing, diffing and restoring them.
#include "core/runtime_engine.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"

namespace toolexec {

absl::Status RuntimeEngine::CheckpointBefore(const BatchRequest& batch, BatchObserver* observer) {
  const Session& session = *batch.session;
  const ToolRegistry& tools = batch.tools != nullptr ? *batch.tools : *startup_tools_;
  std::vector<std::string> writers;
  for (const CallRequest& call : batch.calls) {
    if (!call.refusal.ok()) continue;  // it will not run
    const RegisteredTool* rt = tools.Find(call.name);
    if (rt == nullptr || !session.AllowsTool(*rt)) continue;
    const ToolSpec& spec = rt->tool->spec();
    // Quick tools do no I/O (ToolSpec::quick); tools run elsewhere fail here.
    if (spec.read_only || spec.quick || spec.executor != ToolExecutor::kDaemon) continue;
    if (std::find(writers.begin(), writers.end(), call.name) == writers.end()) {
      writers.push_back(call.name);
    }
  }
  if (writers.empty()) return absl::OkStatus();
  checkpoint::TakeRequest request;
  request.session_id = session.id();
  // The batch is named by its trace id, which every result carries too.
  const std::vector<std::string> trace = absl::StrSplit(batch.traceparent, '-');
  request.batch_id = trace.size() > 1 ? trace[1] : batch.traceparent;
  request.tools = std::move(writers);
  request.owner = session.owner();
  checkpoint::TakeStats stats;
  auto taken = checkpoints_->Take(RootOf(session), request, &stats);
  if (!taken.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the checkpoint before this batch failed, so none of its calls ran: ",
        taken.status().message(),
        " (free space in checkpoints.store_dir, or turn checkpoints off to run without them)"));
  }
  if (options_.metrics != nullptr) {
    options_.metrics->CheckpointTaken(stats.duration, stats.bytes_stored);
  }
  CheckpointEvent event;
  event.id = taken->id;
  event.session_id = taken->session_id;
  event.batch_id = taken->batch_id;
  event.created_at = taken->created_at;
  event.tools = taken->tools;
  event.files_changed = taken->files_changed;
  event.bytes_stored = taken->bytes_stored;
  observer->OnCheckpoint(event);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Session>> RuntimeEngine::CheckpointSession(
    const CallerIdentity& caller, const std::string& id) {
  NoteCall();
  if (checkpoints_ == nullptr) return absl::FailedPreconditionError(kCheckpointsOff);
  auto session = sessions_->Get(id, caller.name);
  if (session.ok()) {
    (*session)->Touch();
    return session;
  }
  // A session no longer open keeps its checkpoints for the caller that took
  // them; to anyone else it does not exist, as an open one would not.
  const std::vector<checkpoint::CheckpointInfo> taken = checkpoints_->List(id);
  if (!absl::IsNotFound(session.status()) || taken.empty() || taken.back().owner != caller.name) {
    return session.status();
  }
  auto root = OpenSessionWorkspace(workspace_root_, taken.back().root);
  if (!root.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("session '", id, "' is closed and its checkpoints' workspace cannot be opened: ",
                     root.status().message()));
  }
  SessionOptions options;
  options.owner = caller.name;
  options.workspaces.push_back(*std::move(root));
  return std::make_shared<Session>(id, std::move(options));
}

bool RuntimeEngine::BatchesRunningIn(const std::string& id) const {
  for (const auto& [running, count] : session_batches_) {
    // Up the tree from each session with a batch: children share their
    // parent's workspace.
    std::string at = running;
    for (int depth = 0; !at.empty() && depth <= options_.session_max_depth + 1; ++depth) {
      if (at == id) return true;
      auto s = sessions_->Get(at);
      if (!s.ok()) break;
      at = (*s)->parent_session_id();
    }
  }
  return false;
}

absl::StatusOr<std::vector<checkpoint::CheckpointInfo>> RuntimeEngine::ListCheckpoints(
    const CallerIdentity& caller, const std::string& session_id) {
  auto session = CheckpointSession(caller, session_id);
  if (!session.ok()) return session.status();
  return checkpoints_->List(session_id);
}

absl::StatusOr<checkpoint::DiffResult> RuntimeEngine::DiffCheckpoint(
    const CallerIdentity& caller, const std::string& session_id, const std::string& from_id,
    const std::string& to_id, const std::vector<std::string>& paths) {
  auto session = CheckpointSession(caller, session_id);
  if (!session.ok()) return session.status();
  if (from_id.empty()) {
    return absl::InvalidArgumentError(
        "from_checkpoint_id is required (toolexec checkpoints SESSION lists them)");
  }
  return checkpoints_->Diff(RootOf(**session), session_id, from_id, to_id, paths);
}

absl::StatusOr<checkpoint::RestoreResult> RuntimeEngine::RestoreCheckpoint(
    const CallerIdentity& caller, const std::string& session_id, const std::string& checkpoint_id,
    const std::vector<std::string>& paths, bool dry_run) {
  auto session = CheckpointSession(caller, session_id);
  if (!session.ok()) return session.status();
  if (checkpoint_id.empty()) {
    return absl::InvalidArgumentError(
        "checkpoint_id is required (toolexec checkpoints SESSION lists them)");
  }
  {
    absl::MutexLock lock(&mu_);
    if (draining()) {
      return absl::UnavailableError("toolexecd is shutting down and restores nothing");
    }
    if (BatchesRunningIn(session_id)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "a batch of session '", session_id,
          "' (or of a child session sharing its workspace) is running; restore once it has "
          "finished, or cancel it"));
    }
    if (!restoring_.insert(session_id).second) {
      return absl::FailedPreconditionError(
          absl::StrCat("a restore of session '", session_id, "' is already running"));
    }
  }
  struct Done {
    RuntimeEngine* engine;
    std::string id;
    ~Done() {
      absl::MutexLock lock(&engine->mu_);
      engine->restoring_.erase(id);
    }
  } done{this, session_id};
  const std::shared_ptr<const fs::ConfinedRoot>& root = RootOf(**session);
  // The policy judges the restore as a write of every path it changes.
  auto approve = [&](const std::vector<checkpoint::FileChange>& changes) {
    std::vector<std::string> touched;
    for (const checkpoint::FileChange& c : changes) {
      std::string path = c.path;
      if (!path.empty() && path.back() == '/') path.pop_back();
      touched.push_back(absl::StrCat(root->path(), "/", path));
    }
    if (touched.empty()) return absl::OkStatus();
    return policy_->JudgeWrite(caller.profile, *session, "restore_checkpoint", touched);
  };
  checkpoint::TakeRequest undo;
  undo.session_id = session_id;
  undo.tools = {"restore_checkpoint"};
  undo.owner = caller.name;
  auto restored =
      checkpoints_->Restore(root, session_id, checkpoint_id, paths, dry_run, undo, approve);
  if (restored.ok() && !restored->undo_checkpoint_id.empty() && options_.metrics != nullptr) {
    options_.metrics->CheckpointTaken(restored->undo_stats.duration,
                                      restored->undo_stats.bytes_stored);
  }
  return restored;
}

}  // namespace toolexec

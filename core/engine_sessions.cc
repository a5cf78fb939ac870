// RuntimeEngine's sessions: opening one (its tools, policy, workspaces and
// recording), updating, closing, its state and watchers, and the export of a
// session's recording.
#include "core/runtime_engine.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace toolexec {

absl::StatusOr<std::shared_ptr<const fs::ConfinedRoot>> OpenSessionWorkspace(
    const std::shared_ptr<const fs::ConfinedRoot>& daemon_root, const std::string& path) {
  auto wp = fs::ResolveWorkspacePath({daemon_root}, path.empty() ? "." : path, "workspaces");
  absl::StatusOr<std::shared_ptr<const fs::ConfinedRoot>> root =
      wp.ok() ? fs::ConfinedRoot::OpenWithin(*wp) : wp.status();
  if (root.ok()) return root;
  const absl::Status& s = root.status();
  if (ErrorCodeOf(s) == ErrorCode::kDenied) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workspace '", path, "' is outside the daemon's workspace ", daemon_root->path()));
  }
  if (absl::IsNotFound(s)) {
    return absl::InvalidArgumentError(absl::StrCat("workspace '", path, "' does not exist"));
  }
  // "'a.txt' is not a directory", a malformed path, a symlink loop, ...
  return absl::InvalidArgumentError(absl::StrCat("workspace ", s.message()));
}

SessionInfo RuntimeEngine::InfoOf(const Session& s) const {
  SessionInfo info;
  info.session_id = s.id();
  info.warnings = s.warnings();
  info.conversation_id = s.conversation_id();
  info.idle = s.idle();
  info.user_id = s.user_id();
  info.parent_session_id = s.parent_session_id();
  for (const auto& w : s.workspaces()) info.workspaces.push_back(w->path());
  info.tools = s.ToolNames(*tools_->Snapshot());
  if (recorder_ != nullptr) {
    if (auto rec = recorder_->Find(s.id())) info.recording = rec->path();
  }
  return info;
}

absl::StatusOr<SessionInfo> RuntimeEngine::OpenSession(const CallerIdentity& caller,
                                                       OpenSessionSpec spec) {
  NoteCall();
  if (draining()) {
    return absl::UnavailableError("toolexecd is shutting down and opens no new sessions");
  }
  SessionOptions options;
  options.conversation_id = std::move(spec.conversation_id);
  options.user_id = std::move(spec.user_id);
  options.parent_session_id = std::move(spec.parent_session_id);
  options.state_keys = std::move(spec.state_keys);
  options.owner = caller.name;
  const bool selects = !spec.enabled_tools.empty() || !spec.disabled_tools.empty();
  const std::shared_ptr<const ToolRegistry> registry = tools_->Snapshot();
  if (!spec.subagent.empty()) {
    // [Subagents]: the subagent's own tool list; the request may not widen or narrow it.
    auto it = subagents_.find(spec.subagent);
    if (it == subagents_.end()) {
      std::vector<std::string> known;
      for (const auto& [name, sa] : subagents_) known.push_back(name);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown subagent '", spec.subagent, "'; configured subagents: ",
                       known.empty() ? "none" : absl::StrJoin(known, ", ")));
    }
    if (selects) {
      return absl::InvalidArgumentError(
          "give subagent or enabled_tools/disabled_tools, not both: a subagent's tools come "
          "from the config");
    }
    options.subagent = spec.subagent;
    options.selections = it->second.selections;
    options.warnings = it->second.warnings;
  } else if (selects) {
    auto tools = ToolSelection::Create(*registry, spec.enabled_tools, spec.disabled_tools,
                                       "OpenSession");
    if (!tools.ok()) return tools.status();
    options.selections.push_back(*std::move(tools));
  }
  if (!options.parent_session_id.empty()) {
    // A child sees no more tools than its parent, whatever it chooses itself.
    if (auto parent = sessions_->Get(options.parent_session_id, caller.name); parent.ok()) {
      const std::vector<ToolSelection>& inherited = (*parent)->selections();
      options.selections.insert(options.selections.begin(), inherited.begin(), inherited.end());
    }
  }
  if (std::none_of(registry->tools().begin(), registry->tools().end(),
                   [&](const auto& t) { return ChosenByAll(options.selections, *t); })) {
    return absl::InvalidArgumentError(
        "the session would have no tools: its lists (with its parent's or its subagent's) leave "
        "none of the registered tools");
  }
  // Policy [Deciding what runs]: the session keeps its parent's profiles and the requested
  // one; each call adds the config's policy and the caller's profile as it is
  // then.
  if (!caller.profile.empty()) {
    if (absl::Status s = policy_->CheckProfile(caller.profile); !s.ok()) return s;
  }
  auto chain = policy_->ChainForSession(options.parent_session_id, spec.policy_profile);
  if (!chain.ok()) return chain.status();
  const bool record =
      spec.record || (recorder_ != nullptr && recorder_->options().all_sessions);
  if (record && recorder_ == nullptr) {
    return absl::FailedPreconditionError(
        "record: this daemon keeps no recordings (set recording.dir in its config)");
  }
  for (const auto& w : spec.workspaces) {
    auto root = OpenSessionWorkspace(workspace_root_, w);
    if (!root.ok()) return root.status();
    options.workspaces.push_back(*std::move(root));
  }
  auto session = sessions_->Open(std::move(options));
  if (!session.ok()) return session.status();
  policy_->AttachSession(*session, *std::move(chain));
  SessionInfo info = InfoOf(**session);
  if (record) {
    auto path = StartRecording(**session, info, caller, spec);
    if (!path.ok()) {
      MergeOptions discard;
      discard.discard = true;
      if (sessions_->Close(info.session_id, discard).ok()) {
        policy_->DetachSession(info.session_id);
      }
      return path.status();
    }
    info.recording = *std::move(path);
  }
  return info;
}

namespace {

// Records close_session however the session ends (CloseSession, the idle
// TTL, a drain).
class RecordingCloser final : public SessionListener {
 public:
  RecordingCloser(Recorder* recorder, std::string session_id)
      : recorder_(recorder), session_id_(std::move(session_id)) {}
  void OnMessage(const ContextMessage&) override {}
  void OnSessionClosed() override { recorder_->Close(session_id_); }

 private:
  Recorder* const recorder_;
  const std::string session_id_;
};

}  // namespace

absl::StatusOr<std::string> RuntimeEngine::StartRecording(Session& session,
                                                          const SessionInfo& info,
                                                          const CallerIdentity& caller,
                                                          const OpenSessionSpec& spec) {
  Json s = MakeObject();
  auto& a = s.GetAllocator();
  auto put = [&](const char* key, const std::string& value) {
    s.AddMember(JsonValue(key, a), JsonValue(value, a), a);
  };
  auto put_list = [&](const char* key, const std::vector<std::string>& values) {
    JsonValue list(rapidjson::kArrayType);
    for (const auto& v : values) list.PushBack(JsonValue(v, a), a);
    s.AddMember(JsonValue(key, a), list, a);
  };
  put("session_id", info.session_id);
  put("conversation_id", info.conversation_id);
  put("user_id", info.user_id);
  put("parent_session_id", info.parent_session_id);
  put("subagent", spec.subagent);
  put("policy_profile", spec.policy_profile);
  put_list("workspaces", info.workspaces);
  put_list("tools", info.tools);
  put("owner", caller.name);
  auto rec = recorder_->Start(info.session_id, s);
  if (!rec.ok()) return rec.status();
  session.AddListener(std::make_shared<RecordingCloser>(recorder_.get(), info.session_id));
  return (*rec)->path();
}

absl::StatusOr<std::string> RuntimeEngine::ExportRecording(const CallerIdentity& caller,
                                                           const std::string& session_id,
                                                           RecordingFormat format) {
  NoteCall();
  if (recorder_ == nullptr) {
    return absl::FailedPreconditionError(
        "this daemon keeps no recordings (set recording.dir in its config)");
  }
  auto path = recorder_->PathOf(session_id);
  if (!path.ok()) return path.status();
  const absl::Status not_found =
      absl::NotFoundError(absl::StrCat("no recording of session '", session_id, "'"));
  std::ifstream in(*path, std::ios::binary);
  if (!in) return not_found;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto recording = ParseRecording(text);
  if (!recording.ok()) return recording.status();
  // Another caller's recording does not exist for this one (as its session).
  if (RecordingOwner(*recording) != caller.name) return not_found;
  if (format == RecordingFormat::kNative) {
    text.resize(text.rfind('\n') + 1);  // whole lines only
    return text;
  }
  return RecordingTranscript(*recording, format);
}

absl::StatusOr<SessionInfo> RuntimeEngine::UpdateSession(const CallerIdentity& caller,
                                                         const std::string& session_id,
                                                         bool idle) {
  NoteCall();
  auto session = sessions_->Get(session_id, caller.name);
  if (!session.ok()) return session.status();
  (*session)->set_idle(idle);
  (*session)->Touch();
  return InfoOf(**session);
}

void RuntimeEngine::CloseSession(const CallerIdentity& caller, const std::string& session_id,
                                 MergeOptions merge,
                                 std::function<void(absl::StatusOr<MergeResult>)> done) {
  NoteCall();
  // Another caller's session does not exist for this one. Ids are never
  // reused, so the session checked here is the one closed below.
  if (auto owned = sessions_->Get(session_id, caller.name); !owned.ok()) {
    return done(owned.status());
  }
  auto close = [this, session_id, merge = std::move(merge), done = std::move(done)] {
    auto closed = sessions_->Close(session_id, merge);
    // Policy [Deciding what runs]: its batches still waiting for an answer are cancelled.
    if (closed.ok()) policy_->DetachSession(session_id);
    done(std::move(closed));
  };
  // Submit fails once the executor is shut down or when no thread can be
  // started: close on this thread then.
  if (!session_work_.Submit(close).ok()) close();
}

absl::StatusOr<Json> RuntimeEngine::GetState(const CallerIdentity& caller,
                                             const std::string& session_id,
                                             const std::vector<std::string>& keys) {
  NoteCall();
  auto session = sessions_->Get(session_id, caller.name);
  if (!session.ok()) return session.status();
  return (*session)->tool_state().Snapshot(keys);
}

absl::StatusOr<std::unique_ptr<Subscription>> RuntimeEngine::Watch(
    const CallerIdentity& caller, const std::string& session_id,
    std::shared_ptr<SessionListener> listener) {
  NoteCall();
  auto session = sessions_->Get(session_id, caller.name);
  if (!session.ok()) return session.status();
  int id = (*session)->AddListener(std::move(listener));
  return std::make_unique<Subscription>(
      [session = *std::move(session), id] { session->RemoveListener(id); });
}

}  // namespace toolexec

// RuntimeEngine's artifacts [Artifacts]: saving, loading, listing and deleting
// them in a session's scope.
#include "core/runtime_engine.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace toolexec {

absl::StatusOr<std::shared_ptr<Session>> RuntimeEngine::ArtifactSession(
    const CallerIdentity& caller, const std::string& id) {
  NoteCall();
  if (id.empty()) {
    return absl::InvalidArgumentError("session_id is required: artifacts belong to a session");
  }
  auto session = sessions_->Get(id, caller.name);
  if (session.ok()) (*session)->Touch();
  return session;
}

void RuntimeEngine::SaveArtifact(const CallerIdentity& caller, const std::string& session_id,
                                 const std::string& name, Artifact artifact,
                                 std::function<void(absl::StatusOr<int64_t>)> done) {
  auto session = ArtifactSession(caller, session_id);
  if (!session.ok()) return done(session.status());
  // Through the session, as a tool's save: a child's saves are staged for
  // its merge [Delegation], "user:" names included.
  auto save = [this, session = *std::move(session), name, artifact = std::move(artifact),
               done = std::move(done)] {
    done(session->SaveArtifact(*artifacts_, name, artifact));
  };
  // As CloseSession: on this thread when no engine thread can take it.
  if (!session_work_.Submit(save).ok()) save();
}

absl::StatusOr<std::pair<Artifact, int64_t>> RuntimeEngine::LoadArtifact(
    const CallerIdentity& caller, const std::string& session_id, const std::string& name,
    int64_t version) {
  auto session = ArtifactSession(caller, session_id);
  if (!session.ok()) return session.status();
  if (version < 0) {
    return absl::InvalidArgumentError("version must be 0 (latest) or a version number");
  }
  return artifacts_->Load((*session)->artifact_scope(), name, version);
}

absl::StatusOr<std::vector<std::string>> RuntimeEngine::ListArtifacts(
    const CallerIdentity& caller, const std::string& session_id) {
  auto session = ArtifactSession(caller, session_id);
  if (!session.ok()) return session.status();
  return artifacts_->List((*session)->artifact_scope());
}

absl::StatusOr<std::vector<int64_t>> RuntimeEngine::ListVersions(const CallerIdentity& caller,
                                                                 const std::string& session_id,
                                                                 const std::string& name) {
  auto session = ArtifactSession(caller, session_id);
  if (!session.ok()) return session.status();
  return artifacts_->Versions((*session)->artifact_scope(), name);
}

absl::Status RuntimeEngine::DeleteArtifact(const CallerIdentity& caller,
                                           const std::string& session_id,
                                           const std::string& name, int64_t version) {
  auto session = ArtifactSession(caller, session_id);
  if (!session.ok()) return session.status();
  if (version < 0) {
    return absl::InvalidArgumentError("version must be 0 (all) or a version number");
  }
  return artifacts_->Delete((*session)->artifact_scope(), name, version);
}

}  // namespace toolexec

#include "server/artifact_store_service.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "spdlog/spdlog.h"

namespace toolexec {
namespace {

grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* context, const char* method,
                                const absl::Status& status, const std::string& detail) {
  spdlog::info("{} peer={} {} status={}{}{}", method, context->peer(), detail,
               absl::StatusCodeToString(status.code()), status.ok() ? "" : " ",
               std::string(status.message()));
  auto* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// The session's scope, touching the session (it is in use).
absl::StatusOr<std::shared_ptr<Session>> SessionOf(ServiceCore* core, const std::string& id) {
  if (id.empty()) return absl::InvalidArgumentError("session_id is required: artifacts belong to a session");
  auto session = core->sessions().Get(id);
  if (session.ok()) (*session)->Touch();
  return session;
}

}  // namespace

grpc::ServerUnaryReactor* ArtifactStoreService::SaveArtifact(grpc::CallbackServerContext* c,
                                                             const v1::SaveArtifactRequest* req,
                                                             v1::SaveArtifactResponse* resp) {
  auto session = SessionOf(core_, req->session_id());
  if (!session.ok()) return Reply(c, "SaveArtifact", session.status(), "");
  const v1::Artifact& in = req->artifact();
  if (in.content_case() == v1::Artifact::CONTENT_NOT_SET) {
    return Reply(c, "SaveArtifact",
                 absl::InvalidArgumentError("the artifact needs content: set text or data"),
                 "name=" + req->name());
  }
  Artifact a;
  a.is_text = in.content_case() == v1::Artifact::kText;
  a.text = in.text();
  a.data = in.data();
  a.mime_type = in.mime_type();
  // Through the session, as a tool's save: a child's saves are staged for
  // its merge (S11), "user:" names included.
  auto version = (*session)->SaveArtifact(core_->artifacts(), req->name(), a);
  if (version.ok()) resp->set_version(*version);
  return Reply(c, "SaveArtifact", version.status(),
               absl::StrCat("name=", req->name(), version.ok() ? absl::StrCat(" version=", *version) : ""));
}

grpc::ServerUnaryReactor* ArtifactStoreService::LoadArtifact(grpc::CallbackServerContext* c,
                                                             const v1::LoadArtifactRequest* req,
                                                             v1::LoadArtifactResponse* resp) {
  auto session = SessionOf(core_, req->session_id());
  if (!session.ok()) return Reply(c, "LoadArtifact", session.status(), "");
  if (req->version() < 0) {
    return Reply(c, "LoadArtifact",
                 absl::InvalidArgumentError("version must be 0 (latest) or a version number"), "");
  }
  auto loaded = core_->artifacts().Load((*session)->artifact_scope(), req->name(), req->version());
  if (loaded.ok()) {
    const Artifact& a = loaded->first;
    if (a.is_text) {
      resp->mutable_artifact()->set_text(a.text);
    } else {
      resp->mutable_artifact()->set_data(a.data);
    }
    resp->mutable_artifact()->set_mime_type(a.mime_type);
    resp->set_version(loaded->second);
  }
  return Reply(c, "LoadArtifact", loaded.status(), "name=" + req->name());
}

grpc::ServerUnaryReactor* ArtifactStoreService::ListArtifacts(grpc::CallbackServerContext* c,
                                                              const v1::ListArtifactsRequest* req,
                                                              v1::ListArtifactsResponse* resp) {
  auto session = SessionOf(core_, req->session_id());
  if (!session.ok()) return Reply(c, "ListArtifacts", session.status(), "");
  auto names = core_->artifacts().List((*session)->artifact_scope());
  if (names.ok()) {
    for (const auto& n : *names) resp->add_names(n);
  }
  return Reply(c, "ListArtifacts", names.status(), "");
}

grpc::ServerUnaryReactor* ArtifactStoreService::ListVersions(grpc::CallbackServerContext* c,
                                                             const v1::ListVersionsRequest* req,
                                                             v1::ListVersionsResponse* resp) {
  auto session = SessionOf(core_, req->session_id());
  if (!session.ok()) return Reply(c, "ListVersions", session.status(), "");
  auto versions = core_->artifacts().Versions((*session)->artifact_scope(), req->name());
  if (versions.ok()) {
    for (int64_t v : *versions) resp->add_versions(v);
  }
  return Reply(c, "ListVersions", versions.status(), "name=" + req->name());
}

grpc::ServerUnaryReactor* ArtifactStoreService::DeleteArtifact(
    grpc::CallbackServerContext* c, const v1::DeleteArtifactRequest* req,
    v1::DeleteArtifactResponse*) {
  auto session = SessionOf(core_, req->session_id());
  if (!session.ok()) return Reply(c, "DeleteArtifact", session.status(), "");
  if (req->version() < 0) {
    return Reply(c, "DeleteArtifact",
                 absl::InvalidArgumentError("version must be 0 (all) or a version number"), "");
  }
  absl::Status s =
      core_->artifacts().Delete((*session)->artifact_scope(), req->name(), req->version());
  return Reply(c, "DeleteArtifact", s, "name=" + req->name());
}

}  // namespace toolexec

#include "server/artifact_store_service.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "server/unary.h"

namespace toolexec {

grpc::ServerUnaryReactor* ArtifactStoreService::SaveArtifact(grpc::CallbackServerContext* c,
                                                             const v1::SaveArtifactRequest* req,
                                                             v1::SaveArtifactResponse* resp) {
  auto caller = AuthenticateCall(auth_, *c);
  if (!caller.ok()) return ReplyUnary(c, "SaveArtifact", {}, caller.status());
  auto* reactor = c->DefaultReactor();
  auto answer = [c, req, resp, reactor, who = *caller](absl::StatusOr<int64_t> version) {
    if (version.ok()) resp->set_version(*version);
    FinishUnary(c, reactor, "SaveArtifact", who, version.status(),
                absl::StrCat("name=", req->name(),
                             version.ok() ? absl::StrCat(" version=", *version) : ""));
  };
  if (req->artifact().content_case() == v1::Artifact::CONTENT_NOT_SET) {
    answer(absl::InvalidArgumentError("the artifact needs content: set text or data"));
  } else {
    // The engine answers on its own thread: a store on disk syncs the
    // version, which must not hold a gRPC thread.
    engine_->SaveArtifact(*caller, req->session_id(), req->name(),
                          FromProto(req->artifact()), std::move(answer));
  }
  return reactor;
}

grpc::ServerUnaryReactor* ArtifactStoreService::LoadArtifact(grpc::CallbackServerContext* c,
                                                             const v1::LoadArtifactRequest* req,
                                                             v1::LoadArtifactResponse* resp) {
  auto caller = AuthenticateCall(auth_, *c);
  if (!caller.ok()) return ReplyUnary(c, "LoadArtifact", {}, caller.status());
  auto loaded = engine_->LoadArtifact(*caller, req->session_id(), req->name(), req->version());
  if (loaded.ok()) {
    ToProto(loaded->first, resp->mutable_artifact());
    resp->set_version(loaded->second);
  }
  return ReplyUnary(c, "LoadArtifact", *caller, loaded.status(), "name=" + req->name());
}

grpc::ServerUnaryReactor* ArtifactStoreService::ListArtifacts(grpc::CallbackServerContext* c,
                                                              const v1::ListArtifactsRequest* req,
                                                              v1::ListArtifactsResponse* resp) {
  auto caller = AuthenticateCall(auth_, *c);
  if (!caller.ok()) return ReplyUnary(c, "ListArtifacts", {}, caller.status());
  auto names = engine_->ListArtifacts(*caller, req->session_id());
  if (names.ok()) {
    for (const auto& n : *names) resp->add_names(n);
  }
  return ReplyUnary(c, "ListArtifacts", *caller, names.status());
}

grpc::ServerUnaryReactor* ArtifactStoreService::ListVersions(grpc::CallbackServerContext* c,
                                                             const v1::ListVersionsRequest* req,
                                                             v1::ListVersionsResponse* resp) {
  auto caller = AuthenticateCall(auth_, *c);
  if (!caller.ok()) return ReplyUnary(c, "ListVersions", {}, caller.status());
  auto versions = engine_->ListVersions(*caller, req->session_id(), req->name());
  if (versions.ok()) {
    for (int64_t v : *versions) resp->add_versions(v);
  }
  return ReplyUnary(c, "ListVersions", *caller, versions.status(), "name=" + req->name());
}

grpc::ServerUnaryReactor* ArtifactStoreService::DeleteArtifact(
    grpc::CallbackServerContext* c, const v1::DeleteArtifactRequest* req,
    v1::DeleteArtifactResponse*) {
  auto caller = AuthenticateCall(auth_, *c);
  if (!caller.ok()) return ReplyUnary(c, "DeleteArtifact", {}, caller.status());
  absl::Status s =
      engine_->DeleteArtifact(*caller, req->session_id(), req->name(), req->version());
  return ReplyUnary(c, "DeleteArtifact", *caller, s, "name=" + req->name());
}

}  // namespace toolexec

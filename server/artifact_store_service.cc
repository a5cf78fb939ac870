#include "server/artifact_store_service.h"

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace toolexec {
namespace {

grpc::ServerUnaryReactor* NotYet(grpc::CallbackServerContext* context, const char* method) {
  spdlog::info("{} peer={} status=UNIMPLEMENTED", method, context->peer());
  auto* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status(
      grpc::StatusCode::UNIMPLEMENTED,
      absl::StrCat("ArtifactStore.", method,
                   " is not supported by this version of toolexecd: artifacts are not stored yet")));
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* ArtifactStoreService::SaveArtifact(grpc::CallbackServerContext* c,
                                                             const v1::SaveArtifactRequest*,
                                                             v1::SaveArtifactResponse*) {
  return NotYet(c, "SaveArtifact");
}
grpc::ServerUnaryReactor* ArtifactStoreService::LoadArtifact(grpc::CallbackServerContext* c,
                                                             const v1::LoadArtifactRequest*,
                                                             v1::LoadArtifactResponse*) {
  return NotYet(c, "LoadArtifact");
}
grpc::ServerUnaryReactor* ArtifactStoreService::ListArtifacts(grpc::CallbackServerContext* c,
                                                              const v1::ListArtifactsRequest*,
                                                              v1::ListArtifactsResponse*) {
  return NotYet(c, "ListArtifacts");
}
grpc::ServerUnaryReactor* ArtifactStoreService::ListVersions(grpc::CallbackServerContext* c,
                                                             const v1::ListVersionsRequest*,
                                                             v1::ListVersionsResponse*) {
  return NotYet(c, "ListVersions");
}
grpc::ServerUnaryReactor* ArtifactStoreService::DeleteArtifact(grpc::CallbackServerContext* c,
                                                               const v1::DeleteArtifactRequest*,
                                                               v1::DeleteArtifactResponse*) {
  return NotYet(c, "DeleteArtifact");
}

}  // namespace toolexec

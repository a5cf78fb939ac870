// The toolexec.v1.ArtifactStore gRPC service [Artifacts]: converts each request,
// calls the Engine's artifact calls (scoped by the request's session: its
// conversation, or its user for "user:" names) and finishes with the status
// converted once. A bad name is INVALID_ARGUMENT, a missing artifact or
// session NOT_FOUND.
#ifndef TOOLEXEC_SERVER_ARTIFACT_STORE_SERVICE_H_
#define TOOLEXEC_SERVER_ARTIFACT_STORE_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "core/engine.h"
#include "server/auth.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec {

class ArtifactStoreService final : public v1::ArtifactStore::CallbackService {
 public:
  // `engine` and `auth` (null = every caller unauthenticated) must outlive
  // the service.
  explicit ArtifactStoreService(Engine* engine, const Authenticator* auth = nullptr)
      : engine_(engine), auth_(auth) {}

  grpc::ServerUnaryReactor* SaveArtifact(grpc::CallbackServerContext* context,
                                         const v1::SaveArtifactRequest* request,
                                         v1::SaveArtifactResponse* response) override;
  grpc::ServerUnaryReactor* LoadArtifact(grpc::CallbackServerContext* context,
                                         const v1::LoadArtifactRequest* request,
                                         v1::LoadArtifactResponse* response) override;
  grpc::ServerUnaryReactor* ListArtifacts(grpc::CallbackServerContext* context,
                                          const v1::ListArtifactsRequest* request,
                                          v1::ListArtifactsResponse* response) override;
  grpc::ServerUnaryReactor* ListVersions(grpc::CallbackServerContext* context,
                                         const v1::ListVersionsRequest* request,
                                         v1::ListVersionsResponse* response) override;
  grpc::ServerUnaryReactor* DeleteArtifact(grpc::CallbackServerContext* context,
                                           const v1::DeleteArtifactRequest* request,
                                           v1::DeleteArtifactResponse* response) override;

 private:
  Engine* const engine_;
  const Authenticator* const auth_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_ARTIFACT_STORE_SERVICE_H_

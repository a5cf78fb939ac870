// The toolexec.v1.ToolExecutor gRPC service: each handler converts the
// request (convert.h), calls the Engine, converts the answer, and finishes
// with the status converted once (unary.h), logging one line. Streaming RPCs
// are reactors of their own (execute_batch_reactor.h, watch_session_reactor.h).
// Stateless apart from the declarations, converted once per registry
// snapshot (tools/runtime/tool_registry.h). ListTools is served
// as bytes so that its response is serialized deterministically: the same
// declarations are the same bytes on every call and across restarts (model
// providers cache prompts by their bytes).
#ifndef TOOLEXEC_SERVER_TOOL_EXECUTOR_SERVICE_H_
#define TOOLEXEC_SERVER_TOOL_EXECUTOR_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#include "core/engine.h"
#include "server/auth.h"
#include "server/options.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec {

class ToolExecutorService final
    : public v1::ToolExecutor::WithRawCallbackMethod_ListTools<v1::ToolExecutor::CallbackService> {
 public:
  // `engine` and `auth` (null = every caller unauthenticated) must outlive
  // the service. Every handler authenticates its call first.
  ToolExecutorService(Engine* engine, const ServerOptions& options,
                      const Authenticator* auth = nullptr);

  // The declarations in registration order, and provider_tools_json in the
  // requested format (as bytes: see above).
  grpc::ServerUnaryReactor* ListTools(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request_bytes,
                                      grpc::ByteBuffer* response_bytes) override;
  grpc::ServerWriteReactor<v1::ExecuteBatchResponse>* ExecuteBatch(
      grpc::CallbackServerContext* context, const v1::ExecuteBatchRequest* request) override;
  grpc::ServerUnaryReactor* OpenSession(grpc::CallbackServerContext* context,
                                        const v1::OpenSessionRequest* request,
                                        v1::Session* response) override;
  grpc::ServerUnaryReactor* UpdateSession(grpc::CallbackServerContext* context,
                                          const v1::UpdateSessionRequest* request,
                                          v1::Session* response) override;
  grpc::ServerUnaryReactor* CloseSession(grpc::CallbackServerContext* context,
                                         const v1::CloseSessionRequest* request,
                                         v1::CloseSessionResponse* response) override;
  grpc::ServerUnaryReactor* GetState(grpc::CallbackServerContext* context,
                                     const v1::GetStateRequest* request,
                                     v1::GetStateResponse* response) override;
  grpc::ServerWriteReactor<v1::SessionEvent>* WatchSession(
      grpc::CallbackServerContext* context, const v1::WatchSessionRequest* request) override;
  grpc::ServerUnaryReactor* RespondPermission(grpc::CallbackServerContext* context,
                                              const v1::RespondPermissionRequest* request,
                                              v1::RespondPermissionResponse* response) override;
  grpc::ServerWriteReactor<v1::ExportRecordingResponse>* ExportRecording(
      grpc::CallbackServerContext* context, const v1::ExportRecordingRequest* request) override;

 private:
  absl::Status ListDeclarations(const CallerIdentity& caller, const v1::ListToolsRequest& request,
                                v1::ListToolsResponse* response) const;

  Engine* const engine_;
  const Authenticator* const auth_;
  const int max_send_message_bytes_;
  // The declarations of one registry snapshot, by position.
  struct Declarations {
    uint64_t generation = 0;
    std::vector<v1::ToolDeclaration> tools;
  };
  // Those of `tools`'s snapshot: cached until a newer snapshot is listed.
  std::shared_ptr<const Declarations> DeclarationsOf(const ToolList& tools) const;

  mutable absl::Mutex mu_;
  mutable std::shared_ptr<const Declarations> declarations_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_TOOL_EXECUTOR_SERVICE_H_

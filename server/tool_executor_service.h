// The toolexec.v1.ToolExecutor gRPC service: each handler converts the
// request (convert.h), calls the Engine, converts the answer, and finishes
// with the status converted once (unary.h), logging one line. Streaming RPCs
// are reactors of their own (execute_batch_reactor.h, watch_session_reactor.h).
// Stateless: the declarations come rendered once per registry snapshot
// (server/tool_declarations.h). ListTools is served
// as bytes so that its response is serialized deterministically: the same
// declarations are the same bytes on every call and across restarts (model
// providers cache prompts by their bytes).
#ifndef TOOLEXEC_SERVER_TOOL_EXECUTOR_SERVICE_H_
#define TOOLEXEC_SERVER_TOOL_EXECUTOR_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>


#include "core/engine.h"
#include "server/auth.h"
#include "server/options.h"
#include "server/tool_declarations.h"
#include "tools/runtime/executor.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec {

class ToolExecutorService final
    : public v1::ToolExecutor::WithRawCallbackMethod_ListTools<v1::ToolExecutor::CallbackService> {
 public:
  // `engine`, `declarations` (the engine's tools rendered) and `auth` (null =
  // every caller unauthenticated) must outlive the service. Every handler
  // authenticates its call first.
  ToolExecutorService(Engine* engine, const ToolDeclarations* declarations,
                      const ServerOptions& options, const Authenticator* auth = nullptr);

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
  // Checkpoints: diff and restore read and write files, so they run on the
  // service's own threads, never a gRPC one.
  grpc::ServerUnaryReactor* ListCheckpoints(grpc::CallbackServerContext* context,
                                            const v1::ListCheckpointsRequest* request,
                                            v1::ListCheckpointsResponse* response) override;
  grpc::ServerUnaryReactor* DiffCheckpoint(grpc::CallbackServerContext* context,
                                           const v1::DiffCheckpointRequest* request,
                                           v1::DiffCheckpointResponse* response) override;
  grpc::ServerUnaryReactor* RestoreCheckpoint(grpc::CallbackServerContext* context,
                                              const v1::RestoreCheckpointRequest* request,
                                              v1::RestoreCheckpointResponse* response) override;

 private:
  absl::Status ListDeclarations(const CallerIdentity& caller, const v1::ListToolsRequest& request,
                                v1::ListToolsResponse* response) const;

  Engine* const engine_;
  const ToolDeclarations* const declarations_;
  const Authenticator* const auth_;
  const int max_send_message_bytes_;
  // Runs `work` off the gRPC thread (inline when no thread can take it).
  void OffThread(std::function<void()> work);
  Executor checkpoint_work_{Executor::Options{/*min_threads=*/0, /*max_threads=*/4,
                                              /*idle_timeout=*/absl::Seconds(10)}};
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_TOOL_EXECUTOR_SERVICE_H_

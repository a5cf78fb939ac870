#include "server/unary.h"

#include "server/convert.h"
#include "server/metrics.h"
#include "spdlog/spdlog.h"

namespace toolexec {

TraceContext RpcTrace(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("traceparent");
  if (it == metadata.end()) return TraceContext::FromTraceparent("");
  return TraceContext::FromTraceparent(absl::string_view(it->second.data(), it->second.size()));
}

void FinishUnary(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                 const char* method, const absl::Status& status, const std::string& detail) {
  grpc::Status wire = ToGrpcStatus(status);
  CountRpc(method, wire.error_code());
  if (spdlog::should_log(spdlog::level::info)) {
    const std::string traceparent = RpcTrace(context).Traceparent();
    ScopedTraceLog trace(traceparent);
    spdlog::info("{} peer={}{}{} {}", method, context->peer(), detail.empty() ? "" : " ", detail,
                 StatusLogFields(wire));
  }
  reactor->Finish(wire);
}

grpc::ServerUnaryReactor* ReplyUnary(grpc::CallbackServerContext* context, const char* method,
                                     const absl::Status& status, const std::string& detail) {
  auto* reactor = context->DefaultReactor();
  FinishUnary(context, reactor, method, status, detail);
  return reactor;
}

}  // namespace toolexec

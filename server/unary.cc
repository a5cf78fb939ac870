#include "server/unary.h"

#include "server/convert.h"
#include "spdlog/spdlog.h"

namespace toolexec {

void FinishUnary(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                 const char* method, const absl::Status& status, const std::string& detail) {
  grpc::Status wire = ToGrpcStatus(status);
  if (spdlog::should_log(spdlog::level::info)) {
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

#include "server/unary.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "server/metrics.h"
#include "spdlog/spdlog.h"

namespace toolexec {

void AddCallerField(const std::string& caller_name, LogLine* line) {
  if (!caller_name.empty()) line->Add("caller", caller_name);
}

TraceContext RpcTrace(const grpc::CallbackServerContext* context) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("traceparent");
  if (it == metadata.end()) return TraceContext::FromTraceparent("");
  return TraceContext::FromTraceparent(absl::string_view(it->second.data(), it->second.size()));
}

void FinishUnary(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                 const char* method, const CallerIdentity& caller, const absl::Status& status,
                 const std::string& detail) {
  grpc::Status wire = ToGrpcStatus(status);
  CountRpc(method, wire.error_code());
  if (spdlog::should_log(spdlog::level::info)) {
    const std::string traceparent = RpcTrace(context).Traceparent();
    ScopedTraceLog trace(traceparent);
    LogLine line(method);
    line.Add("peer", context->peer());
    AddCallerField(caller.name, &line);
    if (!detail.empty()) line.AddPairs(detail);
    AddStatusFields(wire, &line);
    line.Write(spdlog::level::info);
  }
  reactor->Finish(wire);
}

grpc::ServerUnaryReactor* ReplyUnary(grpc::CallbackServerContext* context, const char* method,
                                     const CallerIdentity& caller, const absl::Status& status,
                                     const std::string& detail) {
  auto* reactor = context->DefaultReactor();
  FinishUnary(context, reactor, method, caller, status, detail);
  return reactor;
}

}  // namespace toolexec

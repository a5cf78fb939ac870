#include "server/unary.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "server/metrics.h"
#include "spdlog/spdlog.h"

namespace toolexec {

std::string CallerLogField(const CallerIdentity& caller) {
  if (caller.name.empty()) return "";
  const bool plain = std::all_of(caller.name.begin(), caller.name.end(),
                                 [](char c) { return c > 0x20 && c < 0x7f && c != '"'; });
  if (plain) return absl::StrCat(" caller=", caller.name);
  return absl::StrCat(" caller=\"", absl::CEscape(caller.name), "\"");
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
    spdlog::info("{} peer={}{}{}{} {}", method, context->peer(), CallerLogField(caller),
                 detail.empty() ? "" : " ", detail, StatusLogFields(wire));
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

#include "server/tool_executor_service.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "server/execute_batch_reactor.h"
#include "server/export_recording_reactor.h"
#include "server/unary.h"
#include "server/watch_session_reactor.h"
#include "tools/runtime/provider_format.h"

namespace toolexec {

ToolExecutorService::ToolExecutorService(Engine* engine, const ToolDeclarations* declarations,
                                         const ServerOptions& options, const Authenticator* auth)
    : engine_(engine),
      declarations_(declarations),
      auth_(auth),
      max_send_message_bytes_(options.max_send_message_bytes) {}

grpc::ServerUnaryReactor* ToolExecutorService::ListTools(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request_bytes,
                                                         grpc::ByteBuffer* response_bytes) {
  auto caller = AuthenticateCall(auth_, *context);
  if (!caller.ok()) return ReplyUnary(context, "ListTools", {}, caller.status());
  v1::ListToolsRequest request;
  v1::ListToolsResponse response;
  grpc::ByteBuffer copy(*request_bytes);
  absl::Status status =
      grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::ListToolsRequest>(&copy, &request).ok()
          ? ListDeclarations(*caller, request, &response)
          : absl::InvalidArgumentError("malformed ListToolsRequest");
  if (status.ok()) *response_bytes = DeterministicBytes(response);
  return ReplyUnary(context, "ListTools", *caller, status,
                    absl::StrCat("set=", request.tool_set(), " tools=", response.tools_size()));
}

static_assert(static_cast<int>(DeclarationFormat::kNative) == v1::DECLARATION_FORMAT_NATIVE &&
              static_cast<int>(DeclarationFormat::kOpenAi) == v1::DECLARATION_FORMAT_OPENAI &&
              static_cast<int>(DeclarationFormat::kOpenAiStrict) ==
                  v1::DECLARATION_FORMAT_OPENAI_STRICT &&
              static_cast<int>(DeclarationFormat::kAnthropic) == v1::DECLARATION_FORMAT_ANTHROPIC &&
              static_cast<int>(DeclarationFormat::kGemini) == v1::DECLARATION_FORMAT_GEMINI &&
              static_cast<int>(DeclarationFormat::kOpenAiResponses) ==
                  v1::DECLARATION_FORMAT_OPENAI_RESPONSES,
              "DeclarationFormat mirrors toolexec.v1.DeclarationFormat");

absl::Status ToolExecutorService::ListDeclarations(const CallerIdentity& caller,
                                                   const v1::ListToolsRequest& request,
                                                   v1::ListToolsResponse* response) const {
  if (!v1::DeclarationFormat_IsValid(request.format())) {
    return absl::InvalidArgumentError(absl::StrCat("unknown format ", request.format()));
  }
  auto tools = engine_->ListTools(caller, request.session_id(), request.tool_set());
  if (!tools.ok()) return tools.status();
  std::shared_ptr<const ToolDeclarations::Rendered> declarations = declarations_->Of(*tools);
  for (const RegisteredTool* t : *tools) {
    v1::ToolDeclaration* d = response->add_tools();
    *d = declarations->grpc[t->position];
    // An MCP tool whose server is down says so (the cache holds what is fixed).
    if (std::string why = t->tool->unavailable_reason(); !why.empty()) d->set_unavailable_reason(why);
  }
  if (request.format() != v1::DECLARATION_FORMAT_NATIVE) {
    // Names the providers reject are rewritten over the whole snapshot, as
    // the engine resolves them when the calls come back.
    const ProviderNames names(*tools->registry());
    DeclarationOptions options;
    options.native_tools = request.native_tools();
    options.names = &names;
    response->set_provider_tools_json(ProviderToolsJson(
        static_cast<DeclarationFormat>(request.format()), tools->tools(), options));
  }
  // A server not ready has no tools to mark: it is listed itself.
  for (const mcp::McpServerStatus& server : engine_->mcp_servers()) {
    v1::McpServerStatus* out = response->add_mcp_servers();
    out->set_name(server.name);
    out->set_ready(server.ready);
    out->set_unavailable_reason(server.reason);
    out->set_tools(static_cast<uint32_t>(server.tools));
    out->set_tools_left_out(static_cast<uint32_t>(server.tools_left_out));
    for (const std::string& why : server.refused_tools) out->add_refused_tools(why);
  }
  return absl::OkStatus();
}

grpc::ServerWriteReactor<v1::ExecuteBatchResponse>* ToolExecutorService::ExecuteBatch(
    grpc::CallbackServerContext* context, const v1::ExecuteBatchRequest* request) {
  return ExecuteBatchReactor::Start(engine_, context, AuthenticateCall(auth_, *context), *request,
                                    max_send_message_bytes_);
}

grpc::ServerUnaryReactor* ToolExecutorService::OpenSession(grpc::CallbackServerContext* context,
                                                           const v1::OpenSessionRequest* request,
                                                           v1::Session* response) {
  auto caller = AuthenticateCall(auth_, *context);
  if (!caller.ok()) return ReplyUnary(context, "OpenSession", {}, caller.status());
  auto session = engine_->OpenSession(*caller, FromProto(*request));
  if (session.ok()) ToProto(*session, response);
  return ReplyUnary(context, "OpenSession", *caller, session.status(),
                    session.ok() ? absl::StrCat("session=", session->session_id) : "");
}

grpc::ServerUnaryReactor* ToolExecutorService::UpdateSession(
    grpc::CallbackServerContext* context, const v1::UpdateSessionRequest* request,
    v1::Session* response) {
  auto caller = AuthenticateCall(auth_, *context);
  if (!caller.ok()) return ReplyUnary(context, "UpdateSession", {}, caller.status());
  auto session = engine_->UpdateSession(*caller, request->session_id(), request->idle());
  if (session.ok()) ToProto(*session, response);
  return ReplyUnary(context, "UpdateSession", *caller, session.status(),
                    absl::StrCat("session=", request->session_id(), " idle=", request->idle()));
}

grpc::ServerUnaryReactor* ToolExecutorService::CloseSession(
    grpc::CallbackServerContext* context, const v1::CloseSessionRequest* request,
    v1::CloseSessionResponse* response) {
  auto caller = AuthenticateCall(auth_, *context);
  if (!caller.ok()) return ReplyUnary(context, "CloseSession", {}, caller.status());
  auto* reactor = context->DefaultReactor();
  // The engine answers on its own thread: closing may wait out the kill grace
  // of background commands, which must not hold a gRPC thread.
  engine_->CloseSession(
      *caller, request->session_id(), FromProto(*request),
      [context, request, response, reactor, who = *caller](absl::StatusOr<MergeResult> merged) {
        if (merged.ok()) ToProto(*merged, response->mutable_merged());
        FinishUnary(context, reactor, "CloseSession", who, merged.status(),
                    absl::StrCat("session=", request->session_id(),
                                 request->discard() ? " discard" : ""));
      });
  return reactor;
}

grpc::ServerUnaryReactor* ToolExecutorService::GetState(grpc::CallbackServerContext* context,
                                                        const v1::GetStateRequest* request,
                                                        v1::GetStateResponse* response) {
  auto caller = AuthenticateCall(auth_, *context);
  if (!caller.ok()) return ReplyUnary(context, "GetState", {}, caller.status());
  std::vector<std::string> keys(request->keys().begin(), request->keys().end());
  auto state = engine_->GetState(*caller, request->session_id(), keys);
  absl::Status status =
      state.ok() ? JsonToStruct(*state, response->mutable_state()) : state.status();
  return ReplyUnary(context, "GetState", *caller, status, absl::StrCat("session=", request->session_id()));
}

grpc::ServerWriteReactor<v1::SessionEvent>* ToolExecutorService::WatchSession(
    grpc::CallbackServerContext* context, const v1::WatchSessionRequest* request) {
  return WatchSessionReactor::Start(engine_, context, AuthenticateCall(auth_, *context), *request);
}

grpc::ServerUnaryReactor* ToolExecutorService::RespondPermission(
    grpc::CallbackServerContext* context, const v1::RespondPermissionRequest* request,
    v1::RespondPermissionResponse* /*response*/) {
  auto caller = AuthenticateCall(auth_, *context);
  if (!caller.ok()) return ReplyUnary(context, "RespondPermission", {}, caller.status());
  absl::Status status;
  PermissionAnswer answer = PermissionAnswer::kDeny;
  switch (request->decision()) {
    case v1::PERMISSION_DECISION_ALLOW_ONCE:
      answer = PermissionAnswer::kAllowOnce;
      break;
    case v1::PERMISSION_DECISION_ALLOW_SESSION:
      answer = PermissionAnswer::kAllowSession;
      break;
    case v1::PERMISSION_DECISION_DENY:
      answer = PermissionAnswer::kDeny;
      break;
    default:
      status = absl::InvalidArgumentError(
          "decision is required: PERMISSION_DECISION_ALLOW_ONCE, _ALLOW_SESSION or _DENY");
  }
  if (request->request_id().empty()) {
    status = absl::InvalidArgumentError(
        "request_id is required: the PermissionRequest.request_id being answered");
  }
  if (status.ok()) {
    status = engine_->RespondPermission(*caller, request->request_id(), answer,
                                        request->reason());
  }
  return ReplyUnary(context, "RespondPermission", *caller, status,
                    absl::StrCat("request=", request->request_id()));
}

grpc::ServerWriteReactor<v1::ExportRecordingResponse>* ToolExecutorService::ExportRecording(
    grpc::CallbackServerContext* context, const v1::ExportRecordingRequest* request) {
  return ExportRecordingReactor::Start(
      engine_, context, AuthenticateCall(auth_, *context), *request,
      [this](std::function<void()> work) { OffThread(std::move(work)); });
}

void ToolExecutorService::OffThread(std::function<void()> work) {
  auto shared = std::make_shared<std::function<void()>>(std::move(work));
  if (!checkpoint_work_.Submit([shared] { (*shared)(); }).ok()) (*shared)();
}

grpc::ServerUnaryReactor* ToolExecutorService::ListCheckpoints(
    grpc::CallbackServerContext* context, const v1::ListCheckpointsRequest* request,
    v1::ListCheckpointsResponse* response) {
  auto caller = AuthenticateCall(auth_, *context);
  if (!caller.ok()) return ReplyUnary(context, "ListCheckpoints", {}, caller.status());
  auto listed = engine_->ListCheckpoints(*caller, request->session_id());
  if (listed.ok()) {
    for (const checkpoint::CheckpointInfo& c : *listed) ToProto(c, response->add_checkpoints());
  }
  return ReplyUnary(context, "ListCheckpoints", *caller, listed.status(),
                    absl::StrCat("session=", request->session_id()));
}

grpc::ServerUnaryReactor* ToolExecutorService::DiffCheckpoint(
    grpc::CallbackServerContext* context, const v1::DiffCheckpointRequest* request,
    v1::DiffCheckpointResponse* response) {
  auto caller = AuthenticateCall(auth_, *context);
  if (!caller.ok()) return ReplyUnary(context, "DiffCheckpoint", {}, caller.status());
  auto* reactor = context->DefaultReactor();
  OffThread([this, context, request, response, reactor, who = *caller] {
    std::vector<std::string> paths(request->paths().begin(), request->paths().end());
    auto diff = engine_->DiffCheckpoint(who, request->session_id(), request->from_checkpoint_id(),
                                        request->to_checkpoint_id(), paths);
    if (diff.ok()) ToProto(*diff, response);
    FinishUnary(context, reactor, "DiffCheckpoint", who, diff.status(),
                absl::StrCat("session=", request->session_id(), " from=", request->from_checkpoint_id(),
                             " to=", request->to_checkpoint_id()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* ToolExecutorService::RestoreCheckpoint(
    grpc::CallbackServerContext* context, const v1::RestoreCheckpointRequest* request,
    v1::RestoreCheckpointResponse* response) {
  auto caller = AuthenticateCall(auth_, *context);
  if (!caller.ok()) return ReplyUnary(context, "RestoreCheckpoint", {}, caller.status());
  auto* reactor = context->DefaultReactor();
  OffThread([this, context, request, response, reactor, who = *caller] {
    std::vector<std::string> paths(request->paths().begin(), request->paths().end());
    auto restored = engine_->RestoreCheckpoint(who, request->session_id(), request->checkpoint_id(),
                                               paths, request->dry_run());
    if (restored.ok()) ToProto(*restored, response);
    FinishUnary(context, reactor, "RestoreCheckpoint", who, restored.status(),
                absl::StrCat("session=", request->session_id(), " checkpoint=",
                             request->checkpoint_id(), request->dry_run() ? " dry_run" : "",
                             restored.ok() ? absl::StrCat(" changes=", restored->changes.size()) : ""));
  });
  return reactor;
}

}  // namespace toolexec

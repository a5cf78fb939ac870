#include "server/tool_executor_service.h"

#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/convert.h"
#include "server/execute_batch_reactor.h"
#include "server/watch_session_reactor.h"
#include "tools/runtime/provider_format.h"
#include "spdlog/spdlog.h"
#include "tools/builtin/fs/confined.h"
#include "tools/runtime/tool_sets.h"

namespace toolexec {
namespace {

// Writes a unary RPC's log line and finishes it on `reactor`.
void Finish(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
            const char* method, const absl::Status& status, const std::string& detail) {
  if (status.ok()) {
    spdlog::info("{} peer={} {} status=OK", method, context->peer(), detail);
  } else {
    spdlog::info("{} peer={} {} status={} {}", method, context->peer(), detail,
                 absl::StatusCodeToString(status.code()), std::string(status.message()));
  }
  reactor->Finish(ToGrpcStatus(status));
}

// Finishes a unary RPC on its default reactor and writes its log line.
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* context, const char* method,
                                const absl::Status& status, const std::string& detail = "") {
  auto* reactor = context->DefaultReactor();
  Finish(context, reactor, method, status, detail);
  return reactor;
}

// A session's workspace: an existing directory inside the daemon's, resolved
// beneath the daemon's root handle (never by a path name checked first and
// opened later) and held open for the session's life. `path` is relative to
// the daemon's workspace, or absolute inside it.
absl::StatusOr<std::shared_ptr<const fs::ConfinedRoot>> OpenSessionWorkspace(
    const std::shared_ptr<const fs::ConfinedRoot>& daemon_root, const std::string& path) {
  auto wp = fs::ResolveWorkspacePath({daemon_root}, path.empty() ? "." : path, "workspaces");
  absl::StatusOr<std::shared_ptr<const fs::ConfinedRoot>> root =
      wp.ok() ? fs::ConfinedRoot::OpenWithin(*wp) : wp.status();
  if (root.ok()) return root;
  const absl::Status& s = root.status();
  if (ErrorCodeOf(s) == ErrorCode::kDenied) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workspace '", path, "' is outside the daemon's workspace ", daemon_root->path()));
  }
  if (absl::IsNotFound(s)) {
    return absl::InvalidArgumentError(absl::StrCat("workspace '", path, "' does not exist"));
  }
  // "'a.txt' is not a directory", a malformed path, a symlink loop, ...
  return absl::InvalidArgumentError(absl::StrCat("workspace ", s.message()));
}

void FillSession(const Session& s, const ToolRegistry& registry, v1::Session* out) {
  out->set_session_id(s.id());
  for (const auto& w : s.warnings()) out->add_warnings(w);
  out->set_conversation_id(s.conversation_id());
  out->set_idle(s.idle());
  out->set_user_id(s.user_id());
  out->set_parent_session_id(s.parent_session_id());
  for (const auto& w : s.workspaces()) out->add_workspaces(w->path());
  if (s.tools().empty()) {
    for (const auto& name : registry.names()) out->add_tools(name);
  } else {
    for (const auto& name : s.tools()) out->add_tools(name);
  }
}

}  // namespace

ToolExecutorService::ToolExecutorService(ServiceCore* core) : core_(core) {
  for (const auto& t : core_->registry().tools()) ToProto(*t, &declarations_.emplace_back());
}

grpc::ServerUnaryReactor* ToolExecutorService::ListTools(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request_bytes,
                                                         grpc::ByteBuffer* response_bytes) {
  v1::ListToolsRequest request;
  v1::ListToolsResponse response;
  grpc::ByteBuffer copy(*request_bytes);
  absl::Status status =
      grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::ListToolsRequest>(&copy, &request).ok()
          ? ListDeclarations(request, &response)
          : absl::InvalidArgumentError("malformed ListToolsRequest");
  if (status.ok()) *response_bytes = DeterministicBytes(response);
  return Reply(context, "ListTools", status,
               absl::StrCat("set=", request.tool_set(), " tools=", response.tools_size()));
}

grpc::ServerUnaryReactor* ToolExecutorService::ListTools(grpc::CallbackServerContext* context,
                                                         const v1::ListToolsRequest* request,
                                                         v1::ListToolsResponse* response) {
  return Reply(context, "ListTools", ListDeclarations(*request, response),
               absl::StrCat("set=", request->tool_set(), " tools=", response->tools_size()));
}

static_assert(static_cast<int>(DeclarationFormat::kNative) == v1::DECLARATION_FORMAT_NATIVE &&
              static_cast<int>(DeclarationFormat::kOpenAi) == v1::DECLARATION_FORMAT_OPENAI &&
              static_cast<int>(DeclarationFormat::kOpenAiStrict) ==
                  v1::DECLARATION_FORMAT_OPENAI_STRICT &&
              static_cast<int>(DeclarationFormat::kAnthropic) == v1::DECLARATION_FORMAT_ANTHROPIC &&
              static_cast<int>(DeclarationFormat::kGemini) == v1::DECLARATION_FORMAT_GEMINI,
              "DeclarationFormat mirrors toolexec.v1.DeclarationFormat");

absl::Status ToolExecutorService::ListDeclarations(const v1::ListToolsRequest& request,
                                                   v1::ListToolsResponse* response) const {
  if (!v1::DeclarationFormat_IsValid(request.format())) {
    return absl::InvalidArgumentError(absl::StrCat("unknown format ", request.format()));
  }
  std::shared_ptr<Session> session;
  if (!request.session_id().empty()) {
    auto s = core_->sessions().Get(request.session_id());
    if (!s.ok()) return s.status();
    session = std::move(*s);
  }
  auto selected = SelectToolSet(core_->registry(), request.tool_set());
  if (!selected.ok()) return selected.status();
  std::vector<const RegisteredTool*> listed;
  for (const RegisteredTool* t : *selected) {
    if (session != nullptr && !session->AllowsTool(t->name)) continue;
    *response->add_tools() = declarations_[t->position];
    listed.push_back(t);
  }
  response->set_provider_tools_json(
      ProviderToolsJson(static_cast<DeclarationFormat>(request.format()), listed));
  return absl::OkStatus();
}

grpc::ServerWriteReactor<v1::ExecuteBatchResponse>* ToolExecutorService::ExecuteBatch(
    grpc::CallbackServerContext* context, const v1::ExecuteBatchRequest* request) {
  return ExecuteBatchReactor::Start(core_, context, request);
}

grpc::ServerUnaryReactor* ToolExecutorService::OpenSession(grpc::CallbackServerContext* context,
                                                           const v1::OpenSessionRequest* request,
                                                           v1::Session* response) {
  constexpr const char* kMethod = "OpenSession";
  if (core_->draining()) {
    return Reply(context, kMethod,
                 absl::UnavailableError("toolexecd is shutting down and opens no new sessions"));
  }
  const ToolRegistry& registry = core_->registry();
  std::vector<std::string> enabled(request->enabled_tools().begin(), request->enabled_tools().end());
  std::vector<std::string> disabled(request->disabled_tools().begin(),
                                    request->disabled_tools().end());
  SessionOptions options;
  options.conversation_id = request->conversation_id();
  options.user_id = request->user_id();
  options.parent_session_id = request->parent_session_id();
  options.state_keys.assign(request->state_keys().begin(), request->state_keys().end());
  if (!request->subagent().empty()) {
    // S7: the subagent's own tool list; the request may not widen or narrow it.
    auto it = core_->subagents().find(request->subagent());
    if (it == core_->subagents().end()) {
      std::vector<std::string> known;
      for (const auto& [name, sa] : core_->subagents()) known.push_back(name);
      return Reply(context, kMethod,
                   absl::InvalidArgumentError(absl::StrCat(
                       "unknown subagent '", request->subagent(), "'; configured subagents: ",
                       known.empty() ? "none" : absl::StrJoin(known, ", "))));
    }
    if (!enabled.empty() || !disabled.empty()) {
      return Reply(context, kMethod,
                   absl::InvalidArgumentError(
                       "give subagent or enabled_tools/disabled_tools, not both: a subagent's "
                       "tools come from the config"));
    }
    options.subagent = request->subagent();
    options.tools = it->second.tools;
    options.warnings = it->second.warnings;
  } else if (!enabled.empty() || !disabled.empty()) {
    auto tools = ResolveToolSelection(registry, enabled, disabled, "OpenSession");
    if (!tools.ok()) return Reply(context, kMethod, tools.status());
    if (tools->empty()) {
      return Reply(context, kMethod,
                   absl::InvalidArgumentError(
                       "the session would have no tools: the lists leave none of the registered "
                       "tools"));
    }
    options.tools = std::move(*tools);
  }
  if (options.tools.empty() && !options.parent_session_id.empty()) {
    // A child sees no more tools than its parent.
    if (auto parent = core_->sessions().Get(options.parent_session_id); parent.ok()) {
      options.tools = (*parent)->tools();
    }
  }
  for (const auto& w : request->workspaces()) {
    auto root = OpenSessionWorkspace(core_->workspace_root(), w);
    if (!root.ok()) return Reply(context, kMethod, root.status());
    options.workspaces.push_back(*std::move(root));
  }
  auto session = core_->sessions().Open(std::move(options));
  if (!session.ok()) return Reply(context, kMethod, session.status());
  FillSession(**session, registry, response);
  return Reply(context, kMethod, absl::OkStatus(), absl::StrCat("session=", (*session)->id()));
}

grpc::ServerUnaryReactor* ToolExecutorService::UpdateSession(
    grpc::CallbackServerContext* context, const v1::UpdateSessionRequest* request,
    v1::Session* response) {
  auto session = core_->sessions().Get(request->session_id());
  if (!session.ok()) return Reply(context, "UpdateSession", session.status());
  (*session)->set_idle(request->idle());
  (*session)->Touch();
  FillSession(**session, core_->registry(), response);
  return Reply(context, "UpdateSession", absl::OkStatus(),
               absl::StrCat("session=", request->session_id(), " idle=", request->idle()));
}

grpc::ServerUnaryReactor* ToolExecutorService::CloseSession(
    grpc::CallbackServerContext* context, const v1::CloseSessionRequest* request,
    v1::CloseSessionResponse* response) {
  MergeOptions merge;
  merge.output_state_keys.assign(request->output_state_keys().begin(),
                                 request->output_state_keys().end());
  merge.reject_conflicts = request->merge_policy() == v1::STATE_MERGE_POLICY_REJECT_CONFLICTS;
  merge.exempt_keys.assign(request->merge_exempt_keys().begin(),
                           request->merge_exempt_keys().end());
  merge.artifact_prefixes.assign(request->artifact_prefixes().begin(),
                                 request->artifact_prefixes().end());
  merge.discard = request->discard();
  auto* reactor = context->DefaultReactor();
  // Closing runs every tool's cleanup_session, which may wait out the kill
  // grace of background commands: not on a gRPC thread.
  auto close = [this, context, request, response, reactor, merge = std::move(merge)] {
    auto merged = core_->sessions().Close(request->session_id(), merge);
    if (merged.ok()) {
      auto* actions = response->mutable_merged();
      (void)JsonToStruct(merged->state_delta, actions->mutable_state_delta());
      for (const auto& [name, version] : merged->artifact_delta) {
        (*actions->mutable_artifact_delta())[name] = version;
      }
    }
    Finish(context, reactor, "CloseSession", merged.status(),
           absl::StrCat("session=", request->session_id(), request->discard() ? " discard" : ""));
  };
  // Submit fails once the executor is shut down (with the core, after the
  // gRPC server has stopped) or when no thread can be started: close here then.
  if (!core_->session_work().Submit(close).ok()) close();
  return reactor;
}

grpc::ServerUnaryReactor* ToolExecutorService::GetState(grpc::CallbackServerContext* context,
                                                        const v1::GetStateRequest* request,
                                                        v1::GetStateResponse* response) {
  auto session = core_->sessions().Get(request->session_id());
  if (!session.ok()) return Reply(context, "GetState", session.status());
  std::vector<std::string> keys(request->keys().begin(), request->keys().end());
  Json state = (*session)->tool_state().Snapshot(keys);
  absl::Status status = JsonToStruct(state, response->mutable_state());
  return Reply(context, "GetState", status, absl::StrCat("session=", request->session_id()));
}

grpc::ServerWriteReactor<v1::SessionEvent>* ToolExecutorService::WatchSession(
    grpc::CallbackServerContext* context, const v1::WatchSessionRequest* request) {
  return WatchSessionReactor::Start(core_, context, request);
}

grpc::ServerUnaryReactor* ToolExecutorService::RespondPermission(
    grpc::CallbackServerContext* context, const v1::RespondPermissionRequest* request,
    v1::RespondPermissionResponse* response) {
  return Reply(context, "RespondPermission",
               absl::UnimplementedError("permission requests are not supported by this version "
                                        "of toolexecd, so none is ever pending"));
}

}  // namespace toolexec

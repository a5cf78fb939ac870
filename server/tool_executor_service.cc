#include "server/tool_executor_service.h"

#include <climits>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "server/convert.h"
#include "server/execute_batch_reactor.h"
#include "server/watch_session_reactor.h"
#include "spdlog/spdlog.h"
#include "tools/runtime/tool_sets.h"

namespace toolexec {
namespace {

// Finishes a unary RPC and writes its log line.
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* context, const char* method,
                                const absl::Status& status, const std::string& detail = "") {
  if (status.ok()) {
    spdlog::info("{} peer={} {} status=OK", method, context->peer(), detail);
  } else {
    spdlog::info("{} peer={} {} status={} {}", method, context->peer(), detail,
                 absl::StatusCodeToString(status.code()), std::string(status.message()));
  }
  auto* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// Expands tool and tool-set names into tool names, in registration order.
absl::StatusOr<absl::flat_hash_set<std::string>> ExpandToolNames(
    const ToolRegistry& registry, const google::protobuf::RepeatedPtrField<std::string>& names,
    absl::string_view field) {
  absl::flat_hash_set<std::string> out;
  std::vector<std::string> unknown;
  for (const auto& name : names) {
    if (IsToolSetName(name)) {
      auto set = SelectToolSet(registry, name);
      if (!set.ok()) return set.status();
      for (const auto* t : *set) out.insert(t->name);
    } else if (registry.Find(name) != nullptr) {
      out.insert(name);
    } else {
      unknown.push_back(name);
    }
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " names unknown tool(s): ", absl::StrJoin(unknown, ", "),
        "; registered tools: ", absl::StrJoin(registry.names(), ", "),
        "; tool sets: ", absl::StrJoin(ToolSetNames(), ", ")));
  }
  return out;
}

// A session workspace: an existing directory inside the daemon's workspace.
absl::StatusOr<std::string> ResolveWorkspace(const std::string& root, const std::string& path) {
  std::string joined = path.empty() || path[0] != '/' ? absl::StrCat(root, "/", path) : path;
  char resolved[PATH_MAX];
  if (realpath(joined.c_str(), resolved) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("workspace '", path, "' does not exist or cannot be resolved"));
  }
  std::string real = resolved;
  bool inside = real == root || (absl::StartsWith(real, root) &&
                                 (root == "/" || real[root.size()] == '/'));
  if (!inside) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workspace '", path, "' is outside the daemon's workspace ", root));
  }
  return real;
}

void FillSession(const Session& s, const ToolRegistry& registry, v1::Session* out) {
  out->set_session_id(s.id());
  out->set_conversation_id(s.conversation_id());
  out->set_idle(s.idle());
  out->set_user_id(s.user_id());
  out->set_parent_session_id(s.parent_session_id());
  for (const auto& w : s.workspaces()) out->add_workspaces(w);
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
                                                         const v1::ListToolsRequest* request,
                                                         v1::ListToolsResponse* response) {
  std::shared_ptr<Session> session;
  if (!request->session_id().empty()) {
    auto s = core_->sessions().Get(request->session_id());
    if (!s.ok()) return Reply(context, "ListTools", s.status());
    session = std::move(*s);
  }
  auto selected = SelectToolSet(core_->registry(), request->tool_set());
  if (!selected.ok()) return Reply(context, "ListTools", selected.status());
  for (const RegisteredTool* t : *selected) {
    if (session != nullptr && !session->AllowsTool(t->name)) continue;
    *response->add_tools() = declarations_[t->position];
  }
  return Reply(context, "ListTools", absl::OkStatus(),
               absl::StrCat("set=", request->tool_set(), " tools=", response->tools_size()));
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
  if (!request->subagent().empty()) {
    return Reply(context, kMethod,
                 absl::UnimplementedError("subagent sessions (OpenSession.subagent) are not "
                                          "supported by this version of toolexecd"));
  }
  if (!request->parent_session_id().empty()) {
    return Reply(context, kMethod,
                 absl::UnimplementedError("child sessions (OpenSession.parent_session_id) are not "
                                          "supported by this version of toolexecd"));
  }
  if (request->state_keys_size() > 0) {
    return Reply(context, kMethod,
                 absl::InvalidArgumentError("state_keys applies only with parent_session_id"));
  }
  // S7: never a silent precedence rule between the two lists.
  if (request->enabled_tools_size() > 0 && request->disabled_tools_size() > 0) {
    return Reply(context, kMethod,
                 absl::InvalidArgumentError(
                     "give enabled_tools or disabled_tools, not both (which should win is "
                     "ambiguous)"));
  }
  const ToolRegistry& registry = core_->registry();
  SessionOptions options;
  options.conversation_id = request->conversation_id();
  options.user_id = request->user_id();
  if (request->enabled_tools_size() > 0 || request->disabled_tools_size() > 0) {
    bool enabling = request->enabled_tools_size() > 0;
    auto named = ExpandToolNames(registry,
                                 enabling ? request->enabled_tools() : request->disabled_tools(),
                                 enabling ? "enabled_tools" : "disabled_tools");
    if (!named.ok()) return Reply(context, kMethod, named.status());
    for (const auto& name : registry.names()) {
      if (named->contains(name) == enabling) options.tools.push_back(name);
    }
    if (options.tools.empty()) {
      return Reply(context, kMethod,
                   absl::InvalidArgumentError("the session would have no tools: " +
                                              std::string(enabling ? "enabled_tools" : "disabled_tools") +
                                              " leaves none of the registered tools"));
    }
  }
  for (const auto& w : request->workspaces()) {
    auto resolved = ResolveWorkspace(core_->options().workspace, w);
    if (!resolved.ok()) return Reply(context, kMethod, resolved.status());
    options.workspaces.push_back(std::move(*resolved));
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
  FillSession(**session, core_->registry(), response);
  return Reply(context, "UpdateSession", absl::OkStatus(),
               absl::StrCat("session=", request->session_id(), " idle=", request->idle()));
}

grpc::ServerUnaryReactor* ToolExecutorService::CloseSession(
    grpc::CallbackServerContext* context, const v1::CloseSessionRequest* request,
    v1::CloseSessionResponse* response) {
  if (request->output_state_keys_size() > 0 || request->merge_exempt_keys_size() > 0 ||
      request->artifact_prefixes_size() > 0 ||
      request->merge_policy() != v1::STATE_MERGE_POLICY_OVERWRITE) {
    return Reply(context, "CloseSession",
                 absl::InvalidArgumentError("merge options (output_state_keys, merge_policy, "
                                            "merge_exempt_keys, artifact_prefixes) apply only to "
                                            "child sessions"));
  }
  absl::Status status = core_->sessions().Close(request->session_id());
  response->mutable_merged();
  return Reply(context, "CloseSession", status, absl::StrCat("session=", request->session_id()));
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

// Design in mcp_server.h.
#include "client/mcp_server.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "tools/mcp/content.h"

namespace toolexec {
namespace {

constexpr size_t kMaxLineBytes = 64 << 20;  // the daemon's default message limit

// Proto JSON of a Value or Struct, parsed: {} when it cannot be converted.
template <typename Message>
Json ProtoToJson(const Message& message) {
  std::string text;
  if (google::protobuf::util::MessageToJsonString(message, &text).ok()) {
    auto parsed = ParseJson(text);
    if (parsed.ok()) return *std::move(parsed);
  }
  return MakeObject();
}

JsonValue Str(absl::string_view s, Json::AllocatorType& alloc) {
  return JsonValue(s.data(), static_cast<rapidjson::SizeType>(s.size()), alloc);
}

bool HasTag(const v1::ToolDeclaration& tool, absl::string_view tag) {
  for (const std::string& t : tool.tags()) {
    if (t == tag) return true;
  }
  return false;
}

const JsonValue* Member(const JsonValue& object, const char* name) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(name);
  return it == object.MemberEnd() ? nullptr : &it->value;
}

}  // namespace

std::string NegotiateMcpProtocolVersion(absl::string_view requested) {
  for (const char* v : kMcpProtocolVersions) {
    if (requested == v) return v;
  }
  return kMcpProtocolVersions[0];
}

Json McpToolFromDeclaration(const v1::ToolDeclaration& tool) {
  Json out(rapidjson::kObjectType);
  auto& alloc = out.GetAllocator();
  out.AddMember("name", Str(tool.name(), alloc), alloc);
  if (!tool.display_name().empty() && tool.display_name() != tool.name()) {
    out.AddMember("title", Str(tool.display_name(), alloc), alloc);
  }
  out.AddMember("description", Str(tool.description(), alloc), alloc);
  Json schema;
  if (!tool.parameters_json().empty()) {
    auto parsed = ParseJson(tool.parameters_json());
    if (parsed.ok()) schema = *std::move(parsed);
  }
  if (!schema.IsObject()) schema = ProtoToJson(tool.parameters());
  // MCP requires an object schema.
  if (!schema.HasMember("type")) schema.AddMember("type", "object", schema.GetAllocator());
  out.AddMember("inputSchema", JsonValue(schema, alloc), alloc);
  JsonValue annotations(rapidjson::kObjectType);
  const bool read_only = tool.read_only() || HasTag(tool, "read_only");
  annotations.AddMember("readOnlyHint", read_only, alloc);
  if (!read_only) {
    annotations.AddMember("destructiveHint", HasTag(tool, "destructive"), alloc);
  }
  if (HasTag(tool, "idempotent")) annotations.AddMember("idempotentHint", true, alloc);
  out.AddMember("annotations", annotations, alloc);
  return out;
}

Json McpCallResultFromToolResult(const v1::ToolResult& result) {
  Json payload = ProtoToJson(result.payload());
  return mcp::ToCallToolResult(payload, result.model_content(),
                               result.status() != v1::RESULT_STATUS_SUCCESS);
}

McpServer::McpServer(Client* client, Options options, WriteFn write)
    : client_(client), options_(std::move(options)), write_(std::move(write)) {}

McpServer::~McpServer() { Shutdown(); }

void McpServer::Send(const std::string& message) {
  absl::MutexLock lock(&write_mu_);
  write_(message);
}

void McpServer::HandleLine(absl::string_view line) {
  auto message = mcp::ParseMessage(line);
  if (!message.ok()) {
    // The id cannot be trusted from a message that did not parse.
    Send(mcp::BuildError(mcp::RequestId(), mcp::kParseError, message.status().message()));
    return;
  }
  switch (message->kind) {
    case mcp::Message::Kind::kRequest:
      HandleRequest(*message);
      break;
    case mcp::Message::Kind::kNotification:
      HandleNotification(*message);
      break;
    default:
      break;  // this server sends no requests, so no response is expected
  }
}

void McpServer::HandleRequest(const mcp::Message& m) {
  if (m.method == "initialize") {
    Send(Initialize(m));
  } else if (m.method == "ping") {
    Json empty(rapidjson::kObjectType);
    Send(mcp::BuildResult(m.id, empty));
  } else if (m.method == "tools/list") {
    Send(ListTools(m));
  } else if (m.method == "tools/call") {
    StartCall(m);
  } else {
    Send(mcp::BuildError(m.id, mcp::kMethodNotFound,
                         absl::StrCat("method '", m.method,
                                      "' is not served; toolexec serves initialize, ping, "
                                      "tools/list and tools/call")));
  }
}

void McpServer::HandleNotification(const mcp::Message& m) {
  if (m.method != "notifications/cancelled") return;  // initialized, etc.
  const JsonValue* id = Member(m.params, "requestId");
  if (id == nullptr) return;
  const std::string key = mcp::RequestId::FromJson(*id).Key();
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(key);
  if (it == calls_.end()) return;  // finished already, or never started
  it->second.cancelled = true;
  if (it->second.context != nullptr) it->second.context->TryCancel();
}

std::string McpServer::Initialize(const mcp::Message& m) {
  std::string requested;
  if (const JsonValue* v = Member(m.params, "protocolVersion"); v != nullptr && v->IsString()) {
    requested = std::string(v->GetString(), v->GetStringLength());
  }
  Json result(rapidjson::kObjectType);
  auto& alloc = result.GetAllocator();
  result.AddMember("protocolVersion", Str(NegotiateMcpProtocolVersion(requested), alloc), alloc);
  JsonValue tools(rapidjson::kObjectType);
  tools.AddMember("listChanged", false, alloc);
  JsonValue capabilities(rapidjson::kObjectType);
  capabilities.AddMember("tools", tools, alloc);
  result.AddMember("capabilities", capabilities, alloc);
  JsonValue info(rapidjson::kObjectType);
  info.AddMember("name", "toolexec", alloc);
  info.AddMember("version", Str(options_.version, alloc), alloc);
  result.AddMember("serverInfo", info, alloc);
  return mcp::BuildResult(m.id, result);
}

absl::StatusOr<std::vector<v1::ToolDeclaration>> McpServer::FetchTools() {
  v1::ListToolsRequest request;
  request.set_session_id(options_.session_id);
  request.set_tool_set(options_.tool_set);
  auto response = client_->ListTools(request);
  if (!response.ok()) return response.status();
  std::vector<v1::ToolDeclaration> tools;
  std::set<std::string> names;
  for (const v1::ToolDeclaration& tool : response->tools()) {
    // Tools the harness or the model provider runs fail here (S9): an MCP
    // client has nobody to run them.
    if (tool.executor() != v1::EXECUTOR_DAEMON) continue;
    names.insert(tool.name());
    tools.push_back(tool);
  }
  absl::MutexLock lock(&mu_);
  listed_ = std::move(names);
  have_listed_ = true;
  return tools;
}

bool McpServer::Listed(const std::string& name) {
  {
    absl::MutexLock lock(&mu_);
    if (have_listed_ && listed_.count(name) > 0) return true;
  }
  if (!FetchTools().ok()) return true;  // let the daemon answer
  absl::MutexLock lock(&mu_);
  return listed_.count(name) > 0;
}

std::string McpServer::ListTools(const mcp::Message& m) {
  auto tools = FetchTools();
  if (!tools.ok()) {
    return mcp::BuildError(m.id, mcp::kInternalError,
                           absl::StrCat("toolexecd: ", tools.status().ToString()));
  }
  Json result(rapidjson::kObjectType);
  auto& alloc = result.GetAllocator();
  JsonValue list(rapidjson::kArrayType);
  for (const v1::ToolDeclaration& tool : *tools) {
    Json t = McpToolFromDeclaration(tool);
    list.PushBack(JsonValue(t, alloc), alloc);
  }
  result.AddMember("tools", list, alloc);
  return mcp::BuildResult(m.id, result);
}

void McpServer::StartCall(const mcp::Message& m) {
  const JsonValue* name = Member(m.params, "name");
  if (name == nullptr || !name->IsString()) {
    Send(mcp::BuildError(m.id, mcp::kInvalidParams, "tools/call needs params.name, a string"));
    return;
  }
  std::string tool(name->GetString(), name->GetStringLength());
  std::string args_json;
  if (const JsonValue* args = Member(m.params, "arguments"); args != nullptr && !args->IsNull()) {
    if (!args->IsObject()) {
      Send(mcp::BuildError(m.id, mcp::kInvalidParams,
                           "tools/call params.arguments must be an object"));
      return;
    }
    args_json = ToJsonString(*args);
  }
  if (!options_.tool_set.empty() && !Listed(tool)) {
    Send(mcp::BuildError(m.id, mcp::kInvalidParams,
                         absl::StrCat("unknown tool '", tool, "': it is not in the tool set '",
                                      options_.tool_set, "' this server serves")));
    return;
  }
  Json token;  // null: no progress wanted
  if (const JsonValue* meta = Member(m.params, "_meta"); meta != nullptr) {
    if (const JsonValue* t = Member(*meta, "progressToken");
        t != nullptr && (t->IsString() || t->IsInt64())) {
      token.CopyFrom(*t, token.GetAllocator());
    }
  }
  std::vector<std::thread::id> finished;
  {
    absl::MutexLock lock(&mu_);
    finished.swap(finished_);
  }
  for (std::thread::id done : finished) {
    auto it = threads_.find(done);
    if (it == threads_.end()) continue;
    it->second.join();  // it has returned, or is about to
    threads_.erase(it);
  }
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    if (calls_.size() >= options_.max_calls_in_flight) {
      Send(mcp::BuildError(
          m.id, mcp::kInternalError,
          absl::StrCat("too many tool calls in flight (", options_.max_calls_in_flight,
                       "); wait for one to finish, then call again")));
      return;
    }
    if (!calls_.emplace(m.id.Key(), RunningCall{}).second) {
      Send(mcp::BuildError(m.id, mcp::kInvalidRequest,
                           absl::StrCat("request id ", m.id.DebugString(), " is already in use")));
      return;
    }
  }
  std::thread thread(&McpServer::RunCall, this, m.id, std::move(tool), std::move(args_json),
                     std::move(token));
  const std::thread::id thread_id = thread.get_id();
  threads_.emplace(thread_id, std::move(thread));
}

void McpServer::RunCall(mcp::RequestId id, std::string name, std::string args_json,
                        Json progress_token) {
  CallBody(id, name, args_json, progress_token);
  absl::MutexLock lock(&mu_);
  finished_.push_back(std::this_thread::get_id());
}

void McpServer::CallBody(const mcp::RequestId& id, const std::string& name,
                         const std::string& args_json, const Json& progress_token) {
  const std::string key = id.Key();
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    RunningCall& call = calls_[key];
    if (call.cancelled || shut_down_) {
      calls_.erase(key);
      return;
    }
    call.context = &context;
  }
  v1::ExecuteBatchRequest request;
  request.set_session_id(options_.session_id);
  v1::ToolCall* call = request.add_calls();
  call->set_id(id.DebugString());
  call->set_name(name);
  call->set_args_json(args_json);

  std::optional<v1::ToolResult> result;
  int64_t progress = 0;
  absl::Status status =
      client_->ExecuteBatch(&context, request, [&](const v1::ExecuteBatchResponse& event) {
        if (event.has_result()) {
          result = event.result();
        } else if (event.has_progress() && !progress_token.IsNull()) {
          Json params(rapidjson::kObjectType);
          auto& alloc = params.GetAllocator();
          params.AddMember("progressToken", JsonValue(progress_token, alloc), alloc);
          params.AddMember("progress", ++progress, alloc);
          params.AddMember("message", Str(event.progress().text(), alloc), alloc);
          Send(mcp::BuildNotification("notifications/progress", &params));
        }
      });
  bool cancelled;
  {
    absl::MutexLock lock(&mu_);
    cancelled = calls_[key].cancelled;
    calls_.erase(key);
  }
  if (cancelled) return;  // MCP: no response to a cancelled request
  if (!status.ok()) {
    std::cerr << "toolexec mcp: tools/call " << name << ": " << status << std::endl;
    Send(mcp::BuildError(id, mcp::kInternalError, absl::StrCat("toolexecd: ", status.ToString())));
    return;
  }
  if (!result.has_value()) {
    Send(mcp::BuildError(id, mcp::kInternalError, "toolexecd ended the call without a result"));
    return;
  }
  if (result->exception().code() == v1::ERROR_CODE_UNKNOWN_TOOL) {
    // MCP: an unknown tool is a protocol error, not a tool result.
    Send(mcp::BuildError(id, mcp::kInvalidParams, result->error_message()));
    return;
  }
  Json answer = McpCallResultFromToolResult(*result);
  Send(mcp::BuildResult(id, answer));
}

void McpServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    for (auto& [key, call] : calls_) {
      call.cancelled = true;
      if (call.context != nullptr) call.context->TryCancel();
    }
  }
  for (auto& [thread_id, thread] : threads_) thread.join();
  threads_.clear();
}

int McpServer::Serve(Client* client, Options options, int in_fd, int out_fd) {
  McpServer server(client, std::move(options), [out_fd](absl::string_view message) {
    std::string line = absl::StrCat(message, "\n");
    size_t done = 0;
    while (done < line.size()) {
      ssize_t n = write(out_fd, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the client is gone; the read side sees EOF next
      done += static_cast<size_t>(n);
    }
  });
  mcp::LineFramer framer(kMaxLineBytes);
  char buffer[64 * 1024];
  while (true) {
    ssize_t n = read(in_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::cerr << "toolexec mcp: reading stdin: " << std::strerror(errno) << std::endl;
      break;
    }
    if (n == 0) break;
    absl::Status fed = framer.Feed(absl::string_view(buffer, static_cast<size_t>(n)),
                                   [&server](absl::string_view line) { server.HandleLine(line); });
    if (!fed.ok()) {
      std::cerr << "toolexec mcp: " << fed.message() << std::endl;
      server.Send(mcp::BuildError(mcp::RequestId(), mcp::kInvalidRequest, fed.message()));
    }
  }
  server.Shutdown();
  return 0;
}

}  // namespace toolexec

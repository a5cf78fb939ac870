// Design in dispatcher.h.
#include "mcp/serve/dispatcher.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "mcp/protocol/content.h"
#include "tools/runtime/call_result.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

using builtin::Member;
using builtin::StringField;

// A failed call's CallToolResult: FailureModelContent's text for the model.
Json FailureResult(ErrorCode code, absl::string_view tool, absl::string_view message) {
  Json payload(rapidjson::kObjectType);
  payload.AddMember("error", MakeString(message, payload.GetAllocator()), payload.GetAllocator());
  return mcp::ToCallToolResult(
      payload, FailureModelContent(code, tool, message, kDefaultModelContentChars), true);
}

}  // namespace

std::string NegotiateMcpProtocolVersion(absl::string_view requested) {
  for (const char* v : kMcpProtocolVersions) {
    if (requested == v) return v;
  }
  return kMcpProtocolVersions[0];
}

bool IsServedMcpProtocolVersion(absl::string_view version) {
  for (const char* v : kMcpProtocolVersions) {
    if (version == v) return true;
  }
  return false;
}

McpCallResult McpCallResultOf(ToolCallResult result, bool ask_denied) {
  McpCallResult out;
  out.name = std::move(result.name);
  if (result.error.has_value() && result.error->code == ErrorCode::kUnknownTool) {
    out.unknown_tool = SanitizeUtf8(result.error_message);
    return out;
  }
  out.is_error = !result.ok();
  out.ask_denied = ask_denied && result.status == ResultStatus::kDenied;
  out.payload = std::move(result.payload);
  SanitizeJsonUtf8(out.payload, out.payload.GetAllocator());
  out.model_content = IsValidUtf8(result.model_content) ? std::move(result.model_content)
                                                         : SanitizeUtf8(result.model_content);
  return out;
}

// ---- CallCancel ----

void CallCancel::Arm(std::function<void()> cancel) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) {
    cancel();
    return;
  }
  cancel_ = std::move(cancel);
}

void CallCancel::Disarm() {
  absl::MutexLock lock(&mu_);
  cancel_ = nullptr;
  disarmed_ = true;
}

void CallCancel::Cancel() {
  // Under the lock, so that Disarm() waits until the cancel has run.
  absl::MutexLock lock(&mu_);
  if (cancelled_ || disarmed_) return;
  cancelled_ = true;
  if (cancel_) cancel_();
}

bool CallCancel::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

// ---- McpCall ----

McpCall::~McpCall() { dispatcher_->Release(id_.Key(), cancel_.get()); }

bool McpCall::Run(const SendFn& send) {
  if (cancel_->cancelled()) return false;
  int64_t progress = 0;
  auto on_progress = [&](const std::string& text) {
    if (progress_token_.IsNull()) return;
    Json params(rapidjson::kObjectType);
    auto& alloc = params.GetAllocator();
    params.AddMember("progressToken", JsonValue(progress_token_, alloc), alloc);
    params.AddMember("progress", ++progress, alloc);
    // A tool's progress is bytes (what its command printed); JSON text must
    // be UTF-8, as the gRPC stream's progress is.
    params.AddMember("message", MakeString(IsValidUtf8(text) ? text : SanitizeUtf8(text), alloc),
                     alloc);
    send(mcp::BuildNotification("notifications/progress", &params));
  };
  absl::StatusOr<McpCallResult> result =
      dispatcher_->source_->Call(std::move(spec_), on_progress, cancel_.get());
  if (cancel_->cancelled()) return false;  // MCP: no response to a cancelled request
  if (!result.ok()) {
    send(mcp::BuildError(id_, mcp::kInternalError,
                         absl::StrCat("toolexecd: ", result.status().ToString())));
  } else if (result->unknown_tool.has_value()) {
    // MCP: an unknown tool is a protocol error, not a tool result.
    send(mcp::BuildError(id_, mcp::kInvalidParams, *result->unknown_tool));
  } else {
    send(dispatcher_->Answer(id_, *result));
  }
  return true;
}

// ---- McpDispatcher ----

std::unique_ptr<McpCall> McpDispatcher::Handle(const mcp::Message& m, const SendFn& send) {
  if (m.kind == mcp::Message::Kind::kNotification) {
    if (m.method == "notifications/cancelled") Cancel(m.params);
    return nullptr;  // initialized, etc.
  }
  // This server sends no requests, so a response needs nothing.
  if (m.kind != mcp::Message::Kind::kRequest) return nullptr;
  if (m.method == "initialize") {
    send(Initialize(m));
  } else if (m.method == "ping") {
    Json empty(rapidjson::kObjectType);
    send(mcp::BuildResult(m.id, empty));
  } else if (m.method == "tools/list") {
    send(ListTools(m));
  } else if (m.method == "tools/call") {
    return ReserveCall(m, send);
  } else {
    send(mcp::BuildError(m.id, mcp::kMethodNotFound,
                         absl::StrCat("method '", m.method,
                                      "' is not served; toolexec serves initialize, ping, "
                                      "tools/list and tools/call")));
  }
  return nullptr;
}

void McpDispatcher::Cancel(const JsonValue& params) {
  const JsonValue* id = Member(params, "requestId");
  if (id == nullptr) return;
  std::shared_ptr<CallCancel> cancel;
  {
    absl::MutexLock lock(&mu_);
    auto it = calls_.find(mcp::RequestId::FromJson(*id).Key());
    if (it == calls_.end()) return;  // finished already, or never started
    cancel = it->second;
  }
  cancel->Cancel();
}

void McpDispatcher::CancelAll() {
  std::vector<std::shared_ptr<CallCancel>> cancels;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    for (auto& [key, cancel] : calls_) cancels.push_back(cancel);
  }
  for (auto& cancel : cancels) cancel->Cancel();
}

size_t McpDispatcher::calls_in_flight() const {
  absl::MutexLock lock(&mu_);
  return calls_.size();
}

void McpDispatcher::Release(const std::string& key, const CallCancel* cancel) {
  absl::MutexLock lock(&mu_);
  auto it = calls_.find(key);
  if (it != calls_.end() && it->second.get() == cancel) calls_.erase(it);
}

std::string McpDispatcher::Initialize(const mcp::Message& m) const {
  std::string requested;
  if (const JsonValue* v = Member(m.params, "protocolVersion"); v != nullptr && v->IsString()) {
    requested = std::string(v->GetString(), v->GetStringLength());
  }
  Json result(rapidjson::kObjectType);
  auto& alloc = result.GetAllocator();
  result.AddMember("protocolVersion", MakeString(NegotiateMcpProtocolVersion(requested), alloc),
                   alloc);
  JsonValue tools(rapidjson::kObjectType);
  tools.AddMember("listChanged", false, alloc);
  JsonValue capabilities(rapidjson::kObjectType);
  capabilities.AddMember("tools", tools, alloc);
  result.AddMember("capabilities", capabilities, alloc);
  JsonValue info(rapidjson::kObjectType);
  info.AddMember("name", "toolexec", alloc);
  info.AddMember("version", MakeString(options_.version, alloc), alloc);
  result.AddMember("serverInfo", info, alloc);
  return mcp::BuildResult(m.id, result);
}

std::string McpDispatcher::Answer(const mcp::RequestId& id, const McpCallResult& result) const {
  Json answer;
  if (result.ask_denied) {
    answer = FailureResult(
        ErrorCode::kDenied, result.name,
        absl::StrCat("the policy asks before ", result.name, " runs, and ", kMcpAskDenial,
                     ": ask the daemon's operator to allow it for this caller"));
  } else {
    answer = mcp::ToCallToolResult(result.payload, result.model_content, result.is_error);
  }
  std::string response = mcp::BuildResult(id, answer);
  if (response.size() <= options_.max_result_bytes) return response;
  return mcp::BuildResult(
      id, FailureResult(ErrorCode::kToolFailed, result.name,
                        OversizedResultMessage(result.name, response.size(),
                                               options_.max_result_bytes)));
}

absl::StatusOr<std::vector<std::shared_ptr<const Json>>> McpDispatcher::FetchTools() {
  auto tools = source_->ListTools();
  if (!tools.ok()) return tools.status();
  std::set<std::string> names;
  for (const std::shared_ptr<const Json>& tool : *tools) names.insert(StringField(*tool, "name"));
  absl::MutexLock lock(&mu_);
  listed_ = std::move(names);
  have_listed_ = true;
  return tools;
}

bool McpDispatcher::Listed(const std::string& name) {
  {
    absl::MutexLock lock(&mu_);
    if (have_listed_ && listed_.count(name) > 0) return true;
  }
  if (!FetchTools().ok()) return true;  // let the call's own answer say what is wrong
  absl::MutexLock lock(&mu_);
  return listed_.count(name) > 0;
}

std::string McpDispatcher::ListTools(const mcp::Message& m) {
  auto tools = FetchTools();
  if (!tools.ok()) {
    return mcp::BuildError(m.id, mcp::kInternalError,
                           absl::StrCat("toolexecd: ", tools.status().ToString()));
  }
  std::vector<const JsonValue*> list;
  list.reserve(tools->size());
  for (const std::shared_ptr<const Json>& tool : *tools) list.push_back(tool.get());
  return mcp::BuildListResult(m.id, "tools", list);
}

std::unique_ptr<McpCall> McpDispatcher::ReserveCall(const mcp::Message& m, const SendFn& send) {
  const JsonValue* name = Member(m.params, "name");
  if (name == nullptr || !name->IsString()) {
    send(mcp::BuildError(m.id, mcp::kInvalidParams, "tools/call needs params.name, a string"));
    return nullptr;
  }
  McpCallSpec spec;
  spec.id = m.id.DebugString();
  spec.name.assign(name->GetString(), name->GetStringLength());
  if (const JsonValue* args = Member(m.params, "arguments"); args != nullptr && !args->IsNull()) {
    if (!args->IsObject()) {
      send(mcp::BuildError(m.id, mcp::kInvalidParams,
                           "tools/call params.arguments must be an object"));
      return nullptr;
    }
    spec.args.CopyFrom(*args, spec.args.GetAllocator());
  }
  if (!options_.tool_set.empty() && !Listed(spec.name)) {
    send(mcp::BuildError(m.id, mcp::kInvalidParams,
                         absl::StrCat("unknown tool '", spec.name,
                                      "': it is not in the tool set '", options_.tool_set,
                                      "' this server serves")));
    return nullptr;
  }
  Json token;  // null: no progress wanted
  if (const JsonValue* meta = Member(m.params, "_meta"); meta != nullptr) {
    if (const JsonValue* t = Member(*meta, "progressToken");
        t != nullptr && (t->IsString() || t->IsInt64())) {
      token.CopyFrom(*t, token.GetAllocator());
    }
  }
  auto cancel = std::make_shared<CallCancel>();
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      send(mcp::BuildError(m.id, mcp::kInternalError, "the server is shutting down"));
      return nullptr;
    }
    if (calls_.size() >= options_.max_calls_in_flight) {
      send(mcp::BuildError(
          m.id, mcp::kInternalError,
          absl::StrCat("too many tool calls in flight (", options_.max_calls_in_flight,
                       "); wait for one to finish, then call again")));
      return nullptr;
    }
    if (!calls_.emplace(m.id.Key(), cancel).second) {
      send(mcp::BuildError(m.id, mcp::kInvalidRequest,
                           absl::StrCat("request id ", m.id.DebugString(), " is already in use")));
      return nullptr;
    }
  }
  return std::unique_ptr<McpCall>(
      new McpCall(this, m.id, std::move(spec), std::move(token), std::move(cancel)));
}

}  // namespace toolexec

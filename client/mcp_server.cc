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
#include "mcp/protocol/content.h"

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

}  // namespace

Json McpToolFromDeclaration(const v1::ToolDeclaration& tool) {
  ToolSpec spec(tool.name(), tool.description(), tool.parameters_json());
  spec.read_only = tool.read_only();
  spec.tags.assign(tool.tags().begin(), tool.tags().end());
  spec.display_name = tool.display_name();
  Json schema;
  if (!tool.parameters_json().empty()) {
    auto parsed = ParseJson(tool.parameters_json());
    if (parsed.ok()) schema = *std::move(parsed);
  }
  if (!schema.IsObject()) schema = ProtoToJson(tool.parameters());
  return mcp::ToMcpTool(tool.name(), spec, schema);
}

McpCallResult McpCallResultFromToolResult(const v1::ToolResult& result, bool ask_denied) {
  McpCallResult out;
  out.name = result.name();
  if (result.exception().code() == v1::ERROR_CODE_UNKNOWN_TOOL) {
    out.unknown_tool = result.error_message();
    return out;
  }
  out.is_error = result.status() != v1::RESULT_STATUS_SUCCESS;
  out.ask_denied = ask_denied && result.status() == v1::RESULT_STATUS_DENIED;
  out.payload = ProtoToJson(result.payload());
  out.model_content = result.model_content();
  return out;
}

// The daemon over gRPC: ListTools and a one-call ExecuteBatch.
class McpStdioServer::GrpcToolSource final : public McpToolSource {
 public:
  GrpcToolSource(Client* client, std::string tool_set, std::string session_id)
      : client_(client), tool_set_(std::move(tool_set)), session_id_(std::move(session_id)) {}

  absl::StatusOr<std::vector<std::shared_ptr<const Json>>> ListTools() override {
    v1::ListToolsRequest request;
    request.set_session_id(session_id_);
    request.set_tool_set(tool_set_);
    auto response = client_->ListTools(request);
    if (!response.ok()) return response.status();
    std::vector<std::shared_ptr<const Json>> tools;
    for (const v1::ToolDeclaration& tool : response->tools()) {
      // The harness's and the provider's tools [Tools run elsewhere]: an MCP
      // client has nobody to run them.
      if (tool.executor() != v1::EXECUTOR_DAEMON) continue;
      tools.push_back(std::make_shared<const Json>(McpToolFromDeclaration(tool)));
    }
    return tools;
  }

  absl::StatusOr<McpCallResult> Call(McpCallSpec spec,
                                     const std::function<void(const std::string&)>& progress,
                                     CallCancel* cancel) override {
    v1::ExecuteBatchRequest request;
    request.set_session_id(session_id_);
    v1::ToolCall* call = request.add_calls();
    call->set_id(std::move(spec.id));
    call->set_name(spec.name);
    // The wire's arguments are text (the Struct would lose their order and
    // their integers); none is {}.
    if (spec.args.MemberCount() > 0) call->set_args_json(ToJsonString(spec.args));
    grpc::ClientContext context;
    cancel->Arm([&context] { context.TryCancel(); });
    std::optional<v1::ToolResult> result;
    bool denied_ask = false;
    absl::Status status =
        client_->ExecuteBatch(&context, request, [&](const v1::ExecuteBatchResponse& event) {
          if (event.has_result()) {
            result = event.result();
          } else if (event.has_progress()) {
            progress(event.progress().text());
          } else if (event.has_permission_request()) {
            // Nobody on an MCP connection can answer; waiting would only run
            // into the ask timeout.
            denied_ask = true;
            DenyAsk(event.permission_request().request_id());
          }
        });
    cancel->Disarm();
    if (!status.ok()) {
      if (!cancel->cancelled()) {
        std::cerr << "toolexec mcp: tools/call " << spec.name << ": " << status << std::endl;
      }
      return status;
    }
    if (!result.has_value()) return absl::InternalError("toolexecd ended the call without a result");
    return McpCallResultFromToolResult(*result, denied_ask);
  }

 private:
  void DenyAsk(const std::string& request_id) {
    v1::RespondPermissionRequest answer;
    answer.set_request_id(request_id);
    answer.set_decision(v1::PERMISSION_DECISION_DENY);
    answer.set_reason(kMcpAskDenial);
    auto response = client_->RespondPermission(answer);
    if (!response.ok()) {
      std::cerr << "toolexec mcp: denying permission request " << request_id << ": "
                << response.status() << std::endl;
    }
  }

  Client* const client_;
  const std::string tool_set_;
  const std::string session_id_;
};

McpStdioServer::McpStdioServer(Client* client, Options options, WriteFn write)
    : write_(std::move(write)),
      source_(std::make_unique<GrpcToolSource>(client, options.tool_set, options.session_id)),
      dispatcher_(source_.get(), McpDispatcher::Options{options.version, options.tool_set,
                                                        options.max_calls_in_flight}) {}

McpStdioServer::~McpStdioServer() { Shutdown(); }

void McpStdioServer::Send(const std::string& message) {
  absl::MutexLock lock(&write_mu_);
  write_(message);
}

void McpStdioServer::HandleLine(absl::string_view line) {
  auto message = mcp::ParseMessage(line);
  if (!message.ok()) {
    // The id cannot be trusted from a message that did not parse.
    Send(mcp::BuildError(mcp::RequestId(), mcp::kParseError, message.status().message()));
    return;
  }
  auto send = [this](const std::string& m) { Send(m); };
  std::unique_ptr<McpCall> call = dispatcher_.Handle(*message, send);
  if (call == nullptr) return;
  JoinFinished();
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
  }
  std::shared_ptr<McpCall> running = std::move(call);
  std::thread thread([this, running, send] {
    running->Run(send);
    absl::MutexLock lock(&mu_);
    finished_.push_back(std::this_thread::get_id());
  });
  const std::thread::id thread_id = thread.get_id();
  threads_.emplace(thread_id, std::move(thread));
}

void McpStdioServer::JoinFinished() {
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
}

void McpStdioServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
  }
  dispatcher_.CancelAll();
  for (auto& [thread_id, thread] : threads_) thread.join();
  threads_.clear();
}

int McpStdioServer::Serve(Client* client, Options options, int in_fd, int out_fd) {
  McpStdioServer server(client, std::move(options), [out_fd](absl::string_view message) {
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

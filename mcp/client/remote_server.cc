#include "mcp/client/remote_server.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "tools/process/environment.h"
#include "tools/runtime/json_fields.h"
#include "mcp/protocol/content.h"
#include "mcp/client/http_transport.h"
#include "mcp/client/stdio_transport.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/tool.h"

namespace toolexec::mcp {

RemoteMcpServer::RemoteMcpServer(McpServerOptions options, std::vector<std::string> base_env)
    : options_(std::move(options)),
      base_env_(std::move(base_env)),
      log_(std::make_shared<ServerLog>(options_.name)) {}

RemoteMcpServer::~RemoteMcpServer() { Stop(); }

absl::Status RemoteMcpServer::Start() {
  auto thread = StartThread([this] { Supervise(); });
  if (!thread.ok()) return thread.status();
  supervisor_ = std::move(*thread);
  return absl::OkStatus();
}

bool RemoteMcpServer::WaitReady(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  while (connection_ == nullptr && !stopping_) {
    if (changed_.WaitWithDeadline(&mu_, deadline)) break;
  }
  return connection_ != nullptr;
}

std::vector<Json> RemoteMcpServer::tools() const {
  absl::MutexLock lock(&mu_);
  std::vector<Json> out;
  for (const Json& t : tools_) out.push_back(CopyJson(t));
  return out;
}

size_t RemoteMcpServer::tools_left_out() const {
  absl::MutexLock lock(&mu_);
  return tools_left_out_;
}

uint64_t RemoteMcpServer::list_generation() const {
  absl::MutexLock lock(&mu_);
  return list_generation_;
}

std::string RemoteMcpServer::unavailable_reason() const {
  absl::MutexLock lock(&mu_);
  return connection_ != nullptr ? "" : unavailable_;
}

uint64_t RemoteMcpServer::connections() const {
  absl::MutexLock lock(&mu_);
  return connections_;
}

void RemoteMcpServer::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    changed_.SignalAll();
  }
  stopping_token_.Cancel(CancelReason::kShutdown);
  if (supervisor_.joinable()) supervisor_.join();
}

bool RemoteMcpServer::Allowed(const std::string& tool) const {
  const auto& on = options_.enabled_tools;
  const auto& off = options_.disabled_tools;
  if (!on.empty()) return std::find(on.begin(), on.end(), tool) != on.end();
  return std::find(off.begin(), off.end(), tool) == off.end();
}

std::unique_ptr<Transport> RemoteMcpServer::MakeTransport() const {
  if (!options_.url.empty()) {
    HttpOptions o;
    o.server_name = options_.name;
    o.url = options_.url;
    o.headers = options_.headers;
    o.log = log_;
    return std::make_unique<HttpTransport>(std::move(o));
  }
  StdioOptions o;
  o.server_name = options_.name;
  o.argv = options_.command;
  o.env = command::MergeEnvironment(base_env_, options_.env);
  o.cwd = options_.cwd;
  o.log = log_;
  return std::make_unique<StdioTransport>(std::move(o));
}

absl::Status RemoteMcpServer::Relist(Connection& connection) {
  auto listed = connection.ListTools(
      absl::Now() + ConnectTimeout(), &stopping_token_, [this](const JsonValue& t) {
        std::string name = builtin::StringField(t, "name");
        return !name.empty() && Allowed(name);
      });
  if (!listed.ok()) return listed.status();
  if (listed->left_out > 0) {
    log_->Write("", absl::StrCat("it lists more tools than toolexec keeps (", kMaxListedTools,
                                 " tools, ", kMaxListedBytes >> 20, " MiB of declarations): ",
                                 listed->left_out, " tool(s) left out"));
  }
  {
    absl::MutexLock lock(&mu_);
    tools_ = std::move(listed->tools);
    tools_left_out_ = listed->left_out;
    ++list_generation_;
    changed_.SignalAll();
  }
  if (on_listed_) on_listed_();
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Connection>> RemoteMcpServer::Connect(absl::Time deadline) {
  auto connection = std::make_shared<Connection>(options_.name, MakeTransport(), log_);
  Connection::Callbacks callbacks;
  callbacks.on_notification = [this](const std::string& method) {
    if (method != "notifications/tools/list_changed") return;
    absl::MutexLock lock(&mu_);
    relist_ = true;
    changed_.SignalAll();
  };
  callbacks.on_closed = [this](absl::Status) {
    absl::MutexLock lock(&mu_);
    connection_ended_ = true;
    changed_.SignalAll();
  };
  auto info = connection->Open(std::move(callbacks), deadline, &stopping_token_);
  absl::Status status = info.status();
  if (status.ok()) status = Relist(*connection);
  if (!status.ok()) {
    connection->Close();
    return status;
  }
  spdlog::info("MCP server '{}' ({} {}, protocol {}) ready", options_.name, info->name,
               info->version, info->protocol_version);
  return connection;
}

void RemoteMcpServer::Supervise() {
  absl::Duration backoff = kMinRestartBackoff;
  mu_.Lock();
  while (!stopping_) {
    connection_ended_ = false;
    relist_ = false;
    mu_.Unlock();
    const absl::Time started = absl::Now();
    auto connected = Connect(started + ConnectTimeout());
    std::string reason;
    mu_.Lock();
    if (connected.ok()) {
      std::shared_ptr<Connection> live = *connected;
      connection_ = live;
      ++connections_;
      changed_.SignalAll();
      while (true) {
        mu_.Await(absl::Condition(
            +[](RemoteMcpServer* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) {
              return s->stopping_ || s->relist_ || s->connection_ended_;
            },
            this));
        if (stopping_ || connection_ended_) break;
        relist_ = false;
        mu_.Unlock();
        if (absl::Status s = Relist(*live); !s.ok()) {
          spdlog::warn("MCP server '{}': listing its tools again failed: {}", options_.name,
                       std::string(s.message()));
        }
        mu_.Lock();
      }
      connection_ = nullptr;
      mu_.Unlock();
      reason = live->end_reason();
      if (reason.empty()) reason = "its connection ended";
      live->Close();  // fails the calls still waiting on it
      mu_.Lock();
      if (absl::Now() - started >= kMaxRestartBackoff) backoff = kMinRestartBackoff;
    } else {
      reason = std::string(connected.status().message());
    }
    if (stopping_) break;
    unavailable_ = absl::StrCat("MCP server '", options_.name, "' is unavailable (", reason,
                                "); restarting in ", absl::FormatDuration(backoff));
    changed_.SignalAll();
    spdlog::warn("{}", unavailable_);
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), backoff);
    backoff = std::min(backoff * 2, kMaxRestartBackoff);
  }
  unavailable_ = absl::StrCat("MCP server '", options_.name, "' has been stopped");
  changed_.SignalAll();
  mu_.Unlock();
}

absl::StatusOr<std::shared_ptr<Connection>> RemoteMcpServer::CurrentConnection(
    absl::Time deadline, const CancellationToken& cancel, bool wait) {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (connection_ != nullptr && !connection_->closed()) return connection_;
    if (!wait || stopping_ || cancel.cancelled() || absl::Now() >= deadline) break;
    changed_.WaitWithTimeout(&mu_, std::min(absl::Milliseconds(100), deadline - absl::Now()));
  }
  return ToolError(ErrorCode::kServerUnavailable,
                   connection_ != nullptr
                       ? absl::StrCat("MCP server '", options_.name, "' is unavailable: restarting")
                       : unavailable_);
}

absl::StatusOr<Json> RemoteMcpServer::CallTool(const std::string& tool, const JsonValue& args,
                                         ToolContext& ctx, bool retryable) {
  absl::Time deadline = ctx.info().deadline;
  if (options_.call_timeout > absl::ZeroDuration()) {
    deadline = std::min(deadline, absl::Now() + options_.call_timeout);
  }
  for (int attempt = 0;; ++attempt) {
    auto connection = CurrentConnection(deadline, ctx.cancellation(), /*wait=*/attempt > 0);
    if (!connection.ok()) return connection.status();
    Json params(rapidjson::kObjectType);
    auto& alloc = params.GetAllocator();
    params.AddMember("name", JsonValue(tool.c_str(), alloc), alloc);
    params.AddMember("arguments", JsonValue(args, alloc), alloc);
    auto result = (*connection)->Request(
        "tools/call", std::move(params), deadline, &ctx.cancellation(),
        [&ctx](absl::string_view text) { ctx.progress("progress", text); });
    if (result.ok()) {
      auto outcome = FromCallToolResult(*result);
      if (!outcome.ok()) {
        return ToolError(ErrorCode::kToolFailed,
                         absl::StrCat("MCP server '", options_.name,
                                      "' sent a malformed result: ", outcome.status().message()));
      }
      if (outcome->is_error) return ToolError(ErrorCode::kToolFailed, outcome->error_message);
      return std::move(outcome->value);
    }
    const absl::Status& s = result.status();
    if (absl::IsUnavailable(s)) {
      if (retryable && attempt == 0 && !ctx.cancelled()) {
        spdlog::info("MCP server '{}' went away during a call of {}; sending it again (the tool "
                     "is read-only or idempotent)",
                     options_.name, tool);
        continue;
      }
      return ToolError(ErrorCode::kServerUnavailable, s.message());
    }
    if (absl::IsDeadlineExceeded(s)) return ToolError(ErrorCode::kTimeout, s.message());
    if (absl::IsCancelled(s)) return s;
    return ToolError(ErrorCode::kToolFailed, s.message());
  }
}

}  // namespace toolexec::mcp

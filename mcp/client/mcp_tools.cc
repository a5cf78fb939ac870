#include "mcp/client/mcp_tools.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "tools/runtime/json_fields.h"
#include "mcp/protocol/content.h"
#include "mcp/client/remote_server.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::mcp {
namespace {

using builtin::StringField;

// One tool of an MCP server: its call goes to the server.
class McpTool final : public Tool {
 public:
  McpTool(ToolSpec spec, std::shared_ptr<RemoteMcpServer> server, std::string remote_name,
          bool retryable)
      : Tool(std::move(spec)),
        server_(std::move(server)),
        remote_name_(std::move(remote_name)),
        retryable_(retryable) {}

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    return server_->CallTool(remote_name_, args, ctx, retryable_);
  }

  std::string unavailable_reason() const override { return server_->unavailable_reason(); }

 private:
  std::shared_ptr<RemoteMcpServer> server_;
  const std::string remote_name_;
  const bool retryable_;
};

// The tool's spec from its MCP declaration.
ToolSpec SpecOf(const McpServerOptions& server, const JsonValue& tool) {
  std::string name = StringField(tool, "name");
  std::string schema = R"({"type":"object"})";
  if (tool.HasMember("inputSchema") && tool["inputSchema"].IsObject()) {
    schema = ToJsonString(tool["inputSchema"]);
  }
  ToolSpec spec(McpToolName(server, name), StringField(tool, "description"), std::move(schema));
  spec.ServerName(server.name);
  std::string title = StringField(tool, "title");
  if (title.empty() && tool.HasMember("annotations")) {
    title = StringField(tool["annotations"], "title");
  }
  if (!title.empty()) spec.DisplayName(title);
  // Annotations are the server's claims (the MCP spec: untrusted unless the
  // server is): unless the config trusts it, a tool may destroy, so it is
  // neither read-only nor idempotent, for the read_only profile, the tool
  // sets and a call sent again after a restart alike.
  if (server.trusted_annotations) {
    for (std::string& tag : AnnotationTags(tool)) spec.tags.push_back(std::move(tag));
  } else {
    spec.tags.emplace_back(kTagDestructive);
  }
  if (spec.HasTag(kTagReadOnly)) spec.ReadOnly();
  return spec;
}

}  // namespace

std::string McpToolName(const McpServerOptions& server, const std::string& tool) {
  return server.prefix_tool_names ? absl::StrCat(server.name, "__", tool) : tool;
}

absl::StatusOr<std::unique_ptr<McpServers>> McpServers::Start(
    std::vector<McpServerOptions> servers, std::vector<std::string> base_env) {
  std::unique_ptr<McpServers> out(new McpServers());
  McpServers* self = out.get();
  out->logged_refusals_.resize(servers.size());
  for (size_t i = 0; i < servers.size(); ++i) {
    auto server = std::make_shared<RemoteMcpServer>(std::move(servers[i]), base_env);
    // The servers stop (joining their supervisors) before `self` goes.
    server->set_on_listed([self, i] {
      absl::MutexLock lock(&self->publish_mu_);
      if (self->registry_ == nullptr) return;  // Attach publishes it
      if (absl::Status s = self->Publish(i, /*strict=*/false); !s.ok()) {
        spdlog::warn("MCP server '{}': its tools could not be published: {}",
                     self->servers_[i]->name(), std::string(s.message()));
      }
    });
    out->servers_.push_back(std::move(server));
  }
  for (const auto& server : out->servers_) {
    if (absl::Status s = server->Start(); !s.ok()) return s;
  }
  absl::Time started = absl::Now();
  for (const auto& server : out->servers_) {
    if (!server->WaitReady(started + server->options().startup_timeout)) {
      spdlog::warn("MCP server '{}' was not ready within {}: it is retried in the background, "
                   "and its tools appear once it lists them ({})",
                   server->name(), absl::FormatDuration(server->options().startup_timeout),
                   server->unavailable_reason());
    }
  }
  return out;
}

McpServers::~McpServers() { Stop(); }

std::vector<std::string> McpServers::SourceNames() const {
  std::vector<std::string> out;
  for (const auto& server : servers_) out.push_back(absl::StrCat("MCP server '", server->name(), "'"));
  return out;
}

absl::Status McpServers::Attach(LiveToolRegistry* registry) {
  absl::MutexLock lock(&publish_mu_);
  registry_ = registry;
  for (size_t i = 0; i < servers_.size(); ++i) {
    absl::Status s = Publish(i, /*strict=*/true);
    if (absl::IsAlreadyExists(s)) {
      return absl::AlreadyExistsError(absl::StrCat(
          s.message(), " (set prefix_tool_names on the MCP server to register its tools as '",
          servers_[i]->name(), "__<tool>')"));
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status McpServers::Publish(size_t index, bool strict) {
  const std::shared_ptr<RemoteMcpServer>& server = servers_[index];
  std::vector<std::shared_ptr<Tool>> tools;
  for (const Json& tool : server->tools()) {
    ToolSpec spec = SpecOf(server->options(), tool);
    const bool retryable = spec.HasTag(kTagReadOnly) || spec.HasTag(kTagIdempotent);
    std::string remote = StringField(tool, "name");
    tools.push_back(
        std::make_shared<McpTool>(std::move(spec), server, std::move(remote), retryable));
  }
  const size_t listed = tools.size();
  if (absl::Status s = registry_->Publish(index, std::move(tools), strict); !s.ok()) return s;
  // Each refusal is logged once, when it first happens.
  std::vector<std::string> refused = registry_->Refused(index);
  std::vector<std::string>& logged = logged_refusals_[index];
  for (const std::string& why : refused) {
    if (std::find(logged.begin(), logged.end(), why) == logged.end()) {
      spdlog::warn("MCP server '{}': {}", server->name(), why);
    }
  }
  spdlog::info("MCP server '{}': {} tool(s) registered", server->name(), listed - refused.size());
  logged = std::move(refused);
  return absl::OkStatus();
}

std::vector<McpServerStatus> McpServers::status() const {
  std::vector<McpServerStatus> out;
  for (const auto& server : servers_) {
    McpServerStatus s;
    s.name = server->name();
    s.reason = server->unavailable_reason();
    s.ready = s.reason.empty();
    s.tools = server->tools().size();
    s.tools_left_out = server->tools_left_out();
    out.push_back(std::move(s));
  }
  absl::MutexLock lock(&publish_mu_);
  for (size_t i = 0; i < out.size() && registry_ != nullptr; ++i) {
    out[i].refused_tools = registry_->Refused(i);
  }
  return out;
}

void McpServers::Stop() {
  for (const auto& server : servers_) server->Stop();
}

}  // namespace toolexec::mcp

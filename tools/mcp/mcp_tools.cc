#include "tools/mcp/mcp_tools.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "tools/builtin/json_fields.h"
#include "tools/mcp/content.h"
#include "tools/mcp/server.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::mcp {
namespace {

using builtin::StringField;

// One tool of an MCP server: its call goes to the server.
class McpTool final : public Tool {
 public:
  McpTool(ToolSpec spec, std::shared_ptr<McpServer> server, std::string remote_name,
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
  std::shared_ptr<McpServer> server_;
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
  for (std::string& tag : AnnotationTags(tool)) spec.tags.push_back(std::move(tag));
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
  for (McpServerOptions& o : servers) {
    auto server = std::make_shared<McpServer>(std::move(o), base_env);
    if (absl::Status s = server->Start(); !s.ok()) return s;
    out->servers_.push_back(std::move(server));
  }
  absl::Time started = absl::Now();
  for (const auto& server : out->servers_) {
    if (!server->WaitReady(started + server->options().startup_timeout)) {
      spdlog::warn("MCP server '{}' was not ready within {}: its tools are not listed; it is "
                   "retried in the background ({})",
                   server->name(), absl::FormatDuration(server->options().startup_timeout),
                   server->unavailable_reason());
    }
  }
  return out;
}

McpServers::~McpServers() { Stop(); }

absl::Status McpServers::Register(ToolRegistry& registry) {
  for (const auto& server : servers_) {
    const std::string source = absl::StrCat("MCP server '", server->name(), "'");
    size_t count = 0;
    for (const Json& tool : server->tools()) {
      ToolSpec spec = SpecOf(server->options(), tool);
      const bool retryable = spec.HasTag(kTagReadOnly) || spec.HasTag(kTagIdempotent);
      std::string remote = StringField(tool, "name");
      absl::Status s = registry.Register(
          std::make_unique<McpTool>(std::move(spec), server, std::move(remote), retryable), source);
      if (absl::IsAlreadyExists(s)) {
        return absl::AlreadyExistsError(absl::StrCat(
            s.message(), " (set prefix_tool_names on the MCP server to register its tools as '",
            server->name(), "__<tool>')"));
      }
      if (!s.ok()) {
        // A tool the model could not call (a name or schema toolexec refuses)
        // is left out; the server's other tools still serve.
        spdlog::warn("{}: tool left out: {}", source, std::string(s.message()));
        continue;
      }
      ++count;
    }
    spdlog::info("{}: {} tool(s) registered", source, count);
  }
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
    out.push_back(std::move(s));
  }
  return out;
}

void McpServers::Stop() {
  for (const auto& server : servers_) server->Stop();
}

}  // namespace toolexec::mcp

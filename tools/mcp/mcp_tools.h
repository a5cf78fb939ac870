// The configured MCP servers as a tool source: starts each server (all at
// once), waits for each at most its startup_timeout, and registers the tools
// of every server that answered, in config order and each server's own
// order, with server_name set. A server not ready in time is degraded: it
// keeps being retried in the background, but its tools were not listed, so
// they are not registered (the start-up log says so).
//
// A tool's name is the server's name for it, or "<server>__<tool>" with
// prefix_tool_names; a name another tool already has is the registry's
// duplicate error, naming both sources. Annotations become tags
// (content.h): read-only or idempotent tools are sent again once if their
// server dies during the call.
//
// Threads: Start and Register run once, at start-up, on the engine's thread;
// each McpTool's Call runs on the runner's threads (see server.h); Stop runs
// once, after the calls have finished, and joins every server's threads.
#ifndef TOOLEXEC_TOOLS_MCP_MCP_TOOLS_H_
#define TOOLEXEC_TOOLS_MCP_MCP_TOOLS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/mcp/options.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec::mcp {

class McpServer;

// What health reports of one server.
struct McpServerStatus {
  std::string name;
  bool ready = false;
  std::string reason;  // why not ready
  size_t tools = 0;
};

class McpServers final {
 public:
  // Starts every server and waits (concurrently) until each is ready or its
  // startup_timeout passed. `base_env` is the scrubbed environment stdio
  // servers start from.
  static absl::StatusOr<std::unique_ptr<McpServers>> Start(std::vector<McpServerOptions> servers,
                                                           std::vector<std::string> base_env);
  ~McpServers();

  // Registers the tools of every ready server, in config order.
  absl::Status Register(ToolRegistry& registry);

  std::vector<McpServerStatus> status() const;

  // Ends every server (killing stdio servers' process trees); idempotent.
  void Stop();

 private:
  McpServers() = default;
  std::vector<std::shared_ptr<McpServer>> servers_;
};

// The registered name of `tool` from `server`.
std::string McpToolName(const McpServerOptions& server, const std::string& tool);

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_TOOLS_MCP_MCP_TOOLS_H_

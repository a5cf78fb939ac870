// The configured MCP servers as a tool source: starts each server (all at
// once), waits for each at most its startup_timeout, and then publishes the
// tools of every server that answered into the daemon's LiveToolRegistry, in
// config order and each server's own order, with server_name set. A server
// not ready in time is degraded: it keeps being retried in the background
// and its tools appear once it has listed them.
//
// The tools follow the servers while the daemon runs: every listing (a late
// start, notifications/tools/list_changed, a reconnect after a restart) is
// published as a whole, so a tool the server added can be called and one it
// removed is an unknown tool (calls already running complete).
//
// A tool's name is the server's name for it, or "<server>__<tool>" with
// prefix_tool_names; enabled_tools/disabled_tools filter the server's list.
// A name another tool already has is, at start-up, the registry's duplicate
// error naming both sources; later, the tool is not registered: that is
// logged naming both sources and shown in status(). Annotations become tags
// (content.h) only for a server with trusted_annotations; otherwise every
// tool is destructive. Read-only or idempotent tools are sent again once if
// their server dies during the call.
//
// Threads: Start and Attach run once, at start-up, on the engine's thread;
// later listings are published on each server's supervisor thread; one
// mutex serializes publishing (so the last listing of a server is the one
// published). Each McpTool's Call runs on the runner's threads (see
// server.h); Stop runs once, after the calls have finished, and joins every
// server's threads, so nothing is published after it returns.
#ifndef TOOLEXEC_MCP_CLIENT_MCP_TOOLS_H_
#define TOOLEXEC_MCP_CLIENT_MCP_TOOLS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "mcp/client/options.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec::mcp {

class RemoteMcpServer;

// What health reports of one server.
struct McpServerStatus {
  std::string name;
  bool ready = false;
  std::string reason;  // why not ready
  size_t tools = 0;    // listed by the server (after its tool filter)
  // Listed (after the filter) but left out over the listing caps
  // (kMaxListedTools tools, kMaxListedBytes of declarations).
  size_t tools_left_out = 0;
  // Listed tools that are not registered, and why (a name another tool has).
  std::vector<std::string> refused_tools;
};

class McpServers final {
 public:
  // Starts every server and waits (concurrently) until each is ready or its
  // startup_timeout passed. `base_env` is the scrubbed environment stdio
  // servers start from.
  static absl::StatusOr<std::unique_ptr<McpServers>> Start(std::vector<McpServerOptions> servers,
                                                           std::vector<std::string> base_env);
  ~McpServers();

  // How the registry names the servers as tool sources, in config order:
  // give these to the LiveToolRegistry that Attach publishes into.
  std::vector<std::string> SourceNames() const;

  // Publishes the tools of every ready server into `registry` (a name
  // already taken is the start-up duplicate error), and from then on every
  // new listing of any server. `registry` must outlive Stop().
  absl::Status Attach(LiveToolRegistry* registry);

  std::vector<McpServerStatus> status() const;

  // Ends every server (killing stdio servers' process trees); idempotent.
  void Stop();

 private:
  McpServers() = default;
  // Publishes server `index`'s current list (under publish_mu_).
  absl::Status Publish(size_t index, bool strict) ABSL_EXCLUSIVE_LOCKS_REQUIRED(publish_mu_);

  std::vector<std::shared_ptr<RemoteMcpServer>> servers_;
  mutable absl::Mutex publish_mu_;
  // Null until Attach: listings before it are published by Attach itself.
  LiveToolRegistry* registry_ ABSL_GUARDED_BY(publish_mu_) = nullptr;
  // What each server's refusals were when last published (to log changes).
  std::vector<std::vector<std::string>> logged_refusals_ ABSL_GUARDED_BY(publish_mu_);
};

// The registered name of `tool` from `server`.
std::string McpToolName(const McpServerOptions& server, const std::string& tool);

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_CLIENT_MCP_TOOLS_H_

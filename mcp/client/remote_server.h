// One configured MCP server, supervised: toolexecd connects to it (spawning
// it for stdio), keeps the list of its tools, restarts it when it dies, and
// forwards tool calls to it.
//
// States: starting -> ready <-> degraded. The daemon's start-up waits at
// most startup_timeout for a server, but the connection attempt goes on in
// the background (for kMinConnectTimeout at least), so a slow server comes
// up late rather than never. A connection that fails (cannot start,
// handshake error, the process exits, the HTTP session ends) makes the
// server degraded; the supervisor then reconnects after a backoff of 1 s,
// doubling to 30 s, reset once a connection has lasted 30 s. Calls in flight
// on a connection that ends fail SERVER_UNAVAILABLE naming the server, unless
// their tool is read-only or idempotent: those wait for the next connection
// (within their deadline) and are sent again, once.
//
// Threads: one supervisor thread per server owns connecting, listing and
// reconnecting; tools/list_changed wakes it to list again, and each listing
// is handed on (set_on_listed) from that thread. CallTool runs on
// the caller's thread (a runner thread) and only reads the current
// connection under the mutex. Stop() ends the supervisor and the connection
// (killing a stdio server's process tree) and joins.
#ifndef TOOLEXEC_MCP_CLIENT_REMOTE_SERVER_H_
#define TOOLEXEC_MCP_CLIENT_REMOTE_SERVER_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "mcp/client/connection.h"
#include "mcp/client/options.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::mcp {

inline constexpr absl::Duration kMinRestartBackoff = absl::Seconds(1);
inline constexpr absl::Duration kMaxRestartBackoff = absl::Seconds(30);
// How long one connection attempt (start, handshake, first listing) may take
// at least: the daemon's start-up waits only startup_timeout for a server,
// but a slower server still gets this long to come up in the background.
inline constexpr absl::Duration kMinConnectTimeout = absl::Seconds(30);

class RemoteMcpServer final {
 public:
  // `base_env` is the scrubbed environment a stdio server starts from.
  RemoteMcpServer(McpServerOptions options, std::vector<std::string> base_env);
  ~RemoteMcpServer();
  RemoteMcpServer(const RemoteMcpServer&) = delete;
  RemoteMcpServer& operator=(const RemoteMcpServer&) = delete;

  const McpServerOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }

  // Called on the supervisor thread (no lock held) after each listing of the
  // server's tools: the first, each after list_changed, and each after a
  // reconnect. Set before Start().
  void set_on_listed(std::function<void()> on_listed) { on_listed_ = std::move(on_listed); }
  // Starts the supervisor thread (the first connection attempt begins at once).
  absl::Status Start();
  // Waits until the server is ready or `deadline`; true if ready.
  bool WaitReady(absl::Time deadline);
  // The server's tools (MCP Tool objects) from its latest tools/list, filtered
  // by enabled_tools/disabled_tools; empty before the first connection.
  std::vector<Json> tools() const;
  // Tools of the latest listing left out for the listing caps
  // (kMaxListedTools, kMaxListedBytes).
  size_t tools_left_out() const;
  // How often the server's tools were listed (each list_changed adds one).
  uint64_t list_generation() const;
  // "" when ready; otherwise why calls fail ("the MCP server process exited
  // with code 1; restarting in 2s").
  std::string unavailable_reason() const;
  // How many connections were made (1 = never restarted).
  uint64_t connections() const;

  // Calls `tool` (the server's own name) with `args`; `retryable` for
  // read-only/idempotent tools. Progress goes to ctx.progress("progress", ..).
  // Failures: SERVER_UNAVAILABLE (the server is down or went down), the
  // server's error response, DeadlineExceeded, Cancelled.
  absl::StatusOr<Json> CallTool(const std::string& tool, const JsonValue& args, ToolContext& ctx,
                                bool retryable);

  // Ends the supervisor and the connection; idempotent.
  void Stop();

 private:
  void Supervise();
  std::unique_ptr<Transport> MakeTransport() const;
  // Connects, handshakes and lists; the connection on success.
  absl::StatusOr<std::shared_ptr<Connection>> Connect(absl::Time deadline);
  absl::Status Relist(Connection& connection);
  // How long one connection attempt or listing may take.
  absl::Duration ConnectTimeout() const {
    return std::max(options_.startup_timeout, kMinConnectTimeout);
  }
  bool Allowed(const std::string& tool) const;
  absl::StatusOr<std::shared_ptr<Connection>> CurrentConnection(absl::Time deadline,
                                                                const CancellationToken& cancel,
                                                                bool wait);

  const McpServerOptions options_;
  const std::vector<std::string> base_env_;
  // Everything the server writes to the daemon's log, over all its connections.
  const std::shared_ptr<ServerLog> log_;
  std::function<void()> on_listed_;
  // Cancelled by Stop(): ends a connection attempt or listing under way.
  CancellationToken stopping_token_;
  std::thread supervisor_;

  mutable absl::Mutex mu_;
  absl::CondVar changed_;  // state, stop, relist
  std::shared_ptr<Connection> connection_ ABSL_GUARDED_BY(mu_);
  std::vector<Json> tools_ ABSL_GUARDED_BY(mu_);
  size_t tools_left_out_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t list_generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t connections_ ABSL_GUARDED_BY(mu_) = 0;
  std::string unavailable_ ABSL_GUARDED_BY(mu_) = "the MCP server is starting";
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool relist_ ABSL_GUARDED_BY(mu_) = false;
  bool connection_ended_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_CLIENT_REMOTE_SERVER_H_

// toolexecd's options: the engine's (core/engine_options.h) and the
// transport's, grouped as Triton groups its gRPC server's. main.cc fills them
// from the config file and the flags; ValidateOptions (server/config/config.h) checks
// every range once, whichever of the two a value came from.
#ifndef TOOLEXEC_SERVER_OPTIONS_H_
#define TOOLEXEC_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/engine_options.h"
#include "server/tool_catalogue.h"

namespace toolexec {

// MCP over streamable HTTP: sessions per caller, sessions in all (a new one
// past it is refused, never another caller's ended), and how long an idle one
// lives.
inline constexpr uint32_t kDefaultMcpSessionsPerCaller = 64;
inline constexpr uint32_t kMcpMaxSessions = 1024;
inline constexpr absl::Duration kDefaultMcpSessionIdleTtl = absl::Minutes(30);

// HTTP/2 keepalive as the server enforces it on clients. Harnesses keep one
// channel open for a whole agent run and keep it alive with pings.
struct KeepAliveOptions {
  // Accept pings on a connection with no call in flight.
  bool permit_without_calls = true;
  // Pings closer together than this (with no data) are a protocol violation.
  absl::Duration min_ping_interval = absl::Seconds(10);
};

// Who may call (server/auth.h). Any of the three authenticates callers.
struct TlsOptions {
  std::string cert_file;       // PEM; with key_file, the daemon serves TLS on TCP
  std::string key_file;
  std::string client_ca_file;  // set = every client must present a certificate it signed
};
struct UnixSocketOptions {
  uint32_t mode = 0;                  // 0 = as created (umask); else chmod to this
  std::vector<uint32_t> allowed_uids; // empty = any uid the file mode lets connect
};
struct AuthOptions {
  std::string token_file;  // lines "TOKEN [NAME [PROFILE]]"; reloaded on SIGHUP
  TlsOptions tls;
  UnixSocketOptions unix_socket;
};

// The gRPC transport.
struct ServerOptions {
  // "127.0.0.1:50051", "[::]:0", "unix:/run/toolexec.sock".
  std::string listen = "127.0.0.1:50051";
  // Largest request the daemon accepts and largest response it sends (tool
  // arguments such as file contents; one result). A result that would not fit
  // becomes a TOOL_FAILED result saying so.
  int max_receive_message_bytes = 64 << 20;
  int max_send_message_bytes = 64 << 20;
  KeepAliveOptions keepalive;
  // On shutdown, how long in-flight batches may finish before they are
  // cancelled (Engine::Drain's deadline).
  absl::Duration drain_grace = absl::Seconds(30);
  // Serve a non-loopback TCP address although no caller is authenticated.
  // Without it the daemon refuses to (ValidateOptions): whoever reaches the
  // port can run commands and write files in the workspace.
  bool insecure_allow_unauthenticated = false;
  AuthOptions auth;
  // Prometheus /metrics over HTTP on this "host:port" (port 0 picks one);
  // "" = off. MetricsConfig.listen, --metrics_listen.
  std::string metrics_listen;
  // MCP over streamable HTTP (server/mcp_http.h) on this "host:port" (port 0
  // picks one); "" = off. DaemonConfig.mcp_listen, --mcp_listen.
  std::string mcp_listen;
  // Its sessions one caller (by identity name) may hold, 1..kMcpMaxSessions.
  // DaemonConfig.mcp_max_sessions_per_caller, --mcp_max_sessions_per_caller.
  uint32_t mcp_max_sessions_per_caller = kDefaultMcpSessionsPerCaller;
  // A session of it with no request this long ends.
  // DaemonConfig.mcp_session_idle_ttl_ms, --mcp_session_idle_ttl_ms.
  absl::Duration mcp_session_idle_ttl = kDefaultMcpSessionIdleTtl;
  // Host header hosts it accepts beyond the loopback ones (any port): names or
  // addresses, lower-case, IPv6 without brackets (NormalizeMcpAllowedHost).
  // DaemonConfig.mcp_allowed_hosts, --mcp_allowed_hosts.
  std::vector<std::string> mcp_allowed_hosts;
};

// Whether `listen` is reachable from this machine only: a unix socket, or a
// loopback host (127.0.0.0/8, ::1, localhost).
bool IsLocalListenAddress(absl::string_view listen);

// An mcp_allowed_hosts entry as the Host check compares it: a host name or an
// address, without port, lower-cased, IPv6 without its brackets.
// InvalidArgument for anything else (a port, a path, a wildcard, spaces).
absl::StatusOr<std::string> NormalizeMcpAllowedHost(absl::string_view entry);

// Whether `options` authenticate every caller: a token file, TLS with a
// client CA (mTLS), or a unix socket with an allowed-uid list. TLS without a
// client CA encrypts but does not say who calls.
bool AuthenticatesCallers(const ServerOptions& options);

struct DaemonOptions {
  EngineOptions engine;
  // The tools besides the MCP servers' (server/tool_catalogue.h).
  ToolCatalogueOptions tools;
  ServerOptions server;
  // Log lines: "text" or "json" (server/logging.h). log_format, --log_format.
  std::string log_format = "text";
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_OPTIONS_H_

// How an MCP client exchanges JSON-RPC messages with one server: the stdio
// transport (a child process, newline-delimited messages) or streamable HTTP.
//
// Contract: Start() begins delivering; every message the server sends reaches
// `on_message` (parsed), in the order the server sent it on its stream, and
// `on_closed` runs exactly once when the transport can carry nothing more
// (the process exited, Close() was called, a fatal HTTP error). After
// Close() returns no callback runs or will run.
// Threads: callbacks run on the transport's own threads (never inside Send or
// Close); Send may be called from any thread at once.
#ifndef TOOLEXEC_MCP_CLIENT_TRANSPORT_H_
#define TOOLEXEC_MCP_CLIENT_TRANSPORT_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "mcp/protocol/jsonrpc.h"

namespace toolexec::mcp {

struct TransportCallbacks {
  std::function<void(Message)> on_message;
  // Why the transport ended (OK after Close()).
  std::function<void(absl::Status)> on_closed;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Begins the exchange (spawns the process, or nothing for HTTP).
  virtual absl::Status Start(TransportCallbacks callbacks) = 0;
  // Sends one message (JSON text without a newline), waiting at most until
  // `deadline` for the server to take it. Unavailable once closed.
  virtual absl::Status Send(const std::string& message, absl::Time deadline) = 0;
  // Ends the exchange (kills the process's tree; ends the HTTP session) and
  // waits for the transport's threads. Idempotent.
  virtual void Close() = 0;
  // For messages: "pid 123" or the URL.
  virtual std::string Describe() const = 0;
  // Negotiated protocol version, for transports that send it on every request.
  virtual void SetProtocolVersion(const std::string& /*version*/) {}
};

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_CLIENT_TRANSPORT_H_

// One live MCP session with a server over a Transport: request/response
// correlation by id, the initialize handshake with version negotiation,
// tools/list with cursors, and tools/call with progress and cancellation.
//
// Threads: Request() blocks its caller (a tool call on the runner's
// executor, or the server's supervisor thread) until the response, the
// deadline, a cancellation or the transport's end. Responses and
// notifications arrive on the transport's thread, which completes the waiting
// request or calls its progress function (never after Request() returned)
// and hands other notifications to `on_notification`. Close() fails every
// waiting request with UNAVAILABLE.
#ifndef TOOLEXEC_MCP_CLIENT_CONNECTION_H_
#define TOOLEXEC_MCP_CLIENT_CONNECTION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "mcp/client/server_log.h"
#include "mcp/client/transport.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"

namespace toolexec::mcp {

// The protocol versions this client speaks, newest first; initialize asks
// for the first.
inline constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                    "2024-11-05"};

struct ServerInfo {
  std::string protocol_version;
  std::string name;     // serverInfo.name
  std::string version;  // serverInfo.version
  bool tools_list_changed = false;
};

// Receives a progress notification's text (its message, or "progress/total").
using ProgressSink = std::function<void(absl::string_view text)>;

// The most tools one server's listing keeps, and the most bytes of their
// declarations (JSON text); the rest are left out (counted).
inline constexpr size_t kMaxListedTools = 1000;
inline constexpr size_t kMaxListedBytes = 1 << 20;

struct ToolListing {
  std::vector<Json> tools;  // the server's Tool objects, in its order
  size_t left_out = 0;      // kept by the filter but over the caps
};

class Connection final {
 public:
  struct Callbacks {
    // A notification other than progress (e.g. notifications/tools/list_changed).
    std::function<void(const std::string& method)> on_notification;
    // The transport ended (not after Close()).
    std::function<void(absl::Status)> on_closed;
  };

  // `log` (null: one of its own) takes the server's log notifications and
  // the warnings its messages cause.
  Connection(std::string server_name, std::unique_ptr<Transport> transport,
             std::shared_ptr<ServerLog> log = nullptr);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Starts the transport and runs the handshake: initialize (refusing a
  // protocol version this client does not speak), then
  // notifications/initialized. `cancel` (may be null) ends the wait early.
  absl::StatusOr<ServerInfo> Open(Callbacks callbacks, absl::Time deadline,
                                  const CancellationToken* cancel = nullptr);

  // The tools the server lists (following nextCursor) that `keep` accepts
  // (null: all), up to kMaxListedTools and kMaxListedBytes of them; only
  // one page is held at a time beyond what is kept.
  absl::StatusOr<ToolListing> ListTools(
      absl::Time deadline, const CancellationToken* cancel = nullptr,
      const std::function<bool(const JsonValue& tool)>& keep = nullptr);

  // Sends `method` and waits for its result until `deadline` (DeadlineExceeded)
  // or `cancel` (Cancelled; both send notifications/cancelled). With a
  // `progress` sink the request carries a progressToken. An error response is
  // RpcErrorStatus; the transport's end is Unavailable.
  absl::StatusOr<Json> Request(absl::string_view method, Json params, absl::Time deadline,
                               const CancellationToken* cancel = nullptr,
                               ProgressSink progress = nullptr);

  // Ends the transport; waiting requests fail Unavailable.
  void Close();
  bool closed() const;
  // Why the transport ended ("the MCP server process exited with code 1");
  // "" while it is up or after Close().
  std::string end_reason() const;
  const std::string& server_name() const { return server_name_; }

 private:
  struct Pending;
  void OnMessage(Message msg);
  void OnClosed(absl::Status why);
  void FailAll(const absl::Status& why);

  const std::string server_name_;
  std::unique_ptr<Transport> transport_;
  const std::shared_ptr<ServerLog> log_;
  Callbacks callbacks_;
  mutable absl::Mutex mu_;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, std::shared_ptr<Pending>> pending_ ABSL_GUARDED_BY(mu_);
  absl::Status closed_ ABSL_GUARDED_BY(mu_);  // non-OK once the transport ended
  bool close_called_ ABSL_GUARDED_BY(mu_) = false;
  std::string end_reason_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_CLIENT_CONNECTION_H_

// What one MCP server writes to the daemon's log: its stderr lines, its
// notifications/message, stdout lines that are not JSON-RPC, and the warnings
// its messages cause. One limit for all of it, so that no server can flood
// the log: at most kServerLogLinesPerSecond lines a second (a token bucket
// holding kServerLogBurst), each cut at kServerLogLineBytes; the lines over
// the rate are counted, and the count is logged with the next line logged.
//
// Thread safety: Write may be called from any thread (the transport's reader,
// the HTTP workers, the connection); one limit per server, shared by all its
// connections.
#ifndef TOOLEXEC_MCP_CLIENT_SERVER_LOG_H_
#define TOOLEXEC_MCP_CLIENT_SERVER_LOG_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace toolexec::mcp {

inline constexpr int kServerLogLinesPerSecond = 20;
inline constexpr int kServerLogBurst = 100;
inline constexpr size_t kServerLogLineBytes = 1024;

class ServerLog final {
 public:
  explicit ServerLog(std::string server_name) : server_name_(std::move(server_name)) {}

  // Logs "MCP server '<name>' <what>: <line>" (info) or "MCP server '<name>':
  // <line>" when `what` is "" (a warning), within the limit.
  void Write(absl::string_view what, absl::string_view line);
  // Lines not logged so far (over the rate), for tests.
  uint64_t suppressed_total() const;

 private:
  const std::string server_name_;
  mutable absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_) = kServerLogBurst;
  absl::Time refilled_ ABSL_GUARDED_BY(mu_) = absl::Now();
  uint64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;  // since the last line logged
  uint64_t suppressed_total_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_CLIENT_SERVER_LOG_H_

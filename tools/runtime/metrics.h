// What toolexec measures for its operators, behind an interface that knows
// nothing of Prometheus: the runtime, the engine and the transports report
// here; toolexecd's exporter (server/metrics.h) turns it into /metrics.
//
// Two kinds of measurement:
// - Events with labels (a call completed, a batch ended, an RPC finished, a
//   permission decided) go to a MetricsSink, given to the engine in its
//   options (null = not measured). The sink is called on hot paths from any
//   thread: an implementation may not lock beyond its metric library's own
//   atomics (the Prometheus one resolves each label set once and keeps the
//   handle).
// - Process-wide counts that deep code keeps (command processes running,
//   command output bytes) are relaxed atomics in ProcessCounters(), read by
//   the exporter when scraped. Tools need no handle to bump them.
#ifndef TOOLEXEC_TOOLS_RUNTIME_METRICS_H_
#define TOOLEXEC_TOOLS_RUNTIME_METRICS_H_

#include <atomic>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/runtime/decision.h"

namespace toolexec {

class ToolRegistry;
struct RegisteredTool;
enum class ResultStatus;
enum class ErrorCode;

// What took a permission decision: a policy's rule, its default decision, a
// grant the session holds (an ask it covered), the user's answer to an ask,
// the ask's timeout, or a failure to evaluate the call (denied).
enum class PermissionDecidedBy { kRule, kDefault, kGrant, kUser, kTimeout, kError };

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;

  // The engine's tools, once, after registration and before any call: an
  // implementation may prepare one handle per tool (RegisteredTool::position).
  virtual void AddTools(const ToolRegistry& registry) = 0;
  // A call completed (exactly once per call, whoever completed it). `tool` is
  // null for a name no tool has; `code` says why a call that did not succeed
  // failed (ignored on success).
  virtual void CallCompleted(const RegisteredTool* tool, ResultStatus status, ErrorCode code,
                             absl::Duration duration) = 0;
  // A batch was accepted with `calls` calls.
  virtual void BatchStarted(size_t calls) = 0;
  // A batch's outcome reached its caller, `duration` after it was accepted.
  virtual void BatchFinished(absl::Duration duration) = 0;
  // A permission policy decided a call, or an ask about it was answered
  // (by kUser or kTimeout: the call was counted as kAsk before).
  virtual void PermissionDecided(PolicyDecision decision, PermissionDecidedBy by) = 0;
  // The gRPC transport finished an RPC (`method` as the wire names it, e.g. "ExecuteBatch").
  virtual void RpcFinished(absl::string_view method, absl::StatusCode code) = 0;
  // The MCP HTTP endpoint answered a request (`method` e.g. "tools/call", or the
  // HTTP verb for what is not a JSON-RPC POST) with the HTTP `status`.
  virtual void McpHttpRequestFinished(absl::string_view method, int status) {}
  // A checkpoint of a workspace was taken (before a batch, or before a
  // restore) in `duration`, adding `bytes_stored` to the store.
  virtual void CheckpointTaken(absl::Duration duration, uint64_t bytes_stored) {}
};

// Process-wide counts kept where they happen (relaxed atomics).
struct ProcessCountersData {
  // Command process trees started and not yet reaped (run_command, in the
  // foreground or the background, and command tools).
  std::atomic<int64_t> commands_running{0};
  // Bytes commands wrote to their stdout and stderr pipes, as read.
  std::atomic<uint64_t> command_output_bytes{0};
};
ProcessCountersData& ProcessCounters();

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_METRICS_H_

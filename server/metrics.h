// toolexecd's Prometheus metrics: the MetricsSink (tools/runtime/metrics.h)
// that the engine and the gRPC services report to, the gauges read from the
// engine when scraped, and the HTTP endpoint serving /metrics
// (MetricsConfig.listen, --metrics_listen).
//
// Metrics (README "Operating it" lists them with their meaning):
//   toolexec_calls_total{tool,server_name,status,code} counter
//   toolexec_call_duration_seconds{tool}             histogram
//   toolexec_batch_duration_seconds                  histogram
//   toolexec_batch_size_calls                        histogram (calls per batch)
//   toolexec_calls_in_flight, toolexec_calls_queued  gauges
//   toolexec_batches_in_flight, toolexec_sessions_open gauges
//   toolexec_child_processes_running                 gauge (command process trees)
//   toolexec_command_output_bytes_total              counter
//   toolexec_rpcs_total{method,code}                 counter (gRPC)
//   toolexec_mcp_http_requests_total{method,status}  counter (the MCP HTTP endpoint)
//   toolexec_build_info{version,commit,build_type}   gauge
//   process_*: resident and virtual memory, CPU seconds, open and max fds,
//   threads, start time (read from /proc when scraped)
//   toolexec_permission_decisions_total{decision,decided_by} counter
//   toolexec_checkpoint_duration_seconds             histogram (checkpoints taken)
//   toolexec_checkpoint_bytes_total                  counter (bytes they stored)
// Labels are low-cardinality only: a call's tool is its registered name (a
// name no tool has is "(unknown)"), never a session or call id.
//
// Threads: the MetricsSink methods run on any thread, on hot paths, without
// locks: each label set's handle is created once (under the metric family's
// lock, the first time it is seen) and kept in an atomic slot; counters are
// prometheus-cpp's atomics and histograms are buckets of atomics (a scrape
// may see an observation in a bucket before its sum). The exporter's HTTP
// thread collects; the stats source it calls must be thread-safe and stay
// valid until Stop() (the daemon's engine).
#ifndef TOOLEXEC_SERVER_METRICS_H_
#define TOOLEXEC_SERVER_METRICS_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "core/engine.h"
#include "tools/runtime/metrics.h"

namespace toolexec {

class PrometheusMetrics final : public MetricsSink {
 public:
  PrometheusMetrics();
  ~PrometheusMetrics() override;
  PrometheusMetrics(const PrometheusMetrics&) = delete;
  PrometheusMetrics& operator=(const PrometheusMetrics&) = delete;

  // Where the gauges come from when scraped (the engine's stats).
  void SetStatsSource(std::function<Engine::Stats()> stats);
  // Serves /metrics over HTTP on `listen` ("host:port"; port 0 picks one).
  // Unavailable if it cannot listen there.
  absl::Status Serve(const std::string& listen);
  // The bound "host:port" once serving, else "".
  const std::string& address() const { return address_; }
  // Stops serving and drops the stats source. Idempotent.
  void Stop();
  // The text exposition, as /metrics serves it.
  std::string Scrape() const;

  // MetricsSink.
  void AddTools(const ToolRegistry& registry) override;
  void CallCompleted(const RegisteredTool* tool, ResultStatus status, ErrorCode code,
                     absl::Duration duration) override;
  void BatchStarted(size_t calls) override;
  void BatchFinished(absl::Duration duration) override;
  void PermissionDecided(PolicyDecision decision, PermissionDecidedBy by) override;
  void RpcFinished(absl::string_view method, absl::StatusCode code) override;
  void CheckpointTaken(absl::Duration duration, uint64_t bytes_stored) override;
  void McpHttpRequestFinished(absl::string_view method, int status) override;

 private:
  struct State;
  std::shared_ptr<State> state_;  // also registered with the HTTP endpoint
  std::string address_;
};

// Every gRPC RPC's end is counted here (server/unary.h and the stream
// reactors call it): the metrics of the daemon serving in this process, set
// by Daemon::Start and cleared by its Shutdown. Null = not measured.
void SetRpcMetrics(MetricsSink* metrics);
// Clears it if it is still `metrics`.
void ClearRpcMetrics(MetricsSink* metrics);
void CountRpc(absl::string_view method, int grpc_code);
// An MCP HTTP request's end (server/mcp_http.cc), to the same metrics.
void CountMcpHttpRequest(absl::string_view method, int http_status);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_METRICS_H_

// toolexecd as an object: the tool registry, the runtime (runner, sessions),
// the gRPC server with its services, health and reflection, and the staged
// shutdown. main.cc, the integration tests and the benchmarks all run the
// daemon through this class, so they exercise the same code.
//
// Threads: Start() and Shutdown() are called from the owner's thread (main's
// signal thread in toolexecd). gRPC runs the handlers on its own threads; tool
// code runs on the ToolRunner's executor.
#ifndef TOOLEXEC_SERVER_DAEMON_H_
#define TOOLEXEC_SERVER_DAEMON_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <memory>
#include <map>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "server/artifact_store_service.h"
#include "server/service_core.h"
#include "server/tool_executor_service.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {

class Daemon final {
 public:
  // Registers extra tools after the daemon's own (tests, embedders).
  using ToolInstaller = std::function<absl::Status(ToolRegistry&)>;

  // Builds the registry (fails on a duplicate name or invalid schema) and the
  // runtime. Does not listen yet.
  static absl::StatusOr<std::unique_ptr<Daemon>> Create(DaemonOptions options,
                                                        ToolInstaller extra_tools = nullptr);
  // Shutdown() if still running.
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Listens and serves; health turns SERVING. Unavailable if the address
  // cannot be bound.
  absl::Status Start();
  // The bound address, with the real port when the options asked for port 0.
  const std::string& address() const { return address_; }

  // Staged, graceful stop (STYLE.md habit 4): health NOT_SERVING and new
  // batches refused with UNAVAILABLE; in-flight batches get up to drain_grace
  // to finish; then sessions close (ending WatchSession streams), the gRPC
  // server stops (cancelling what is left) and the runtime stops. Idempotent.
  void Shutdown();

  const DaemonOptions& options() const { return options_; }
  const ToolRegistry& registry() const { return registry_; }
  ServiceCore& core() { return *core_; }

 private:
  explicit Daemon(DaemonOptions options) : options_(std::move(options)) {}
  void SetServing(bool serving);

  const DaemonOptions options_;
  ToolRegistry registry_;
  std::unique_ptr<ArtifactStore> artifacts_;
  std::map<std::string, ResolvedSubagent> subagents_;
  // Closes sessions past their idle TTL (only when a TTL is configured).
  std::thread sweeper_;
  absl::Notification stop_sweeper_;
  std::unique_ptr<ToolRunner> runner_;
  std::unique_ptr<SessionManager> sessions_;
  std::unique_ptr<ServiceCore> core_;
  std::unique_ptr<ToolExecutorService> executor_service_;
  std::unique_ptr<ArtifactStoreService> artifact_service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification shutdown_done_;  // later Shutdown() callers wait on it
  bool runner_abandoned_ = false;     // tools ignored cancellation past the grace
};

// The tools a daemon with `options` registers, in order (S1): the chosen
// built-ins, the declared tools (S9), then the example tools.
absl::Status RegisterDaemonTools(const DaemonOptions& options, ToolRegistry& registry);

// S7: each configured subagent's tools, or InvalidArgument naming the
// subagent and the problem (both lists, an unknown tool, a duplicate name).
absl::StatusOr<std::map<std::string, ResolvedSubagent>> ResolveSubagents(
    const DaemonOptions& options, const ToolRegistry& registry);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_DAEMON_H_

// toolexecd as an object: an Engine (core/engine.h) behind a grpc::Server with
// the ToolExecutor and ArtifactStore services, health and reflection, and the
// staged shutdown. main.cc, the integration tests and the benchmarks all run
// the daemon through this class, so they exercise the same code.
//
// Threads: Start() and Shutdown() are called from the owner's thread (main's
// signal thread in toolexecd); ReloadCredentials() from any one thread at a
// time (main's signal thread on SIGHUP). gRPC runs the handlers on its own threads; the
// engine runs tools on its own (see core/engine.h).
#ifndef TOOLEXEC_SERVER_DAEMON_H_
#define TOOLEXEC_SERVER_DAEMON_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/engine.h"
#include "server/artifact_store_service.h"
#include "server/auth.h"
#include "server/mcp_http.h"
#include "server/metrics.h"
#include "server/options.h"
#include "server/tool_declarations.h"
#include "server/tool_executor_service.h"
#include "server/unix_listener.h"

namespace toolexec {

class Daemon final {
 public:
  using ToolInstaller = toolexec::ToolInstaller;  // server/tool_catalogue.h

  // Builds the tool catalogue and the engine (fails on a duplicate tool
  // name, an invalid schema or selection) and reads the credentials it
  // checks (a malformed token file fails). Does not listen yet.
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
  // Where /metrics is served ("host:port"), or "" (metrics_listen unset).
  std::string metrics_address() const { return metrics_ ? metrics_->address() : ""; }

  // Where MCP over streamable HTTP is served ("host:port", path /mcp), or ""
  // (mcp_listen unset).
  std::string mcp_address() const { return mcp_http_ ? mcp_http_->address() : ""; }

  // Reads the token file again (SIGHUP): on error the tokens in use stay and
  // the status says why.
  absl::Status ReloadCredentials() { return auth_->ReloadTokens(); }

  // Staged, graceful stop (STYLE.md habit 4): health NOT_SERVING (and the
  // MCP endpoint refuses new requests), then the engine drains (new batches refused with UNAVAILABLE, in-flight ones get
  // up to drain_grace, sessions close and WatchSession streams end), then the
  // gRPC server and the MCP endpoint stop (cancelling what is left) and the
  // engine stops.
  // Idempotent; later callers wait for the first.
  void Shutdown();

  const DaemonOptions& options() const { return options_; }
  Engine& engine() { return *engine_; }

 private:
  explicit Daemon(DaemonOptions options) : options_(std::move(options)) {}
  void SetServing(bool serving);
  // Stops serving /metrics and counting RPCs (the engine may still report).
  void StopMetrics();

  const DaemonOptions options_;
  // Set when metrics_listen is: the engine reports to it, Start serves it.
  std::shared_ptr<PrometheusMetrics> metrics_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<Authenticator> auth_;
  std::unique_ptr<UnixListener> unix_listener_;  // for a unix:/path listen address
  // The engine's tools as the services list them (before them: they use it).
  ToolDeclarations declarations_;
  std::unique_ptr<ToolExecutorService> executor_service_;
  std::unique_ptr<ArtifactStoreService> artifact_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<McpHttpServer> mcp_http_;  // when mcp_listen is set
  std::string address_;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification shutdown_done_;  // later Shutdown() callers wait on it
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_DAEMON_H_

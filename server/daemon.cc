#include "server/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/health/v1/health.pb.h"
#include "server/build_info.h"
#include "server/listen_probe.h"
#include "spdlog/spdlog.h"

namespace toolexec {

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions options,
                                                       ToolInstaller extra_tools) {
  std::shared_ptr<PrometheusMetrics> metrics;
  if (!options.server.metrics_listen.empty()) {
    metrics = std::make_shared<PrometheusMetrics>();
    options.engine.metrics = metrics;
  }
  std::unique_ptr<Daemon> d(new Daemon(std::move(options)));
  d->metrics_ = std::move(metrics);
  auto engine = CreateEngine(d->options_.engine, d->options_.tools, extra_tools);
  if (!engine.ok()) return engine.status();
  d->engine_ = *std::move(engine);
  const Engine* checked_by = d->engine_.get();
  auto auth = Authenticator::Create(d->options_.server.auth, [checked_by](const std::string& p) {
    return checked_by->CheckProfile(p);
  });
  if (!auth.ok()) return auth.status();
  d->auth_ = *std::move(auth);
  return d;
}

Daemon::~Daemon() { Shutdown(); }

absl::Status Daemon::Start() {
  const ServerOptions& o = options_.server;
  grpc::EnableDefaultHealthCheckService(true);
  // gRPC serves health from its own code; referencing the generated
  // descriptor links it in, so reflection can describe grpc.health.v1 too
  // (reflection-only clients such as grpcurl need that to call it).
  grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  if (metrics_ != nullptr) {
    Engine* engine = engine_.get();
    metrics_->SetStatsSource([engine] { return engine->stats(); });
    if (absl::Status s = metrics_->Serve(o.metrics_listen); !s.ok()) return s;
    SetRpcMetrics(metrics_.get());
  }
  executor_service_ =
      std::make_unique<ToolExecutorService>(engine_.get(), &declarations_, o, auth_.get());
  artifact_service_ = std::make_unique<ArtifactStoreService>(engine_.get(), auth_.get());

  grpc::ServerBuilder builder;
  int port = 0;
  // A unix:/path address is served by toolexecd's own listener, which knows
  // each peer's uid (server/unix_listener.h); TCP by gRPC's, with TLS if set.
  const bool own_unix_listener = absl::StartsWith(o.listen, "unix:");
  if (own_unix_listener) {
    auto listener = UnixListener::Listen(o.listen.substr(5), o.auth.unix_socket.mode);
    if (!listener.ok()) return listener.status();
    unix_listener_ = *std::move(listener);
  } else {
    auto credentials = Authenticator::TcpCredentials(o.auth.tls);
    if (!credentials.ok()) return credentials.status();
    // Asked first, so a port in use is said in one line, not in gRPC's dump.
    if (std::optional<std::string> why = BindFailure(o.listen)) {
      StopMetrics();
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", o.listen, " (listen, --listen): ", *why));
    }
    builder.AddListeningPort(o.listen, *credentials, &port);
    // One daemon per address: without this a second toolexecd on a port
    // already served would share it (SO_REUSEPORT) and take half its calls.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  }
  builder.RegisterService(executor_service_.get());
  builder.RegisterService(artifact_service_.get());
  builder.SetMaxReceiveMessageSize(o.max_receive_message_bytes);
  builder.SetMaxSendMessageSize(o.max_send_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
                             o.keepalive.permit_without_calls ? 1 : 0);
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
      static_cast<int>(absl::ToInt64Milliseconds(o.keepalive.min_ping_interval)));
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    StopMetrics();
    return absl::UnavailableError(absl::StrCat("cannot listen on ", o.listen,
                                               " (listen, --listen): address in use, or not a "
                                               "valid address?"));
  }
  if (own_unix_listener) {
    if (absl::Status s = unix_listener_->Serve(server_.get(), auth_.get()); !s.ok()) {
      server_->Shutdown();
      return s;
    }
    address_ = o.listen;
  } else {
    if (port == 0) {
      server_->Shutdown();
      StopMetrics();
      return absl::UnavailableError(absl::StrCat("cannot listen on ", o.listen));
    }
    std::string host = o.listen.substr(0, o.listen.rfind(':'));
    address_ = absl::StrCat(host, ":", port);
  }
  // --- MCP over streamable HTTP ---
  if (!o.mcp_listen.empty()) {
    McpHttpServer::Options mcp;
    mcp.listen = o.mcp_listen;
    mcp.max_body_bytes = static_cast<size_t>(o.max_receive_message_bytes);
    mcp.max_result_bytes = static_cast<size_t>(o.max_send_message_bytes);
    mcp.version = GetBuildInfo().version;  // serverInfo.version, as `toolexec mcp` says it
    mcp.max_sessions_per_caller = o.mcp_max_sessions_per_caller;
    mcp.session_idle_ttl = o.mcp_session_idle_ttl;
    mcp.allowed_hosts = o.mcp_allowed_hosts;
    auto mcp_http =
        McpHttpServer::Start(engine_.get(), &declarations_, auth_.get(), std::move(mcp));
    if (!mcp_http.ok()) {
      server_->Shutdown();
      StopMetrics();
      return mcp_http.status();
    }
    mcp_http_ = *std::move(mcp_http);
    spdlog::info("MCP over streamable HTTP on http://{}/mcp", mcp_http_->address());
  }
  // --- end MCP over streamable HTTP ---
  SetServing(true);
  spdlog::info("toolexecd serving on {} (workspace {}, {} tools)", address_,
               options_.engine.workspace, engine_->registry().size());
  if (metrics_ != nullptr) {
    spdlog::info("metrics on http://{}/metrics", metrics_->address());
  }
  return absl::OkStatus();
}

void Daemon::StopMetrics() {
  if (metrics_ == nullptr) return;
  ClearRpcMetrics(metrics_.get());
  metrics_->Stop();
}

void Daemon::SetServing(bool serving) {
  if (server_ == nullptr) return;
  auto* health = server_->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);
  health->SetServingStatus(v1::ToolExecutor::service_full_name(), serving);
  health->SetServingStatus(v1::ArtifactStore::service_full_name(), serving);
}

void Daemon::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) {
      mu_.Unlock();
      shutdown_done_.WaitForNotification();
      mu_.Lock();
      return;
    }
    shut_down_ = true;
  }
  if (engine_ == nullptr) {  // Create() failed
    shutdown_done_.Notify();
    return;
  }
  SetServing(false);
  if (mcp_http_ != nullptr) mcp_http_->BeginDrain();
  engine_->Drain(absl::Now() + options_.server.drain_grace);
  // No new connection may reach a server that is shutting down.
  if (unix_listener_ != nullptr) unix_listener_->Stop();
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    server_->Wait();
  }
  if (mcp_http_ != nullptr) mcp_http_->Stop();
  engine_->Stop();
  StopMetrics();
  if (server_ != nullptr) spdlog::info("toolexecd stopped");
  shutdown_done_.Notify();
}

}  // namespace toolexec

#include "server/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "grpc/health/v1/health.pb.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "tools/examples/examples.h"

namespace toolexec {

absl::Status RegisterDaemonTools(const DaemonOptions& options, ToolRegistry& registry) {
  if (options.example_tools) {
    if (absl::Status s = examples::RegisterExampleTools(registry); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions options,
                                                       ToolInstaller extra_tools) {
  if (options.workspace.empty() || options.workspace[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("the workspace must be an absolute path, got '", options.workspace, "'"));
  }
  std::unique_ptr<Daemon> d(new Daemon(std::move(options)));
  if (absl::Status s = RegisterDaemonTools(d->options_, d->registry_); !s.ok()) return s;
  if (extra_tools) {
    if (absl::Status s = extra_tools(d->registry_); !s.ok()) return s;
  }
  ToolRunner::Options runner_options;
  // Keep a couple of warm threads for latency; grow to the cap under load.
  runner_options.executor.min_threads =
      std::min<size_t>(d->options_.max_concurrent_calls, std::max(2u, std::thread::hardware_concurrency()));
  runner_options.executor.max_threads = d->options_.max_concurrent_calls;
  runner_options.default_timeout = d->options_.default_call_timeout;
  runner_options.max_timeout = d->options_.max_call_timeout;
  runner_options.max_pending_calls = d->options_.max_pending_calls;
  runner_options.default_workspace = d->options_.workspace;
  d->runner_ = std::make_unique<ToolRunner>(&d->registry_, runner_options);
  d->sessions_ = std::make_unique<SessionManager>(
      &d->registry_, SessionManager::Options{d->options_.max_sessions});
  d->core_ = std::make_unique<ServiceCore>(&d->options_, &d->registry_, d->runner_.get(),
                                           d->sessions_.get());
  return d;
}

Daemon::~Daemon() { Shutdown(); }

absl::Status Daemon::Start() {
  grpc::EnableDefaultHealthCheckService(true);
  // gRPC serves health from its own code; referencing the generated
  // descriptor links it in, so reflection can describe grpc.health.v1 too
  // (reflection-only clients such as grpcurl need that to call it).
  grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  executor_service_ = std::make_unique<ToolExecutorService>(core_.get());
  artifact_service_ = std::make_unique<ArtifactStoreService>();

  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options_.listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(executor_service_.get());
  builder.RegisterService(artifact_service_.get());
  builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
  builder.SetMaxSendMessageSize(options_.max_message_bytes);
  // Harnesses keep one channel open for a whole agent run; let them keep it
  // alive with pings without being disconnected for it.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen,
                                               " (address in use, or not a valid address?)"));
  }
  if (absl::StartsWith(options_.listen, "unix:")) {
    address_ = options_.listen;
  } else {
    if (port == 0) {
      server_->Shutdown();
      return absl::UnavailableError(absl::StrCat("cannot listen on ", options_.listen));
    }
    std::string host = options_.listen.substr(0, options_.listen.rfind(':'));
    address_ = absl::StrCat(host, ":", port);
  }
  SetServing(true);
  spdlog::info("toolexecd serving on {} (workspace {}, {} tools)", address_, options_.workspace,
               registry_.size());
  return absl::OkStatus();
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
    if (shut_down_) return;
    shut_down_ = true;
  }
  if (core_ == nullptr) return;  // Create() failed before the runtime existed
  core_->StartDraining();
  SetServing(false);
  if (server_ != nullptr) {
    int in_flight = core_->in_flight();
    if (in_flight > 0) {
      spdlog::info("draining: waiting up to {} for {} in-flight batch(es)",
                   absl::FormatDuration(options_.drain_grace), in_flight);
    }
    if (!core_->WaitForBatches(absl::Now() + options_.drain_grace)) {
      spdlog::warn("drain grace period over: cancelling {} batch(es)", core_->in_flight());
      // Their unfinished calls complete as CANCELLED and are still written to
      // the clients, so every caller learns what happened to every call.
      runner_->CancelRunning();
      core_->WaitForBatches(absl::Now() + absl::Seconds(2));
    }
  }
  // Ends WatchSession streams cleanly and runs every tool's cleanup_session.
  sessions_->CloseAll();
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    server_->Wait();
  }
  runner_->Shutdown();
  if (server_ != nullptr) spdlog::info("toolexecd stopped");
}

}  // namespace toolexec

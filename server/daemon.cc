#include "server/daemon.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "grpc/health/v1/health.pb.h"
#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "absl/container/flat_hash_set.h"
#include "tools/builtin/builtin.h"
#include "tools/builtin/command/command.h"
#include "tools/examples/examples.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/tool_sets.h"

namespace toolexec {

absl::Status RegisterDaemonTools(const DaemonOptions& options, ToolRegistry& registry) {
  // Register every built-in in a scratch registry, then keep the chosen ones:
  // the selection is by tool and tool-set names, which need the registry.
  ToolRegistry builtins;
  if (absl::Status s = RegisterFileTools(builtins, options.builtin); !s.ok()) return s;
  if (absl::Status s = RegisterSearchTools(builtins, options.builtin); !s.ok()) return s;
  if (absl::Status s = RegisterCommandTools(builtins, options.builtin); !s.ok()) return s;
  if (absl::Status s = RegisterControlTools(builtins, options.builtin); !s.ok()) return s;
  auto chosen = ResolveToolSelection(builtins, options.builtin_enabled, options.builtin_disabled,
                                     "builtin_tools");
  if (!chosen.ok()) return chosen.status();
  absl::flat_hash_set<std::string> keep(chosen->begin(), chosen->end());
  for (auto& tool : builtins.Release()) {
    if (!keep.contains(tool->name())) continue;
    if (absl::Status s = registry.Register(std::move(tool), "built-in"); !s.ok()) return s;
  }
  if (absl::Status s = RegisterDeclaredTools(registry, options.builtin); !s.ok()) return s;
  if (options.example_tools) {
    if (absl::Status s = examples::RegisterExampleTools(registry); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, ResolvedSubagent>> ResolveSubagents(
    const DaemonOptions& options, const ToolRegistry& registry) {
  std::map<std::string, ResolvedSubagent> out;
  for (const auto& sa : options.subagents) {
    std::string what = absl::StrCat("subagent '", sa.name, "'");
    if (out.count(sa.name) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is declared twice"));
    }
    ResolvedSubagent resolved;
    resolved.description = sa.description;
    absl::StatusOr<std::vector<std::string>> tools;
    if (sa.enabled_tools.empty() && sa.disabled_tools.empty()) {
      tools = ResolveToolSelection(registry, {"read_only"}, {}, what);  // S7 default
    } else {
      tools = ResolveToolSelection(registry, sa.enabled_tools, sa.disabled_tools, what);
    }
    if (!tools.ok()) return tools.status();
    for (auto& name : *tools) {
      if (name == "start_subagent") {
        // A subagent cannot spawn subagents (S7).
        resolved.warnings.push_back(absl::StrCat(
            what, ": start_subagent dropped (a subagent cannot start subagents)"));
        continue;
      }
      resolved.tools.push_back(std::move(name));
    }
    for (const auto& w : resolved.warnings) spdlog::warn("{}", w);
    out.emplace(sa.name, std::move(resolved));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions options,
                                                       ToolInstaller extra_tools) {
  if (options.workspace.empty() || options.workspace[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("the workspace must be an absolute path, got '", options.workspace, "'"));
  }
  // Opened once: every call without a session, and every session's
  // workspace, resolves beneath this handle, whatever happens to the path.
  auto workspace_root = fs::ConfinedRoot::Open(options.workspace);
  if (!workspace_root.ok()) return workspace_root.status();
  // start_subagent's declaration names the configured subagents.
  for (const auto& sa : options.subagents) {
    options.builtin.subagents.push_back({sa.name, sa.description});
  }
  std::unique_ptr<Daemon> d(new Daemon(std::move(options)));
  const DaemonOptions& o = d->options_;
  if (absl::Status s = RegisterDaemonTools(o, d->registry_); !s.ok()) return s;
  if (extra_tools) {
    if (absl::Status s = extra_tools(d->registry_); !s.ok()) return s;
  }
  auto subagents = ResolveSubagents(o, d->registry_);
  if (!subagents.ok()) return subagents.status();
  d->subagents_ = std::move(*subagents);
  if (o.artifact_dir.empty()) {
    d->artifacts_ = NewInMemoryArtifactStore();
  } else {
    auto store = NewDirectoryArtifactStore(o.artifact_dir);
    if (!store.ok()) return store.status();
    d->artifacts_ = std::move(*store);
  }
  ToolRunner::Options runner_options;
  // Keep a couple of warm threads for latency; grow to the cap under load.
  runner_options.executor.min_threads = std::min<size_t>(
      o.max_concurrent_calls, std::max(2u, std::thread::hardware_concurrency()));
  runner_options.executor.max_threads = o.max_concurrent_calls;
  runner_options.default_timeout = o.default_call_timeout;
  runner_options.max_timeout = o.max_call_timeout;
  runner_options.max_pending_calls = o.max_pending_calls;
  runner_options.default_workspace = *workspace_root;
  runner_options.artifacts = d->artifacts_.get();
  runner_options.model_content_default_chars = o.model_content_default_chars;
  runner_options.model_content_max_chars = o.model_content_max_chars;
  try {
    d->runner_ = std::make_unique<ToolRunner>(&d->registry_, runner_options);
  } catch (const std::system_error& e) {  // its timer thread could not start
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot start the runtime's timer thread: ", e.what()));
  }
  SessionManager::Options session_options;
  session_options.max_sessions = o.max_sessions;
  session_options.max_depth = o.session_max_depth;
  session_options.idle_ttl = o.session_idle_ttl;
  d->sessions_ =
      std::make_unique<SessionManager>(&d->registry_, session_options, d->artifacts_.get());
  d->core_ = std::make_unique<ServiceCore>(&d->options_, *std::move(workspace_root),
                                           &d->registry_, d->runner_.get(), d->sessions_.get(),
                                           d->artifacts_.get(), &d->subagents_);
  if (o.session_idle_ttl > absl::ZeroDuration()) {
    Daemon* self = d.get();
    absl::Duration every = std::min(absl::Seconds(1), o.session_idle_ttl / 2);
    auto sweeper = StartThread([self, every] {
      while (!self->stop_sweeper_.WaitForNotificationWithTimeout(every)) {
        if (size_t n = self->sessions_->SweepIdle(absl::Now()); n > 0) {
          spdlog::info("closed {} session(s) idle past the TTL", n);
        }
      }
    });
    if (!sweeper.ok()) return sweeper.status();
    d->sweeper_ = *std::move(sweeper);
  }
  return d;
}

Daemon::~Daemon() {
  Shutdown();
  // Tools still running past the grace use the registry and the runner: wait
  // for them before those go (toolexecd itself exits without destroying).
  if (runner_abandoned_) runner_->Shutdown();
}

absl::Status Daemon::Start() {
  grpc::EnableDefaultHealthCheckService(true);
  // gRPC serves health from its own code; referencing the generated
  // descriptor links it in, so reflection can describe grpc.health.v1 too
  // (reflection-only clients such as grpcurl need that to call it).
  grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  executor_service_ = std::make_unique<ToolExecutorService>(core_.get());
  artifact_service_ = std::make_unique<ArtifactStoreService>(core_.get());

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
    if (shut_down_) {
      mu_.Unlock();
      shutdown_done_.WaitForNotification();
      mu_.Lock();
      return;
    }
    shut_down_ = true;
  }
  if (sweeper_.joinable()) {
    stop_sweeper_.Notify();
    sweeper_.join();
  }
  if (core_ == nullptr) {  // Create() failed before the runtime existed
    shutdown_done_.Notify();
    return;
  }
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
  // What outlives calls (background commands, some of them started without a
  // session) ends here, all at once: a kill grace is waited out once, not
  // once per session in CloseAll.
  for (const auto& t : registry_.tools()) t->tool->shutdown();
  // Ends WatchSession streams cleanly and runs every tool's cleanup_session.
  sessions_->CloseAll();
  if (server_ != nullptr) {
    server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    server_->Wait();
  }
  // Bounded: a tool that ignores cancellation must not hold the daemon up.
  runner_->CancelRunning();
  if (runner_->WaitIdle(absl::Now() + options_.tool_stop_grace)) {
    runner_->Shutdown();
  } else {
    runner_abandoned_ = true;
    spdlog::warn("{} tool call(s) ignored cancellation for {}; stopping without them",
                 runner_->pending_calls(), absl::FormatDuration(options_.tool_stop_grace));
  }
  if (server_ != nullptr) spdlog::info("toolexecd stopped");
  shutdown_done_.Notify();
}

}  // namespace toolexec

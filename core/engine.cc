// RuntimeEngine (core/runtime_engine.h), the Engine: its creation (the tools
// and MCP servers, subagents, hooks, artifact store, runner, sessions, policy,
// checkpoint store and idle sweeper), listing tools, starting batches (provider
// names, recording, policy, room under the limits), permission answers, drain
// and stop. Sessions, artifacts and checkpoints are in engine_sessions.cc,
// engine_artifacts.cc and engine_checkpoints.cc.
#include "core/engine.h"

#include <unistd.h>  // environ

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/recorder.h"
#include "core/runtime_engine.h"
#include "spdlog/spdlog.h"
#include "tools/process/environment.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/provider_format.h"
#include "tools/runtime/tool_sets.h"
#include "tools/runtime/trace_context.h"

namespace toolexec {
namespace {

// [Subagents]: each configured subagent's tools, or InvalidArgument naming the
// subagent and the problem (both lists, an unknown tool, a duplicate name).
absl::StatusOr<std::map<std::string, ResolvedSubagent>> ResolveSubagents(
    const EngineOptions& options, const ToolRegistry& registry) {
  std::map<std::string, ResolvedSubagent> out;
  for (const auto& sa : options.subagents) {
    std::string what = absl::StrCat("subagent '", sa.name, "'");
    if (out.count(sa.name) > 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, " is declared twice"));
    }
    ResolvedSubagent resolved;
    resolved.description = sa.description;
    absl::StatusOr<ToolSelection> tools;
    if (sa.enabled_tools.empty() && sa.disabled_tools.empty()) {
      tools = ToolSelection::Create(registry, {"read_only"}, {}, what);  // [Subagents] default
    } else {
      tools = ToolSelection::Create(registry, sa.enabled_tools, sa.disabled_tools, what);
    }
    if (!tools.ok()) return tools.status();
    const RegisteredTool* start_subagent = registry.Find("start_subagent");
    if (start_subagent != nullptr && tools->Chooses(*start_subagent)) {
      // A subagent cannot spawn subagents [Subagents].
      resolved.warnings.push_back(absl::StrCat(
          what, ": start_subagent dropped (a subagent cannot start subagents)"));
    }
    resolved.selections = {*std::move(tools), ToolSelection::Except({"start_subagent"})};
    for (const auto& w : resolved.warnings) spdlog::warn("{}", w);
    out.emplace(sa.name, std::move(resolved));
  }
  return out;
}

}  // namespace

absl::Status RuntimeEngine::Init(ToolRegistry fixed) {
  const EngineOptions& o = options_;
  // Opened once (Open refuses a relative path): every call without a session,
  // and every session's workspace, resolves beneath this handle, whatever
  // happens to the path.
  auto workspace_root = fs::ConfinedRoot::Open(o.workspace);
  if (!workspace_root.ok()) return workspace_root.status();
  workspace_root_ = *std::move(workspace_root);
  if (!o.recording.dir.empty()) {
    auto recorder = Recorder::Create(o.recording);
    if (!recorder.ok()) return recorder.status();
    recorder_ = *std::move(recorder);
  }
  // ---- MCP servers' tools, after the others, changing at runtime -------------
  std::vector<std::string> dynamic_sources;
  if (!o.mcp_servers.empty()) {
    // stdio servers start from the daemon's environment without its secrets,
    // snapshotted now (before main seals them away).
    auto servers = mcp::McpServers::Start(o.mcp_servers, command::ScrubEnvironment(environ, {}));
    if (!servers.ok()) return servers.status();
    mcp_servers_ = std::move(*servers);
    dynamic_sources = mcp_servers_->SourceNames();
  }
  tools_ = std::make_unique<LiveToolRegistry>(std::move(fixed), std::move(dynamic_sources));
  if (mcp_servers_ != nullptr) {
    if (absl::Status s = mcp_servers_->Attach(tools_.get()); !s.ok()) return s;
  }
  // ---- end MCP servers -------------------------------------------------------
  startup_tools_ = tools_->Snapshot();
  const ToolRegistry& startup = *startup_tools_;
  auto subagents = ResolveSubagents(o, startup);
  if (!subagents.ok()) return subagents.status();
  subagents_ = std::move(*subagents);
  // --- hooks: after every tool is registered (their filters name tools) ---
  auto hooks = HookSet::Create(o.hooks, startup);
  if (!hooks.ok()) return hooks.status();
  hooks_ = *std::move(hooks);
  // --- end hooks ---
  if (o.artifact_dir.empty()) {
    artifacts_ = NewInMemoryArtifactStore();
  } else {
    auto store = NewDirectoryArtifactStore(o.artifact_dir);
    if (!store.ok()) return store.status();
    artifacts_ = std::move(*store);
  }
  ToolRunner::Options runner_options;
  // Keep a couple of warm threads for latency; grow to the cap under load.
  runner_options.executor.min_threads = std::min<size_t>(
      o.max_concurrent_calls, std::max(2u, std::thread::hardware_concurrency()));
  runner_options.executor.max_threads = o.max_concurrent_calls;
  runner_options.default_timeout = o.default_call_timeout;
  runner_options.max_timeout = o.max_call_timeout;
  runner_options.max_pending_calls = o.max_pending_calls;
  runner_options.default_workspace = workspace_root_;
  runner_options.artifacts = artifacts_.get();
  runner_options.model_content_default_chars = o.model_content_default_chars;
  runner_options.model_content_max_chars = o.model_content_max_chars;
  if (o.metrics != nullptr) {
    o.metrics->AddTools(startup);
    runner_options.metrics = o.metrics.get();
  }
  try {
    runner_ = std::make_unique<ToolRunner>(startup_tools_.get(), runner_options);
  } catch (const std::system_error& e) {  // its timer thread could not start
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot start the runtime's timer thread: ", e.what()));
  }
  SessionManager::Options session_options;
  session_options.max_sessions = o.max_sessions;
  session_options.max_sessions_per_owner = o.max_sessions_per_caller;
  session_options.max_depth = o.session_max_depth;
  session_options.idle_ttl = o.session_idle_ttl;
  sessions_ = std::make_unique<SessionManager>(tools_.get(), session_options, artifacts_.get());
  auto policy =
      PolicyEngine::Create(o.policy, startup_tools_.get(), workspace_root_->path(), o.metrics);
  if (!policy.ok()) return policy.status();
  policy_ = *std::move(policy);
  if (o.checkpoints_enabled) {
    auto store = checkpoint::CheckpointStore::Open(o.checkpoints);
    if (!store.ok()) return store.status();
    checkpoints_ = *std::move(store);
  }
  if (o.session_idle_ttl > absl::ZeroDuration()) {
    absl::Duration every = std::min(absl::Seconds(1), o.session_idle_ttl / 2);
    auto sweeper = StartThread([this, every] {
      while (!stop_sweeper_.WaitForNotificationWithTimeout(every)) {
        if (size_t n = sessions_->SweepIdle(absl::Now()); n > 0) {
          spdlog::info("closed {} session(s) idle past the TTL", n);
        }
      }
    });
    if (!sweeper.ok()) return sweeper.status();
    sweeper_ = *std::move(sweeper);
  }
  return absl::OkStatus();
}

RuntimeEngine::~RuntimeEngine() {
  if (sweeper_.joinable()) {
    stop_sweeper_.Notify();
    sweeper_.join();
  }
  if (runner_ == nullptr) return;  // Init failed before the runtime existed
  if (!stopped_) Stop();
  // Tools still running past the grace use the registry and the runner: wait
  // for them before those go (toolexecd itself exits without destroying).
  if (runner_abandoned_) runner_->Shutdown();
}

absl::StatusOr<ToolList> RuntimeEngine::ListTools(
    const CallerIdentity& caller, const std::string& session_id, const std::string& tool_set) {
  NoteCall();
  std::shared_ptr<Session> session;
  if (!session_id.empty()) {
    auto s = sessions_->Get(session_id, caller.name);
    if (!s.ok()) return s.status();
    session = std::move(*s);
  }
  std::shared_ptr<const ToolRegistry> tools = tools_->Snapshot();
  auto selected = SelectToolSet(*tools, tool_set);
  if (!selected.ok()) return selected.status();
  if (session == nullptr) return ToolList(std::move(tools), *std::move(selected));
  std::vector<const RegisteredTool*> allowed;
  for (const RegisteredTool* t : *selected) {
    if (session->AllowsTool(*t)) allowed.push_back(t);
  }
  return ToolList(std::move(tools), std::move(allowed));
}

absl::StatusOr<std::unique_ptr<StartedBatch>> RuntimeEngine::StartBatch(
    const CallerIdentity& caller, BatchSpec spec, BatchObserver* observer) {
  NoteCall();
  const absl::Status shutting_down = absl::UnavailableError(
      "toolexecd is shutting down and accepts no new batches; retry on another instance");
  if (draining()) return shutting_down;
  if (spec.calls.size() > options_.max_calls_per_batch) {
    return absl::InvalidArgumentError(
        absl::StrCat("the batch has ", spec.calls.size(), " calls; the limit is ",
                     options_.max_calls_per_batch, " (split it into several batches)"));
  }
  BatchRequest batch;
  batch.tools = tools_->Snapshot();  // one list of tools for the whole batch
  if (!spec.session_id.empty()) {
    auto session = sessions_->Get(spec.session_id, caller.name);
    if (!session.ok()) return session.status();
    (*session)->Touch();
    batch.session = std::move(*session);
  }
  if (spec.timeout.has_value()) {
    if (*spec.timeout <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(
          "timeout must be positive (leave it unset for the default)");
    }
    batch.timeout = spec.timeout;
  }
  batch.model_content_max_chars = spec.model_content_max_chars;
  batch.traceparent = spec.traceparent.empty() ? NewTraceparent() : std::move(spec.traceparent);
  const size_t calls = spec.calls.size();
  // --- hooks: pre-call, on-error, post-call and the audit log, per call ---
  batch.interceptor = hooks_->ForBatch(caller.name, spec.session_id);
  // --- end hooks ---
  batch.calls = std::move(spec.calls);
  // Names the providers reject were declared rewritten (ProviderNames): a
  // call by the rewritten name runs the tool it stands for, under its real
  // name, so that policy, hooks, the audit log and the result all see that.
  std::optional<ProviderNames> provider_names;
  for (CallRequest& call : batch.calls) {
    if (!ProviderNames::Accepted(call.name) || batch.tools->Find(call.name) != nullptr) continue;
    if (!provider_names.has_value()) provider_names.emplace(*batch.tools);
    if (const RegisteredTool* t = provider_names->Resolve(call.name)) {
      call.called_as = std::exchange(call.name, t->name);
    }
  }
  // ---- recording: the batch as sent, then its events (core/recorder.h) ----
  RecordingObserver* recording = nullptr;
  if (recorder_ != nullptr && batch.session != nullptr) {
    if (auto rec = recorder_->Find(spec.session_id)) {
      recording = new RecordingObserver(std::move(rec), observer, batch.calls, batch.timeout,
                                        spec.model_content_max_chars);
      observer = recording;
    }
  }
  // It deletes itself once the batch ends; a batch that never starts never
  // calls it.
  auto unstarted = [recording] { delete recording; };
  // ---- end recording ----
  const std::string session_id = spec.session_id;
  {
    // Checked and counted in one step, so a drain that has begun never misses
    // a batch it must wait for.
    absl::MutexLock lock(&mu_);
    if (draining()) {
      unstarted();
      return shutting_down;
    }
    if (!session_id.empty() && restoring_.contains(session_id)) {
      unstarted();
      return absl::FailedPreconditionError(absl::StrCat(
          "a checkpoint restore is changing the workspace of session '", session_id,
          "'; send the batch once it has finished"));
    }
    ++in_flight_;
    if (!session_id.empty()) ++session_batches_[session_id];
  }
  auto release = [this, session_id] {
    absl::MutexLock lock(&mu_);
    --in_flight_;
    if (!session_id.empty()) {
      auto it = session_batches_.find(session_id);
      if (it != session_batches_.end() && --it->second <= 0) session_batches_.erase(it);
    }
  };
  MetricsSink* metrics = options_.metrics.get();
  const absl::Time accepted = absl::Now();
  // Room under max_pending_calls from now on: a batch parked on a permission
  // answer holds it while it waits.
  auto room = runner_->Reserve(calls);
  if (!room.ok()) {
    release();
    unstarted();
    return room.status();
  }
  // ---- policy [Deciding what runs]: deny, ask or run; before hooks ----
  auto handle = policy_->StartBatch(
      caller.name, caller.profile, std::move(batch), observer,
      [this, room = std::make_shared<ToolRunner::Room>(*std::move(room))](BatchRequest b,
                                                                           BatchObserver* o)
          -> absl::StatusOr<std::shared_ptr<BatchHandle>> {
        if (checkpoints_ != nullptr && b.session != nullptr) {
          if (absl::Status s = CheckpointBefore(b, o); !s.ok()) return s;
        }
        return runner_->Start(std::move(b), o, std::move(*room));
      });
  // ---- end policy ----
  if (!handle.ok()) {
    release();
    unstarted();
    return handle.status();
  }
  if (metrics != nullptr) metrics->BatchStarted(calls);
  // Released once the batch's outcome has reached the caller: its latency.
  return std::make_unique<StartedBatch>(
      *std::move(handle), [release = std::move(release), metrics, accepted] {
        if (metrics != nullptr) metrics->BatchFinished(absl::Now() - accepted);
        release();
      });
}

absl::Status RuntimeEngine::RespondPermission(const CallerIdentity& caller,
                                              const std::string& request_id,
                                              PermissionAnswer answer,
                                              const std::string& reason) {
  NoteCall();
  return policy_->Respond(caller.name, request_id, answer, reason);
}

bool RuntimeEngine::WaitForBatches(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

bool RuntimeEngine::Drain(absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    draining_.store(true, std::memory_order_release);
  }
  if (int n = in_flight_batches(); n > 0) {
    spdlog::info("draining: waiting up to {} for {} in-flight batch(es)",
                 absl::FormatDuration(std::max(deadline - absl::Now(), absl::ZeroDuration())), n);
  }
  const bool all_finished = WaitForBatches(deadline);
  if (!all_finished) {
    spdlog::warn("drain grace period over: cancelling {} batch(es)", in_flight_batches());
    // Their unfinished calls complete as CANCELLED and are still delivered,
    // so every caller learns what happened to every call.
    policy_->CancelAll();  // batches still waiting for a permission answer
    runner_->CancelRunning();
    WaitForBatches(absl::Now() + absl::Seconds(2));
  }
  // Calls sent just before the drain may still be on their way, and callers
  // refused just now may still be sending: wait, within the deadline, until
  // none has arrived for the quiet period, so each is refused (UNAVAILABLE,
  // retry elsewhere). A transport that stops listening cancels what reaches
  // it meanwhile instead.
  for (;;) {
    int64_t last = last_call_.load(std::memory_order_relaxed);
    if (last == 0) break;
    absl::Time quiet_at = absl::FromUnixNanos(last) + options_.drain_quiet_period;
    absl::Time now = absl::Now();
    if (quiet_at <= now || now >= deadline) break;
    absl::SleepFor(std::min(quiet_at, deadline) - now);
  }
  // What outlives calls (background commands, some of them started without a
  // session) ends here, all at once: a kill grace is waited out once, not
  // once per session in CloseAll.
  for (const auto& t : tools_->Snapshot()->tools()) t->tool->shutdown();
  if (mcp_servers_ != nullptr) mcp_servers_->Stop();  // MCP servers end with the calls
  // Ends Watch subscriptions and runs every tool's cleanup_session.
  sessions_->CloseAll();
  return all_finished;
}

bool RuntimeEngine::Stop() {
  if (stopped_) return !runner_abandoned_;
  stopped_ = true;
  draining_.store(true, std::memory_order_release);
  // Bounded: a tool that ignores cancellation must not hold the daemon up.
  if (policy_ != nullptr) policy_->CancelAll();
  runner_->CancelRunning();
  if (mcp_servers_ != nullptr) mcp_servers_->Stop();  // fails MCP calls still waiting
  if (runner_->WaitIdle(absl::Now() + options_.tool_stop_grace)) {
    runner_->Shutdown();
    hooks_->Shutdown();  // the hooks of results completed off their calls' threads
    return true;
  }
  hooks_->Shutdown();
  runner_abandoned_ = true;
  spdlog::warn("{} tool call(s) ignored cancellation for {}; stopping without them",
               runner_->pending_calls(), absl::FormatDuration(options_.tool_stop_grace));
  return false;
}

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(EngineOptions options, ToolRegistry tools) {
  auto engine = std::make_unique<RuntimeEngine>(std::move(options));
  if (absl::Status s = engine->Init(std::move(tools)); !s.ok()) return s;
  return engine;
}

}  // namespace toolexec

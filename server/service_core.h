// What the gRPC adapters share: the runtime objects, the daemon's options and
// the drain state. Owned by the Daemon; outlives the gRPC server.
#ifndef TOOLEXEC_SERVER_SERVICE_CORE_H_
#define TOOLEXEC_SERVER_SERVICE_CORE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/builtin/builtin.h"
#include "tools/builtin/fs/confined.h"
#include "tools/runtime/artifacts.h"
#include "tools/runtime/executor.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {

struct DaemonOptions {
  // "127.0.0.1:50051", "[::]:0", "unix:/run/toolexec.sock".
  std::string listen = "127.0.0.1:50051";
  // Absolute path of the default workspace.
  std::string workspace;
  bool example_tools = false;
  uint32_t max_calls_per_batch = 1024;
  uint32_t max_concurrent_calls = 256;
  uint32_t max_pending_calls = 16384;
  absl::Duration default_call_timeout = absl::Minutes(10);
  absl::Duration max_call_timeout = absl::Hours(1);
  absl::Duration drain_grace = absl::Seconds(30);
  // After the drain, how long cancelled tools get to return before shutdown
  // stops waiting for them (a tool may ignore cancellation).
  absl::Duration tool_stop_grace = absl::Seconds(5);
  uint32_t max_sessions = 10000;
  // model_content characters per call: when a batch asks for none, and the
  // most it may ask for.
  uint32_t model_content_default_chars = kDefaultModelContentChars;
  uint32_t model_content_max_chars = kDefaultModelContentMaxChars;
  // Largest request or response message (tool arguments such as file contents).
  int max_message_bytes = 64 << 20;

  BuiltinOptions builtin;
  // Which built-in tools to expose: tool or tool-set names; give at most one list.
  std::vector<std::string> builtin_enabled;
  std::vector<std::string> builtin_disabled;
  // "" = artifacts in memory.
  std::string artifact_dir;
  struct Subagent {
    std::string name;
    std::string description;
    std::vector<std::string> enabled_tools;
    std::vector<std::string> disabled_tools;
  };
  std::vector<Subagent> subagents;
  int session_max_depth = 5;
  absl::Duration session_idle_ttl = kDefaultSessionIdleTtl;  // zero = never
};

// A subagent's tools, resolved against the registry at start-up (S7).
struct ResolvedSubagent {
  std::string description;
  std::vector<std::string> tools;     // registration order
  std::vector<std::string> warnings;  // e.g. start_subagent dropped
};

class ServiceCore final {
 public:
  ServiceCore(const DaemonOptions* options, std::shared_ptr<const fs::ConfinedRoot> workspace_root,
              const ToolRegistry* registry, ToolRunner* runner, SessionManager* sessions,
              ArtifactStore* artifacts, const std::map<std::string, ResolvedSubagent>* subagents)
      : options_(options),
        workspace_root_(std::move(workspace_root)),
        registry_(registry),
        runner_(runner),
        sessions_(sessions),
        artifacts_(artifacts),
        subagents_(subagents) {}

  const DaemonOptions& options() const { return *options_; }
  // The daemon's workspace (options().workspace), opened once at start-up:
  // sessions' workspaces are resolved beneath it.
  const std::shared_ptr<const fs::ConfinedRoot>& workspace_root() const { return workspace_root_; }
  const ToolRegistry& registry() const { return *registry_; }
  ToolRunner& runner() { return *runner_; }
  SessionManager& sessions() { return *sessions_; }
  ArtifactStore& artifacts() { return *artifacts_; }
  const std::map<std::string, ResolvedSubagent>& subagents() const { return *subagents_; }

  // Runs session work that may block (closing a session ends its background
  // commands: SIGTERM, the kill grace, SIGKILL) off the gRPC threads, so one
  // slow close never holds up other RPCs. Tasks must finish their RPC; the
  // gRPC server's Wait() therefore returns only after they have, and this
  // executor (destroyed with the core, after the server) joins idle threads.
  Executor& session_work() { return session_work_; }

  // While draining, new batches are refused with UNAVAILABLE.
  bool draining() const { return draining_.load(std::memory_order_acquire); }
  void StartDraining() {
    absl::MutexLock lock(&mu_);
    draining_.store(true, std::memory_order_release);
  }

  // Counts a new batch as in flight, unless draining has begun: the check and
  // the count are one step, so WaitForBatches never misses a batch.
  bool TryBatchStarted() {
    absl::MutexLock lock(&mu_);
    if (draining_.load(std::memory_order_acquire)) return false;
    ++in_flight_;
    return true;
  }
  void BatchFinished() {
    absl::MutexLock lock(&mu_);
    --in_flight_;
  }
  // True if every in-flight batch finished before `deadline`.
  bool WaitForBatches(absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
    return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
  }
  int in_flight() {
    absl::MutexLock lock(&mu_);
    return in_flight_;
  }

 private:
  const DaemonOptions* options_;
  const std::shared_ptr<const fs::ConfinedRoot> workspace_root_;
  const ToolRegistry* registry_;
  ToolRunner* runner_;
  SessionManager* sessions_;
  ArtifactStore* artifacts_;
  const std::map<std::string, ResolvedSubagent>* subagents_;
  std::atomic<bool> draining_{false};
  absl::Mutex mu_;
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  Executor session_work_{Executor::Options{/*min_threads=*/0, /*max_threads=*/64,
                                           /*idle_timeout=*/absl::Seconds(10)}};
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_SERVICE_CORE_H_

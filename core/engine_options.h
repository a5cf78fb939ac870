// What an Engine is built from: the tools it registers, its limits, sessions
// and artifacts. Transport settings (listen address, message sizes, keepalive,
// the drain grace) are the server's (server/options.h). toolexecd fills this
// from the config file and flags; ValidateOptions (server/config/) checks
// every range once, whichever of the two a value came from.
#ifndef TOOLEXEC_CORE_ENGINE_OPTIONS_H_
#define TOOLEXEC_CORE_ENGINE_OPTIONS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "core/policy.h"
#include "core/hooks.h"
#include "core/recorder.h"
#include "mcp/client/options.h"
#include "tools/runtime/metrics.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/session.h"
#include "tools/workspace/checkpoint/store.h"

namespace toolexec {

// A named subagent from the config [Subagents]: either list, or neither (then the
// read_only set).
struct SubagentOptions {
  std::string name;
  std::string description;
  std::vector<std::string> enabled_tools;
  std::vector<std::string> disabled_tools;
};

struct EngineOptions {
  // Absolute path of the default workspace: calls without a session, and
  // every session's workspace, resolve beneath it.
  std::string workspace;

  uint32_t max_calls_per_batch = 1024;
  uint32_t max_concurrent_calls = 256;
  uint32_t max_pending_calls = 16384;
  absl::Duration default_call_timeout = absl::Minutes(10);
  absl::Duration max_call_timeout = absl::Hours(1);
  // At Stop(), how long cancelled tools get to return before the engine stops
  // waiting for them (a tool may ignore cancellation).
  absl::Duration tool_stop_grace = absl::Seconds(5);
  // Drain waits until no call has reached the engine for this long (within
  // its deadline) before the transport stops listening: calls already on
  // their way are then refused with UNAVAILABLE instead of being cut off.
  absl::Duration drain_quiet_period = absl::Milliseconds(100);

  // model_content characters per call: when a batch asks for none, and the
  // most it may ask for.
  uint32_t model_content_default_chars = kDefaultModelContentChars;
  uint32_t model_content_max_chars = kDefaultModelContentMaxChars;

  uint32_t max_sessions = 10000;
  // Open sessions (children included) per authenticated caller, counted by
  // CallerIdentity::name; unauthenticated callers share max_sessions only.
  uint32_t max_sessions_per_caller = 1000;
  int session_max_depth = 5;
  absl::Duration session_idle_ttl = kDefaultSessionIdleTtl;  // zero = never

  // "" = artifacts in memory.
  std::string artifact_dir;
  std::vector<SubagentOptions> subagents;
  // MCP servers whose tools are registered after the built-ins (mcp/).
  std::vector<mcp::McpServerOptions> mcp_servers;

  // Told of calls, batches and permission decisions (tools/runtime/metrics.h);
  // null = not measured.
  std::shared_ptr<MetricsSink> metrics;

  // What runs [Deciding what runs]: rules, profiles, the ask timeout. Empty: everything.
  PolicyOptions policy;

  // Pre-call, on-error and post-call hooks and the audit log (core/hooks.h).
  HookOptions hooks;

  // Session recordings (core/recorder.h); off while recording.dir is "".
  RecordingOptions recording;
  // Checkpoints of a session's workspace before each batch that can write
  // (tools/workspace/checkpoint/store.h). Off unless enabled; store_dir is
  // then required.
  bool checkpoints_enabled = false;
  checkpoint::StoreOptions checkpoints = [] {
    checkpoint::StoreOptions o;
    o.max_store_bytes = uint64_t{1} << 30;
    o.keep_per_session = 100;
    o.max_file_bytes = uint64_t{16} << 20;
    return o;
  }();
};

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_ENGINE_OPTIONS_H_

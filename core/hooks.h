// Hooks: code the daemon's owner puts around every tool call. A pre-call hook
// sees a call before its tool runs and may deny it or change its arguments; a
// post-call hook sees every result, failures included; an on-error hook may
// reword the message the model gets for a failure. Hooks are C++ objects
// given to the engine (Hook), programs from the config that speak JSON over
// stdin/stdout (command hooks, core/command_hook.h), and the built-in audit
// log (core/audit_log.h).
//
// Design
// ------
// State: a hook owns its own state. It never sees a session's tool state
// ([Context]: tool state and hook state are separate stores); what it learns of a
// call is a HookCall and the arguments and result, by const reference. The
// HookSet is immutable once created and shared by every batch.
//
// Order: the policy decides first (a denied call never reaches a hook). Then
// the pre-call hooks run in order: the in-process hooks in the order given,
// then the command hooks in config order. Each sees the arguments the hooks
// before it left; a rewrite is validated against the tool's schema again
// at once (coercion, defaults), and a rewrite the schema refuses fails the
// call naming the hook. The first deny wins and ends the round: later hooks
// do not run. After the call, for a failure, the on-error hooks run in the
// same order, each seeing the message the one before left; then the post-call
// hooks see the final result; the audit log writes last. An on-error hook
// changes only the words: the status and error code stay, so a failure never
// turns into a success.
//
// Threads: hooks never run on a gRPC thread; with no hook but the audit log,
// a quick call (ToolSpec::quick) may run on the gRPC thread that starts it,
// and its audit line is written there. Pre-call hooks run on the
// executor thread that runs the call, under the call's deadline and
// cancellation token: a client cancel, the batch timeout or shutdown stops a
// command hook's process (SIGTERM, grace, SIGKILL, the same supervisor
// run_command uses), and its own timeout_ms bounds it anyway, so a hook never
// holds an executor thread past those. On-error and post-call hooks run once
// per call for the result that completes it (tools/runtime/tool_runner.h,
// CallInterceptor): on the call's executor thread when the tool's own result
// completes it (bounded by each hook's timeout_ms and stopped by a cancel of
// the batch or shutdown), or, for a result completed by a timeout or a
// cancellation, on the thread that completed it. That thread must not block,
// so then the in-process hooks run there (they must be quick: Hook's
// contract), while command hooks and the audit write go to the HookSet's own
// small executor; an on-error command hook's message is then not applied (the
// timeout or cancellation is reported at once, in the daemon's words).
// Shutdown() trips a token that stops those, and joins that executor.
//
// Failures: an in-process hook that throws, or a command hook that fails,
// times out or prints something else, denies (pre-call) or is logged
// (on-error, post-call); every message names the hook.
#ifndef TOOLEXEC_CORE_HOOKS_H_
#define TOOLEXEC_CORE_HOOKS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {

// What a hook sees of a call.
struct HookCall {
  std::string call_id;
  std::string tool;
  std::string server_name;  // "" for built-ins and in-process tools
  std::string session_id;   // "" = no session
  std::string identity;     // CallerIdentity::name; "" = unauthenticated
};

// A pre-call hook's answer.
struct PreCallDecision {
  bool deny = false;
  std::string reason;       // said to the model when denied
  std::optional<Json> args;  // set: replaces the arguments

  static PreCallDecision Allow() { return {}; }
  static PreCallDecision Deny(std::string reason) {
    PreCallDecision d;
    d.deny = true;
    d.reason = std::move(reason);
    return d;
  }
  static PreCallDecision Rewrite(Json args) {
    PreCallDecision d;
    d.args = std::move(args);
    return d;
  }
};

// An in-process hook. Override what it needs; the defaults do nothing. Every
// method may be called from many threads at once (it guards its own state).
// PreCall may block for a bounded time and should honour `cancel`; OnError
// and PostCall must be quick and never block (they may run on a timer or
// cancelling thread, see Threads above). A throw counts as a failure of the
// hook.
class Hook {
 public:
  virtual ~Hook() = default;
  // Named in denials, errors and logs.
  virtual std::string name() const = 0;
  // Whether it sees calls of `tool` at all. Default: every tool.
  virtual bool Applies(const std::string& /*tool*/) const { return true; }
  virtual PreCallDecision PreCall(const HookCall& /*call*/, const JsonValue& /*args*/,
                                  const CancellationToken& /*cancel*/) {
    return PreCallDecision::Allow();
  }
  // A failure (result.ok() is false): a new model-facing message, or nullopt.
  virtual std::optional<std::string> OnError(const HookCall& /*call*/, const JsonValue* /*args*/,
                                             const ToolCallResult& /*result*/) {
    return std::nullopt;
  }
  // Every result. `args` is null when the arguments never parsed.
  virtual void PostCall(const HookCall& /*call*/, const JsonValue* /*args*/,
                        const ToolCallResult& /*result*/) {}
};

enum class HookEvent { kPreCall, kPostCall, kOnError };

// A command hook from the config (HookConfig).
struct CommandHookOptions {
  std::string name;
  HookEvent event = HookEvent::kPreCall;
  // argv[0]: an absolute path, or a name looked up on PATH at start-up.
  std::vector<std::string> argv;
  absl::Duration timeout = absl::Seconds(10);
  std::vector<std::string> tools;  // empty = every tool
};

struct HookOptions {
  std::vector<std::shared_ptr<Hook>> in_process;  // in order
  std::vector<CommandHookOptions> command_hooks;
  std::string audit_log;  // a file path; "" = off
};

class CommandHook;
class AuditLog;

// The engine's hooks. Immutable after Create; thread-safe.
class HookSet final : public std::enable_shared_from_this<HookSet> {
 public:
  // Checks the command hooks (a name, an argv whose program exists, a tool
  // filter naming registered tools) and opens the audit log.
  // InvalidArgument names the hook and what to fix.
  static absl::StatusOr<std::shared_ptr<HookSet>> Create(HookOptions options,
                                                         const ToolRegistry& registry);
  ~HookSet();

  // No hook and no audit log: batches need no interceptor.
  bool empty() const;
  // The runner's interceptor for one batch of `identity`'s calls.
  std::shared_ptr<CallInterceptor> ForBatch(std::string identity, std::string session_id);
  // Stops the command hooks that run off the calls' threads and waits for
  // them. Idempotent; hooks on calls' threads are stopped by the calls.
  void Shutdown();

 private:
  class Batch;
  HookSet();

  std::vector<std::shared_ptr<Hook>> hooks_;
  std::vector<std::unique_ptr<CommandHook>> pre_;
  std::vector<std::unique_ptr<CommandHook>> on_error_;
  std::vector<std::unique_ptr<CommandHook>> post_;
  std::unique_ptr<AuditLog> audit_;
  // Command hooks of results completed off their calls' threads; stopped by
  // shutdown_.
  std::unique_ptr<Executor> async_;
  CancellationToken shutdown_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_HOOKS_H_

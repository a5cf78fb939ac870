// What a batch is made of and what it reports, the contract every layer
// shares: the calls as the harness sent them (CallRequest, BatchRequest),
// their results (ToolCallResult, ToolCallError), the events a batch reports
// to its observer (BatchObserver: progress, permission requests, the
// checkpoint, results in call order), the handle of a running batch
// (BatchHandle), and the hooks' view of each call (CallInterceptor). The
// ToolRunner (tool_runner.h) runs batches; the engine, the hooks, the gRPC
// and MCP transports speak these types.
#ifndef TOOLEXEC_TOOLS_RUNTIME_BATCH_H_
#define TOOLEXEC_TOOLS_RUNTIME_BATCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

// Mirrors toolexec.v1.ResultStatus.
enum class ResultStatus { kSuccess, kError, kTimeout, kCancelled, kDenied };

// "success", "error", "timeout", "cancelled" or "denied": a status as the
// audit log, hooks' events and metric labels name it.
absl::string_view ResultStatusName(ResultStatus status);

// [Failures are results]: the structured error on a failed result.
struct ToolCallError {
  std::string message;
  std::string tool_name;
  std::string server_name;
  ErrorCode code = ErrorCode::kToolFailed;
};

struct ToolCallResult {
  uint32_t index = 0;
  std::string id;
  std::string name;
  std::string called_as;  // CallRequest::called_as
  std::string item_type;  // CallRequest::item_type
  std::string step_id;
  ResultStatus status = ResultStatus::kSuccess;
  // Success: the tool's object, {"result": v} for any other value, {} for null.
  // Failure: {"error": message}.
  Json payload;
  std::string error_message;           // empty on success
  std::optional<ToolCallError> error;  // set exactly when status != kSuccess
  EventActions actions;
  DisplayResult display;
  std::string compact_summary;
  // The text to send the model as the result, within the call's budget:
  // Tool::model_content for a success, FailureModelContent for a failure.
  std::string model_content;
  absl::Duration duration;

  bool ok() const { return status == ResultStatus::kSuccess; }
};

// One call as the harness sent it. `args` (already JSON) or `args_json` (text);
// neither means {}. `args_error` lets the transport report arguments it could
// not convert (e.g. nesting too deep); the call then fails INVALID_ARGUMENTS.
struct CallRequest {
  std::string id;
  std::string name;
  // The name the call was made by when that was the provider-safe name a
  // tool is declared under (ProviderNames: "docs_search" for "docs.search");
  // "" when it was `name`. The model's transcript must say it.
  std::string called_as;
  // ToolCall.item_type: the provider's item the call came as ("shell_call"),
  // "" for a function call. Kept on the result and in recordings.
  std::string item_type;
  std::string step_id;
  std::optional<Json> args;
  std::string args_json;
  absl::Status args_error;
  // Set by whoever decides what runs (the engine's policy, [Deciding what runs]): the call
  // fails with this status (its ErrorCode and message) without running.
  absl::Status refusal;
  // What decided that the call runs or is refused, for the audit log
  // (core/audit_log.h): e.g. "policy default: rule no rm", "user",
  // "timeout"; "" when nothing was decided (no policy).
  std::string decided_by;
  // Set by the same: the files the call reads without naming them (a
  // search's walk) that it must leave out (CallInfo::left_out_by_policy).
  LeftOutFn left_out_by_policy;
};

// Sees every call of a batch before its tool runs and every result before it
// is delivered: how the engine's hooks (core/hooks.h) reach the runner. One
// per batch; the batch holds it until its last task and timer have let go.
//
// Threads: BeforeCall runs on the executor thread running the call. OnError
// and AfterCall run exactly once per call, for the result that completes it
// (never for a result that lost the race, see "Completion" in tool_runner.h), on the
// thread that completes it: the call's executor thread (`on_call_thread`
// true: it may block, bounded, and must honour `cancel`, tripped when the
// batch is cancelled or the runner shuts down), or a timer, delivery or
// cancelling thread (false: it must not block; hand slow work elsewhere).
class CallInterceptor {
 public:
  virtual ~CallInterceptor() = default;
  // After the arguments are prepared [Arguments] and the context checked, right
  // before Tool::Call. May replace `args` (and then validates them itself).
  // A non-OK status fails the call with that status's ErrorCode and message.
  // `cancel` is the call's own token (client cancel, timeout, shutdown).
  virtual absl::Status BeforeCall(uint32_t index, const RegisteredTool& tool,
                                  const CallRequest& call, Json& args,
                                  const CancellationToken& cancel) = 0;
  // A failed result: a new model-facing message, or nullopt to keep it. The
  // status and error code stay what they are.
  virtual std::optional<std::string> OnError(uint32_t index, const CallRequest& call,
                                             const JsonValue* args,
                                             const ToolCallResult& result, bool on_call_thread,
                                             const CancellationToken& cancel) = 0;
  // Every result, failures included, after OnError. `args`: the arguments
  // the tool got (or would have got), null when they never parsed.
  virtual void AfterCall(uint32_t index, const CallRequest& call, const JsonValue* args,
                         const ToolCallResult& result, bool on_call_thread,
                         const CancellationToken& cancel) = 0;
  // Whether a call may run on any thread, a gRPC thread included: none of
  // the above blocks for long even on the call's own thread (appending a line
  // to a local file, as the daemon's log does, is fine; running a program is
  // not). Then quick calls run where they are made ready.
  virtual bool MayRunOnAnyThread() const { return false; }
};

struct BatchRequest {
  // The registry snapshot the batch uses throughout (held until it ends);
  // null = the runner's registry.
  std::shared_ptr<const ToolRegistry> tools;
  std::shared_ptr<Session> session;  // may be null
  std::vector<CallRequest> calls;
  std::optional<absl::Duration> timeout;  // per call; unset = the runner's default
  // Characters of model_content per call; 0 = the runner's default. Capped
  // at the runner's maximum, raised to kMinModelContentChars.
  size_t model_content_max_chars = 0;
  // The batch's W3C traceparent, handed to every call (CallInfo) and on its
  // threads' log lines; "" = none.
  std::string traceparent;
  // The engine's hooks for this batch; null = none.
  std::shared_ptr<CallInterceptor> interceptor;
};

struct ProgressEvent {
  uint32_t index = 0;
  std::string id;
  std::string stream;
  std::string text;
  uint64_t seq = 0;  // per call, from 1
};

// The checkpoint of the session's workspace taken before a batch that can
// write (tools/workspace/checkpoint; mirrors toolexec.v1.Checkpoint).
struct CheckpointEvent {
  std::string id;
  std::string session_id;
  std::string batch_id;
  absl::Time created_at;
  std::vector<std::string> tools;
  uint32_t files_changed = 0;
  uint64_t bytes_stored = 0;
};

// Receives a batch's events, from any runner thread or from the thread calling
// Start() or Cancel(). OnResult calls are serialized and in call order;
// OnProgress may run concurrently with OnResult for another call (so the
// observer synchronizes internally), but one call's progress events are
// serialized, in seq order, and precede its result. None may block; OnResult
// and OnLastResult may call Cancel(), OnProgress may not call into the batch.
class BatchObserver {
 public:
  virtual ~BatchObserver() = default;
  virtual void OnProgress(ProgressEvent event) = 0;
  // [Deciding what runs]: a question the batch waits on before any of its calls starts (from
  // the engine, not the runner: always before the first result, on the thread
  // that started the batch). Default: ignored.
  virtual void OnPermissionRequest(const PermissionRequestEvent& /*event*/) {}
  // [Deciding what runs]: the answer to one of those questions ("allow_once", "allow_session",
  // "deny", or "timeout" when none came in time), before the batch goes on;
  // on the thread that answered (or the policy's timeout thread). Default:
  // ignored.
  virtual void OnPermissionAnswer(const std::string& /*request_id*/,
                                  absl::string_view /*decision*/,
                                  const std::string& /*reason*/) {}
  // The checkpoint taken before the batch's calls start (from the engine, on
  // the thread that starts them: before the first result). Default: ignored.
  virtual void OnCheckpoint(const CheckpointEvent& /*event*/) {}
  // In call order, each exactly once, except the batch's last result, which
  // comes through OnLastResult.
  virtual void OnResult(ToolCallResult result) = 0;
  // The last result; nothing follows it. The default hands it to OnResult and
  // then calls OnBatchDone. An observer may override it to finish its work in
  // one step (the gRPC stream writes the last result and its status together).
  virtual void OnLastResult(ToolCallResult result) {
    OnResult(std::move(result));
    OnBatchDone();
  }
  // Flow control. True if results stay in memory after OnResult returns (a
  // stream queues them until its client reads them); such an observer calls
  // BatchHandle::ResultsReleased as they leave it, in order. The runner counts
  // a result from its completion until then (false: until OnResult returns).
  // Asked once, by Start().
  virtual bool HoldsResults() const { return false; }
  // The end of an empty batch (with the default OnLastResult, of every batch);
  // nothing follows it.
  virtual void OnBatchDone() = 0;
};


// A running batch, returned by ToolRunner::Start (tool_runner.h).
class BatchHandle {
 public:
  virtual ~BatchHandle() = default;
  // Completes every unfinished call as CANCELLED and trips its cancellation
  // token. Safe from any thread, any number of times.
  virtual void Cancel() = 0;
  // For an observer that HoldsResults(): its oldest `count` results held are
  // gone (written to the client, or dropped). Lets the batch start the calls
  // it held back. Safe from any thread, also after the batch has ended.
  virtual void ResultsReleased(size_t count) = 0;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_BATCH_H_

// One call's way from the harness's request to its result, on the thread
// that runs it [Failures are results] [Arguments] [Context]: the tool found
// (or the closest names offered), the policy's and the session's refusals,
// tools run elsewhere named, the arguments parsed, coerced and validated,
// the hooks asked, the tool run with its context, and its output shaped and
// rendered for the model. The ToolRunner (tool_runner.h) decides when and on
// which thread each call runs; this is what running it means.
//
// Thread safety: a batch's CallPipeline is fixed when the batch starts and
// used by all its calls at once (every member is const).
#ifndef TOOLEXEC_TOOLS_RUNTIME_CALL_PIPELINE_H_
#define TOOLEXEC_TOOLS_RUNTIME_CALL_PIPELINE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/runtime/artifacts.h"
#include "tools/runtime/batch.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

// What every call of one batch runs with.
struct BatchScope {
  std::shared_ptr<const ToolRegistry> registry;  // the batch's snapshot
  std::shared_ptr<Session> session;              // may be null
  absl::Time deadline;
  ModelContentBudget budget;
  std::string traceparent;
  std::shared_ptr<CallInterceptor> interceptor;  // may be null
  ArtifactStore* artifacts = nullptr;
  // Calls without a session's workspaces work here; may be null.
  std::shared_ptr<const fs::ConfinedRoot> default_workspace;
};

// A call as the pipeline runs it; the runner owns every part.
struct PipelineCall {
  uint32_t index = 0;
  const CallRequest* request = nullptr;
  const RegisteredTool* tool = nullptr;  // null: no tool has the name
  // Parsed when the batch started (ParseArgs), taken here; unset: not parsed yet.
  std::optional<absl::StatusOr<Json>>* args = nullptr;
  CancellationToken* token = nullptr;
  // With an interceptor: set (atomically) to the arguments the tool got, or
  // would have got, for the interceptor's OnError and AfterCall.
  std::shared_ptr<const Json>* seen_args = nullptr;
  ProgressFn progress;
};

class CallPipeline final {
 public:
  explicit CallPipeline(BatchScope scope) : scope_(std::move(scope)) {}

  const BatchScope& scope() const { return scope_; }

  // A call's arguments as one JSON value, or why they cannot be read
  // [Arguments]: args or args_json (not both), no key twice, missing or
  // blank text meaning {}.
  static absl::StatusOr<Json> ParseArgs(const CallRequest& request);

  // Runs `call` through to its result; an exception from tool code is a
  // failed result too.
  ToolCallResult Run(PipelineCall& call) const;

  // A failed result (call_result.h) of a call by `request`, to the tool `rt`
  // (null: unknown, its name echoed cut), with the tool's own summary.
  ToolCallResult Failure(const CallRequest& request, const RegisteredTool* rt, ErrorCode code,
                         absl::string_view message, const JsonValue* args = nullptr) const;

 private:
  // Run without catching: may throw from tool code.
  ToolCallResult Execute(PipelineCall& call) const;
  // Said to the model, which cannot list the tools itself: the closest names
  // it may call, else all of them.
  std::string UnknownToolMessage(absl::string_view name) const;

  const BatchScope scope_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_CALL_PIPELINE_H_

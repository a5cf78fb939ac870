// exit_loop{}: tells the agent loop to stop: escalate + skip_summarization,
// with an empty result [Actions].
#include "tools/control/control_tools.h"
#include "tools/runtime/tool_context.h"

namespace toolexec {
namespace {

class ExitLoopTool final : public Tool {
 public:
  ExitLoopTool()
      : Tool(ToolSpec("exit_loop",
                      "Exits the current agent loop. Call it only when the loop's work is done.",
                      R"({"type":"object","properties":{},"additionalProperties":false})")
                 .Quick()) {}
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    ctx.actions().escalate = true;
    ctx.actions().skip_summarization = true;
    return MakeObject();
  }
};

}  // namespace

std::unique_ptr<Tool> MakeExitLoopTool() { return std::make_unique<ExitLoopTool>(); }

}  // namespace toolexec

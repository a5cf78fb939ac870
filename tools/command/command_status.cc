// command_status (design in tools/command/command.h).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/command/background.h"
#include "tools/command/command.h"
#include "tools/process/result.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::command {
namespace {

constexpr char kSchema[] = R"json({
  "type": "object",
  "properties": {
    "process_id": {
      "type": "string",
      "minLength": 1,
      "description": "The process_id run_command returned for a background command."
    },
    "wait_ms": {
      "type": "integer",
      "minimum": 0,
      "maximum": 600000,
      "description": "Wait up to this long for the command to finish before reporting (default 0: report at once)."
    }
  },
  "required": ["process_id"],
  "additionalProperties": false
})json";

class CommandStatusTool final : public Tool {
 public:
  explicit CommandStatusTool(std::shared_ptr<BackgroundProcesses> background)
      : Tool(ToolSpec("command_status",
                      "Reports on a background command started by run_command: whether it is "
                      "still running (or its exit code), and the output it printed since the "
                      "last command_status or kill_command.",
                      kSchema)
                 .Type(ToolType::kBashCmd)),
        background_(std::move(background)) {}

  std::string display_title(const JsonValue& input) const override {
    return ProcessTitle(name(), input);
  }
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override {
    return CommandModelContent(input, result, budget.max_chars);
  }
  std::vector<std::string> resources(const JsonValue& input) const override {
    return ProcessResources(input);
  }
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override {
    std::string id = ProcessIdOf(input);
    if (!ok || !result.IsObject()) return absl::StrCat("[command_status: ", id, " error]");
    if (builtin::BoolField(result, "running")) {
      return absl::StrCat("[command_status: ", id, " running]");
    }
    int64_t code = builtin::IntArg(result, "exit_code", -1);
    return absl::StrCat("[command_status: ", id, " exited ", code, "]");
  }

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    std::string id = ProcessIdOf(args);
    absl::Duration wait;
    if (args.HasMember("wait_ms")) wait = absl::Milliseconds(args["wait_ms"].GetInt64());
    // Answer before the call's own deadline rather than be cut off by it.
    if (ctx.info().deadline != absl::InfiniteFuture()) {
      absl::Duration left = ctx.info().deadline - absl::Now() - absl::Milliseconds(100);
      wait = std::max(absl::ZeroDuration(), std::min(wait, left));
    }
    return background_->Status(ctx.info().session_id, id, wait, ctx.cancellation());
  }

 private:
  const std::shared_ptr<BackgroundProcesses> background_;
};

}  // namespace

std::unique_ptr<Tool> MakeCommandStatusTool(std::shared_ptr<BackgroundProcesses> background) {
  return std::make_unique<CommandStatusTool>(std::move(background));
}

}  // namespace toolexec::command

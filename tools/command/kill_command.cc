// kill_command (design in tools/command/command.h).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/command/background.h"
#include "tools/command/command.h"
#include "tools/process/result.h"
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
    }
  },
  "required": ["process_id"],
  "additionalProperties": false
})json";

class KillCommandTool final : public Tool {
 public:
  explicit KillCommandTool(std::shared_ptr<BackgroundProcesses> background)
      : Tool(ToolSpec("kill_command",
                      "Ends a background command started by run_command (SIGTERM to its whole "
                      "process group, then SIGKILL), and returns its exit status and the output "
                      "not read yet.",
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
    if (!ok) return absl::StrCat("[kill_command: ", id, " error]");
    return absl::StrCat("[kill_command: ", id, " ended]");
  }

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    std::string id = ProcessIdOf(args);
    return background_->Kill(ctx.info().session_id, id, ctx.cancellation());
  }

 private:
  const std::shared_ptr<BackgroundProcesses> background_;
};

}  // namespace

std::unique_ptr<Tool> MakeKillCommandTool(std::shared_ptr<BackgroundProcesses> background) {
  return std::make_unique<KillCommandTool>(std::move(background));
}

}  // namespace toolexec::command

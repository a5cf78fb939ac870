// bash: Anthropic's bash_20250124 tool over the session's persistent shell
// (design in tools/command/shell_session.h).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/command/command.h"
#include "tools/process/result.h"
#include "tools/command/shell_session.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::command {
namespace {

constexpr char kSchema[] = R"json({
  "type": "object",
  "properties": {
    "command": {
      "type": "string",
      "description": "The bash command to run. Required unless the tool is being restarted."
    },
    "restart": {
      "type": "boolean",
      "description": "Specifying true will restart this tool. Otherwise, leave this unspecified."
    }
  },
  "additionalProperties": false
})json";

constexpr char kRestarted[] = "tool has been restarted.";

absl::string_view CommandOf(const JsonValue& input) {
  if (!input.IsObject()) return "";
  return builtin::StringArg(input, "command").value_or("");
}

class BashTool final : public PersistentShellTool {
 public:
  BashTool(std::shared_ptr<const CommandConfig> config, std::shared_ptr<ShellTable> shells)
      : PersistentShellTool(ToolSpec("bash",
                      "Runs a bash command in a persistent shell of this session: the working "
                      "directory and variables (an activated virtualenv included) carry over to "
                      "the next call; functions, aliases and traps do not. Returns the command's "
                      "output (stdout and stderr, interleaved). A command reads no input (stdin "
                      "is empty); one that runs longer than the daemon's command timeout is "
                      "stopped, and the shell with it. `exit` ends the shell; restart:true "
                      "starts a fresh one.",
                      kSchema)
                 .Type(ToolType::kBashCmd)
                 .NeedsContext()
                 .Tags({kTagDestructive, kTagProvider}),
            std::move(config), std::move(shells)) {}

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    Json out = MakeObject();
    if (builtin::BoolField(args, "restart")) {
      shells_->Restart(ctx.info().session_id);
      SetString(out, "output", kRestarted);
      SetBool(out, "restarted", true);
      return out;
    }
    auto command = builtin::StringArg(args, "command");
    if (!command.has_value()) {
      return absl::InvalidArgumentError(
          "command is required unless restart is true: give the bash command to run");
    }
    const BuiltinOptions& opt = config_->options;
    const int64_t timeout_ms =
        std::min(absl::ToInt64Milliseconds(opt.command_default_timeout),
                 absl::ToInt64Milliseconds(opt.command_max_timeout));
    auto run = shells_->Run(ctx, *command, timeout_ms,
                            [&ctx](bool is_stderr, absl::string_view text) {
                              ctx.progress(is_stderr ? "stderr" : "stdout", text);
                            });
    if (!run.ok()) return run.status();
    const ShellOutcome& o = *run;
    SetString(out, "output", o.combined);
    SetString(out, "stdout", o.stdout_text);
    SetString(out, "stderr", o.stderr_text);
    if (o.exit_code.has_value()) SetInt(out, "exit_code", *o.exit_code);
    SetString(out, "timed_out", o.timed_out);
    if (!o.signal.empty()) SetString(out, "signal", o.signal);
    SetBool(out, "truncated", o.truncated);
    SetInt(out, "duration_ms", o.duration_ms);
    SetInt(out, "timeout_ms", o.timeout_ms);
    if (!o.cwd.empty()) SetString(out, "cwd", o.cwd);
    SetBool(out, "new_shell", o.new_shell);
    SetBool(out, "shell_ended", o.shell_ended);
    if (o.invalid_utf8_bytes > 0) {
      SetInt(out, "invalid_utf8_bytes", static_cast<int64_t>(o.invalid_utf8_bytes));
    }
    if (!o.notes.empty()) {
      JsonValue notes(rapidjson::kArrayType);
      for (const std::string& n : o.notes) {
        notes.PushBack(JsonValue(n.data(), static_cast<rapidjson::SizeType>(n.size()),
                                 out.GetAllocator()),
                       out.GetAllocator());
      }
      out.AddMember("notes", notes, out.GetAllocator());
    }
    return out;
  }

  // The output as a terminal shows it, then what the model must know: a
  // non-zero exit code, a timeout, a shell that ended, a reset.
  std::string model_content(const JsonValue& /*input*/, const JsonValue& result,
                            const ModelContentBudget& budget) const override {
    std::string text = builtin::StringField(result, "output");
    std::vector<std::string> tail;
    if (result.IsObject() && result.HasMember("exit_code") && result["exit_code"].IsInt64() &&
        result["exit_code"].GetInt64() != 0) {
      tail.push_back(absl::StrCat("exit code ", result["exit_code"].GetInt64()));
    }
    if (result.IsObject() && result.HasMember("notes") && result["notes"].IsArray()) {
      for (const auto& n : result["notes"].GetArray()) {
        if (n.IsString()) tail.emplace_back(n.GetString(), n.GetStringLength());
      }
    }
    if (!tail.empty()) {
      if (!text.empty() && text.back() != '\n') text += '\n';
      text += absl::StrCat("[", absl::StrJoin(tail, "; "), "]");
    }
    if (text.empty()) return kNoOutputText;
    return CutMiddle(text, budget.max_chars);
  }

  std::string display_title(const JsonValue& input) const override {
    if (builtin::BoolField(input, "restart")) return "bash (restart)";
    return ShortCommand(CommandOf(input));
  }

  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override {
    if (builtin::BoolField(input, "restart")) return "[bash: restarted]";
    std::string cmd = ShortCommand(CommandOf(input), 60);
    if (!ok || !result.IsObject()) return absl::StrCat("[bash: `", cmd, "` error]");
    std::string timed_out = builtin::StringField(result, "timed_out");
    if (!timed_out.empty()) return absl::StrCat("[bash: `", cmd, "` timed out]");
    std::string signal = builtin::StringField(result, "signal");
    if (!signal.empty()) return absl::StrCat("[bash: `", cmd, "` shell killed by ", signal, "]");
    return absl::StrCat("[bash: `", cmd, "` exit ", builtin::IntArg(result, "exit_code", -1),
                        "]");
  }

  // [Deciding what runs]: judged as run_command's command line is (a rule naming run_command,
  // bash or shell applies to each of them).
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override {
    if (builtin::BoolField(input, "restart") && CommandOf(input).empty()) return {};
    PermissionRequirement r;
    r.kind = PermissionRequirement::Kind::kCommand;
    r.value = std::string(CommandOf(input));
    r.level = PermissionLevel::kExecute;
    return {r};
  }
};

}  // namespace

std::unique_ptr<Tool> MakeBashTool(std::shared_ptr<const CommandConfig> config,
                                   std::shared_ptr<ShellTable> shells) {
  return std::make_unique<BashTool>(std::move(config), std::move(shells));
}

}  // namespace toolexec::command

// run_command (design in tools/command/command.h).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/command/background.h"
#include "tools/command/command.h"
#include "tools/process/command_run.h"
#include "tools/process/environment.h"
#include "tools/command/launch.h"
#include "tools/process/reaper.h"
#include "tools/process/result.h"
#include "tools/process/sandbox.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::command {
namespace {

using std::chrono::milliseconds;

constexpr char kSchema[] = R"json({
  "type": "object",
  "properties": {
    "command_line": {
      "type": "string",
      "minLength": 1,
      "description": "The command, run by /bin/bash -c in its own process group."
    },
    "working_dir": {
      "type": "string",
      "description": "Directory to run in, relative to the workspace (default: the workspace root). Must stay inside the workspace."
    },
    "timeout_ms": {
      "type": "integer",
      "minimum": 1,
      "maximum": 2592000000,
      "description": "Wall-clock limit in milliseconds (default 120000, capped by the daemon's configuration). On timeout the command's process group gets SIGTERM, then SIGKILL; the output so far is returned with timed_out \"wall\"."
    },
    "idle_timeout_ms": {
      "type": "integer",
      "minimum": 1,
      "maximum": 2592000000,
      "description": "End the command if it prints nothing for this long (timed_out \"idle\")."
    },
    "env": {
      "type": ["array", "object"],
      "items": {"type": "string"},
      "additionalProperties": {"type": "string"},
      "description": "Environment variables to set, as \"NAME=value\" strings ([\"DEBUG=1\"]) or as an object ({\"DEBUG\": \"1\"}), on top of the daemon's environment (from which secrets are removed: variables with a name word such as KEY, SECRET, TOKEN, PASSWORD, PASS, PAT, CREDENTIALS or AUTH, or a URL value with a password)."
    },
    "stdin": {
      "type": "string",
      "description": "Text written to the command's standard input (then closed). Without it, stdin is /dev/null."
    },
    "background": {
      "type": "boolean",
      "description": "Start the command and return at once with a process_id; read its output with command_status and end it with kill_command. It belongs to the session and is killed when the session closes (calls without a session share one pool, ended by kill_command or daemon shutdown). Only an explicit timeout_ms limits it."
    }
  },
  "required": ["command_line"],
  "additionalProperties": false
})json";

using EnvList = std::vector<std::pair<std::string, std::string>>;

// The `env` argument, in either form: {"NAME": "value"} or ["NAME=value"]
// (the one every model provider's schema dialect can express).
absl::StatusOr<EnvList> EnvArgument(const JsonValue& args) {
  EnvList given;
  auto it = args.FindMember("env");
  if (it == args.MemberEnd()) return given;
  if (it->value.IsArray()) {
    for (const auto& item : it->value.GetArray()) {
      if (!item.IsString()) return absl::InvalidArgumentError("env: every entry must be a string");
      absl::string_view entry = StringOf(item);
      size_t eq = entry.find('=');
      if (eq == absl::string_view::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("env: '", entry, "' is not of the form NAME=value"));
      }
      given.emplace_back(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
  } else if (it->value.IsObject()) {
    for (auto m = it->value.MemberBegin(); m != it->value.MemberEnd(); ++m) {
      if (!m->value.IsString()) {
        return absl::InvalidArgumentError(
            absl::StrCat("env: the value of ", StringOf(m->name), " must be a string"));
      }
      given.emplace_back(std::string(StringOf(m->name)), std::string(StringOf(m->value)));
    }
  } else {
    return absl::InvalidArgumentError("env must be an array of \"NAME=value\" or an object");
  }
  for (const auto& [name, value] : given) {
    if (name.empty() || name.find('=') != std::string::npos ||
        name.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "env: '", name, "' is not a valid variable name (no '=' or NUL, not empty)"));
    }
    if (value.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("env: the value of ", name, " contains a NUL byte"));
    }
  }
  return given;
}

class RunCommandTool final : public Tool {
 public:
  RunCommandTool(std::shared_ptr<const CommandConfig> config,
                 std::shared_ptr<BackgroundProcesses> background)
      : Tool(ToolSpec("run_command",
                      "Runs a shell command (bash) in the workspace and returns its exit code "
                      "and output. A non-zero exit code is reported, not treated as an error. "
                      "Output is streamed while the command runs; very long output keeps its "
                      "beginning and end around a marker saying how much was left out. Commands "
                      "time out after timeout_ms (default 2 minutes); use background:true for "
                      "servers and watchers.",
                      kSchema)
                 .Type(ToolType::kBashCmd)
                 .Tags({kTagDestructive, kTagMinimal})),
        config_(std::move(config)),
        background_(std::move(background)) {}

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;

  // [Display]: the title is the command line; the content its combined output.
  std::string display_title(const JsonValue& input) const override {
    return ShortCommand(CommandLineOf(input));
  }
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override {
    return CommandModelContent(input, result, budget.max_chars);
  }
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  // [Deciding what runs]: running a command needs Execute on that command line, with the
  // variables it sets (judged with it: BASH_ENV makes bash run code). An env
  // the call will refuse sets nothing.
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override {
    PermissionRequirement r;
    r.kind = PermissionRequirement::Kind::kCommand;
    r.value = std::string(CommandLineOf(input));
    r.level = PermissionLevel::kExecute;
    if (input.IsObject()) {
      if (auto env = EnvArgument(input); env.ok()) {
        for (const auto& [name, value] : *env) r.env.push_back(absl::StrCat(name, "=", value));
      }
    }
    return {r};
  }
  void cleanup_session(absl::string_view session_id) const override {
    background_->CloseSession(session_id);
  }
  void shutdown() const override { background_->Shutdown(); }

 private:
  static absl::string_view CommandLineOf(const JsonValue& input) {
    if (!input.IsObject()) return "";
    auto it = input.FindMember("command_line");
    if (it == input.MemberEnd() || !it->value.IsString()) return "";
    return StringOf(it->value);
  }

  const std::shared_ptr<const CommandConfig> config_;
  const std::shared_ptr<BackgroundProcesses> background_;
};

absl::StatusOr<Json> RunCommandTool::Call(const JsonValue& args, ToolContext& ctx) const {
  const BuiltinOptions& opt = config_->options;
  const std::string command_line(StringOf(args["command_line"]));
  if (command_line.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError("command_line contains a NUL byte");
  }
  if (absl::StripAsciiWhitespace(command_line).empty()) {
    return absl::InvalidArgumentError("command_line is blank; give the command to run");
  }

  // --- where: beneath the workspace, resolved by the kernel ---
  std::string working_dir = ".";
  if (auto it = args.FindMember("working_dir"); it != args.MemberEnd()) {
    working_dir = std::string(StringOf(it->value));
    if (working_dir.empty()) working_dir = ".";
  }
  auto wp = fs::ResolveWorkspacePath(ctx.info().workspaces, working_dir, "working_dir");
  if (!wp.ok()) return wp.status();
  auto dir = fs::OpenDirectory(*wp);
  if (!dir.ok()) return dir.status();

  // --- environment ---
  auto overrides = EnvArgument(args);
  if (!overrides.ok()) return overrides.status();
  CommandSpec spec = MakeCommandSpec(*config_, ctx, *wp, dir->get(),
                                     {"/bin/bash", "-c", command_line}, *std::move(overrides));
  if (auto it = args.FindMember("stdin"); it != args.MemberEnd()) {
    spec.stdin_text = std::string(StringOf(it->value));
  }

  // --- timeouts ---
  const bool background = args.HasMember("background") && args["background"].GetBool();
  const int64_t max_ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(opt.command_max_timeout));
  bool has_timeout = args.HasMember("timeout_ms");
  int64_t timeout_ms = has_timeout ? args["timeout_ms"].GetInt64()
                                   : absl::ToInt64Milliseconds(opt.command_default_timeout);
  bool capped = timeout_ms > max_ms;
  timeout_ms = std::min(timeout_ms, max_ms);
  if (args.HasMember("idle_timeout_ms")) {
    spec.idle_timeout = milliseconds(args["idle_timeout_ms"].GetInt64());
  }

  if (background) {
    // A background command outlives the call: only an explicit timeout_ms
    // limits it (its call's deadline does not).
    if (has_timeout) spec.wall_timeout = milliseconds(timeout_ms);
    BackgroundProcesses::StartRequest req;
    req.session_id = ctx.info().session_id;
    req.command_line = command_line;
    req.spec = std::move(spec);
    auto id = background_->Start(std::move(req));
    if (!id.ok()) return id.status();
    Json out = MakeObject();
    SetString(out, "process_id", *id);
    return out;
  }

  auto run = RunForeground(std::move(spec), timeout_ms, ctx,
                           [&ctx](bool is_stderr, absl::string_view text) {
                             ctx.progress(is_stderr ? "stderr" : "stdout", text);
                           });
  if (!run.ok()) return run.status();
  const CommandOutcome& o = run->outcome;
  timeout_ms = run->timeout_ms;
  const bool shortened = run->shortened;

  Json out = MakeObject();
  SetExit(out, o.exit);
  SetOutput(out, o.stdout_text, o.stderr_text, o.combined);
  SetString(out, "timed_out", TimedOutName(o.stop));
  SetBool(out, "truncated", o.truncated);
  SetInt(out, "duration_ms", o.duration.count());
  SetInt(out, "stdout_bytes", static_cast<int64_t>(o.stdout_bytes));
  SetInt(out, "stderr_bytes", static_cast<int64_t>(o.stderr_bytes));
  SetBool(out, "invalid_utf8", o.invalid_utf8_bytes > 0);
  if (o.invalid_utf8_bytes > 0) {
    SetInt(out, "invalid_utf8_bytes", static_cast<int64_t>(o.invalid_utf8_bytes));
  }
  SetInt(out, "timeout_ms", timeout_ms);
  if (capped) {
    SetString(out, "timeout_note",
              absl::StrCat("timeout_ms was capped at the configured maximum of ", max_ms, " ms"));
  } else if (shortened) {
    SetString(out, "timeout_note", "timeout_ms was shortened to end before the call's deadline");
  }
  if (o.output_cut_at_exit) {
    SetString(out, "output_note",
              "the command exited but a process it started kept its output open; output "
              "after the exit was not read");
  }
  return out;
}

DisplayResult RunCommandTool::display(const JsonValue& input, const JsonValue& result) const {
  std::string content;
  if (result.IsObject() && result.HasMember("stdout")) {
    content = builtin::StringField(result, "combined_output");
    if (content.empty()) content = builtin::StringField(result, "stdout");
    if (content.empty()) content = builtin::StringField(result, "stderr");
  } else {
    content = ToJsonString(result);
  }
  return TextDisplay(display_title(input), ContentType::kPlainText, std::move(content),
                     kDefaultDisplayBytes);
}

std::string RunCommandTool::compact_summary(const JsonValue& input, const JsonValue& result,
                                            bool ok) const {
  std::string cmd = ShortCommand(CommandLineOf(input), 60);
  if (!ok || !result.IsObject()) return absl::StrCat("[run_command: `", cmd, "` error]");
  if (result.HasMember("process_id") && result["process_id"].IsString()) {
    return absl::StrCat("[run_command: `", cmd, "` started in the background as ",
                        StringOf(result["process_id"]), "]");
  }
  int64_t ms = builtin::IntArg(result, "duration_ms", 0);
  std::string timed_out = builtin::StringField(result, "timed_out");
  if (!timed_out.empty()) {
    return absl::StrCat(
        "[run_command: `", cmd, "` ",
        timed_out == "cancelled" ? "cancelled" : absl::StrCat("timed out (", timed_out, ")"),
        " after ", FormatMs(ms), "]");
  }
  if (result.HasMember("signal") && result["signal"].IsString()) {
    return absl::StrCat("[run_command: `", cmd, "` killed by ", StringOf(result["signal"]),
                        " after ", FormatMs(ms), "]");
  }
  int64_t code = builtin::IntArg(result, "exit_code", -1);
  return absl::StrCat("[run_command: `", cmd, "` exit ", code, " in ", FormatMs(ms), "]");
}

}  // namespace

std::unique_ptr<Tool> MakeRunCommandTool(std::shared_ptr<const CommandConfig> config,
                                         std::shared_ptr<BackgroundProcesses> background) {
  return std::make_unique<RunCommandTool>(std::move(config), std::move(background));
}

}  // namespace toolexec::command

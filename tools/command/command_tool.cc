// Command tools: tools whose work a program of the user's does, in any
// language (config command_tools; see CommandToolOptions in builtin.h).
//
// Each call runs the program in the foreground on the executor thread that
// runs Tool::Call, through the same code as run_command (command/launch.h):
// its own supervisor and process group, the call's timeout fitted inside the
// call's deadline, cancellation ending the process tree, bounded capture, the
// daemon's rlimits and sandbox. The arguments (coerced, validated and
// defaulted against the declared schema, [Arguments]) are written to stdin as one JSON
// object; stderr streams out as progress while it runs.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/builtin.h"
#include "tools/command/command.h"
#include "tools/process/command_line.h"
#include "tools/process/environment.h"
#include "tools/command/launch.h"
#include "tools/process/reaper.h"
#include "tools/process/result.h"
#include "tools/process/sandbox.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace command {
namespace {

constexpr char kAnyObjectSchema[] = R"json({"type": "object"})json";
// Characters of stderr a failure message ends with.
constexpr size_t kStderrTailChars = 2000;

// The last kStderrTailChars characters of `stderr_text`, trimmed, after ": ",
// or "" when the program wrote nothing there.
std::string StderrTail(absl::string_view stderr_text) {
  absl::string_view text = absl::StripAsciiWhitespace(stderr_text);
  if (text.empty()) return " (it wrote nothing on stderr)";
  size_t n = Utf8SuffixBytes(text, kStderrTailChars);
  return absl::StrCat(": ", n < text.size() ? "..." : "", text.substr(text.size() - n));
}

class CommandTool final : public Tool {
 public:
  CommandTool(const CommandToolOptions& options, std::vector<std::string> argv,
              std::shared_ptr<const CommandConfig> config)
      : Tool(MakeSpec(options)),
        argv_(std::move(argv)),
        env_(options.env),
        working_dir_(options.working_dir.empty() ? "." : options.working_dir),
        timeout_(options.timeout),
        config_(std::move(config)) {}

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;

  // A program that printed plain text: the model gets that text, not
  // {"result": "..."}; anything else as JSON (the default).
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override {
    if (result.IsObject() && result.MemberCount() == 1 && result.HasMember("result") &&
        result["result"].IsString()) {
      return std::string(result["result"].GetString(), result["result"].GetStringLength());
    }
    return Tool::model_content(input, result, budget);
  }

  // [Deciding what runs]: running it executes its program.
  std::vector<PermissionRequirement> required_permissions(
      const JsonValue& /*input*/) const override {
    PermissionRequirement r;
    r.kind = PermissionRequirement::Kind::kCommand;
    // The program's argv as the command line bash would read it.
    std::vector<std::string> quoted;
    for (const std::string& word : argv_) quoted.push_back(command::ShellQuote(word));
    r.value = absl::StrJoin(quoted, " ");
    r.level = PermissionLevel::kExecute;
    return {r};
  }

 private:
  static ToolSpec MakeSpec(const CommandToolOptions& o) {
    ToolSpec spec(o.name, o.description,
                  o.parameters_json.empty() ? kAnyObjectSchema : o.parameters_json);
    if (o.read_only) {
      spec.Tags({kTagReadOnly});
    } else {
      spec.Tags({kTagDestructive});
    }
    return spec;
  }

  const std::vector<std::string> argv_;
  const std::vector<std::pair<std::string, std::string>> env_;
  const std::string working_dir_;
  const absl::Duration timeout_;
  const std::shared_ptr<const CommandConfig> config_;
};

absl::StatusOr<Json> CommandTool::Call(const JsonValue& args, ToolContext& ctx) const {
  auto wp = fs::ResolveWorkspacePath(ctx.info().workspaces, working_dir_, "working_dir");
  if (!wp.ok()) return wp.status();
  auto dir = fs::OpenDirectory(*wp);
  if (!dir.ok()) return dir.status();

  CommandSpec spec = MakeCommandSpec(*config_, ctx, *wp, dir->get(), argv_, env_);
  // One line, newline-terminated, so `read` in a shell script gets it whole.
  spec.stdin_text = absl::StrCat(ToJsonString(args), "\n");
  // The result is stdout itself, held whole up to the capture limit (the
  // runner cuts model_content to the budget, not the payload).
  spec.output_chars = SIZE_MAX;
  const absl::Duration timeout =
      timeout_ > absl::ZeroDuration() ? timeout_ : config_->options.command_default_timeout;
  auto run = RunForeground(std::move(spec), absl::ToInt64Milliseconds(timeout), ctx,
                           [&ctx](bool is_stderr, absl::string_view text) {
                             if (is_stderr) ctx.progress("stderr", text);
                           });
  if (!run.ok()) return run.status();
  const CommandOutcome& o = run->outcome;

  switch (o.stop) {
    case StopReason::kCancelled:
      return absl::CancelledError(absl::StrCat(name(), " was cancelled"));
    case StopReason::kWall:
    case StopReason::kIdle:
      return ToolError(ErrorCode::kTimeout,
                       absl::StrCat(name(), " timed out after ", run->timeout_ms, " ms",
                                    StderrTail(o.stderr_text)));
    case StopReason::kKilled:
    case StopReason::kShutdown:
      return absl::CancelledError(
          absl::StrCat(name(), " was stopped: the daemon is shutting down"));
    case StopReason::kNone:
      break;
  }
  if (o.exit.signaled) {
    return absl::InternalError(
        absl::StrCat(name(), " was killed by signal ", o.exit.code, StderrTail(o.stderr_text)));
  }
  if (o.exit.code != 0) {
    return absl::InternalError(
        absl::StrCat(name(), " exited with code ", o.exit.code, StderrTail(o.stderr_text)));
  }
  if (o.stdout_truncated) {
    return absl::InternalError(absl::StrCat(
        name(), " printed ", o.stdout_bytes,
        " bytes on stdout, more than the daemon keeps (run_command.capture_bytes head and tail, ",
        config_->options.command_capture_bytes,
        " bytes each); print less, or write the output to a file and return its path"));
  }
  absl::string_view text = absl::StripAsciiWhitespace(o.stdout_text);
  if (text.empty()) return MakeObject();  // nothing: {} [Failures are results]
  // JSON: an object is the result as is; the runner sends any other value v
  // as {"result": v} [Failures are results].
  if (auto parsed = ParseJson(text); parsed.ok()) return *std::move(parsed);
  Json out = MakeObject();
  SetString(out, "result", text);
  return out;
}

}  // namespace
}  // namespace command

absl::Status RegisterConfiguredCommandTools(ToolRegistry& registry, const BuiltinOptions& options,
                                            const std::vector<CommandToolOptions>& tools) {
  if (tools.empty()) return absl::OkStatus();
  auto config = command::CommandConfig::Create(options);
  if (!config.ok()) return config.status();
  if (absl::Status s = command::ChildReaper::Get().Start(); !s.ok()) return s;
  std::string path_var = command::LookupEnvironment((*config)->base_env, "PATH");
  if (path_var.empty()) path_var = "/usr/local/bin:/usr/bin:/bin";
  for (const CommandToolOptions& t : tools) {
    std::vector<std::string> argv = t.argv;
    if (argv.empty() || argv[0].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("command_tools '", t.name, "': argv is empty; give the program to run"));
    }
    if (argv[0].find('/') == std::string::npos) {
      auto found = command::FindExecutable(argv[0], path_var);
      if (!found.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("command_tools '", t.name, "': ", found.status().message()));
      }
      argv[0] = *found;
    } else if (argv[0][0] != '/') {
      return absl::InvalidArgumentError(absl::StrCat(
          "command_tools '", t.name, "': argv[0] '", argv[0],
          "' is a relative path; give an absolute path or a program name found on PATH"));
    }
    if (absl::Status s =
            registry.Register(std::make_unique<command::CommandTool>(t, std::move(argv), *config),
                              "config (command_tools)");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace toolexec

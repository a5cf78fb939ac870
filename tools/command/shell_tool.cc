// shell: OpenAI Responses' shell tool over the session's persistent shell
// (design in tools/command/shell_session.h): the commands run in
// order, each with its own outcome, as shell_call_output reports them.
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
    "commands": {
      "type": "array",
      "items": {"type": "string"},
      "minItems": 1,
      "description": "Shell commands to run in order in the session's persistent shell."
    },
    "timeout_ms": {
      "type": "integer",
      "minimum": 1,
      "maximum": 2592000000,
      "description": "Wall-clock limit for each command in milliseconds (default 120000, capped by the daemon's configuration)."
    },
    "max_output_length": {
      "type": "integer",
      "minimum": 1,
      "description": "At most this many characters of each command's stdout and of its stderr (its beginning and end, around a marker saying how much was left out)."
    }
  },
  "required": ["commands"],
  "additionalProperties": false
})json";

// At most `max` characters of `text`: its first and last characters around
// a marker saying how many bytes were left out (the marker not counted, so
// even a small limit keeps text from both ends).
std::string Limit(const std::string& text, size_t max) {
  std::vector<size_t> starts;  // byte offset of each character
  for (size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  }
  if (starts.size() <= max) return text;
  const size_t head = max / 2, tail = max - head;
  const size_t head_end = starts[head];
  const size_t tail_begin = starts[starts.size() - tail];
  return absl::StrCat(text.substr(0, head_end), OmittedBytesMarker(tail_begin - head_end),
                      text.substr(tail_begin));
}

class ShellTool final : public PersistentShellTool {
 public:
  ShellTool(std::shared_ptr<const CommandConfig> config, std::shared_ptr<ShellTable> shells)
      : PersistentShellTool(ToolSpec("shell",
                      "Runs shell commands in order in a persistent bash shell of this session "
                      "(working directory and variables carry over between commands and calls; "
                      "functions, aliases and traps do not). Returns each command's stdout, "
                      "stderr and outcome (its exit code, or a timeout).",
                      kSchema)
                 .Type(ToolType::kBashCmd)
                 .NeedsContext()
                 .Tags({kTagDestructive, kTagProvider}),
            std::move(config), std::move(shells)) {}

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    const BuiltinOptions& opt = config_->options;
    const int64_t max_ms = std::max<int64_t>(1, absl::ToInt64Milliseconds(opt.command_max_timeout));
    int64_t timeout_ms = builtin::IntArg(args, "timeout_ms",
                                         absl::ToInt64Milliseconds(opt.command_default_timeout));
    timeout_ms = std::min(timeout_ms, max_ms);
    const bool has_max = args.HasMember("max_output_length");
    const int64_t max_len = builtin::IntArg(args, "max_output_length", 0);

    Json out = MakeObject();
    auto& a = out.GetAllocator();
    JsonValue entries(rapidjson::kArrayType);
    JsonValue notes(rapidjson::kArrayType);
    const auto& commands = args["commands"].GetArray();
    for (rapidjson::SizeType i = 0; i < commands.Size(); ++i) {
      absl::string_view command(commands[i].GetString(), commands[i].GetStringLength());
      auto run = shells_->Run(ctx, command, timeout_ms,
                              [&ctx](bool is_stderr, absl::string_view text) {
                                ctx.progress(is_stderr ? "stderr" : "stdout", text);
                              });
      if (!run.ok()) {
        if (i == 0) return run.status();
        // The earlier commands ran: report them, and why this one did not.
        notes.PushBack(MakeString(absl::StrCat("command ", i + 1, " was not run: ",
                                         run.status().message()),
                            a),
                       a);
        break;
      }
      const ShellOutcome& o = *run;
      std::string so = o.stdout_text, se = o.stderr_text;
      if (has_max) {
        so = Limit(so, static_cast<size_t>(max_len));
        se = Limit(se, static_cast<size_t>(max_len));
      }
      JsonValue entry(rapidjson::kObjectType);
      entry.AddMember("stdout", MakeString(so, a), a);
      entry.AddMember("stderr", MakeString(se, a), a);
      JsonValue outcome(rapidjson::kObjectType);
      // Only a timeout (or a cancellation) is one: a command that ended the
      // shell, a signal included, has the exit status the shell reported.
      if (o.timed_out.empty()) {
        outcome.AddMember("type", "exit", a);
        outcome.AddMember("exit_code", o.exit_code.value_or(-1), a);
      } else {
        outcome.AddMember("type", "timeout", a);
      }
      entry.AddMember("outcome", outcome, a);
      entries.PushBack(entry, a);
      for (const std::string& n : o.notes) {
        notes.PushBack(MakeString(absl::StrCat("command ", i + 1, ": ", n), a), a);
      }
      if (o.timed_out == "cancelled") break;
    }
    out.AddMember("output", entries, a);
    if (has_max) out.AddMember("max_output_length", max_len, a);
    if (!notes.Empty()) out.AddMember("notes", notes, a);
    return out;
  }

  // Each command's output as a terminal shows it, with its outcome when it
  // is not a plain success, then the notes.
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override {
    std::string text;
    if (result.IsObject() && result.HasMember("output") && result["output"].IsArray()) {
      const auto& entries = result["output"].GetArray();
      const bool many = entries.Size() > 1;
      const JsonValue* commands = input.IsObject() && input.HasMember("commands") &&
                                          input["commands"].IsArray()
                                      ? &input["commands"]
                                      : nullptr;
      for (rapidjson::SizeType i = 0; i < entries.Size(); ++i) {
        const JsonValue& e = entries[i];
        if (many && commands != nullptr && i < commands->Size() && (*commands)[i].IsString()) {
          text += absl::StrCat("$ ", (*commands)[i].GetString(), "\n");
        }
        std::string so = builtin::StringField(e, "stdout");
        std::string se = builtin::StringField(e, "stderr");
        for (const std::string* s : {&so, &se}) {
          if (s->empty()) continue;
          text += *s;
          if (text.back() != '\n') text += '\n';
        }
        if (e.HasMember("outcome") && e["outcome"].IsObject()) {
          const JsonValue& oc = e["outcome"];
          std::string type = builtin::StringField(oc, "type");
          if (type == "timeout") {
            text += "[timed out]\n";
          } else if (builtin::IntArg(oc, "exit_code", 0) != 0) {
            text += absl::StrCat("[exit code ", builtin::IntArg(oc, "exit_code", 0), "]\n");
          }
        }
      }
    }
    if (result.IsObject() && result.HasMember("notes") && result["notes"].IsArray()) {
      for (const auto& n : result["notes"].GetArray()) {
        if (n.IsString()) text += absl::StrCat("[", n.GetString(), "]\n");
      }
    }
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.empty()) return kNoOutputText;
    return CutMiddle(text, budget.max_chars);
  }

  std::string display_title(const JsonValue& input) const override {
    std::vector<std::string> cmds;
    if (input.IsObject() && input.HasMember("commands") && input["commands"].IsArray()) {
      for (const auto& c : input["commands"].GetArray()) {
        if (c.IsString()) cmds.emplace_back(c.GetString(), c.GetStringLength());
      }
    }
    return ShortCommand(absl::StrJoin(cmds, "; "));
  }

  // [Deciding what runs]: every command is judged as run_command's command line is.
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override {
    std::vector<PermissionRequirement> needs;
    if (!input.IsObject() || !input.HasMember("commands") || !input["commands"].IsArray()) {
      return needs;
    }
    for (const auto& c : input["commands"].GetArray()) {
      PermissionRequirement r;
      r.kind = PermissionRequirement::Kind::kCommand;
      r.value = c.IsString() ? std::string(c.GetString(), c.GetStringLength()) : "";
      r.level = PermissionLevel::kExecute;
      needs.push_back(std::move(r));
    }
    return needs;
  }
};

}  // namespace

std::unique_ptr<Tool> MakeShellTool(std::shared_ptr<const CommandConfig> config,
                                    std::shared_ptr<ShellTable> shells) {
  return std::make_unique<ShellTool>(std::move(config), std::move(shells));
}

}  // namespace toolexec::command

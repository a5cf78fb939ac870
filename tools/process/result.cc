#include "tools/process/result.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/process/output_capture.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool.h"

namespace toolexec::command {

void SetString(Json& out, absl::string_view name, absl::string_view value) {
  auto& a = out.GetAllocator();
  out.AddMember(JsonValue(name.data(), static_cast<rapidjson::SizeType>(name.size()), a),
                JsonValue(value.data(), static_cast<rapidjson::SizeType>(value.size()), a), a);
}

void SetInt(Json& out, absl::string_view name, int64_t value) {
  auto& a = out.GetAllocator();
  out.AddMember(JsonValue(name.data(), static_cast<rapidjson::SizeType>(name.size()), a),
                JsonValue(value), a);
}

void SetBool(Json& out, absl::string_view name, bool value) {
  auto& a = out.GetAllocator();
  out.AddMember(JsonValue(name.data(), static_cast<rapidjson::SizeType>(name.size()), a),
                JsonValue(value), a);
}

void SetExit(Json& out, const ExitStatus& exit) {
  if (exit.signaled) {
    SetInt(out, "exit_code", 128 + exit.code);
    SetString(out, "signal", SignalName(exit.code));
  } else {
    SetInt(out, "exit_code", exit.code);
  }
}

std::string ShortCommand(absl::string_view command_line, size_t max_chars) {
  absl::string_view s = command_line;
  bool cut = false;
  if (size_t nl = s.find('\n'); nl != absl::string_view::npos) {
    s = s.substr(0, nl);
    cut = true;
  }
  if (s.size() > max_chars) {
    s = s.substr(0, Utf8SafePrefix(s, max_chars));
    cut = true;
  }
  return cut ? absl::StrCat(s, "...") : std::string(s);
}

std::string FormatMs(int64_t ms) {
  if (ms < 1000) return absl::StrCat(ms, "ms");
  return absl::StrFormat("%.1fs", static_cast<double>(ms) / 1000.0);
}

void SetOutput(Json& out, absl::string_view stdout_text, absl::string_view stderr_text,
               absl::string_view combined) {
  SetString(out, "stdout", stdout_text);
  SetString(out, "stderr", stderr_text);
  if (!stdout_text.empty() && !stderr_text.empty()) SetString(out, "combined_output", combined);
}

namespace {

// How the command ended, or that it runs, as one or two sentences.
std::string CommandState(const JsonValue& input, const JsonValue& result) {
  using builtin::IntArg;
  using builtin::StringField;
  if (result.HasMember("process_id") && !result.HasMember("running")) {
    return absl::StrCat("Started in the background as process_id ",
                        StringField(result, "process_id"),
                        ". Read its output with command_status and stop it with kill_command.");
  }
  const std::string id = StringField(result, "process_id");
  const std::string which = id.empty() ? "The command" : absl::StrCat("Background command ", id);
  const std::string took = FormatMs(IntArg(result, "duration_ms", 0));
  if (result.HasMember("running") && builtin::BoolField(result, "running")) {
    return absl::StrCat(which, " is still running (", took, " so far). Output since the last report:");
  }
  const int64_t code = IntArg(result, "exit_code", -1);
  const std::string signal = StringField(result, "signal");
  const std::string ended =
      signal.empty() ? absl::StrCat("exit code ", code)
                     : absl::StrCat("exit code ", code, ", killed by ", signal);
  const std::string timed_out = StringField(result, "timed_out");
  if (timed_out == "wall") {
    const int64_t limit = IntArg(result, "timeout_ms", IntArg(input, "timeout_ms", 0));
    return absl::StrCat(which, " timed out: it ran longer than timeout_ms (", GroupDigits(limit),
                        " ms) and was killed (", ended,
                        "). Rerun it with a larger timeout_ms, or with background:true if it is "
                        "a server or watcher.");
  }
  if (timed_out == "idle") {
    return absl::StrCat(which, " hit its idle timeout: it printed nothing for idle_timeout_ms (",
                        GroupDigits(IntArg(input, "idle_timeout_ms", 0)),
                        " ms) and was killed (", ended,
                        "). If it may be silent that long, rerun it with a larger "
                        "idle_timeout_ms or without one.");
  }
  if (timed_out == "cancelled") {
    return absl::StrCat(which, " was stopped because the call was cancelled (", ended, ").");
  }
  if (builtin::BoolField(result, "killed")) {
    return absl::StrCat(which, " was ended by kill_command (", ended, ") after ", took, ".");
  }
  if (!signal.empty()) return absl::StrCat(which, " was killed by ", signal, " (", ended, ").");
  return absl::StrCat(which, " exited with ", ended, " after ", took, ".");
}

}  // namespace

std::string CommandModelContent(const JsonValue& input, const JsonValue& result,
                                size_t max_chars) {
  if (!result.IsObject()) return DefaultModelContent(result, max_chars);
  std::string head = CommandState(input, result);
  for (const char* note : {"timeout_note", "output_note"}) {
    std::string text = builtin::StringField(result, note);
    if (!text.empty()) absl::StrAppend(&head, "\nNote: ", text, ".");
  }
  if (builtin::BoolField(result, "invalid_utf8")) {
    absl::StrAppend(&head, "\nNote: bytes that are not UTF-8 are shown as U+FFFD.");
  }
  const std::string out = builtin::StringField(result, "stdout");
  const std::string err = builtin::StringField(result, "stderr");
  const std::string combined = builtin::StringField(result, "combined_output");
  const std::string& text = !combined.empty() ? combined : !out.empty() ? out : err;
  if (result.HasMember("process_id") && !result.HasMember("running")) return head;
  if (text.empty()) return absl::StrCat(head, "\n", kNoOutputText);
  const char* label = !combined.empty() ? "stdout and stderr, interleaved"
                      : !out.empty()    ? "stdout"
                                        : "stderr";
  absl::StrAppend(&head, "\nOutput (", label, "):\n");
  const size_t used = Utf8Chars(head);
  const size_t room = max_chars > used ? max_chars - used : kMinModelContentChars / 2;
  return absl::StrCat(head, CutMiddle(text, room, OmittedMarker));
}

}  // namespace toolexec::command

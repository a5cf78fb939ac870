#include "tools/builtin/command/result.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

}  // namespace toolexec::command

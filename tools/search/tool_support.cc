#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/search/grep.h"
#include "tools/search/search_tools.h"
#include "tools/runtime/model_content.h"

namespace toolexec::builtin::search_support {

std::string PathArg(const JsonValue& args, const char* key) {
  std::string p = StringField(args, key);
  return p.empty() ? "." : p;
}

std::string Quoted(absl::string_view s, size_t max) {
  if (s.size() <= max) return absl::StrCat("'", s, "'");
  return absl::StrCat("'", s.substr(0, Utf8SafePrefix(s, max)), "...'");
}

void AddString(Json& doc, JsonValue& object, const char* key, absl::string_view value) {
  auto& alloc = doc.GetAllocator();
  object.AddMember(JsonValue(key, alloc),
                   JsonValue(value.data(), static_cast<rapidjson::SizeType>(value.size()), alloc),
                   alloc);
}

JsonValue MatchesJson(Json& doc, const search::GrepResult& result) {
  auto& alloc = doc.GetAllocator();
  JsonValue matches(rapidjson::kArrayType);
  for (const search::GrepFile& f : result.files) {
    for (const search::GrepLine& line : f.lines) {
      JsonValue m(rapidjson::kObjectType);
      AddString(doc, m, "file", f.path);
      m.AddMember("line", line.number, alloc);
      AddString(doc, m, "text", line.text);
      if (line.is_context) m.AddMember("context", true, alloc);
      if (line.cut) m.AddMember("text_truncated", true, alloc);
      matches.PushBack(m, alloc);
    }
  }
  return matches;
}

std::string MatchesText(const JsonValue& matches) {
  std::string text;
  if (!matches.IsArray()) return text;
  bool with_context = false;
  for (const JsonValue& m : matches.GetArray()) with_context |= BoolField(m, "context");
  std::string prev_file;
  uint64_t prev_line = 0;
  for (const JsonValue& m : matches.GetArray()) {
    const std::string file = StringField(m, "file");
    const uint64_t line = UintField(m, "line");
    if (with_context && !text.empty() && (file != prev_file || line != prev_line + 1)) {
      text.append("--\n");
    }
    absl::StrAppend(&text, file, BoolField(m, "context") ? "-" : ":", line,
                    BoolField(m, "context") ? "-" : ":", StringField(m, "text"), "\n");
    prev_file = file;
    prev_line = line;
  }
  return text;
}

size_t MatchChars(const JsonValue& m) {
  return Utf8Chars(StringField(m, "file")) + absl::StrCat(UintField(m, "line")).size() + 2 +
         Utf8Chars(StringField(m, "text")) + 1 + 3;
}

size_t StringLineChars(const JsonValue& s) {
  return s.IsString() ? Utf8Chars(absl::string_view(s.GetString(), s.GetStringLength())) + 1 : 1;
}

size_t KeepWithinChars(JsonValue& items, size_t max_chars,
                       absl::FunctionRef<size_t(const JsonValue&)> chars_of) {
  if (!items.IsArray()) return 0;
  size_t used = 0;
  for (auto it = items.Begin(); it != items.End(); ++it) {
    used += chars_of(*it);
    if (used <= max_chars) continue;
    const size_t dropped = static_cast<size_t>(items.End() - it);
    items.Erase(it, items.End());
    return dropped;
  }
  return 0;
}

std::string ListingModelContent(const JsonValue& result, std::string text,
                                absl::string_view empty) {
  if (text.empty()) text = absl::StrCat(empty, "\n");
  const std::string hint = StringField(result, "hint");
  if (!hint.empty()) absl::StrAppend(&text, "[", hint, "]\n");
  const uint64_t left_out = UintField(result, "left_out_by_policy");
  if (left_out > 0) {
    absl::StrAppend(&text, "[", GroupDigits(left_out), left_out == 1 ? " file" : " files",
                    " left out by policy]\n");
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

const LeftOutFn* LeftOutFilter(const ToolContext& ctx) {
  const LeftOutFn& f = ctx.info().left_out_by_policy;
  return f ? &f : nullptr;
}

void AddLeftOut(Json& result, uint64_t count) {
  if (count > 0) result.AddMember("left_out_by_policy", count, result.GetAllocator());
}

}  // namespace toolexec::builtin::search_support

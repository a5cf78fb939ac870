// Tool calls and their results as each provider's conversation messages, and
// results as the text the model reads (Python's json.dumps of the payload).
#include "tools/runtime/provider_format.h"

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/runtime/json_fields.h"

namespace toolexec {
namespace {

using Alloc = Json::AllocatorType;
using builtin::Member;

void AppendPythonString(absl::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppend(out, absl::StrFormat("\\u%04x", static_cast<unsigned char>(c)));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

// repr(float): the shortest digits that read back as `d`, in fixed notation
// for exponents -4..15 (with ".0" when whole), else d.ddde+XX.
std::string PythonFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  std::string sci;
  for (int precision = 0; precision <= 16; ++precision) {
    sci = absl::StrFormat("%.*e", precision, d);
    if (std::strtod(sci.c_str(), nullptr) == d) break;
  }
  // sci: [-]D[.DDD]e±XX
  const bool negative = sci[0] == '-';
  const size_t e = sci.find('e');
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  const int exp = std::atoi(sci.c_str() + e + 1);
  std::string out = negative ? "-" : "";
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      absl::StrAppend(&out, "0.", std::string(static_cast<size_t>(-exp - 1), '0'), digits);
    } else if (static_cast<size_t>(exp) + 1 >= digits.size()) {
      absl::StrAppend(&out, digits, std::string(static_cast<size_t>(exp) + 1 - digits.size(), '0'),
                      ".0");
    } else {
      absl::StrAppend(&out, digits.substr(0, exp + 1), ".", digits.substr(exp + 1));
    }
    return out;
  }
  absl::StrAppend(&out, digits.substr(0, 1));
  if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
  absl::StrAppend(&out, absl::StrFormat("e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp));
  return out;
}

void AppendPythonJson(const JsonValue& v, std::string* out) {
  if (v.IsNull()) {
    out->append("null");
  } else if (v.IsBool()) {
    out->append(v.GetBool() ? "true" : "false");
  } else if (v.IsInt64()) {
    absl::StrAppend(out, v.GetInt64());
  } else if (v.IsUint64()) {
    absl::StrAppend(out, v.GetUint64());
  } else if (v.IsNumber()) {
    if (auto whole = IntegralValue(v.GetDouble())) {
      absl::StrAppend(out, *whole);
    } else {
      out->append(PythonFloat(v.GetDouble()));
    }
  } else if (v.IsString()) {
    AppendPythonString(StringOf(v), out);
  } else if (v.IsArray()) {
    out->push_back('[');
    bool first = true;
    for (const auto& item : v.GetArray()) {
      if (!first) out->append(", ");
      first = false;
      AppendPythonJson(item, out);
    }
    out->push_back(']');
  } else {
    out->push_back('{');
    bool first = true;
    for (auto m = v.MemberBegin(); m != v.MemberEnd(); ++m) {
      if (!first) out->append(", ");
      first = false;
      AppendPythonString(StringOf(m->name), out);
      out->append(": ");
      AppendPythonJson(m->value, out);
    }
    out->push_back('}');
  }
}

bool IsError(const JsonValue& result) {
  return builtin::StringField(result, "status") != "RESULT_STATUS_SUCCESS";
}

JsonValue Copy(const JsonValue* v, Alloc& a) {
  JsonValue out;
  if (v != nullptr) {
    out.CopyFrom(*v, a);
  } else {
    out.SetObject();
  }
  return out;
}

// A call's arguments as text (OpenAI's "arguments") and as an object.
std::string ArgumentsText(const JsonValue& call) {
  if (const JsonValue* args = Member(call, "args")) return ToJsonString(*args);
  return builtin::StringField(call, "args_json");
}
JsonValue ArgumentsObject(const JsonValue& call, Alloc& a) {
  const JsonValue* args = Member(call, "args");
  return Copy(args != nullptr && args->IsObject() ? args : nullptr, a);
}

}  // namespace

std::string PythonJsonText(const JsonValue& value) {
  std::string out;
  AppendPythonJson(value, &out);
  return out;
}

std::string ResultText(const JsonValue& result) {
  std::string text = builtin::StringField(result, "model_content");
  if (!text.empty()) return text;
  const JsonValue* payload = Member(result, "payload");
  if (payload == nullptr) return "{}";
  return PythonJsonText(*payload);
}

std::string CalledName(const JsonValue& call_or_result) {
  std::string called_as = builtin::StringField(call_or_result, "called_as");
  return called_as.empty() ? builtin::StringField(call_or_result, "name") : called_as;
}

void AppendToolCallTurn(TranscriptFormat format, const std::vector<const JsonValue*>& calls,
                        JsonValue& out, Alloc& a) {
  switch (format) {
    case TranscriptFormat::kOpenAi: {
      JsonValue message(rapidjson::kObjectType);
      AddMember(message, "role", MakeString("assistant", a), a);
      AddMember(message, "content", JsonValue(), a);
      JsonValue list(rapidjson::kArrayType);
      for (const JsonValue* call : calls) {
        JsonValue fn(rapidjson::kObjectType);
        AddMember(fn, "name", MakeString(CalledName(*call), a), a);
        AddMember(fn, "arguments", MakeString(ArgumentsText(*call), a), a);
        JsonValue item(rapidjson::kObjectType);
        AddMember(item, "id", MakeString(builtin::StringField(*call, "id"), a), a);
        AddMember(item, "type", MakeString("function", a), a);
        AddMember(item, "function", std::move(fn), a);
        list.PushBack(item, a);
      }
      AddMember(message, "tool_calls", std::move(list), a);
      out.PushBack(message, a);
      return;
    }
    case TranscriptFormat::kOpenAiResponses:
      for (const JsonValue* call : calls) {
        const std::string item_type = builtin::StringField(*call, "item_type");
        JsonValue item(rapidjson::kObjectType);
        if (item_type == "apply_patch_call" || item_type == "shell_call") {
          // The native item as the model sent it: apply_patch's operation,
          // shell's action.
          AddMember(item, "type", MakeString(item_type, a), a);
          AddMember(item, "call_id", MakeString(builtin::StringField(*call, "id"), a), a);
          AddMember(item, "status", MakeString("completed", a), a);
          JsonValue args = ArgumentsObject(*call, a);
          if (item_type == "apply_patch_call") {
            AddMember(item, "operation", Copy(Member(args, "operation"), a), a);
          } else {
            AddMember(item, "action", std::move(args), a);
          }
          out.PushBack(item, a);
          continue;
        }
        AddMember(item, "type", MakeString("function_call", a), a);
        AddMember(item, "call_id", MakeString(builtin::StringField(*call, "id"), a), a);
        AddMember(item, "name", MakeString(CalledName(*call), a), a);
        AddMember(item, "arguments", MakeString(ArgumentsText(*call), a), a);
        out.PushBack(item, a);
      }
      return;
    case TranscriptFormat::kAnthropic: {
      JsonValue blocks(rapidjson::kArrayType);
      for (const JsonValue* call : calls) {
        JsonValue block(rapidjson::kObjectType);
        AddMember(block, "type", MakeString("tool_use", a), a);
        AddMember(block, "id", MakeString(builtin::StringField(*call, "id"), a), a);
        AddMember(block, "name", MakeString(CalledName(*call), a), a);
        AddMember(block, "input", ArgumentsObject(*call, a), a);
        blocks.PushBack(block, a);
      }
      JsonValue message(rapidjson::kObjectType);
      AddMember(message, "role", MakeString("assistant", a), a);
      AddMember(message, "content", std::move(blocks), a);
      out.PushBack(message, a);
      return;
    }
    case TranscriptFormat::kGemini: {
      JsonValue parts(rapidjson::kArrayType);
      for (const JsonValue* call : calls) {
        JsonValue fn(rapidjson::kObjectType);
        AddMember(fn, "name", MakeString(CalledName(*call), a), a);
        AddMember(fn, "args", ArgumentsObject(*call, a), a);
        if (std::string id = builtin::StringField(*call, "id"); !id.empty()) {
          AddMember(fn, "id", MakeString(id, a), a);
        }
        JsonValue part(rapidjson::kObjectType);
        AddMember(part, "functionCall", std::move(fn), a);
        parts.PushBack(part, a);
      }
      JsonValue content(rapidjson::kObjectType);
      AddMember(content, "role", MakeString("model", a), a);
      AddMember(content, "parts", std::move(parts), a);
      out.PushBack(content, a);
      return;
    }
  }
}

namespace {

// The Responses input item answering `r`'s call, as the Python client's
// responses_output_item builds it: apply_patch_call_output {call_id, status,
// output}; shell_call_output {call_id, output: [{stdout, stderr, outcome}],
// max_output_length} (a failed call: one command's stderr, exit code 1);
// else function_call_output {call_id, output}.
JsonValue ResponsesOutputItem(const JsonValue& r, Alloc& a) {
  const std::string item_type = builtin::StringField(r, "item_type");
  JsonValue item(rapidjson::kObjectType);
  if (item_type == "apply_patch_call") {
    AddMember(item, "type", MakeString("apply_patch_call_output", a), a);
    AddMember(item, "call_id", MakeString(builtin::StringField(r, "id"), a), a);
    AddMember(item, "status", MakeString(IsError(r) ? "failed" : "completed", a), a);
    AddMember(item, "output", MakeString(ResultText(r), a), a);
    return item;
  }
  if (item_type == "shell_call") {
    AddMember(item, "type", MakeString("shell_call_output", a), a);
    AddMember(item, "call_id", MakeString(builtin::StringField(r, "id"), a), a);
    const JsonValue* payload = Member(r, "payload");
    const JsonValue* outputs = payload != nullptr ? Member(*payload, "output") : nullptr;
    JsonValue list(rapidjson::kArrayType);
    if (IsError(r) || outputs == nullptr || !outputs->IsArray()) {
      JsonValue entry(rapidjson::kObjectType);
      AddMember(entry, "stdout", MakeString("", a), a);
      AddMember(entry, "stderr", MakeString(ResultText(r), a), a);
      JsonValue outcome(rapidjson::kObjectType);
      AddMember(outcome, "type", MakeString("exit", a), a);
      AddMember(outcome, "exit_code", JsonValue(1), a);
      AddMember(entry, "outcome", std::move(outcome), a);
      list.PushBack(entry, a);
    } else {
      for (const auto& o : outputs->GetArray()) {
        JsonValue entry(rapidjson::kObjectType);
        AddMember(entry, "stdout", MakeString(builtin::StringField(o, "stdout"), a), a);
        AddMember(entry, "stderr", MakeString(builtin::StringField(o, "stderr"), a), a);
        AddMember(entry, "outcome", Copy(Member(o, "outcome"), a), a);
        list.PushBack(entry, a);
      }
    }
    AddMember(item, "output", std::move(list), a);
    if (payload != nullptr) {
      if (const JsonValue* max = Member(*payload, "max_output_length");
          max != nullptr && !max->IsNull()) {
        AddMember(item, "max_output_length", Copy(max, a), a);
      }
    }
    return item;
  }
  AddMember(item, "type", MakeString("function_call_output", a), a);
  AddMember(item, "call_id", MakeString(builtin::StringField(r, "id"), a), a);
  AddMember(item, "output", MakeString(ResultText(r), a), a);
  return item;
}

}  // namespace

void AppendToolResultMessages(TranscriptFormat format,
                              const std::vector<const JsonValue*>& results, JsonValue& out,
                              Alloc& a) {
  switch (format) {
    case TranscriptFormat::kOpenAi:
      for (const JsonValue* r : results) {
        JsonValue message(rapidjson::kObjectType);
        AddMember(message, "role", MakeString("tool", a), a);
        AddMember(message, "tool_call_id", MakeString(builtin::StringField(*r, "id"), a), a);
        AddMember(message, "content", MakeString(ResultText(*r), a), a);
        out.PushBack(message, a);
      }
      return;
    case TranscriptFormat::kOpenAiResponses:
      for (const JsonValue* r : results) {
        out.PushBack(ResponsesOutputItem(*r, a), a);
      }
      return;
    case TranscriptFormat::kAnthropic: {
      JsonValue blocks(rapidjson::kArrayType);
      for (const JsonValue* r : results) {
        JsonValue block(rapidjson::kObjectType);
        AddMember(block, "type", MakeString("tool_result", a), a);
        AddMember(block, "tool_use_id", MakeString(builtin::StringField(*r, "id"), a), a);
        AddMember(block, "content", MakeString(ResultText(*r), a), a);
        AddMember(block, "is_error", JsonValue(IsError(*r)), a);
        blocks.PushBack(block, a);
      }
      JsonValue message(rapidjson::kObjectType);
      AddMember(message, "role", MakeString("user", a), a);
      AddMember(message, "content", std::move(blocks), a);
      out.PushBack(message, a);
      return;
    }
    case TranscriptFormat::kGemini: {
      JsonValue parts(rapidjson::kArrayType);
      for (const JsonValue* r : results) {
        JsonValue response;
        if (std::string text = builtin::StringField(*r, "model_content"); !text.empty()) {
          response.SetObject();
          AddMember(response, IsError(*r) ? "error" : "output", MakeString(text, a), a);
        } else {
          const JsonValue* payload = Member(*r, "payload");
          if (payload == nullptr || payload->IsObject()) {
            response = Copy(payload, a);
          } else {
            response.SetObject();
            AddMember(response, "output", Copy(payload, a), a);
          }
        }
        JsonValue body(rapidjson::kObjectType);
        AddMember(body, "name", MakeString(CalledName(*r), a), a);
        AddMember(body, "response", std::move(response), a);
        if (std::string id = builtin::StringField(*r, "id"); !id.empty()) {
          AddMember(body, "id", MakeString(id, a), a);
        }
        JsonValue part(rapidjson::kObjectType);
        AddMember(part, "functionResponse", std::move(body), a);
        parts.PushBack(part, a);
      }
      JsonValue content(rapidjson::kObjectType);
      AddMember(content, "role", MakeString("user", a), a);
      AddMember(content, "parts", std::move(parts), a);
      out.PushBack(content, a);
      return;
    }
  }
}

}  // namespace toolexec

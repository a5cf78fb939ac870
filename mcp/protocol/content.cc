#include "mcp/protocol/content.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/tool.h"

namespace toolexec::mcp {
namespace {

using builtin::StringArg;
using builtin::StringField;

// A hint's value: true, false, or `fallback` when absent or not a boolean.
bool Hint(const JsonValue* annotations, const char* key, bool fallback) {
  if (annotations == nullptr) return fallback;
  return builtin::BoolArg(*annotations, key, fallback);
}

// {"mime_type", "data"} (+ "uri" for a blob resource) of a binary block.
void AddBinary(JsonValue& out, const JsonValue& block, Json::AllocatorType& alloc) {
  out.AddMember("mime_type", MakeString(StringField(block, "mimeType"), alloc), alloc);
  out.AddMember("data", MakeString(StringField(block, "data"), alloc), alloc);
}

}  // namespace

std::vector<std::string> AnnotationTags(const JsonValue& tool) {
  const JsonValue* annotations = nullptr;
  if (tool.IsObject()) {
    auto it = tool.FindMember("annotations");
    if (it != tool.MemberEnd() && it->value.IsObject()) annotations = &it->value;
  }
  std::vector<std::string> tags;
  const bool read_only = Hint(annotations, "readOnlyHint", false);
  if (read_only) {
    tags.emplace_back(kTagReadOnly);
  } else if (Hint(annotations, "destructiveHint", true)) {
    tags.emplace_back(kTagDestructive);
  }
  if (read_only || Hint(annotations, "idempotentHint", false)) tags.emplace_back(kTagIdempotent);
  return tags;
}

Json ToMcpTool(absl::string_view name, const ToolSpec& spec, const JsonValue& parameters) {
  Json out(rapidjson::kObjectType);
  auto& alloc = out.GetAllocator();
  out.AddMember("name", MakeString(name, alloc), alloc);
  if (!spec.display_name.empty() && spec.display_name != name) {
    out.AddMember("title", MakeString(spec.display_name, alloc), alloc);
  }
  out.AddMember("description", MakeString(spec.description, alloc), alloc);
  JsonValue schema(rapidjson::kObjectType);
  if (parameters.IsObject()) schema.CopyFrom(parameters, alloc);
  if (!schema.HasMember("type")) schema.AddMember("type", "object", alloc);
  out.AddMember("inputSchema", schema, alloc);
  JsonValue annotations(rapidjson::kObjectType);
  const bool read_only = spec.read_only || spec.HasTag(kTagReadOnly);
  annotations.AddMember("readOnlyHint", read_only, alloc);
  if (!read_only) annotations.AddMember("destructiveHint", spec.HasTag(kTagDestructive), alloc);
  if (spec.HasTag(kTagIdempotent)) annotations.AddMember("idempotentHint", true, alloc);
  out.AddMember("annotations", annotations, alloc);
  return out;
}

absl::StatusOr<CallOutcome> FromCallToolResult(const JsonValue& result) {
  if (!result.IsObject()) return absl::InvalidArgumentError("a tool result must be an object");
  const JsonValue* content = nullptr;
  if (auto it = result.FindMember("content"); it != result.MemberEnd()) {
    if (!it->value.IsArray()) {
      return absl::InvalidArgumentError("a tool result's \"content\" must be an array");
    }
    content = &it->value;
  }
  CallOutcome out;
  out.is_error = builtin::BoolField(result, "isError");
  std::vector<absl::string_view> texts;
  Json others(rapidjson::kArrayType);
  auto& alloc = others.GetAllocator();
  if (content != nullptr) {
    for (const JsonValue& block : content->GetArray()) {
      const std::string type = StringField(block, "type");
      if (type == "text") {
        texts.push_back(StringArg(block, "text").value_or(""));
        continue;
      }
      JsonValue item(rapidjson::kObjectType);
      if (type == "image" || type == "audio") {
        AddBinary(item, block, alloc);
      } else if (type == "resource" && block.HasMember("resource") &&
                 block["resource"].IsObject()) {
        const JsonValue& resource = block["resource"];
        item.AddMember("uri", MakeString(StringField(resource, "uri"), alloc), alloc);
        if (auto text = StringArg(resource, "text"); text.has_value()) {
          item.AddMember("mime_type", MakeString(StringField(resource, "mimeType"), alloc), alloc);
          item.AddMember("text", MakeString(*text, alloc), alloc);
        } else {
          item.AddMember("mime_type", MakeString(StringField(resource, "mimeType"), alloc), alloc);
          item.AddMember("data", MakeString(StringField(resource, "blob"), alloc), alloc);
        }
      } else if (type == "resource_link") {
        item.AddMember("uri", MakeString(StringField(block, "uri"), alloc), alloc);
        item.AddMember("name", MakeString(StringField(block, "name"), alloc), alloc);
        item.AddMember("mime_type", MakeString(StringField(block, "mimeType"), alloc), alloc);
      } else {
        item.CopyFrom(block, alloc);  // a block type newer than this code: kept as sent
      }
      others.PushBack(item, alloc);
    }
  }
  const std::string joined = absl::StrJoin(texts, "\n");
  if (out.is_error) {
    out.error_message = joined.empty() ? "the MCP tool reported an error without a message" : joined;
    return out;
  }
  if (auto it = result.FindMember("structuredContent");
      it != result.MemberEnd() && !it->value.IsNull()) {
    out.value = CopyJson(it->value);
    return out;
  }
  if (others.Empty()) {
    out.value.SetString(joined.data(), static_cast<rapidjson::SizeType>(joined.size()),
                        out.value.GetAllocator());
    return out;
  }
  out.value.SetObject();
  auto& oalloc = out.value.GetAllocator();
  if (!texts.empty()) out.value.AddMember("result", MakeString(joined, oalloc), oalloc);
  out.value.AddMember("content", JsonValue(others, oalloc), oalloc);
  return out;
}

Json ToCallToolResult(const JsonValue& payload, absl::string_view model_content, bool is_error) {
  Json out(rapidjson::kObjectType);
  auto& alloc = out.GetAllocator();
  const std::string text = model_content.empty() ? ToJsonString(payload) : std::string(model_content);
  JsonValue block(rapidjson::kObjectType);
  block.AddMember("type", "text", alloc);
  block.AddMember("text", MakeString(text, alloc), alloc);
  JsonValue content(rapidjson::kArrayType);
  content.PushBack(block, alloc);
  out.AddMember("content", content, alloc);
  if (!is_error && payload.IsObject()) {
    out.AddMember("structuredContent", JsonValue(payload, alloc), alloc);
  }
  if (is_error) out.AddMember("isError", true, alloc);
  return out;
}

}  // namespace toolexec::mcp

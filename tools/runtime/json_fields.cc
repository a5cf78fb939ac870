#include "tools/runtime/json_fields.h"

namespace toolexec::builtin {

const JsonValue* Member(const JsonValue& object, absl::string_view key) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(JsonValue(rapidjson::StringRef(key.data(), key.size())));
  return it == object.MemberEnd() ? nullptr : &it->value;
}

std::optional<absl::string_view> StringArg(const JsonValue& object, const char* key) {
  const JsonValue* v = Member(object, key);
  if (v == nullptr || !v->IsString()) return std::nullopt;
  return absl::string_view(v->GetString(), v->GetStringLength());
}

std::string StringField(const JsonValue& object, const char* key, absl::string_view fallback) {
  return std::string(StringArg(object, key).value_or(fallback));
}

int64_t IntArg(const JsonValue& object, const char* key, int64_t fallback) {
  const JsonValue* v = Member(object, key);
  return v != nullptr && v->IsInt64() ? v->GetInt64() : fallback;
}

uint64_t UintField(const JsonValue& object, const char* key) {
  const JsonValue* v = Member(object, key);
  return v != nullptr && v->IsUint64() ? v->GetUint64() : 0;
}

bool BoolArg(const JsonValue& object, const char* key, bool fallback) {
  const JsonValue* v = Member(object, key);
  return v != nullptr && v->IsBool() ? v->GetBool() : fallback;
}

}  // namespace toolexec::builtin

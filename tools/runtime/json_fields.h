// Typed access to the members of a tool's arguments or result: the value when
// the member is there with that type, else a fallback. Arguments have passed
// their schema; results and the `input` of display and summary methods may
// not have (a failed call), so every accessor tolerates anything.
#ifndef TOOLEXEC_TOOLS_RUNTIME_JSON_FIELDS_H_
#define TOOLEXEC_TOOLS_RUNTIME_JSON_FIELDS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "tools/runtime/json.h"

namespace toolexec::builtin {

// The member `key` of `object`, or nullptr when absent or `object` is not an
// object.
const JsonValue* Member(const JsonValue& object, absl::string_view key);
// A string member (embedded NULs kept), or nullopt if absent or not a string.
std::optional<absl::string_view> StringArg(const JsonValue& object, const char* key);
// A string member, or `fallback`.
std::string StringField(const JsonValue& object, const char* key,
                        absl::string_view fallback = "");
// An integer member, or `fallback`.
int64_t IntArg(const JsonValue& object, const char* key, int64_t fallback);
// An unsigned member, or 0.
uint64_t UintField(const JsonValue& object, const char* key);
// A boolean member, or `fallback`.
bool BoolArg(const JsonValue& object, const char* key, bool fallback);
// A boolean member, or false.
inline bool BoolField(const JsonValue& object, const char* key) {
  return BoolArg(object, key, false);
}

}  // namespace toolexec::builtin

#endif  // TOOLEXEC_TOOLS_RUNTIME_JSON_FIELDS_H_

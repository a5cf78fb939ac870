// JSON values for the tool runtime: RapidJSON documents plus the few helpers
// every layer needs (parse with a depth limit, serialize, deep copy).
#ifndef TOOLEXEC_TOOLS_RUNTIME_JSON_H_
#define TOOLEXEC_TOOLS_RUNTIME_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "tools/runtime/rapidjson_config.h"  // before any RapidJSON header
#include "rapidjson/document.h"

namespace toolexec {

// A JSON value that owns its memory. Movable; copy with CopyJson().
using Json = rapidjson::Document;
using JsonValue = rapidjson::Value;

// The deepest nesting accepted in arguments or results (objects and arrays).
inline constexpr int kMaxJsonDepth = 64;

// Parses `text` as one JSON value, numbers exactly (a decimal literal becomes
// the nearest double, as strtod rounds it). Fails with InvalidArgument naming
// the offset and the problem, or when nesting exceeds `max_depth`. Never
// recurses on the C++ stack, so hostile input cannot overflow it. The one
// place JSON text becomes a value.
absl::StatusOr<Json> ParseJson(absl::string_view text, int max_depth = kMaxJsonDepth);

// OK when no object within `value` has a key twice; else InvalidArgument
// naming the key and where it is ("duplicate key 'n' in args.a[0]", `root`
// naming `value`; keys cut to a bounded length). JSON text may repeat a key,
// and readers disagree on which one counts, so arguments may not.
absl::Status CheckUniqueKeys(const JsonValue& value, absl::string_view root);

// Compact JSON text of `value`.
std::string ToJsonString(const JsonValue& value);

// A deep copy of `value` as a new document.
Json CopyJson(const JsonValue& value);

// Makes every string and key within `value` valid UTF-8 (utf8.h's rule:
// each ill-formed part becomes U+FFFD), in place, new text allocated in
// `alloc` (the allocator of `value`'s document). Whether any was replaced.
// For values built in code from bytes (a tool's result) that leave as JSON
// text, which must be UTF-8.
bool SanitizeJsonUtf8(JsonValue& value, Json::AllocatorType& alloc);

// Nesting depth of `value`: a scalar is 0, [] and {} are 1, [[1]] is 2.
int JsonDepth(const JsonValue& value);

// About how many bytes `value` holds in memory: its strings and keys, plus a
// fixed cost per value. For accounting (result backlogs), not exact.
size_t ApproxJsonBytes(const JsonValue& value);

// The integer `d` equals, when it is integral and within +-2^53 (where every
// integer is exactly a double).
std::optional<int64_t> IntegralValue(double d);

// Turns every non-integer number in `value` that IntegralValue accepts (1.0,
// 1e2) into an integer, in place: an integral number is an integer, whether it
// came as JSON text or through a protobuf Struct (which has only doubles).
void IntegralNumbersToIntegers(JsonValue& value);
// Whether IntegralNumbersToIntegers would change anything.
bool HasIntegralNonIntegers(const JsonValue& value);

// A new empty object document.
Json MakeObject();

// A string value holding a copy of `s` (embedded NULs kept).
JsonValue MakeString(absl::string_view s, Json::AllocatorType& a);

// The text of `value`, which must be a string (embedded NULs kept); a view
// into `value`.
absl::string_view StringOf(const JsonValue& value);

// Adds the member `key` (copied) with `value` (moved from) to `object`.
void AddMember(JsonValue& object, absl::string_view key, JsonValue value,
               Json::AllocatorType& a);

// Human name of a value's JSON type ("string", "integer", "object", ...).
absl::string_view JsonTypeName(const JsonValue& value);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_JSON_H_

// The regular-expression keywords of JSON Schema ("pattern", "format" and
// "patternProperties"), checked without std::regex on the model's input.
//
// valijson matches "pattern" and the date/time formats with std::regex, whose
// backtracking executor recurses once per input character: a string of a few
// tens of kilobytes overflows the stack and takes the daemon down. So the copy
// of a schema handed to valijson is rewritten first: "pattern" and "format"
// become toolexec keywords whose constraints use RE2 (linear time, no
// recursion), compiled once when the schema is. "patternProperties" stays with
// valijson (its matching is interleaved with "additionalProperties"), so the
// arguments of such a schema have their property names bounded before
// validation instead.
//
// Thread safety: a PatternTable is immutable once Rewrite has filled it.
#ifndef TOOLEXEC_TOOLS_RUNTIME_SCHEMA_REGEX_H_
#define TOOLEXEC_TOOLS_RUNTIME_SCHEMA_REGEX_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "re2/re2.h"
#include "tools/runtime/json.h"

namespace valijson {
class SchemaParser;
}

namespace toolexec::schema_regex {

// Every "pattern" of one schema, compiled; the rewritten keyword holds the
// pattern's index here.
struct CompiledPattern {
  std::string text;
  std::shared_ptr<const RE2> re;
};
using PatternTable = std::vector<CompiledPattern>;

// Property names longer than this are refused in the arguments of a schema
// that has "patternProperties".
inline constexpr size_t kMaxPatternPropertyName = 1024;

struct RewriteResult {
  bool has_pattern_properties = false;
};

// Rewrites `schema` in place and compiles every pattern into `patterns`.
// Keywords only: a property that is merely named "pattern" is left alone,
// and so is data (enum, const, default, examples). Objects under keywords
// draft 7 does not define are rewritten too, since a $ref may point there.
// InvalidArgument naming the schema location when a pattern at a schema
// position is not RE2 syntax (RE2 has no lookaround or backreferences), a
// patternProperties key is not a valid regular expression, or the schema
// uses a keyword starting with "x-toolexec-" (toolexec's own).
absl::Status Rewrite(JsonValue& schema, Json::AllocatorType& alloc, PatternTable& patterns,
                     RewriteResult& result);

// Teaches `parser` the keywords Rewrite introduced. `patterns` must outlive
// the parser; the constraints it builds share the compiled RE2 objects.
void AddConstraintBuilders(valijson::SchemaParser& parser, const PatternTable& patterns);

// InvalidArgument naming the path of the first object in `args` with a
// property name longer than kMaxPatternPropertyName.
absl::Status CheckPropertyNameLengths(const JsonValue& args);

}  // namespace toolexec::schema_regex

#endif  // TOOLEXEC_TOOLS_RUNTIME_SCHEMA_REGEX_H_

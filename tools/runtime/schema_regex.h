// JSON Schema's regular expressions ("pattern", "patternProperties" and the
// date/time formats), evaluated with RE2 and never with std::regex.
//
// valijson 1.0 evaluates them with std::regex, whose backtracking executor
// recurses once per input character: a string of a few tens of kilobytes
// overflows the stack and takes the daemon down. Schemas come from outside
// (MCP servers, command tools), and valijson follows a "$ref" to any part of
// the document (unknown keywords, "examples", "default" ...), so no rewrite of
// the schema text can reach every place a pattern may be read from. Instead
// the regex engine itself is replaced: valijson has no hook for that, so this
// header declares explicit specializations of the three ValidationVisitor
// members that would run std::regex (visit of PatternConstraint,
// FormatConstraint and PropertiesConstraint) for both adapters validation
// instantiates (RapidJsonAdapter for values, StdStringAdapter for property
// names). Every PatternConstraint and patternProperties entry the parser
// creates, wherever it came from, is matched by RE2 (linear time, no
// recursion). valijson/validator.hpp must only be included through this
// header, so the specializations are seen before any instantiation.
//
// The RE2 objects are compiled once, with the schema: RegexTable::Build
// collects every pattern of the document, and refuses the schema when one
// that can be read as a schema (a schema keyword position, or anything a
// local "$ref" points at) is not RE2 syntax (RE2 has no lookaround or
// backreferences). During validation a ScopedRegexTable names the table the
// specializations consult on this thread. A pattern not in the table (no
// table, or a pattern only reachable by a route the walk cannot resolve, such
// as an "$id"-relative reference) is compiled on the spot; if RE2 cannot
// compile it the value is invalid, with the reason: never a fallback to
// std::regex.
//
// Thread safety: a RegexTable is immutable once built and may be shared by
// any number of threads; a ScopedRegexTable affects only its own thread.
#ifndef TOOLEXEC_TOOLS_RUNTIME_SCHEMA_REGEX_H_
#define TOOLEXEC_TOOLS_RUNTIME_SCHEMA_REGEX_H_

// RAPIDJSON_ASSERT is rapidjson_config.h's (see there) in every translation
// unit. valijson's RapidJSON adapter would define its own, and warns when one
// is defined before it, but only with VALIJSON_USE_EXCEPTIONS: so what it
// includes comes first, as usual, and the adapter itself is read without that
// macro (it uses it for nothing else).
#include "tools/runtime/rapidjson_config.h"
#include "rapidjson/document.h"
#include "valijson/exceptions.hpp"
#include "valijson/internal/adapter.hpp"
#include "valijson/internal/basic_adapter.hpp"
#include "valijson/internal/frozen_value.hpp"
#pragma push_macro("VALIJSON_USE_EXCEPTIONS")
#undef VALIJSON_USE_EXCEPTIONS
#include "valijson/adapters/rapidjson_adapter.hpp"
#pragma pop_macro("VALIJSON_USE_EXCEPTIONS")
// clang-format off
#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"
#include "tools/runtime/json.h"
#include "valijson/adapters/std_string_adapter.hpp"
#include "valijson/validator.hpp"
// clang-format on

namespace toolexec::schema_regex {

class RegexTable final {
 public:
  // Walks `schema` (a whole schema document) and compiles every "pattern"
  // string and "patternProperties" key in it. InvalidArgument naming the
  // location when one at a schema position is not RE2 syntax.
  static absl::StatusOr<RegexTable> Build(const JsonValue& schema);

  // The compiled expression for `pattern`, or null when it is not here.
  const RE2* Find(absl::string_view pattern) const;

  size_t size() const { return regexes_.size(); }

 private:
  absl::flat_hash_map<std::string, std::unique_ptr<const RE2>> regexes_;
};

// Makes `table` the one valijson's pattern checks use on this thread while
// this object lives. Nests (restores the previous one).
class ScopedRegexTable final {
 public:
  explicit ScopedRegexTable(const RegexTable* table);
  ~ScopedRegexTable();
  ScopedRegexTable(const ScopedRegexTable&) = delete;
  ScopedRegexTable& operator=(const ScopedRegexTable&) = delete;

 private:
  const RegexTable* previous_;
};

}  // namespace toolexec::schema_regex

namespace valijson {

template <>
bool ValidationVisitor<adapters::RapidJsonAdapter>::visit(
    const constraints::PatternConstraint& constraint);
template <>
bool ValidationVisitor<adapters::RapidJsonAdapter>::visit(
    const constraints::FormatConstraint& constraint);
template <>
bool ValidationVisitor<adapters::RapidJsonAdapter>::visit(
    const constraints::PropertiesConstraint& constraint);
template <>
bool ValidationVisitor<adapters::StdStringAdapter>::visit(
    const constraints::PatternConstraint& constraint);
template <>
bool ValidationVisitor<adapters::StdStringAdapter>::visit(
    const constraints::FormatConstraint& constraint);
template <>
bool ValidationVisitor<adapters::StdStringAdapter>::visit(
    const constraints::PropertiesConstraint& constraint);

}  // namespace valijson

#endif  // TOOLEXEC_TOOLS_RUNTIME_SCHEMA_REGEX_H_

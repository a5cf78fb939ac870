// The shape of a JSON Schema as valijson's parser and validator walk it, checked
// before either runs: both recurse on the C++ stack, once per subschema and
// once per "$ref" followed, so a schema from outside (an MCP server, a
// command tool, the finish tool's output schema) could otherwise take the
// daemon down with a few bytes.
//
// The walk follows what valijson follows: draft 7's subschema keywords and
// local "$ref"s (each "$ref" spelling is its own copy of its target, as
// valijson caches them by spelling). A schema is refused, naming the place,
// when
//   - a cycle applies a subschema to the same value again ("$ref": "#", a
//     property that is a "$ref" to itself, a -> b -> a, "allOf" back to an
//     ancestor): checking it would never end. A cycle that descends into the
//     value first (a tree: {"properties": {"child": {"$ref": "#"}}}) is fine;
//   - a "$ref" is not local ("#..."), or an "id" is not an absolute URI
//     (valijson appends a relative one to the scope on every visit);
//   - it has more than kMaxSchemaNodes subschemas, a path through it (cycles
//     counted once per subschema in them) longer than kMaxSchemaDepth, or a
//     chain of subschemas applied to the same value longer than
//     kMaxSchemaInPlaceDepth.
// The walk itself uses no recursion.
//
// Thread safety: a pure function.
#ifndef TOOLEXEC_TOOLS_RUNTIME_SCHEMA_GRAPH_H_
#define TOOLEXEC_TOOLS_RUNTIME_SCHEMA_GRAPH_H_

#include "absl/status/status.h"
#include "tools/runtime/json.h"

namespace toolexec {

inline constexpr int kMaxSchemaNodes = 10000;
inline constexpr int kMaxSchemaDepth = 512;
inline constexpr int kMaxSchemaInPlaceDepth = 32;

// OK, or InvalidArgument saying what is refused and where ("a \"$ref\" cycle:
// #/definitions/a -> #/definitions/b -> #/definitions/a").
absl::Status CheckSchemaGraph(const JsonValue& document);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_SCHEMA_GRAPH_H_

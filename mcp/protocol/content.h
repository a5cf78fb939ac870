// MCP tool declarations and results <-> toolexec's tool model: what an MCP
// tool's annotations mean as tags and a toolexec tool as an MCP Tool, how a
// CallToolResult becomes a toolexec result, and how a toolexec result becomes
// a CallToolResult.
//
// Thread safety: pure functions.
#ifndef TOOLEXEC_MCP_PROTOCOL_CONTENT_H_
#define TOOLEXEC_MCP_PROTOCOL_CONTENT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool.h"

namespace toolexec::mcp {

// The tags of an MCP Tool object ({"name", ..., "annotations": {...}}) from its
// annotations, as the MCP spec defines their defaults: "read_only" when
// readOnlyHint is true; otherwise "destructive" unless destructiveHint is
// false (an unannotated tool may destroy, so it stays out of the
// nondestructive set); "idempotent" when idempotentHint is true (or the tool
// is read-only).
std::vector<std::string> AnnotationTags(const JsonValue& tool);
inline constexpr absl::string_view kTagIdempotent = "idempotent";

// The other way: a toolexec tool as an MCP Tool object. name; title (the
// display name, when it differs); description; inputSchema: `parameters`,
// the declared schema in its declared order, with "type": "object" added
// when it has none (MCP requires an object schema; {} when `parameters` is
// not an object); annotations: readOnlyHint (spec.read_only or the read_only
// tag), for a tool that writes destructiveHint (the destructive tag), and
// idempotentHint when tagged idempotent.
Json ToMcpTool(absl::string_view name, const ToolSpec& spec, const JsonValue& parameters);

// A CallToolResult as toolexec sees it.
struct CallOutcome {
  bool is_error = false;
  // Success: the tool's result. structuredContent when present; else the
  // text blocks joined with "\n" as a string when there is only text; else
  // {"result": joined text (if any), "content": [...]} where an image or audio
  // block is {"mime_type", "data"}, an embedded resource {"uri", "mime_type",
  // "text"|"data"} and a resource link {"uri", "name", "mime_type"}.
  Json value;
  // is_error: the text blocks joined, or a fixed sentence when there are none.
  std::string error_message;
};

// InvalidArgument when `result` is not an object or its "content" not an array.
absl::StatusOr<CallOutcome> FromCallToolResult(const JsonValue& result);

// A toolexec result as an MCP CallToolResult: content is one text block (the
// model_content when not empty, else the payload as JSON text);
// structuredContent is the payload when it is an object and the call
// succeeded; isError is set on failure.
Json ToCallToolResult(const JsonValue& payload, absl::string_view model_content, bool is_error);

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_PROTOCOL_CONTENT_H_

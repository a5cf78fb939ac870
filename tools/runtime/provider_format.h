// Tool declarations in the forms the model providers' APIs take, ready to
// paste into a request's "tools": OpenAI function tools (plain and strict),
// Anthropic tools and Gemini function declarations. No gRPC: the ListTools
// adapter, the CLI's tests and an in-process harness all call this.
//
// Every conversion keeps the property order, the descriptions, the required
// set and every constraint the provider accepts; a constraint it does not
// accept is dropped from the schema and said in the node's description
// ("Default: false.", "Constraints: minLength 1."), so the model still reads
// it and the daemon, which validates against the declared schema, still
// enforces it. A node the provider cannot express (a free-form object, an
// array of anything) becomes a string of JSON text, which the daemon's
// argument coercion [Arguments] parses back.
//
// Provider rules followed (from the providers' published documentation):
// - OpenAI strict mode (Structured Outputs, "strict": true): every object has
//   "additionalProperties": false and lists every property in "required";
//   an optional property is made nullable (["T","null"], or a {"type":"null"}
//   branch of anyOf) and toolexec treats null as absent (schema.h); no
//   "default"; every node typed; only the supported keywords (type,
//   properties, required, additionalProperties, items, enum, const, anyOf,
//   description, title, $ref/$defs, pattern, format, minimum, maximum,
//   exclusiveMinimum, exclusiveMaximum, multipleOf, minItems, maxItems).
// - Gemini "parameters": a subset of the OpenAPI 3.0 Schema object. Types are
//   single and upper case (STRING, NUMBER, INTEGER, BOOLEAN, ARRAY, OBJECT),
//   null is "nullable": true, no "additionalProperties", no typeless nodes,
//   enum values are strings, formats limited to the ones Gemini lists, an
//   OBJECT has properties and an ARRAY has items; "propertyOrdering" keeps the
//   declared order. A tool without parameters leaves "parameters" out.
//   (`parameters` rather than `parametersJsonSchema`: it is what Gemini's
//   function-calling guide uses, and both the Gemini API and Vertex AI
//   accept it, in every SDK version.)
// - Anthropic "input_schema" and plain OpenAI "parameters": JSON Schema, sent
//   as declared (the root is always "type": "object").
//
// Native forms: the tools that providers train their models on (tagged
// kTagProvider) are declared, with native_tools, in the provider's own
// form, which carries no schema: the model knows the tool. The table is in
// provider_format.cc, by tool name.
//
// Who runs a tool decides whether it appears: daemon and harness tools are
// functions the model calls (the harness runs EXECUTOR_HARNESS ones itself);
// provider-native tools (EXECUTOR_PROVIDER: google_search, web_search, ...)
// are not functions, so they are left out and the harness adds their
// `provider_config` from the native declarations to its request.
//
// Thread safety: pure functions.
#ifndef TOOLEXEC_TOOLS_RUNTIME_PROVIDER_FORMAT_H_
#define TOOLEXEC_TOOLS_RUNTIME_PROVIDER_FORMAT_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

// Mirrors toolexec.v1.DeclarationFormat.
enum class DeclarationFormat {
  kNative,
  kOpenAi,
  kOpenAiStrict,
  kAnthropic,
  kGemini,
  kOpenAiResponses,
};

// The schema conversions, one node tree in, a new document out.
Json OpenAiStrictSchema(const JsonValue& schema);
Json GeminiSchema(const JsonValue& schema);

// Tool names as the providers take them. OpenAI and Anthropic accept
// ^[a-zA-Z0-9_-]{1,64}$ and Gemini a name that starts with a letter or an
// underscore; a name outside what all three accept (an MCP server's
// "docs.search") is declared under one rule for every provider: each other
// character becomes "_", a leading digit or "-" gets a "_" before it, and the
// name is cut to 64 characters; where that meets another tool's name (or
// another rewritten one) it ends in "_" and 8 hex digits of a hash of the
// real name instead. The map is of one registry snapshot, so the names a
// harness lists are the names its calls are resolved by.
class ProviderNames {
 public:
  explicit ProviderNames(const ToolRegistry& registry);
  // What `tool` is declared as (its own name when the providers accept it).
  const std::string& Of(const RegisteredTool& tool) const;
  // The tool a provider-safe name stands for; nullptr when none does (a
  // tool's real name is not looked up here: ToolRegistry::Find does that).
  const RegisteredTool* Resolve(absl::string_view provider_name) const;

  static bool Accepted(absl::string_view name);

 private:
  absl::flat_hash_map<const RegisteredTool*, std::string> rewritten_;
  absl::flat_hash_map<std::string, const RegisteredTool*> by_rewritten_;
};

// How to declare: `native_tools` declares a tool in its provider's own form
// where it has one (Anthropic: str_replace_based_edit_tool as
// text_editor_20250728, bash as bash_20250124, memory as memory_20250818;
// OpenAI Responses: apply_patch as {"type":"apply_patch"}, shell as
// {"type":"shell"}); `names` (optional) rewrites names the providers reject.
struct DeclarationOptions {
  bool native_tools = false;
  const ProviderNames* names = nullptr;
};

// The JSON array of `tools` in `format`'s form, in the given order; "" for
// kNative. kOpenAiResponses is the Responses API's flat form,
// {"type":"function","name","description","parameters","strict":false}.
std::string ProviderToolsJson(DeclarationFormat format,
                              const std::vector<const RegisteredTool*>& tools,
                              const DeclarationOptions& options = {});

// ---- Conversations: tool calls and their results as messages ---------------
// (provider_messages.cc)
//
// The same messages the Python client's tool_result_messages builds
// (client/python/toolexec/providers.py), so a transcript the daemon exports
// (core/recording_export.h) is what a harness using either would have sent.
// Results are ToolResult objects with the .proto field names (id, name,
// status "RESULT_STATUS_…", payload, model_content), as the Python client
// and a recording hold them. The text for the model is model_content, or
// when it is empty the payload as Python's json.dumps renders it.

// The providers a conversation can be written for.
enum class TranscriptFormat { kOpenAi, kOpenAiResponses, kAnthropic, kGemini };

// The model's turn that made `calls` ({"id", "name", "args"} objects, or
// "args_json" text for arguments that never parsed), appended to the array
// `out`: an OpenAI assistant message with tool_calls, one Responses
// function_call item per call, an Anthropic assistant message of tool_use
// blocks, a Gemini model content of functionCall parts.
void AppendToolCallTurn(TranscriptFormat format, const std::vector<const JsonValue*>& calls,
                        JsonValue& out, Json::AllocatorType& a);
// The messages answering `results`, appended to the array `out`: one "tool"
// message per result (OpenAI), one function_call_output item per result
// (Responses), one user message of tool_result blocks (Anthropic), one user
// content of functionResponse parts (Gemini).
void AppendToolResultMessages(TranscriptFormat format,
                              const std::vector<const JsonValue*>& results, JsonValue& out,
                              Json::AllocatorType& a);
// The text a result gives the model (see above).
std::string ResultText(const JsonValue& result);
// The name the model called a tool by: a call's or result's "called_as"
// (CallRequest::called_as) when it has one, else its "name".
std::string CalledName(const JsonValue& call_or_result);
// `value` as Python's json.dumps(value, ensure_ascii=False) writes it (", "
// and ": " separators, floats as repr writes them; a whole number is an
// integer, as the Python client reads one).
std::string PythonJsonText(const JsonValue& value);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_PROVIDER_FORMAT_H_

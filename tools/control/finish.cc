// finish{output (any JSON value), output_string}: ends the agent's task with
// its final output. When the config sets an output schema, the output goes
// through the same coercion and validation as arguments [Arguments] and a mismatch
// is INVALID_ARGUMENTS naming the path [Actions].
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/control/control_tools.h"
#include "tools/runtime/schema.h"
#include "tools/runtime/tool_context.h"

namespace toolexec {
namespace {

class FinishTool final : public Tool {
 public:
  explicit FinishTool(std::unique_ptr<CompiledSchema> output_schema)
      : Tool(ToolSpec("finish",
                      "Finishes the task and returns its final output. Give the output as any "
                      "JSON value (output) or as text (output_string).",
                      Parameters(output_schema.get()))
                 .Tags({kTagReadOnly})
                 .Quick()),
        output_schema_(std::move(output_schema)) {}

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    auto output = args.FindMember("output");
    auto text = args.FindMember("output_string");
    bool has_output = output != args.MemberEnd();
    bool has_text = text != args.MemberEnd();
    if (has_output && has_text) {
      return ToolError(ErrorCode::kInvalidArguments, "give output or output_string, not both");
    }
    if (!has_output && !has_text) {
      return ToolError(ErrorCode::kInvalidArguments,
                       "finish needs the task's final output: give output or output_string");
    }
    Json value = CopyJson(has_output ? output->value : text->value);
    if (output_schema_ == nullptr) return value;
    // The same coercion and validation as arguments [Arguments], with errors naming
    // the path from "output".
    if (absl::Status s = output_schema_->Prepare(value); !s.ok()) {
      return ToolError(ErrorCode::kInvalidArguments, std::string(s.message()));
    }
    return value;
  }

 private:
  // The declaration shows the configured output schema as `output`'s, so the
  // model sees what it must produce. A schema with references keeps its own
  // document (they resolve against its root), so it is shown as text.
  static std::string Parameters(const CompiledSchema* output_schema) {
    Json schema = *ParseJson(R"({"type":"object","additionalProperties":false,"properties":{
      "output":{"type":["object","array","string","number","boolean"],
                "description":"The final output of the task, any JSON value."},
      "output_string":{"type":"string","description":"The final output as plain text."}}})");
    if (output_schema != nullptr) {
      auto& a = schema.GetAllocator();
      const JsonValue& configured = output_schema->document();
      std::string text = ToJsonString(configured);
      JsonValue& output = schema["properties"]["output"];
      if (configured.IsObject() && text.find("\"$ref\"") == std::string::npos) {
        output.CopyFrom(configured, a);
        if (!output.HasMember("description")) {
          output.AddMember("description", "The final output of the task.", a);
        }
      } else {
        std::string description =
            absl::StrCat("The final output of the task, matching this JSON Schema: ", text);
        output["description"].SetString(description.data(),
                                        static_cast<rapidjson::SizeType>(description.size()), a);
      }
    }
    return ToJsonString(schema);
  }

  std::unique_ptr<CompiledSchema> output_schema_;  // null: any output
};

}  // namespace

absl::StatusOr<std::unique_ptr<Tool>> MakeFinishTool(const std::string& output_schema) {
  if (output_schema.empty()) return std::make_unique<FinishTool>(nullptr);
  // Compiled as a document of its own, so its references ("#/definitions/x",
  // "#") resolve against it.
  auto compiled = CompiledSchema::CompileForValue(output_schema, "output");
  if (!compiled.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("finish output schema: ", compiled.status().message()));
  }
  return std::make_unique<FinishTool>(std::move(*compiled));
}

}  // namespace toolexec

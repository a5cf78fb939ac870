// finish{output (any JSON value), output_string}: ends the agent's task with
// its final output. When the config sets an output schema, the output goes
// through the same coercion and validation as arguments (S4) and a mismatch
// is INVALID_ARGUMENTS naming the path (S8).
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/builtin/control/control_tools.h"
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
                      R"({"type":"object","properties":{
      "output":{"description":"The final output of the task, any JSON value."},
      "output_string":{"type":"string","description":"The final output as plain text."}}})")
                 .Tags({kTagReadOnly})),
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
    // The same coercion and validation as arguments (S4), with errors naming
    // the path from "output".
    if (absl::Status s = output_schema_->Prepare(value); !s.ok()) {
      return ToolError(ErrorCode::kInvalidArguments, std::string(s.message()));
    }
    return value;
  }

 private:
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

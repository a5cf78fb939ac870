// finish{output (any JSON value), output_string}: ends the agent's task with
// its final output. When the config sets an output schema, the output goes
// through the same coercion and validation as arguments (S4) and a mismatch
// is INVALID_ARGUMENTS naming the path (S8).
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "tools/builtin/control/control_tools.h"
#include "tools/runtime/schema.h"
#include "tools/runtime/tool_context.h"

namespace toolexec {
namespace {

class FinishTool final : public Tool {
 public:
  explicit FinishTool(std::unique_ptr<CompiledSchema> output_schema)
      : output_schema_(std::move(output_schema)) {}

  std::string name() const override { return "finish"; }
  std::string description() const override {
    return "Finishes the task and returns its final output. Give the output as any JSON value "
           "(output) or as text (output_string).";
  }
  std::string parameters_schema() const override {
    return R"({"type":"object","properties":{
      "output":{"description":"The final output of the task, any JSON value."},
      "output_string":{"type":"string","description":"The final output as plain text."}}})";
  }
  bool read_only() const override { return true; }

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
    const JsonValue& value = has_output ? output->value : text->value;
    if (output_schema_ == nullptr) return CopyJson(value);
    // Validate {"output": value} against {"properties": {"output": <schema>}}
    // so coercion and the error path work exactly as for arguments.
    Json wrapped = MakeObject();
    wrapped.AddMember("output", JsonValue(value, wrapped.GetAllocator()), wrapped.GetAllocator());
    if (absl::Status s = output_schema_->Prepare(wrapped); !s.ok()) {
      std::string message = absl::StrReplaceAll(
          s.message(), {{"invalid arguments: args.output", "invalid output: output"}});
      return ToolError(ErrorCode::kInvalidArguments, message);
    }
    return CopyJson(wrapped["output"]);
  }

 private:
  std::unique_ptr<CompiledSchema> output_schema_;  // null: any output
};

}  // namespace

absl::StatusOr<std::unique_ptr<Tool>> MakeFinishTool(const std::string& output_schema) {
  if (output_schema.empty()) return std::make_unique<FinishTool>(nullptr);
  auto schema_doc = ParseJson(output_schema);
  if (!schema_doc.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("finish output schema: ", schema_doc.status().message()));
  }
  std::string wrapper = absl::StrCat(R"({"type":"object","required":["output"],"properties":{"output":)",
                                     ToJsonString(*schema_doc), "}}");
  auto compiled = CompiledSchema::Compile(wrapper);
  if (!compiled.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("finish output schema: ", compiled.status().message()));
  }
  return std::make_unique<FinishTool>(std::move(*compiled));
}

}  // namespace toolexec

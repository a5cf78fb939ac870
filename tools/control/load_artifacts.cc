// load_artifacts{artifact_names}: the latest version of each named artifact of
// the session, in input order, exactly in the [Artifacts] shapes:
//   text    {"name": n, "content": "<the text>"}
//   binary  {"name": n, "content": {"mime_type": m, "data": "<base64>", "size_bytes": k}}
//   missing {"name": n, "error": "Artifact not found"} (also for an invalid name)
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "tools/control/control_tools.h"
#include "tools/runtime/tool_context.h"

namespace toolexec {
namespace {

class LoadArtifactsTool final : public Tool {
 public:
  LoadArtifactsTool()
      : Tool(ToolSpec("load_artifacts",
                      "Loads the latest version of each named artifact of this session (files, "
                      "images, reports saved earlier). Text artifacts come back as text, others "
                      "as base64 data.",
                      R"({"type":"object","additionalProperties":false,"required":["artifact_names"],"properties":{
      "artifact_names":{"type":"array","items":{"type":"string"},
                        "description":"Names of the artifacts to load."}}})")
                 .Type(ToolType::kFileRead)
                 .NeedsContext()
                 .ReadOnly()) {}

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    Json out = MakeObject();
    auto& alloc = out.GetAllocator();
    JsonValue list(rapidjson::kArrayType);
    for (const auto& n : args["artifact_names"].GetArray()) {
      std::string name(n.GetString(), n.GetStringLength());
      JsonValue entry(rapidjson::kObjectType);
      entry.AddMember("name", JsonValue(name, alloc), alloc);
      auto loaded = ValidateArtifactName(name).ok()
                        ? ctx.load_artifact(name)
                        : absl::StatusOr<std::pair<Artifact, int64_t>>(absl::NotFoundError(""));
      if (!loaded.ok()) {
        if (loaded.status().code() != absl::StatusCode::kNotFound &&
            loaded.status().code() != absl::StatusCode::kInvalidArgument) {
          return loaded.status();  // a broken store is a failure, not "not found"
        }
        entry.AddMember("error", "Artifact not found", alloc);
      } else if (loaded->first.is_text) {
        entry.AddMember("content", JsonValue(loaded->first.text, alloc), alloc);
      } else {
        const Artifact& a = loaded->first;
        JsonValue content(rapidjson::kObjectType);
        content.AddMember("mime_type", JsonValue(a.mime_type, alloc), alloc);
        content.AddMember("data", JsonValue(absl::Base64Escape(a.data), alloc), alloc);
        content.AddMember("size_bytes", static_cast<uint64_t>(a.data.size()), alloc);
        entry.AddMember("content", content, alloc);
      }
      list.PushBack(entry, alloc);
    }
    out.AddMember("artifacts", list, alloc);
    return out;
  }

  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override {
    if (!ok || !input.HasMember("artifact_names")) return Tool::compact_summary(input, result, ok);
    return absl::StrCat("[load_artifacts: ", input["artifact_names"].Size(), " artifact(s)]");
  }
};

}  // namespace

std::unique_ptr<Tool> MakeLoadArtifactsTool() { return std::make_unique<LoadArtifactsTool>(); }

}  // namespace toolexec

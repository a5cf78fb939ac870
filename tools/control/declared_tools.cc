// [Tools run elsewhere]: tools declared by the daemon so the model sees one ordered list, but
// executed by the harness (EXECUTOR_HARNESS) or natively by the model provider
// (EXECUTOR_PROVIDER, with provider_config). Sent to the daemon, they fail
// with NOT_EXECUTABLE_HERE saying who executes them.
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/control/control_tools.h"
#include "tools/runtime/tool_context.h"

namespace toolexec {
namespace {

struct Declaration {
  const char* name;
  const char* description;
  const char* schema;
  ToolExecutor executor;
  ToolType type;
  const char* message;  // NOT_EXECUTABLE_HERE text; "" = the default
};

constexpr Declaration kDeclarations[] = {
    {"ask_question",
     "Asks the user one or more questions and waits for the answers.",
     R"({"type":"object","required":["questions"],"properties":{"questions":{"type":"array",
        "items":{"type":"object","required":["question"],"properties":{
          "question":{"type":"string"},
          "choices":{"type":"array","items":{"type":"string"}},
          "is_multi_select":{"type":"boolean","default":false}}}}}})",
     ToolExecutor::kHarness, ToolType::kUserInteraction, ""},
    {"start_subagent", "Starts a named subagent on a task and returns its result.",
     R"({"type":"object","required":["name","task"],"properties":{
        "name":{"type":"string","description":"The subagent to start."},
        "task":{"type":"string","description":"What the subagent should do."}}})",
     ToolExecutor::kHarness, ToolType::kCustom, ""},
    {"search_web", "Searches the web and returns the top results.",
     R"({"type":"object","required":["query"],"properties":{"query":{"type":"string"}}})",
     ToolExecutor::kHarness, ToolType::kWebSearch, ""},
    {"read_url_content", "Fetches a URL and returns its content as text.",
     R"({"type":"object","required":["url"],"properties":{"url":{"type":"string"}}})",
     ToolExecutor::kHarness, ToolType::kApiCall, ""},
    {"generate_image", "Generates an image from a text prompt and saves it as an artifact.",
     R"({"type":"object","required":["prompt"],"properties":{
        "prompt":{"type":"string"},"image_name":{"type":"string"}}})",
     ToolExecutor::kHarness, ToolType::kApiCall, ""},
    {"google_search", "Google Search, run natively by Gemini.", R"({"type":"object"})",
     ToolExecutor::kProvider, ToolType::kWebSearch, "GoogleSearch is handled internally by Gemini"},
    {"url_context", "URL context, run natively by Gemini.", R"({"type":"object"})",
     ToolExecutor::kProvider, ToolType::kWebSearch, "UrlContext is handled internally by Gemini"},
    {"web_search", "Web search, run natively by Anthropic's API.", R"({"type":"object"})",
     ToolExecutor::kProvider, ToolType::kWebSearch, "WebSearch is handled internally by Anthropic"},
};

// start_subagent: the model can only choose a subagent it is told about, so
// the declaration lists them (names as an enum, descriptions in the text).
void ListSubagents(const std::vector<BuiltinOptions::Subagent>& subagents, ToolSpec& spec) {
  if (subagents.empty()) return;
  absl::StrAppend(&spec.description, " The subagents (pass one as name):");
  auto schema = ParseJson(spec.parameters_schema);  // a constant of this file: always valid
  if (!schema.ok()) return;
  auto& a = schema->GetAllocator();
  JsonValue names(rapidjson::kArrayType);
  for (const auto& sa : subagents) {
    absl::StrAppend(&spec.description, "\n- ", sa.name, sa.description.empty() ? "" : ": ",
                    sa.description);
    names.PushBack(JsonValue(sa.name, a), a);
  }
  (*schema)["properties"]["name"].AddMember("enum", names, a);
  spec.parameters_schema = ToJsonString(*schema);
}

class DeclaredTool final : public Tool {
 public:
  DeclaredTool(ToolSpec spec, const char* message) : Tool(std::move(spec)), message_(message) {}

  std::string not_executable_message() const override {
    return *message_ ? std::string(message_) : Tool::not_executable_message();
  }
  // The runner answers NOT_EXECUTABLE_HERE before calling; this is a backstop.
  absl::StatusOr<Json> Call(const JsonValue&, ToolContext&) const override {
    return ToolError(ErrorCode::kNotExecutableHere, not_executable_message());
  }

 private:
  const char* message_;
};

std::string JsonStrings(const std::vector<std::string>& items) {
  Json array(rapidjson::kArrayType);
  for (const auto& s : items) array.PushBack(JsonValue(s, array.GetAllocator()), array.GetAllocator());
  return ToJsonString(array);
}

}  // namespace

const std::vector<std::string>& DeclarableToolNames() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string>();
    for (const auto& d : kDeclarations) v->push_back(d.name);
    return v;
  }();
  return *names;
}

absl::StatusOr<std::unique_ptr<Tool>> MakeDeclaredTool(const std::string& name,
                                                       const BuiltinOptions& options) {
  for (const auto& d : kDeclarations) {
    if (name != d.name) continue;
    std::string config;
    if (name == "google_search") config = R"({"google_search":{}})";
    if (name == "url_context") config = R"({"url_context":{}})";
    if (name == "web_search") {
      if (!options.web_search_allowed_domains.empty() &&
          !options.web_search_blocked_domains.empty()) {
        return absl::InvalidArgumentError(
            "web_search: give allowed_domains or blocked_domains, not both");
      }
      config = R"({"type":"web_search_20250305","name":"web_search")";
      if (!options.web_search_allowed_domains.empty()) {
        absl::StrAppend(&config, R"(,"allowed_domains":)",
                        JsonStrings(options.web_search_allowed_domains));
      }
      if (!options.web_search_blocked_domains.empty()) {
        absl::StrAppend(&config, R"(,"blocked_domains":)",
                        JsonStrings(options.web_search_blocked_domains));
      }
      if (options.web_search_max_uses > 0) {
        absl::StrAppend(&config, R"(,"max_uses":)", options.web_search_max_uses);
      }
      config += "}";
    }
    ToolSpec spec = ToolSpec(d.name, d.description, d.schema)
                        .Type(d.type)
                        .Executor(d.executor)
                        .ProviderConfig(std::move(config));
    if (name == "start_subagent") ListSubagents(options.subagents, spec);
    return std::make_unique<DeclaredTool>(std::move(spec), d.message);
  }
  return absl::InvalidArgumentError(absl::StrCat("cannot declare unknown tool '", name,
                                                 "'; declarable tools: ",
                                                 absl::StrJoin(DeclarableToolNames(), ", ")));
}

absl::Status RegisterControlTools(ToolRegistry& registry, const BuiltinOptions& options) {
  auto finish = MakeFinishTool(options.finish_output_schema);
  if (!finish.ok()) return finish.status();
  if (auto s = registry.Register(std::move(*finish), "built-in"); !s.ok()) return s;
  if (auto s = registry.Register(MakeExitLoopTool(), "built-in"); !s.ok()) return s;
  return registry.Register(MakeLoadArtifactsTool(), "built-in");
}

absl::Status RegisterDeclaredTools(ToolRegistry& registry, const BuiltinOptions& options) {
  for (const auto& name : options.declared_tools) {
    auto tool = MakeDeclaredTool(name, options);
    if (!tool.ok()) return tool.status();
    if (auto s = registry.Register(std::move(*tool), "config (declared_tools)"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace toolexec

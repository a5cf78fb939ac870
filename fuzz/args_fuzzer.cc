// Fuzzes what every call's arguments go through before a tool sees them [Arguments]:
// JSON text parsed with the depth limit, then coerced, validated and given
// defaults against the schema of a built-in tool, as the runner does.
// Input: one byte choosing the tool (built-in or example), then the arguments as JSON text.
// Checks beyond "no crash, no sanitizer report":
//   - arguments Prepare accepted still validate (coercion and defaults keep
//     them valid), and preparing them again accepts them;
//   - serializing a parsed value, parsing it again and serializing it gives
//     the same text, and so does its CopyJson (text, not operator==: with a
//     duplicate key, RapidJSON's == finds a value unequal to itself).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/string_view.h"
#include "tools/builtin.h"
#include "examples/tools/examples.h"
#include "tools/runtime/json.h"
#include "tools/runtime/schema.h"
#include "tools/runtime/tool_registry.h"

namespace {

const toolexec::ToolRegistry& Registry() {
  static const toolexec::ToolRegistry* registry = [] {
    auto* r = new toolexec::ToolRegistry();
    toolexec::BuiltinOptions options;
    options.declared_tools = toolexec::DeclarableToolNames();
    absl::Status s = toolexec::RegisterBuiltinTools(*r, options);
    if (s.ok()) s = toolexec::examples::RegisterExampleTools(*r);
    if (!s.ok()) {
      std::fprintf(stderr, "cannot register the built-in tools: %s\n", s.ToString().c_str());
      std::abort();
    }
    return r;
  }();
  return *registry;
}

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& tools = Registry().tools();
  const toolexec::RegisteredTool& tool = *tools[data[0] % tools.size()];
  absl::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  auto parsed = toolexec::ParseJson(text);
  if (!parsed.ok()) return 0;
  toolexec::Json& args = *parsed;

  const std::string serialized = toolexec::ToJsonString(args);
  auto reparsed = toolexec::ParseJson(serialized);
  if (!reparsed.ok()) Fail("serialized JSON does not parse", reparsed.status().ToString());
  if (toolexec::ToJsonString(*reparsed) != serialized) {
    Fail("JSON changed in a round trip", serialized);
  }
  (void)toolexec::ApproxJsonBytes(args);
  if (toolexec::ToJsonString(toolexec::CopyJson(args)) != serialized) {
    Fail("CopyJson changed the value", serialized);
  }

  if (!args.IsObject()) return 0;
  if (!tool.schema->Prepare(args).ok()) return 0;
  if (absl::Status s = tool.schema->Validate(args); !s.ok()) {
    Fail(("prepared arguments of " + tool.name + " do not validate").c_str(),
         s.ToString() + " in " + toolexec::ToJsonString(args));
  }
  if (absl::Status s = tool.schema->Prepare(args); !s.ok()) {
    Fail(("prepared arguments of " + tool.name + " are refused the second time").c_str(),
         s.ToString() + " in " + toolexec::ToJsonString(args));
  }
  return 0;
}

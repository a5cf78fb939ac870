#include <chrono>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "examples/tools/examples.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::examples {
namespace {

// No "type" on `value`: any JSON value is accepted and echoed back unchanged.
constexpr char kSchema[] = R"json({
  "type": "object",
  "properties": {
    "ms": {
      "type": "integer",
      "minimum": 0,
      "maximum": 3600000,
      "description": "How long to wait, in milliseconds (at most one hour)."
    },
    "value": {"description": "Any JSON value, returned unchanged after the wait."}
  },
  "required": ["ms"]
})json";

}  // namespace

WaitTool::WaitTool()
    : Tool(ToolSpec("wait",
                    "Waits for the given number of milliseconds, then returns the optional value.",
                    kSchema)) {}

absl::StatusOr<Json> WaitTool::Call(const JsonValue& args, ToolContext& ctx) const {
  // Validation [Arguments] guarantees an integer in [0, 3600000].
  const int64_t ms = args["ms"].GetInt64();

  // Sleep on the cancellation token, never a plain sleep: a cancelled or
  // timed-out call must free its executor thread at once [Batches].
  const auto start = std::chrono::steady_clock::now();  // monotonic
  if (ctx.cancellation().WaitFor(absl::Milliseconds(ms))) {
    const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    return absl::CancelledError(absl::StrCat("wait cancelled after ", elapsed.count(), " ms"));
  }

  Json result = MakeObject();
  auto& alloc = result.GetAllocator();
  result.AddMember("waited_ms", ms, alloc);
  JsonValue value;  // null when absent
  if (auto it = args.FindMember("value"); it != args.MemberEnd()) value.CopyFrom(it->value, alloc);
  result.AddMember("value", value, alloc);
  return result;
}

}  // namespace toolexec::examples

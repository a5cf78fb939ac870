#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/str_cat.h"
#include "examples/tools/examples.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::examples {
namespace {

constexpr char kSchema[] = R"json({"type": "object", "properties": {}})json";
constexpr char kKey[] = "count";

}  // namespace

CounterTool::CounterTool()
    : Tool(ToolSpec("counter", "Increments this session's counter and returns its new value.",
                    kSchema)
               .NeedsContext()
               .Quick()) {}

absl::StatusOr<Json> CounterTool::Call(const JsonValue& args, ToolContext& ctx) const {
  // update_state, not get_state + set_state: two concurrent calls in one
  // session must both count. The function runs under the state store's lock,
  // so it only computes; anything it cannot count is reported afterwards.
  std::string refused;  // why the current value cannot be incremented
  absl::StatusOr<Json> count = ctx.update_state(kKey, [&](const JsonValue* current) -> Json {
    Json next;
    if (current == nullptr) {
      next.SetInt64(1);
    } else if (current->IsInt64() && current->GetInt64() < std::numeric_limits<int64_t>::max()) {
      next.SetInt64(current->GetInt64() + 1);
    } else {
      // Leave the value as it is rather than silently restarting from 0.
      refused = current->IsInt64() ? "is at its maximum"
                                   : absl::StrCat("holds a ", JsonTypeName(*current),
                                                  ", not an integer");
      return CopyJson(*current);
    }
    return next;
  });
  if (!count.ok()) return count.status();  // e.g. the session closed mid-call
  if (!refused.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "session state \"", kKey, "\" ", refused, "; set it to an integer or remove it"));
  }

  Json result = MakeObject();
  result.AddMember("count", count->GetInt64(), result.GetAllocator());
  return result;
}

}  // namespace toolexec::examples

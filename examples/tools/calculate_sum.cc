#include <charconv>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "examples/tools/examples.h"
#include "tools/runtime/json.h"

namespace toolexec::examples {
namespace {

constexpr char kSchema[] = R"json({
  "type": "object",
  "properties": {
    "numbers": {
      "type": "array",
      "items": {"type": "number"},
      "description": "The numbers to add up."
    }
  },
  "required": ["numbers"]
})json";

// "6", not "6.0" (or "1e+06"), for a whole total; otherwise the shortest text
// that reads back as the same double ("2.5", "0.30000000000000004"), so the
// model is never shown a rounded sum.
std::string FormatNumber(double x) {
  if (std::optional<int64_t> i = IntegralValue(x); i.has_value()) return absl::StrCat(*i);
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), x);
  return std::string(buf, end);  // 64 bytes always fit a shortest double
}

}  // namespace

CalculateSumTool::CalculateSumTool()
    : Tool(ToolSpec("calculate_sum", "Adds up a list of numbers and returns the sum.", kSchema).Quick()) {}

absl::StatusOr<Json> CalculateSumTool::Call(const JsonValue& args, ToolContext& ctx) const {
  // Validation [Arguments] guarantees an array of numbers; GetDouble() reads both
  // integers and doubles.
  double total = 0;
  for (const JsonValue& n : args["numbers"].GetArray()) total += n.GetDouble();

  // A bare string, not an object: the runner sends it as {"result": "Sum: 6"} [Failures are results].
  Json result;
  const std::string text = absl::StrCat("Sum: ", FormatNumber(total));
  result.SetString(text.data(), text.size(), result.GetAllocator());
  return result;
}

}  // namespace toolexec::examples

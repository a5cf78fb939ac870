#include <string>

#include "absl/strings/str_cat.h"
#include "examples/tools/examples.h"

namespace toolexec::examples {
namespace {

// `city` is optional, so the tool runs (and answers "Unknown") without it.
constexpr char kSchema[] = R"json({
  "type": "object",
  "properties": {
    "city": {"type": "string", "description": "The city to get the weather for, e.g. \"Paris\"."}
  }
})json";

// display_title() may see input that failed validation, so check every step.
std::string CityOf(const JsonValue& args) {
  if (!args.IsObject()) return "Unknown";
  auto it = args.FindMember("city");
  if (it == args.MemberEnd() || !it->value.IsString()) return "Unknown";
  return std::string(it->value.GetString(), it->value.GetStringLength());
}

}  // namespace

GetWeatherTool::GetWeatherTool()
    : Tool(
          ToolSpec(
              "get_weather",
              "Gets the current weather for a city: temperature in degrees Celsius and conditions.",
              kSchema)
              .Type(ToolType::kApiCall)
              .ReadOnly()
              .Quick()) {}

std::string GetWeatherTool::display_title(const JsonValue& input) const {
  return absl::StrCat("Weather in ", CityOf(input));
}

absl::StatusOr<Json> GetWeatherTool::Call(const JsonValue& args, ToolContext& ctx) const {
  const std::string city = CityOf(args);
  // An object result is sent to the model as-is [Failures are results].
  Json result = MakeObject();
  auto& alloc = result.GetAllocator();
  result.AddMember("temperature", 22, alloc);
  result.AddMember("condition", "sunny", alloc);
  // The allocator copies `city`; a plain StringRef would dangle once it goes.
  result.AddMember("city", JsonValue(city.data(), city.size(), alloc), alloc);
  return result;
}

}  // namespace toolexec::examples

#include <cstdint>
#include <string>

#include "examples/tools/examples.h"

namespace toolexec::examples {
namespace {

constexpr char kSchema[] = R"json({
  "type": "object",
  "properties": {
    "item": {"type": "string", "description": "The item to look up, e.g. \"apples\"."}
  },
  "required": ["item"]
})json";

}  // namespace

CheckInventoryTool::CheckInventoryTool()
    : Tool(ToolSpec(
               "check_inventory",
               "Returns how many of an item are in stock (0 for an item the store does not carry).",
               kSchema)
               .ReadOnly()
               .Quick()),
      stock_({{"apples", 10}, {"bananas", 5}, {"oranges", 0}}) {}

void CheckInventoryTool::SetCount(absl::string_view item, int64_t count) {
  absl::MutexLock lock(&mu_);
  stock_[item] = count;
}

absl::StatusOr<Json> CheckInventoryTool::Call(const JsonValue& args, ToolContext& ctx) const {
  // Validation [Arguments] guarantees `item` is present and a string.
  const std::string item(args["item"].GetString(), args["item"].GetStringLength());
  int64_t count = 0;
  {
    // A reader lock: many calls may look up stock at once.
    absl::ReaderMutexLock lock(&mu_);
    auto it = stock_.find(item);
    if (it != stock_.end()) count = it->second;
  }

  Json result = MakeObject();
  auto& alloc = result.GetAllocator();
  result.AddMember("item", JsonValue(item.data(), item.size(), alloc), alloc);  // copies `item`
  result.AddMember("count", count, alloc);
  return result;
}

}  // namespace toolexec::examples

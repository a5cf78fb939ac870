#include <memory>
#include <utility>

#include "examples/tools/examples.h"

namespace toolexec::examples {

absl::Status RegisterExampleTools(ToolRegistry& registry) {
  // Registration order is the order the model sees [Names and order].
  std::unique_ptr<Tool> tools[] = {
      std::make_unique<GetWeatherTool>(),     std::make_unique<CounterTool>(),
      std::make_unique<CheckInventoryTool>(), std::make_unique<CalculateSumTool>(),
      std::make_unique<WaitTool>(),
  };
  for (std::unique_ptr<Tool>& tool : tools) {
    if (absl::Status status = registry.Register(std::move(tool), "example"); !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace toolexec::examples

#include <memory>
#include <utility>

#include "tools/builtin.h"
#include "tools/search/search_tools.h"

namespace toolexec {

absl::Status RegisterSearchTools(ToolRegistry& registry, const BuiltinOptions& options) {
  // Registration order is the order the model sees [Names and order].
  std::unique_ptr<Tool> tools[] = {
      std::make_unique<builtin::ListDirectoryTool>(options),
      std::make_unique<builtin::FindFileTool>(options),
      std::make_unique<builtin::SearchDirectoryTool>(options),
      std::make_unique<builtin::GrepSearchTool>(options),
  };
  for (std::unique_ptr<Tool>& tool : tools) {
    if (absl::Status status = registry.Register(std::move(tool), "built-in"); !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace toolexec

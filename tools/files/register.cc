// RegisterFileTools: view_file, create_file, edit_file, str_replace_based_edit_tool,
// apply_patch, in that order ([Names and order], [Tool sets] file_tools).
#include <memory>

#include "tools/builtin.h"
#include "tools/files/file_tools.h"

namespace toolexec {

absl::Status RegisterFileTools(ToolRegistry& registry, const BuiltinOptions& options) {
  std::unique_ptr<Tool> tools[] = {
      std::make_unique<builtin::ViewFileTool>(options),
      std::make_unique<builtin::CreateFileTool>(options),
      std::make_unique<builtin::EditFileTool>(options),
      std::make_unique<builtin::StrReplaceBasedEditTool>(options),
      std::make_unique<builtin::ApplyPatchTool>(options),
  };
  for (std::unique_ptr<Tool>& tool : tools) {
    if (absl::Status status = registry.Register(std::move(tool), "built-in"); !status.ok()) {
      return status;
    }
  }
  return absl::OkStatus();
}

}  // namespace toolexec

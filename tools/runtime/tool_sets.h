// S6: the named tool sets, usable in ListTools{tool_set} and in config.
#ifndef TOOLEXEC_TOOLS_RUNTIME_TOOL_SETS_H_
#define TOOLEXEC_TOOLS_RUNTIME_TOOL_SETS_H_

#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

// The set names: "all", "read_only", "file_tools", "path_scoped",
// "nondestructive", "minimal".
const std::vector<absl::string_view>& ToolSetNames();
bool IsToolSetName(absl::string_view name);

// The registered tools in `set` ("" means "all"), in registration order.
// InvalidArgument naming the valid sets for an unknown set name.
absl::StatusOr<std::vector<const RegisteredTool*>> SelectToolSet(const ToolRegistry& registry,
                                                                 absl::string_view set);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TOOL_SETS_H_

// S6: the named tool sets, usable in ListTools{tool_set} and in config.
#ifndef TOOLEXEC_TOOLS_RUNTIME_TOOL_SETS_H_
#define TOOLEXEC_TOOLS_RUNTIME_TOOL_SETS_H_

#include "absl/strings/string_view.h"
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

// The set names: "all", "read_only", "file_tools", "path_scoped",
// "nondestructive", "minimal". Membership comes from the tools' tags (tool.h):
// read_only, file_tools, path_scoped and minimal are the tools tagged
// kTagReadOnly, kTagFile, kTagPathScoped and kTagMinimal; nondestructive is
// every tool not tagged kTagDestructive; all is every tool.
const std::vector<absl::string_view>& ToolSetNames();
bool IsToolSetName(absl::string_view name);

// The registered tools in `set` ("" means "all"), in registration order.
// InvalidArgument naming the valid sets for an unknown set name.
absl::StatusOr<std::vector<const RegisteredTool*>> SelectToolSet(const ToolRegistry& registry,
                                                                 absl::string_view set);

// Applies an enabled or a disabled list (tool or tool-set names; never both:
// that is InvalidArgument, as is an unknown name) to the registry: the chosen
// tool names in registration order. Neither list: every tool. `what` names the
// lists' owner in messages (e.g. "subagent 'researcher'").
absl::StatusOr<std::vector<std::string>> ResolveToolSelection(
    const ToolRegistry& registry, const std::vector<std::string>& enabled,
    const std::vector<std::string>& disabled, absl::string_view what);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TOOL_SETS_H_

// [Tool sets]: the named tool sets, usable in ListTools{tool_set} and in config.
#ifndef TOOLEXEC_TOOLS_RUNTIME_TOOL_SETS_H_
#define TOOLEXEC_TOOLS_RUNTIME_TOOL_SETS_H_

#include "absl/strings/string_view.h"
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

// The set names: "all", "read_only", "file_tools", "path_scoped",
// "nondestructive", "minimal", "provider_tools". Membership comes from the
// tools' tags (tool.h): read_only, file_tools, path_scoped, minimal and
// provider_tools are the tools tagged kTagReadOnly, kTagFile, kTagPathScoped,
// kTagMinimal and kTagProvider; nondestructive is every tool not tagged
// kTagDestructive; all is every tool. [Tool sets] fixes read_only (list_directory,
// search_directory, find_file, view_file, finish) and file_tools (view_file,
// create_file, edit_file) exactly; the provider-shaped tools are in
// provider_tools, and in path_scoped where they take paths.
const std::vector<absl::string_view>& ToolSetNames();
bool IsToolSetName(absl::string_view name);

// The registered tools in `set` ("" means "all"), in registration order.
// InvalidArgument naming the valid sets for an unknown set name.
absl::StatusOr<std::vector<const RegisteredTool*>> SelectToolSet(const ToolRegistry& registry,
                                                                 absl::string_view set);

// An enabled or a disabled list of tool and tool-set names, kept as given
// and applied to whichever tools are registered when it is asked: a tool that
// appears later (an MCP server's) is chosen when it is in a set the enabled
// list names, or not named by the disabled list. Neither list: every tool.
class ToolSelection {
 public:
  // Never both lists (InvalidArgument: which should win is ambiguous), and
  // every name a tool registered now or a set (InvalidArgument naming them).
  // `what` names the lists' owner in messages (e.g. "subagent 'researcher'").
  static absl::StatusOr<ToolSelection> Create(const ToolRegistry& registry,
                                              const std::vector<std::string>& enabled,
                                              const std::vector<std::string>& disabled,
                                              absl::string_view what);
  // Unchecked, and tool names only (a tool may be called "all"): only
  // `names`; every tool but `names`.
  static ToolSelection Only(std::vector<std::string> names);
  static ToolSelection Except(std::vector<std::string> names);

  bool Chooses(const RegisteredTool& tool) const;

 private:
  ToolSelection(std::vector<std::string> names, bool enabling, bool sets)
      : names_(std::move(names)), enabling_(enabling), sets_(sets) {}
  std::vector<std::string> names_;
  bool enabling_ = false;
  bool sets_ = false;  // a name may be a tool set's
};

// Whether every one of `selections` chooses `tool` (none: every tool), and
// the names of the tools of `registry` that all choose, in registration order.
bool ChosenByAll(const std::vector<ToolSelection>& selections, const RegisteredTool& tool);
std::vector<std::string> ChosenNames(const std::vector<ToolSelection>& selections,
                                     const ToolRegistry& registry);

// ToolSelection::Create applied to `registry` now.
absl::StatusOr<std::vector<std::string>> ResolveToolSelection(
    const ToolRegistry& registry, const std::vector<std::string>& enabled,
    const std::vector<std::string>& disabled, absl::string_view what);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TOOL_SETS_H_

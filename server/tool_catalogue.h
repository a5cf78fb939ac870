// The tools toolexecd offers besides the MCP servers', chosen by the
// composition root and handed to the Engine as one registry [Names and order]:
// the chosen built-ins, the declared tools [Tools run elsewhere], the example
// tools, then the command tools (config command_tools). The engine adds the
// MCP servers' tools after these, as they come and go.
#ifndef TOOLEXEC_SERVER_TOOL_CATALOGUE_H_
#define TOOLEXEC_SERVER_TOOL_CATALOGUE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/engine.h"
#include "core/engine_options.h"
#include "tools/builtin.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

struct ToolCatalogueOptions {
  BuiltinOptions builtin;
  // Which built-in tools to register: tool or tool-set names; at most one list.
  std::vector<std::string> builtin_enabled;
  std::vector<std::string> builtin_disabled;
  // The example tools of examples/tools (--example_tools).
  bool example_tools = false;
  // Tools run by the user's programs (config command_tools), registered
  // after the built-in, declared and example tools.
  std::vector<CommandToolOptions> command_tools;
};

// The registry of `options`; start_subagent's declaration names `subagents`.
// A duplicate name, an invalid schema or an unknown tool in a selection is
// an error naming it.
absl::StatusOr<ToolRegistry> BuildToolCatalogue(const ToolCatalogueOptions& options,
                                                const std::vector<SubagentOptions>& subagents);

// Registers tools after the catalogue's and before the MCP servers' (tests,
// embedders); they never change.
using ToolInstaller = std::function<absl::Status(ToolRegistry&)>;

// The Engine toolexecd runs: over BuildToolCatalogue(tools, options.subagents),
// then `extra`'s tools.
absl::StatusOr<std::unique_ptr<Engine>> CreateEngine(EngineOptions options,
                                                     const ToolCatalogueOptions& tools,
                                                     const ToolInstaller& extra = nullptr);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_TOOL_CATALOGUE_H_

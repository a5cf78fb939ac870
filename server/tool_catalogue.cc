#include "server/tool_catalogue.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "examples/tools/examples.h"
#include "tools/runtime/tool_sets.h"

namespace toolexec {

absl::StatusOr<ToolRegistry> BuildToolCatalogue(const ToolCatalogueOptions& options,
                                                const std::vector<SubagentOptions>& subagents) {
  BuiltinOptions builtin = options.builtin;
  for (const auto& sa : subagents) builtin.subagents.push_back({sa.name, sa.description});
  // Register every built-in in a scratch registry, then keep the chosen ones:
  // the selection is by tool and tool-set names, which need the registry.
  ToolRegistry builtins;
  if (absl::Status s = RegisterSelectableBuiltinTools(builtins, builtin); !s.ok()) return s;
  auto chosen = ResolveToolSelection(builtins, options.builtin_enabled, options.builtin_disabled,
                                     "builtin_tools");
  if (!chosen.ok()) return chosen.status();
  absl::flat_hash_set<std::string> keep(chosen->begin(), chosen->end());
  ToolRegistry registry;
  for (auto& tool : builtins.Release()) {
    if (!keep.contains(tool->name())) continue;
    if (absl::Status s = registry.Register(std::move(tool), "built-in"); !s.ok()) return s;
  }
  if (absl::Status s = RegisterDeclaredTools(registry, builtin); !s.ok()) return s;
  if (options.example_tools) {
    if (absl::Status s = examples::RegisterExampleTools(registry); !s.ok()) return s;
  }
  if (absl::Status s = RegisterConfiguredCommandTools(registry, builtin, options.command_tools);
      !s.ok()) {
    return s;
  }
  return registry;
}

absl::StatusOr<std::unique_ptr<Engine>> CreateEngine(EngineOptions options,
                                                     const ToolCatalogueOptions& tools,
                                                     const ToolInstaller& extra) {
  auto registry = BuildToolCatalogue(tools, options.subagents);
  if (!registry.ok()) return registry.status();
  if (extra) {
    if (absl::Status s = extra(*registry); !s.ok()) return s;
  }
  return Engine::Create(std::move(options), *std::move(registry));
}

}  // namespace toolexec

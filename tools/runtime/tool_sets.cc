#include "tools/runtime/tool_sets.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace toolexec {
namespace {

// [Tool sets]: each set is the tools with its tag (nondestructive: without its tag).
bool InSet(const Tool& tool, absl::string_view set) {
  const ToolSpec& spec = tool.spec();
  if (set == "all") return true;
  if (set == "nondestructive") return !spec.HasTag(kTagDestructive);
  if (set == "read_only") return spec.HasTag(kTagReadOnly);
  if (set == "file_tools") return spec.HasTag(kTagFile);
  if (set == "path_scoped") return spec.HasTag(kTagPathScoped);
  if (set == "minimal") return spec.HasTag(kTagMinimal);
  if (set == "provider_tools") return spec.HasTag(kTagProvider);
  return false;
}

}  // namespace

const std::vector<absl::string_view>& ToolSetNames() {
  static const auto* names = new std::vector<absl::string_view>{
      "all",           "read_only", "file_tools", "path_scoped", "nondestructive",
      "minimal",       "provider_tools"};
  return *names;
}

bool IsToolSetName(absl::string_view name) {
  const auto& names = ToolSetNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

absl::StatusOr<std::vector<const RegisteredTool*>> SelectToolSet(const ToolRegistry& registry,
                                                                 absl::string_view set) {
  if (set.empty()) set = "all";
  if (!IsToolSetName(set)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown tool set '", set, "'; valid sets: ",
                                                   absl::StrJoin(ToolSetNames(), ", ")));
  }
  std::vector<const RegisteredTool*> out;
  for (const auto& t : registry.tools()) {
    if (InSet(*t->tool, set)) out.push_back(t.get());
  }
  return out;
}

absl::StatusOr<ToolSelection> ToolSelection::Create(const ToolRegistry& registry,
                                                    const std::vector<std::string>& enabled,
                                                    const std::vector<std::string>& disabled,
                                                    absl::string_view what) {
  // [Subagents]: never a silent precedence rule between the two lists.
  if (!enabled.empty() && !disabled.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": give enabled_tools or disabled_tools, not both (which should win is ambiguous)"));
  }
  const bool enabling = !enabled.empty();
  const std::vector<std::string>& names = enabling ? enabled : disabled;
  std::vector<std::string> unknown;
  for (const auto& name : names) {
    if (!IsToolSetName(name) && registry.Find(name) == nullptr) unknown.push_back(name);
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", enabling ? "enabled_tools" : "disabled_tools", " names unknown tool(s) ",
        absl::StrJoin(unknown, ", "), "; registered tools: ", absl::StrJoin(registry.names(), ", "),
        "; tool sets: ", absl::StrJoin(ToolSetNames(), ", ")));
  }
  return ToolSelection(names, enabling, /*sets=*/true);
}

ToolSelection ToolSelection::Only(std::vector<std::string> names) {
  return ToolSelection(std::move(names), true, /*sets=*/false);
}

ToolSelection ToolSelection::Except(std::vector<std::string> names) {
  return ToolSelection(std::move(names), false, /*sets=*/false);
}

bool ToolSelection::Chooses(const RegisteredTool& tool) const {
  const bool named = std::any_of(names_.begin(), names_.end(), [&](const std::string& n) {
    return sets_ && IsToolSetName(n) ? InSet(*tool.tool, n) : n == tool.name;
  });
  return named == enabling_;
}

bool ChosenByAll(const std::vector<ToolSelection>& selections, const RegisteredTool& tool) {
  return std::all_of(selections.begin(), selections.end(),
                     [&](const ToolSelection& s) { return s.Chooses(tool); });
}

std::vector<std::string> ChosenNames(const std::vector<ToolSelection>& selections,
                                     const ToolRegistry& registry) {
  std::vector<std::string> out;
  for (const auto& t : registry.tools()) {
    if (ChosenByAll(selections, *t)) out.push_back(t->name);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ResolveToolSelection(
    const ToolRegistry& registry, const std::vector<std::string>& enabled,
    const std::vector<std::string>& disabled, absl::string_view what) {
  auto selection = ToolSelection::Create(registry, enabled, disabled, what);
  if (!selection.ok()) return selection.status();
  return ChosenNames({*std::move(selection)}, registry);
}

}  // namespace toolexec

#include "tools/runtime/tool_sets.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace toolexec {
namespace {

// S6: each set is the tools with its tag (nondestructive: without its tag).
bool InSet(const Tool& tool, absl::string_view set) {
  const ToolSpec& spec = tool.spec();
  if (set == "all") return true;
  if (set == "nondestructive") return !spec.HasTag(kTagDestructive);
  if (set == "read_only") return spec.HasTag(kTagReadOnly);
  if (set == "file_tools") return spec.HasTag(kTagFile);
  if (set == "path_scoped") return spec.HasTag(kTagPathScoped);
  if (set == "minimal") return spec.HasTag(kTagMinimal);
  return false;
}

}  // namespace

const std::vector<absl::string_view>& ToolSetNames() {
  static const auto* names = new std::vector<absl::string_view>{
      "all", "read_only", "file_tools", "path_scoped", "nondestructive", "minimal"};
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

absl::StatusOr<std::vector<std::string>> ResolveToolSelection(
    const ToolRegistry& registry, const std::vector<std::string>& enabled,
    const std::vector<std::string>& disabled, absl::string_view what) {
  // S7: never a silent precedence rule between the two lists.
  if (!enabled.empty() && !disabled.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": give enabled_tools or disabled_tools, not both (which should win is ambiguous)"));
  }
  bool enabling = !enabled.empty();
  const std::vector<std::string>& names = enabling ? enabled : disabled;
  absl::flat_hash_set<std::string> named;
  std::vector<std::string> unknown;
  for (const auto& name : names) {
    if (IsToolSetName(name)) {
      auto set = SelectToolSet(registry, name);
      if (!set.ok()) return set.status();
      for (const auto* t : *set) named.insert(t->name);
    } else if (registry.Find(name) != nullptr) {
      named.insert(name);
    } else {
      unknown.push_back(name);
    }
  }
  if (!unknown.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", enabling ? "enabled_tools" : "disabled_tools", " names unknown tool(s) ",
        absl::StrJoin(unknown, ", "), "; registered tools: ", absl::StrJoin(registry.names(), ", "),
        "; tool sets: ", absl::StrJoin(ToolSetNames(), ", ")));
  }
  std::vector<std::string> out;
  for (const auto& t : registry.tools()) {
    if (names.empty() || named.contains(t->name) == enabling) out.push_back(t->name);
  }
  return out;
}

}  // namespace toolexec

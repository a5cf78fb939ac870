#include "tools/runtime/tool_sets.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace toolexec {
namespace {

// S6, as DESIGN.md lists them, with the provider-compatible editing tools
// (str_replace_based_edit_tool, apply_patch) among the file tools.
const absl::flat_hash_set<absl::string_view>& Members(absl::string_view set) {
  static const auto* read_only = new absl::flat_hash_set<absl::string_view>{
      "list_directory", "search_directory", "find_file", "view_file", "finish"};
  static const auto* file_tools = new absl::flat_hash_set<absl::string_view>{
      "view_file", "create_file", "edit_file", "str_replace_based_edit_tool", "apply_patch"};
  static const auto* path_scoped = new absl::flat_hash_set<absl::string_view>{
      "view_file",      "create_file",      "edit_file", "str_replace_based_edit_tool",
      "apply_patch",    "list_directory",   "search_directory", "find_file",
      "grep_search"};
  static const auto* minimal = new absl::flat_hash_set<absl::string_view>{
      "run_command", "view_file", "create_file", "edit_file", "list_directory", "search_directory"};
  static const auto* none = new absl::flat_hash_set<absl::string_view>{};
  if (set == "read_only") return *read_only;
  if (set == "file_tools") return *file_tools;
  if (set == "path_scoped") return *path_scoped;
  if (set == "minimal") return *minimal;
  return *none;
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
    bool in = set == "all" || (set == "nondestructive" && t->name != "run_command") ||
              Members(set).contains(t->name);
    if (in) out.push_back(t.get());
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

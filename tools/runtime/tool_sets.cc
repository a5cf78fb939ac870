#include "tools/runtime/tool_sets.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace toolexec {
namespace {

// S6, exactly as DESIGN.md lists them.
const absl::flat_hash_set<absl::string_view>& Members(absl::string_view set) {
  static const auto* read_only = new absl::flat_hash_set<absl::string_view>{
      "list_directory", "search_directory", "find_file", "view_file", "finish"};
  static const auto* file_tools =
      new absl::flat_hash_set<absl::string_view>{"view_file", "create_file", "edit_file"};
  static const auto* path_scoped = new absl::flat_hash_set<absl::string_view>{
      "view_file",        "create_file", "edit_file",  "list_directory",
      "search_directory", "find_file",   "grep_search"};
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

}  // namespace toolexec

// Opening the starting path of a search beneath the call's workspace, with
// the confined-path layer (tools/workspace/confined.h): the one path the
// model names is resolved in the kernel (openat2 RESOLVE_BENEATH, or fs's
// O_NOFOLLOW walk), so "..", absolute paths elsewhere and symlinks that lead
// out are refused without a check-then-open race. The walk below it never
// follows a symlink (every step is openat(parent, name, O_NOFOLLOW)), so
// nothing inside the tree can lead out of it either.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_CONFINED_PATH_H_
#define TOOLEXEC_TOOLS_WORKSPACE_CONFINED_PATH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/workspace/confined.h"

namespace toolexec::fs {


// A path opened beneath a workspace root.
struct ConfinedPath {
  std::shared_ptr<const ConfinedRoot> root;
  UniqueFd fd;  // O_RDONLY: a directory, or a regular file
  // The path relative to the root as the kernel resolved it: '/'-separated,
  // no "." or "..", "" for the root itself.
  std::string relative;
  // Prepended to workspace-relative paths shown to the model: "" for the
  // call's default (first) root, "<root>/" for another one, so every path in
  // a result can be passed back as it is.
  std::string display_prefix;
  bool is_dir = false;

  // `rel` (relative to the root) as the model should see it.
  std::string Display(absl::string_view rel) const;
};

// Opens `path` (relative to the first workspace, or absolute inside one of
// them) for reading; `param` names the argument in messages. Errors follow
// fs's convention (DENIED for an escape, NotFound, InvalidArgument for a
// malformed path), plus InvalidArgument for something that is neither a
// directory nor a regular file.
absl::StatusOr<ConfinedPath> OpenConfined(
    const std::vector<std::shared_ptr<const ConfinedRoot>>& workspaces, absl::string_view path,
    absl::string_view param);

// Joins a root-relative directory and a name ("" + "a" = "a").
std::string JoinRelative(absl::string_view dir, absl::string_view name);

// The order of every listing and result: by path, component by component
// (as if '/' sorted before every other byte, so "a/b" < "a-b" < "a.c"),
// byte-wise within a component. PathCompare is its three-way form (<0, 0, >0).
int PathCompare(absl::string_view a, absl::string_view b);
bool PathLess(absl::string_view a, absl::string_view b);
struct PathLessCmp {
  using is_transparent = void;
  bool operator()(absl::string_view a, absl::string_view b) const { return PathLess(a, b); }
};

}  // namespace toolexec::fs

#endif  // TOOLEXEC_TOOLS_WORKSPACE_CONFINED_PATH_H_

// Permissions (S12, agent-air's model): what a call needs and what a grant
// covers. Transport-free and stateless except GrantSet.
//
// Levels: None < Read < Write < Execute < Admin; a grant at a level covers a
// need at that level or below. Targets (PermissionRequirement::Kind):
// - Path: compared component by component, never as text ("/a/b" does not
//   cover "/a/bc"). A recursive grant covers the path and everything beneath
//   it; otherwise the path itself and its direct children. A recursive need
//   (a search of a whole tree) is covered only by a recursive grant of the
//   path or of a directory above it.
// - Domain: "*.example.com" covers example.com and every subdomain;
//   otherwise the name itself (case-insensitive); "*" covers every domain.
// - Command: "git *" covers "git" and "git <anything>"; "git" covers "git"
//   only (not "git status"); "*" covers every command. Commands are compared
//   as text with surrounding whitespace ignored.
// - Tool: the tool's name, or "*".
#ifndef TOOLEXEC_CORE_PERMISSIONS_H_
#define TOOLEXEC_CORE_PERMISSIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/runtime/tool.h"

namespace toolexec {

absl::string_view PermissionLevelName(PermissionLevel level);
absl::string_view PermissionKindName(PermissionRequirement::Kind kind);

bool PathCovers(absl::string_view grant, bool grant_recursive, absl::string_view path,
                bool path_recursive);
bool DomainCovers(absl::string_view pattern, absl::string_view domain);
bool CommandCovers(absl::string_view pattern, absl::string_view command);

// `grant` (its kind, value, recursive flag and level) covers `need`.
bool Covers(const PermissionRequirement& grant, const PermissionRequirement& need);

// A grant kept for a session; `expires` InfiniteFuture() = the session's life.
struct PermissionGrant {
  PermissionRequirement target;
  absl::Time expires = absl::InfiniteFuture();
};

// A session's grants. Thread-safe.
class GrantSet final {
 public:
  void Add(PermissionGrant grant);
  // Some unexpired grant covers `need` at `now`. Expired grants are dropped.
  bool Covers(const PermissionRequirement& need, absl::Time now);

 private:
  absl::Mutex mu_;
  std::vector<PermissionGrant> grants_ ABSL_GUARDED_BY(mu_);
};

// A grant to ask for, and the needs (indexes into the list given) it covers.
struct SuggestedGrant {
  PermissionRequirement target;
  std::vector<size_t> members;
};

// Groups `needs` into the grants a person is asked for: paths by their parent
// directory (a recursive need as itself, recursive), commands by their first
// word ("git *"), domains and tools as they are; each at the highest level
// among its members, in the order of their first member.
std::vector<SuggestedGrant> SuggestGrants(const std::vector<PermissionRequirement>& needs);

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_PERMISSIONS_H_

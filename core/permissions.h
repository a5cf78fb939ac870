// Permissions ([Deciding what runs], agent-air's model): what a call needs and what a grant
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
// - Command: a need is a bash command line (plus the variables the call
//   sets); a pattern is the words of one command, optionally ending in a
//   lone `*`: "git *" covers `git` and `git <anything>`, "git" covers `git`
//   only, "*" covers every command line. Words are compared after quote
//   removal, so `'git' status` is `git status`. A line is covered only when
//   EVERY simple command it runs (command_line.h: pipelines, lists,
//   substitutions, `bash -c` strings, wrapped commands such as `sudo rm`)
//   is covered, static analysis can tell what it runs (not opaque), it runs
//   at least one command, and it sets no variable that makes a shell or the
//   loader run code (IsCodeVariable: BASH_ENV, LD_PRELOAD, PATH, …; in the
//   need's env or in the line). A word that expands (`$x`, a glob) matches
//   only the final `*`. One grant or several: a session's grants cover a line
//   when each of its commands is covered by one of them.
//   Deny and ask rules ask the other question, CommandMayMatch: whether some
//   command of the line may be one the pattern names, where an opaque line
//   or one that sets such a variable may be anything, a name is also
//   compared by its last path component (`/bin/rm` may be `rm`), and a word
//   that expands may be any words.
// - Tool: the tool's name, or "*".
#ifndef TOOLEXEC_CORE_PERMISSIONS_H_
#define TOOLEXEC_CORE_PERMISSIONS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/process/command_line.h"
#include "tools/runtime/tool.h"

namespace toolexec {

absl::string_view PermissionLevelName(PermissionLevel level);
absl::string_view PermissionKindName(PermissionRequirement::Kind kind);

bool PathCovers(absl::string_view grant, bool grant_recursive, absl::string_view path,
                bool path_recursive);

// `path` (absolute) as the kernel would resolve it: every symbolic link on
// the way followed (a ".." after a link climbs from where the link leads),
// up to the first name that does not exist, from where on the rest is taken
// lexically (a file yet to be written). At most 40 links are followed.
// Normalized (NormalizePath); a relative path is only normalized. It stats
// the file system, so what it says may change right after.
std::string ResolvePath(absl::string_view path);
bool DomainCovers(absl::string_view pattern, absl::string_view domain);

// A command pattern, parsed once (see the header comment).
class CommandPattern {
 public:
  // InvalidArgument saying why when `pattern` is not the static words of one
  // simple command with at most a final lone `*`.
  static absl::StatusOr<CommandPattern> Parse(absl::string_view pattern);
  // The command is surely one the pattern names.
  bool Covers(const command::SimpleCommand& command) const;
  // The command may be one the pattern names.
  bool MayMatch(const command::SimpleCommand& command) const;
  bool matches_everything() const { return everything_; }

 private:
  std::vector<std::string> words_;
  bool rest_ = false;        // a final `*`
  bool everything_ = false;  // "*"
};

// A command need, analysed once.
struct CommandNeed {
  command::CommandLineAnalysis line;
  // The variables it sets (in its env or in the line) that make code run.
  std::vector<std::string> code_variables;
};
CommandNeed AnalyzeCommandNeed(const PermissionRequirement& need);

// Covered by `patterns` together (each command by one of them);
// `allowed_code_variables` may be set.
bool CommandCovers(const std::vector<const CommandPattern*>& patterns, const CommandNeed& need,
                   const std::vector<std::string>& allowed_code_variables = {});
bool CommandMayMatch(const CommandPattern& pattern, const CommandNeed& need);
// The same on text (a pattern that does not parse covers nothing).
bool CommandCovers(absl::string_view pattern, absl::string_view command);

// Why `need` cannot be covered by a pattern without looking at it again
// ("" when it can): the line is opaque, or sets code variables.
std::string CommandNeedCaveat(const CommandNeed& need);

// A need as a person should see it in a question: for a command, the line,
// the variables it sets (its env) and CommandNeedCaveat; else its value.
std::string DescribeNeed(const PermissionRequirement& need);

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
// directory (a recursive need as itself, recursive), commands by the name of
// each simple command they run ("git *"; a line no pattern can cover, as
// itself), domains and tools as they are; each at the highest level among
// its members, in the order of their first member. A command need is a
// member of each grant its commands call for.
std::vector<SuggestedGrant> SuggestGrants(const std::vector<PermissionRequirement>& needs);

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_PERMISSIONS_H_

// The parallel directory walk shared by find_file, search_directory and
// grep_search: ripgrep's rules, on directory descriptors.
//
// Filtering, in order, for each entry below the start directory:
//   1. overrides (grep_search's `glob`, relative to the start directory): a
//      negated glob that matches excludes the entry; a positive glob that
//      matches includes it, skipping steps 2-4 (as `rg -g` does); a file that
//      no positive glob matches is excluded. Directories are never excluded
//      for not matching.
//   2. ".git" directories are always skipped.
//   3. hidden entries (name starting with '.') are skipped.
//   4. ignore files, as git reads them (gitignore(5)), by precedence:
//      .rgignore, .ignore, .gitignore of the entry's directory, then of each
//      directory above it, up to the root of the git repository that holds
//      the workspace (the nearest directory with a .git directory or file, at
//      or above the workspace root); then that repository's
//      .git/info/exclude; then the global excludes file (core.excludesFile
//      from the system, global and, for a repository above the workspace
//      root, the repository's config; by default $XDG_CONFIG_HOME/git/ignore
//      or ~/.config/git/ignore). Within a file the last matching pattern
//      wins, and "!pattern" re-includes. An ignored directory is not entered.
//      The git configuration is parsed here (no git process runs): only
//      core.excludesFile, without [include] files.
//
// Where the walk differs from `git ls-files --others --exclude-standard` on
// purpose (the differential test against git, search_gitignore_diff_test.cc,
// keeps to the rest and agrees on every path):
//   - hidden entries (names starting with '.') are skipped, as ripgrep does;
//   - the start directory is walked even when it (or a directory above it) is
//     ignored: naming a directory searches it, as naming it to ripgrep does;
//   - .ignore and .rgignore files are read too (ripgrep's), before .gitignore;
//   - outside any git repository .gitignore files still apply (unlike
//     ripgrep): an agent's workspace is often an unpacked tree;
//   - for a repository inside the workspace, its .git/config is not read for
//     core.excludesFile: a file the caller can write must not make the daemon
//     read files outside the workspace;
//   - .git directories are always skipped, and a nested repository is walked
//     like any directory (git lists it as one untracked entry).
// Symlinks are never followed: every directory is opened with openat(parent,
// name, O_DIRECTORY | O_NOFOLLOW), so nothing inside the start directory can
// lead the walk out of it, even if a directory is swapped for a symlink mid-walk.
//
// Concurrency: `threads` workers (the calling thread is one of them) share a
// LIFO stack of directories to list and batches of files to visit. The other
// workers are helper threads the walk starts and joins; all walks in the
// process share a budget of kMaxWalkHelperThreads of them, taken without
// waiting, so many concurrent searches (each already on an executor thread)
// add at most that many threads: a walk that finds the budget spent runs
// with fewer helpers, or alone. The
// visitor is called concurrently from every worker, with the worker's index so
// it can keep per-worker state without locks; it is never called again after
// Walk returns. Visit order is not deterministic: callers sort.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_WALKER_H_
#define TOOLEXEC_TOOLS_WORKSPACE_WALKER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/workspace/confined_path.h"
#include "tools/workspace/glob.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::fs {

enum class EntryKind { kFile, kDir, kSymlink, kOther };

// One entry of a directory listing.
struct DirEntry {
  std::string name;
  EntryKind kind = EntryKind::kOther;
};

// Lists the open directory `dir_fd` (without "." and ".."), in the file
// system's order; kinds come from getdents (fstatat without following where
// the file system does not say). False, with errno set, on failure.
bool ReadEntries(int dir_fd, std::vector<DirEntry>* out);

// Opens the directory `rel` ('/'-separated) beneath the open directory
// `base_fd` without following any symlink on the way (openat2
// RESOLVE_NO_SYMLINKS, or an O_NOFOLLOW walk): -1 with errno set on failure.
int OpenSubdirNoFollow(int base_fd, absl::string_view rel);

// The ignore rules of one directory and, through `parent`, of its ancestors.
//
// Matching an entry must not cost every ancestor's patterns against the whole
// path (a deep tree with an ignore file at each level would be cubic), so
// each kind of pattern (GlobSet::Kind) is found where it can apply:
//   - literal names and "*suffix" patterns, by far the most common, are kept
//     in one index per directory, inherited from the parent (copied only
//     where a directory adds some), holding for each name or suffix the
//     pattern with the highest precedence: one lookup per entry;
//   - anchored patterns without "**" match only paths with their number of
//     components, so only the level that many directories up is asked;
//   - the rest (RE2 on the name, anchored with "**") is asked level by level,
//     from the deepest, skipping levels without such patterns and stopping at
//     the first match or when a deeper decision is already found; and not at
//     all for a name that ends with none of their literal suffixes ("*.py[co]"
//     has none, "[0-9]*.o" has ".o").
// Precedence is a rank: the level (deeper is higher), then the file within
// the level, then the line (later is higher).
class IgnoreRules final {
 public:
  enum class Verdict { kNone, kIgnore, kWhitelist };

  // A directory inside the workspace: `dir` is its workspace-relative path;
  // `sets` are its ignore files' patterns, highest precedence first.
  IgnoreRules(std::shared_ptr<const IgnoreRules> parent, absl::string_view dir,
              std::vector<std::unique_ptr<GlobSet>> sets);

  // A directory above the workspace root: its patterns see a path `p` as
  // `lead` + "/" + p, `lead` being the path from it down to the root.
  static std::shared_ptr<const IgnoreRules> Above(std::shared_ptr<const IgnoreRules> parent,
                                                  std::string lead,
                                                  std::vector<std::unique_ptr<GlobSet>> sets);

  // `path` is workspace-relative and lies below this directory.
  Verdict Match(absl::string_view path, bool is_dir) const;

 private:
  struct Decision {
    const GlobPattern* pattern = nullptr;
    uint64_t rank = 0;
  };
  struct NameIndex;

  // The deciding pattern among this level's patterns of `kinds` for `path`
  // (workspace-relative; `whole` is it split).
  Decision MatchLevel(const GlobTarget& whole, absl::string_view path, bool is_dir,
                      unsigned kinds) const;

  std::shared_ptr<const IgnoreRules> parent_;
  std::string lead_;  // above the workspace root: the path from here down to it
  size_t strip_ = 0;  // inside: bytes of `path` to drop to make it relative to here
  int depth_ = 0;     // components below the workspace root (negative above it)
  uint64_t level_ = 1;  // 1 for the top level, +1 per level below
  std::vector<std::unique_ptr<GlobSet>> sets_;
  // The literal-name and suffix patterns of this level and its ancestors.
  std::shared_ptr<const NameIndex> names_;
  // Bit c set: this level or one above has a kFixedPath pattern of c
  // components.
  uint64_t fixed_lengths_ = 0;
  bool has_fixed_ = false;
  // The nearest level, this one or above, with kOther patterns.
  const IgnoreRules* other_ = nullptr;
  // The suffixes every name a kOther pattern of this level or one above can
  // match ends with (one of), unless `other_unfiltered_`: entries with none
  // of them skip the level-by-level search.
  std::shared_ptr<const std::vector<std::string>> other_suffixes_;
  bool other_unfiltered_ = false;
};

// The rules git applies to the workspace `root` (an absolute path) from above
// it: the global excludes file, and when the root is inside a repository
// without being its top, the repository's .git/info/exclude and the ignore
// files of each directory from the repository's top down to the root's
// parent. Null when there are none. Reads the environment (HOME,
// XDG_CONFIG_HOME, GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM)
// as git does.
std::shared_ptr<const IgnoreRules> RepositoryRules(const std::string& root);

// Reads the ignore files of the open directory `dir_fd` (whose entry names are
// `names`, to avoid failed opens) and returns the rules for entries below it:
// `parent` itself when it has none.
std::shared_ptr<const IgnoreRules> LoadIgnoreRules(int dir_fd, absl::string_view dir_path,
                                                   const std::vector<std::string>& names,
                                                   std::shared_ptr<const IgnoreRules> parent);

struct WalkEntry {
  int dir_fd = -1;  // the entry's directory, open during the call
  absl::string_view name;
  absl::string_view path;        // relative to the workspace root
  absl::string_view start_path;  // relative to the start directory
  EntryKind kind = EntryKind::kFile;
  int depth = 1;  // 1 = directly inside the start directory
};

struct WalkOptions {
  bool skip_hidden = true;
  bool use_ignore_files = true;
  // grep_search's glob filter (see the file comment); may be null.
  const GlobSet* overrides = nullptr;
  // Besides regular files, also visit directories (before their contents are
  // listed) and symlinks, for find_file. Symlinks are still never followed.
  bool visit_dirs = false;
  bool visit_symlinks = false;
  int max_depth = 0;  // 0 = unlimited
  int threads = 0;    // 0 = DefaultWalkThreads()
  const CancellationToken* cancellation = nullptr;
  // The policy's filter (CallInfo::left_out_by_policy), asked last about
  // every entry that would be visited, with its absolute path (the root's
  // path and the entry's): a file, or a directory or symlink visited as an
  // entry, it keeps is not visited (a directory is still walked). May be null
  // or empty.
  const LeftOutFn* left_out = nullptr;
  // Told of each entry an ignore file excludes (an ignored directory is not
  // entered, so nothing below it is told), with its workspace-relative path
  // and whether it is a directory; called concurrently from any worker. May
  // be null. For a caller that must say what it left out (checkpoints).
  const std::function<void(absl::string_view path, bool is_dir)>* ignored = nullptr;
};

struct WalkStats {
  uint64_t dirs = 0;
  uint64_t files = 0;
  uint64_t unreadable = 0;  // directories that could not be opened or listed
  uint64_t left_out = 0;    // entries options.left_out kept from the visitor
};

// Called for each regular file (and, if asked, directory and symlink) that
// passes the filters. `worker` is in [0, threads).
using WalkVisitor = std::function<void(const WalkEntry& entry, int worker)>;

// Helper threads of all walks at once, process-wide.
inline constexpr int kMaxWalkHelperThreads = 16;

// The number of workers used when WalkOptions::threads is 0: the hardware's
// concurrency, at least 1 and at most 12 (beyond that the page cache, not the
// CPU, is the limit).
int DefaultWalkThreads();
// The number of workers a walk with `options` uses (size per-worker state by it).
inline int WalkThreads(const WalkOptions& options) {
  return options.threads > 0 ? options.threads : DefaultWalkThreads();
}

// Walks the directory `start` (see OpenConfined). Cancelled (with the
// partial stats discarded) if the token is tripped; the walk stops between
// files.
absl::StatusOr<WalkStats> Walk(const ConfinedPath& start, const WalkOptions& options,
                               const WalkVisitor& visit);

}  // namespace toolexec::fs

#endif  // TOOLEXEC_TOOLS_WORKSPACE_WALKER_H_

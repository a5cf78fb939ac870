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
//   4. ignore files: .rgignore, .ignore, .gitignore and .git/info/exclude of
//      every directory from the workspace root down (a deeper directory's
//      files take precedence; within a directory in that order; within a file
//      the last matching pattern wins, and "!pattern" re-includes). An ignored
//      directory is not entered. Unlike ripgrep, .gitignore applies outside a
//      git repository too: an agent's workspace is often an unpacked tree.
// Symlinks are never followed: every directory is opened with openat(parent,
// name, O_DIRECTORY | O_NOFOLLOW), so nothing inside the start directory can
// lead the walk out of it, even if a directory is swapped for a symlink mid-walk.
//
// Concurrency: `threads` workers (the calling thread is one of them) share a
// LIFO stack of directories to list and batches of files to visit. The
// visitor is called concurrently from every worker, with the worker's index so
// it can keep per-worker state without locks; it is never called again after
// Walk returns. Visit order is not deterministic: callers sort.
#ifndef TOOLEXEC_TOOLS_BUILTIN_SEARCH_WALKER_H_
#define TOOLEXEC_TOOLS_BUILTIN_SEARCH_WALKER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/builtin/search/confine.h"
#include "tools/builtin/search/glob.h"
#include "tools/runtime/cancellation.h"

namespace toolexec::search {

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
class IgnoreRules final {
 public:
  enum class Verdict { kNone, kIgnore, kWhitelist };

  // `dir` is the directory's workspace-relative path; `sets` are its ignore
  // files' patterns, highest precedence first.
  IgnoreRules(std::shared_ptr<const IgnoreRules> parent, absl::string_view dir,
              std::vector<std::unique_ptr<GlobSet>> sets);

  // `path` is workspace-relative and lies below this directory.
  Verdict Match(absl::string_view path, bool is_dir) const;

 private:
  std::shared_ptr<const IgnoreRules> parent_;
  size_t prefix_len_;  // bytes of `path` to drop to make it relative to this directory
  std::vector<std::unique_ptr<GlobSet>> sets_;
};

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
};

struct WalkStats {
  uint64_t dirs = 0;
  uint64_t files = 0;
  uint64_t unreadable = 0;  // directories that could not be opened or listed
};

// Called for each regular file (and, if asked, directory and symlink) that
// passes the filters. `worker` is in [0, threads).
using WalkVisitor = std::function<void(const WalkEntry& entry, int worker)>;

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

}  // namespace toolexec::search

#endif  // TOOLEXEC_TOOLS_BUILTIN_SEARCH_WALKER_H_

// Gitignore-style globs: the patterns of .gitignore files, of find_file and of
// grep_search's `glob` filter.
//
// Syntax (gitignore(5), plus {a,b} alternatives for user globs as in ripgrep):
//   *       any run of characters except '/'      ?    one character except '/'
//   [abc]   [a-z] [!a-z] [^a-z]  a class           \x   the character x
//   **      a whole component: "**/x" x at any depth, "x/**" everything inside
//           x, "a/**/b" zero or more directories between; elsewhere like '*'
//   {a,b}   either alternative (user globs only)
// A pattern with a '/' at its start or middle is anchored to its base
// directory (the .gitignore's directory, or the search directory); one without
// matches the last component at any depth. A trailing '/' matches directories
// only. A leading '!' negates (re-includes); "\!" and "\#" are literal.
//
// Matching is on bytes (RE2 in Latin-1 mode), so file names that are not
// UTF-8 still match; paths are relative to the base, '/'-separated, with no
// leading "./" or trailing '/'.
//
// Thread safety: a GlobSet is immutable once created; Match may run
// concurrently.
#ifndef TOOLEXEC_TOOLS_BUILTIN_SEARCH_GLOB_H_
#define TOOLEXEC_TOOLS_BUILTIN_SEARCH_GLOB_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"
#include "re2/set.h"

namespace toolexec::search {

struct GlobPattern {
  std::string source;  // as written (trimmed)
  std::string regex;   // RE2 syntax matching a whole path relative to the base
  bool negated = false;
  bool dir_only = false;
  bool anchored = false;
};

// The regex (RE2 syntax, for a whole-path match) of a glob body: no leading
// '!', no trailing '/'. `braces` enables {a,b}. `anchored` is set when the
// body has a '/' other than a trailing one (a leading '/' is dropped).
std::string GlobToRegex(absl::string_view glob, bool braces, bool* anchored);

// One line of a .gitignore (or .ignore) file; nullopt for blank lines and
// comments.
std::optional<GlobPattern> ParseGitignoreLine(absl::string_view line);

// A glob given by the model. InvalidArgument (naming the glob) when it is
// empty or compiles to nothing RE2 accepts. A leading "./" is dropped.
absl::StatusOr<GlobPattern> ParseUserGlob(absl::string_view glob);

// An ordered list of patterns where the last one that matches a path decides,
// as in a .gitignore file.
class GlobSet final {
 public:
  // `skip_invalid`: drop patterns RE2 rejects (for .gitignore files, which git
  // treats leniently); otherwise the first one is an InvalidArgument error.
  static absl::StatusOr<std::unique_ptr<GlobSet>> Create(std::vector<GlobPattern> patterns,
                                                         bool skip_invalid);

  // The deciding pattern for `path` (relative to the base), or nullptr when
  // none matches. Directory-only patterns are considered only when `is_dir`.
  const GlobPattern* Match(absl::string_view path, bool is_dir) const;

  // Whether any pattern is not negated (a whitelist, for override globs).
  bool has_positive() const { return has_positive_; }
  bool empty() const { return patterns_.empty(); }
  const std::vector<GlobPattern>& patterns() const { return patterns_; }

 private:
  GlobSet() = default;
  // Index of the deciding pattern in `set`'s index space, or -1.
  int MatchSet(const RE2::Set& set, const std::vector<int>& index, absl::string_view path,
               bool is_dir) const;

  std::vector<GlobPattern> patterns_;
  std::vector<std::unique_ptr<RE2>> regexes_;  // one per pattern; the fallback path
  std::unique_ptr<RE2::Set> all_set_;          // every pattern: for directories
  std::unique_ptr<RE2::Set> file_set_;         // without dir-only patterns
  std::vector<int> all_index_;                 // set index -> pattern index
  std::vector<int> file_index_;
  bool has_positive_ = false;
};

}  // namespace toolexec::search

#endif  // TOOLEXEC_TOOLS_BUILTIN_SEARCH_GLOB_H_

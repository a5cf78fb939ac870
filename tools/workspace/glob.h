// Gitignore-style globs: the patterns of .gitignore files, of find_file and of
// grep_search's `glob` filter.
//
// Syntax (gitignore(5) and git's wildmatch, plus {a,b} alternatives for user
// globs as in ripgrep):
//   *       any run of characters except '/'      ?    one character except '/'
//   [...]   a bracket expression, as git reads one: members, ranges "a-z",
//           POSIX classes "[:digit:]" (alnum alpha blank cntrl digit graph
//           lower print punct space upper xdigit, with git's ASCII meanings),
//           negation "[!...]" or "[^...]", "]" first is a member, "\x" is x.
//           A bracket never matches '/'.
//   \x      the character x
//   **      a whole component: "**/x" x at any depth, "x/**" everything inside
//           x, "a/**/b" zero or more directories between; elsewhere like '*'
//   {a,b}   either alternative (user globs only)
// A pattern with a '/' at its start or middle (anywhere but at its end, even
// inside a bracket or escaped, as git counts it) is anchored to its base
// directory (the .gitignore's directory, or the search directory) and matched
// against the whole relative path; one without is matched against the last
// component, at any depth ("**/x" with no other '/' is the same as "x"). A
// trailing '/' matches directories only. A leading '!' negates (re-includes);
// "\!" and "\#" are literal.
//
// A pattern git can never match (an unclosed '[', a trailing '\', an unknown
// "[:class:]", a bracket such as "[/]" that matches no character) matches
// nothing in a .gitignore, as in git and ripgrep; as a user glob it is an
// InvalidArgument error that says what is wrong. In a .gitignore, a "**" right
// after an anchored pattern's literal prefix spans directories ("a**/x"
// matches "a/x"), as git's matcher has it.
//
// Matching is on bytes (RE2 in Latin-1 mode), so file names that are not
// UTF-8 still match; paths are relative to the base, '/'-separated, with no
// leading "./" or trailing '/'. Literal names ("build", "/out") and suffixes
// ("*.o") are compared without RE2, as git does; a set skips anchored
// patterns whose component count or literal prefix rules a path out, so one
// match costs about the name's length per pattern, not the path's.
//
// Thread safety: a GlobSet is immutable once created; Match may run
// concurrently.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_GLOB_H_
#define TOOLEXEC_TOOLS_WORKSPACE_GLOB_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"
#include "re2/set.h"

namespace toolexec::fs {

struct GlobPattern {
  // How a pattern is matched: a literal compared with the name (anchored:
  // the relative path), "*literal" as a suffix of the name, or RE2.
  enum class Form { kLiteral, kSuffix, kRegex };

  std::string source;  // as written (trimmed)
  // RE2 syntax for a whole match of the last component (not anchored) or of
  // the whole relative path (anchored).
  std::string regex;
  bool negated = false;
  bool dir_only = false;
  bool anchored = false;
  Form form = Form::kRegex;
  // kLiteral, kSuffix: the literal; kRegex: a prefix every match (of the
  // name, or anchored of the path) starts with (may be empty).
  std::string literal;
  // kRegex: a suffix every match ends with (may be empty).
  std::string suffix;
  // Anchored: the number of components a matching path has, or -1 when "**"
  // makes it any number.
  int components = -1;
};

// The parts of one path that a GlobSet looks at.
struct GlobTarget {
  absl::string_view path;  // relative to the set's base
  absl::string_view name;  // its last component
  int components = 1;      // of `path`
};

// `path` split into a GlobTarget.
GlobTarget MakeGlobTarget(absl::string_view path);

// One line of a .gitignore (or .ignore) file; nullopt for blank lines,
// comments and patterns that can match nothing.
std::optional<GlobPattern> ParseGitignoreLine(absl::string_view line);

// A glob given by the model. InvalidArgument (naming the glob and the
// problem) when it is empty or not a valid glob. A leading "./" is dropped.
absl::StatusOr<GlobPattern> ParseUserGlob(absl::string_view glob);

// An ordered list of patterns where the last one that matches a path decides,
// as in a .gitignore file.
class GlobSet final {
 public:
  // `skip_invalid`: drop patterns RE2 rejects (for .gitignore files, which git
  // treats leniently); otherwise the first one is an InvalidArgument error.
  static absl::StatusOr<std::unique_ptr<GlobSet>> Create(std::vector<GlobPattern> patterns,
                                                         bool skip_invalid);

  // The kinds of pattern, for a caller that matches them separately.
  enum Kind : unsigned {
    kNameLiteral = 1,  // not anchored, kLiteral or kSuffix: only the name decides
    kFixedPath = 2,    // anchored, no "**", at most kMaxFixedComponents components:
                       // only paths of `components` components
    kOther = 4,        // the rest: RE2 on the name, or anchored with "**"
    kAllKinds = 7,
  };
  static constexpr int kMaxFixedComponents = 63;
  static Kind KindOf(const GlobPattern& p);

  // The deciding pattern for `path` (relative to the base), or nullptr when
  // none matches. Directory-only patterns are considered only when `is_dir`.
  const GlobPattern* Match(absl::string_view path, bool is_dir) const;
  // The same, among the patterns of `kinds` only.
  const GlobPattern* Match(const GlobTarget& target, bool is_dir,
                           unsigned kinds = kAllKinds) const;

  // Whether any pattern is not negated (a whitelist, for override globs).
  bool has_positive() const { return has_positive_; }
  bool empty() const { return patterns_.empty(); }
  const std::vector<GlobPattern>& patterns() const { return patterns_; }

 private:
  // The RE2 patterns matched against the name, anchored without "**", and
  // anchored with it; each as one RE2::Set per entry kind.
  enum Group { kNameGroup, kFixedGroup, kVariableGroup, kGroups };
  struct RegexGroup {
    std::unique_ptr<RE2::Set> set;
    std::vector<int> index;  // set index -> pattern index
  };

  GlobSet() = default;
  // Index of the deciding pattern of `group` for `text`, or -1.
  int MatchGroup(const RegexGroup& group, absl::string_view text, bool is_dir) const;
  // Whether a pattern of group `g` could match `target` (cheap checks of its
  // literal prefix, suffix and component count), so the RE2 call can be saved.
  bool MayMatch(Group g, const GlobTarget& target, bool is_dir) const;

  std::vector<GlobPattern> patterns_;
  std::vector<std::unique_ptr<RE2>> regexes_;  // per pattern (kRegex only): the fallback path
  std::vector<int> fast_;                      // kLiteral and kSuffix patterns, last first
  std::vector<int> members_[kGroups];          // the kRegex patterns of each group
  RegexGroup files_[kGroups];                  // without dir-only patterns
  RegexGroup dirs_[kGroups];                   // every pattern
  bool has_positive_ = false;
};

}  // namespace toolexec::fs

#endif  // TOOLEXEC_TOOLS_WORKSPACE_GLOB_H_

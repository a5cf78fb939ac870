// Finding matching lines in a buffer: the core of search_directory and
// grep_search.
//
// A LineMatcher is compiled once per search and cloned per worker (each clone
// has its own RE2, so workers never contend for RE2's DFA cache lock). It
// picks the fastest sound strategy for the pattern:
//   - a literal (search_directory's query, or a grep pattern with no regex
//     syntax): a rare-byte memchr scan over the whole buffer (LiteralFinder),
//     case-folded for ASCII needles when case-insensitive;
//   - a regex with a literal every match must contain (found with RE2's
//     FilteredRE2 prefilter, e.g. "std::" in "\bstd::[a-z_]+_ptr<"): scan for
//     that literal, then run RE2 only on the lines that contain it;
//   - any other regex: RE2 over the whole buffer at once, never line by line.
// Matches never span lines (RE2's never_nl, as ripgrep), '^' and '$' match at
// line boundaries, and lines end at '\n' (a '\r' before it is part of the
// line, as in ripgrep).
//
// Thread safety: a LineMatcher is immutable; FindLine may run concurrently,
// but each worker should use its own Clone() for speed.
#ifndef TOOLEXEC_TOOLS_SEARCH_MATCHER_H_
#define TOOLEXEC_TOOLS_SEARCH_MATCHER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"
#include "tools/search/literal.h"

namespace toolexec::search {

struct MatcherOptions {
  std::string pattern;
  bool literal = false;  // `pattern` is a plain string, not a regex
  bool case_insensitive = false;
};

class LineMatcher final {
 public:
  enum class Strategy { kLiteral, kRequiredLiteral, kRegex };

  // InvalidArgument with RE2's message for a regex RE2 rejects.
  static absl::StatusOr<std::unique_ptr<LineMatcher>> Create(const MatcherOptions& options);

  // An equivalent matcher with its own RE2 (for another worker).
  std::unique_ptr<LineMatcher> Clone() const;

  // The first line in text[from, text.size()) that matches; `from` must be at
  // a line start. Sets [*line_start, *line_end) to the line without its '\n'.
  // Lines are the '\n'-terminated pieces of `text`, plus a final piece with
  // no '\n' if non-empty.
  bool FindLine(absl::string_view text, size_t from, size_t* line_start, size_t* line_end) const;

  // Whether any line of text[from, text.size()) matches: FindLine without the
  // line's bounds, which saves RE2 a reverse scan for the match start.
  bool AnyLine(absl::string_view text, size_t from) const;

  Strategy strategy() const { return strategy_; }
  // The literal scanned for (kLiteral, kRequiredLiteral), for tests and logs.
  std::string prefilter() const { return finder_ ? finder_->needle() : ""; }

 private:
  LineMatcher() = default;

  Strategy strategy_ = Strategy::kRegex;
  std::string regex_;  // the RE2 pattern actually compiled (kRequiredLiteral, kRegex)
  RE2::Options re2_options_;
  std::unique_ptr<RE2> re_;
  std::shared_ptr<const LiteralFinder> finder_;
  // The regex matches an empty string, so a match may sit after the last line
  // (where no line is): AnyLine must then locate it like FindLine.
  bool matches_empty_ = false;
};

// Whether `pattern` has no regex syntax, so it can be searched as a literal.
// Sets *literal to the text it matches (with "\." style escapes removed).
bool IsPlainLiteral(absl::string_view pattern, std::string* literal);

}  // namespace toolexec::search

#endif  // TOOLEXEC_TOOLS_SEARCH_MATCHER_H_

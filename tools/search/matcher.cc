#include "tools/search/matcher.h"

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "re2/filtered_re2.h"

namespace toolexec::search {
namespace {

// The DFA's memory budget: large enough that a complex pattern over a big
// tree stays in the DFA (RE2 falls back to a much slower NFA when it runs out).
constexpr int64_t kRe2MaxMem = 64 << 20;
// Shorter required literals hit too often to beat a DFA scan.
constexpr int kMinAtomLength = 3;

bool IsRegexMeta(char c) {
  switch (c) {
    case '\\':
    case '.':
    case '+':
    case '*':
    case '?':
    case '(':
    case ')':
    case '|':
    case '[':
    case ']':
    case '{':
    case '}':
    case '^':
    case '$':
      return true;
    default:
      return false;
  }
}

bool IsAsciiAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool IsAscii(absl::string_view s) {
  for (unsigned char c : s) {
    if (c >= 0x80) return false;
  }
  return true;
}

// A finder for `literal` if the literal strategy applies to it.
std::shared_ptr<const LiteralFinder> LiteralFinderFor(absl::string_view literal,
                                                      bool case_insensitive) {
  if (literal.empty() || literal.find('\n') != absl::string_view::npos) return nullptr;
  if (!case_insensitive) return std::make_shared<const LiteralFinder>(literal, false);
  if (LiteralFinder::CanFold(literal)) return std::make_shared<const LiteralFinder>(literal, true);
  return nullptr;  // non-ASCII case folding: leave it to RE2
}

// The best literal that every match of `regex` contains, found by asking RE2's
// prefilter which of its atoms no match can do without.
std::shared_ptr<const LiteralFinder> RequiredLiteral(const std::string& regex,
                                                     const RE2::Options& options) {
  re2::FilteredRE2 filter(kMinAtomLength);
  int id = 0;
  if (filter.Add(regex, options, &id) != RE2::NoError) return nullptr;
  std::vector<std::string> atoms;
  filter.Compile(&atoms);
  std::shared_ptr<const LiteralFinder> best;
  for (size_t i = 0; i < atoms.size(); ++i) {
    // Atoms are lower-cased, so they are searched folded (a sound superset
    // for a case-sensitive regex too); non-ASCII atoms would need Unicode
    // folding of the text.
    if (!IsAscii(atoms[i]) || !LiteralFinder::CanFold(atoms[i]) ||
        atoms[i].find('\n') != std::string::npos) {
      continue;
    }
    std::vector<int> others;
    for (size_t j = 0; j < atoms.size(); ++j) {
      if (j != i) others.push_back(static_cast<int>(j));
    }
    std::vector<int> potential;
    filter.AllPotentials(others, &potential);
    if (!potential.empty()) continue;  // the regex can match without this atom
    auto finder = std::make_shared<const LiteralFinder>(atoms[i], true);
    if (best == nullptr || finder->rarity() < best->rarity() ||
        (finder->rarity() == best->rarity() && finder->needle().size() > best->needle().size())) {
      best = std::move(finder);
    }
  }
  return best;
}

inline size_t LineStart(absl::string_view text, size_t from, size_t pos) {
  if (pos <= from) return from;
  const void* nl = memrchr(text.data() + from, '\n', pos - from);
  return nl == nullptr ? from : static_cast<size_t>(static_cast<const char*>(nl) - text.data()) + 1;
}

inline size_t LineEnd(absl::string_view text, size_t pos) {
  const void* nl = memchr(text.data() + pos, '\n', text.size() - pos);
  return nl == nullptr ? text.size()
                       : static_cast<size_t>(static_cast<const char*>(nl) - text.data());
}

}  // namespace

bool IsPlainLiteral(absl::string_view pattern, std::string* literal) {
  literal->clear();
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '\\') {
      if (i + 1 >= pattern.size()) return false;
      const char next = pattern[i + 1];
      // "\." is a literal dot; "\d", "\b", "\n", "\x41"... are regex syntax.
      if (IsAsciiAlnum(next) || static_cast<unsigned char>(next) >= 0x80) return false;
      literal->push_back(next);
      ++i;
    } else if (IsRegexMeta(c)) {
      return false;
    } else {
      literal->push_back(c);
    }
  }
  return true;
}

absl::StatusOr<std::unique_ptr<LineMatcher>> LineMatcher::Create(const MatcherOptions& options) {
  std::unique_ptr<LineMatcher> m(new LineMatcher());
  m->re2_options_.set_log_errors(false);
  m->re2_options_.set_never_nl(true);
  m->re2_options_.set_case_sensitive(!options.case_insensitive);
  m->re2_options_.set_max_mem(kRe2MaxMem);

  std::string literal;
  if (options.literal) {
    literal = options.pattern;
    m->regex_ = RE2::QuoteMeta(options.pattern);
  } else {
    // Compiled as given first, so an error quotes the model's own pattern.
    RE2 check(options.pattern, m->re2_options_);
    if (!check.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid regex '", options.pattern, "': ", check.error(),
                       " (RE2 syntax; escape special characters with '\\', or use "
                       "search_directory for a literal string)"));
    }
    m->regex_ = options.pattern;
    if (!IsPlainLiteral(options.pattern, &literal)) literal.clear();
  }
  m->finder_ = LiteralFinderFor(literal, options.case_insensitive);
  if (m->finder_ != nullptr) {
    m->strategy_ = Strategy::kLiteral;
    return m;
  }
  // '^' and '$' at line boundaries when the whole buffer is matched at once.
  m->regex_ = absl::StrCat("(?m)", m->regex_);
  m->re_ = std::make_unique<RE2>(m->regex_, m->re2_options_);
  if (!m->re_->ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid regex '", options.pattern, "': ", m->re_->error()));
  }
  m->matches_empty_ = RE2::PartialMatch("", *m->re_);
  m->finder_ = RequiredLiteral(m->regex_, m->re2_options_);
  m->strategy_ = m->finder_ != nullptr ? Strategy::kRequiredLiteral : Strategy::kRegex;
  return m;
}

std::unique_ptr<LineMatcher> LineMatcher::Clone() const {
  std::unique_ptr<LineMatcher> m(new LineMatcher());
  m->strategy_ = strategy_;
  m->regex_ = regex_;
  m->re2_options_ = re2_options_;
  m->finder_ = finder_;
  m->matches_empty_ = matches_empty_;
  if (re_ != nullptr) m->re_ = std::make_unique<RE2>(regex_, re2_options_);
  return m;
}

bool LineMatcher::FindLine(absl::string_view text, size_t from, size_t* line_start,
                           size_t* line_end) const {
  if (from >= text.size()) return false;  // no line starts at the end
  switch (strategy_) {
    case Strategy::kLiteral: {
      const size_t pos = finder_->Find(text, from);
      if (pos == absl::string_view::npos) return false;
      *line_start = LineStart(text, from, pos);
      *line_end = LineEnd(text, pos);
      return true;
    }
    case Strategy::kRequiredLiteral: {
      while (from < text.size()) {
        const size_t pos = finder_->Find(text, from);
        if (pos == absl::string_view::npos) return false;
        const size_t start = LineStart(text, from, pos);
        const size_t end = LineEnd(text, pos);
        if (RE2::PartialMatch(re2::StringPiece(text.data() + start, end - start), *re_)) {
          *line_start = start;
          *line_end = end;
          return true;
        }
        from = end + 1;
      }
      return false;
    }
    case Strategy::kRegex: {
      re2::StringPiece match;
      if (!re_->Match(re2::StringPiece(text.data(), text.size()), from, text.size(),
                      RE2::UNANCHORED, &match, 1)) {
        return false;
      }
      const size_t pos = static_cast<size_t>(match.data() - text.data());
      // An empty match after the final '\n' is not on any line.
      if (pos == text.size() && text[pos - 1] == '\n') return false;
      *line_start = LineStart(text, from, pos);
      *line_end = LineEnd(text, pos);
      return true;
    }
  }
  return false;
}

bool LineMatcher::AnyLine(absl::string_view text, size_t from) const {
  if (strategy_ != Strategy::kRegex || matches_empty_) {
    size_t s = 0;
    size_t e = 0;
    return FindLine(text, from, &s, &e);
  }
  if (from >= text.size()) return false;
  return re_->Match(re2::StringPiece(text.data(), text.size()), from, text.size(), RE2::UNANCHORED,
                    nullptr, 0);
}

}  // namespace toolexec::search

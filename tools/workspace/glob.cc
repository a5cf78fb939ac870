#include "tools/workspace/glob.h"

#include <algorithm>
#include <bitset>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace toolexec::fs {
namespace {

void AppendLiteral(char c, std::string* out) {
  const unsigned char u = static_cast<unsigned char>(c);
  if ((u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '_' ||
      u == '/' || u >= 0x80) {
    out->push_back(c);
  } else if (u == 0) {
    out->append("\\x00");
  } else {
    out->push_back('\\');
    out->push_back(c);
  }
}

// git's meanings of the POSIX classes (its own ctype: ASCII only, and
// "space" without \v and \f). False for an unknown name.
bool AddClass(absl::string_view name, std::bitset<256>* bytes) {
  auto range = [bytes](int lo, int hi) {
    for (int c = lo; c <= hi; ++c) bytes->set(static_cast<size_t>(c));
  };
  if (name == "alnum") {
    range('0', '9'), range('A', 'Z'), range('a', 'z');
  } else if (name == "alpha") {
    range('A', 'Z'), range('a', 'z');
  } else if (name == "blank") {
    range('\t', '\t'), range(' ', ' ');
  } else if (name == "cntrl") {
    range(0x00, 0x1f), range(0x7f, 0x7f);
  } else if (name == "digit") {
    range('0', '9');
  } else if (name == "graph") {
    range(0x21, 0x7e);
  } else if (name == "lower") {
    range('a', 'z');
  } else if (name == "print") {
    range(0x20, 0x7e);
  } else if (name == "punct") {
    range(0x21, 0x2f), range(0x3a, 0x40), range(0x5b, 0x60), range(0x7b, 0x7e);
  } else if (name == "space") {
    range('\t', '\n'), range('\r', '\r'), range(' ', ' ');
  } else if (name == "upper") {
    range('A', 'Z');
  } else if (name == "xdigit") {
    range('0', '9'), range('A', 'F'), range('a', 'f');
  } else {
    return false;
  }
  return true;
}

// A bracket expression opening at glob[open], read as git's wildmatch reads
// it: the bytes it matches (never '/') and the index of its closing ']'.
struct Bracket {
  std::bitset<256> bytes;
  size_t end = absl::string_view::npos;
  bool valid = false;  // false: not closed, or an unknown [:class:]
};

Bracket ParseBracket(absl::string_view glob, size_t open) {
  Bracket b;
  size_t p = open + 1;
  bool negated = false;
  if (p < glob.size() && (glob[p] == '!' || glob[p] == '^')) {
    negated = true;
    ++p;
  }
  int prev = -1;  // the previous single member, which a '-' makes a range start
  for (bool first = true;; first = false, ++p) {
    if (p >= glob.size()) return b;
    unsigned char c = static_cast<unsigned char>(glob[p]);
    if (c == ']' && !first) break;
    if (c == '\\') {
      if (++p >= glob.size()) return b;
      c = static_cast<unsigned char>(glob[p]);
      b.bytes.set(c);
      prev = c;
    } else if (c == '-' && prev >= 0 && p + 1 < glob.size() && glob[p + 1] != ']') {
      unsigned char hi = static_cast<unsigned char>(glob[++p]);
      if (hi == '\\') {
        if (++p >= glob.size()) return b;
        hi = static_cast<unsigned char>(glob[p]);
      }
      for (int x = prev; x <= hi; ++x) b.bytes.set(static_cast<size_t>(x));
      prev = -1;
    } else if (c == '[' && p + 1 < glob.size() && glob[p + 1] == ':') {
      const size_t name = p + 2;
      size_t close = name;
      while (close < glob.size() && glob[close] != ']') ++close;
      if (close >= glob.size()) return b;
      if (close == name || glob[close - 1] != ':') {  // no ":]": a plain '['
        b.bytes.set('[');
        prev = '[';
        continue;
      }
      if (!AddClass(glob.substr(name, close - name - 1), &b.bytes)) return b;
      prev = -1;
      p = close;
    } else {
      b.bytes.set(c);
      prev = c;
    }
  }
  if (negated) b.bytes.flip();
  b.bytes.reset('/');
  b.bytes.reset(0);
  b.end = p;
  b.valid = true;
  return b;
}

void AppendClass(const std::bitset<256>& bytes, std::string* out) {
  if (bytes.none()) {
    out->append("[^\\x00-\\x{ff}]");  // matches nothing
    return;
  }
  out->push_back('[');
  for (int c = 0; c < 256;) {
    if (!bytes.test(static_cast<size_t>(c))) {
      ++c;
      continue;
    }
    int hi = c;
    while (hi + 1 < 256 && bytes.test(static_cast<size_t>(hi + 1))) ++hi;
    absl::StrAppend(out, "\\x{", absl::Hex(c), "}");
    if (hi > c) absl::StrAppend(out, "-\\x{", absl::Hex(hi), "}");
    c = hi + 1;
  }
  out->push_back(']');
}

// Index of the '}' closing a brace group opened at glob[open], or npos.
size_t BraceEnd(absl::string_view glob, size_t open) {
  int depth = 0;
  for (size_t j = open; j < glob.size(); ++j) {
    const char c = glob[j];
    if (c == '\\') {
      ++j;
    } else if (c == '[') {
      const Bracket b = ParseBracket(glob, j);
      if (b.valid) j = b.end;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (--depth == 0) return j;
    }
  }
  return absl::string_view::npos;
}

// The body of a glob (no '!', no trailing '/') as RE2 syntax, with what the
// set needs to know to match it quickly.
class GlobTranslator {
 public:
  explicit GlobTranslator(bool braces) : braces_(braces) {}

  void Translate(absl::string_view glob) { Run(glob, 0, glob.size(), true, true); }

  // Treats a "*" run at glob[i] as starting a component. git matches an
  // anchored pattern's literal prefix first and the rest on its own, so a
  // "**" right after that prefix counts as a whole component there ("a**/x"
  // matches "a/x" and "ab/c/x").
  void StartComponentAt(size_t i) { extra_start_ = i; }

  const std::string& regex() const { return out_; }
  // Empty when valid; otherwise why the glob can match nothing.
  const std::string& error() const { return error_; }
  bool matches_nothing() const { return nothing_; }
  // The literal text before the first wildcard.
  const std::string& prefix() const { return prefix_; }
  // The literal text after the last wildcard.
  const std::string& suffix() const { return tail_; }
  bool literal() const { return !special_; }
  int components() const { return variable_ ? -1 : separators_ + 1; }

 private:
  void Literal(char c) {
    AppendLiteral(c, &out_);
    if (!special_) prefix_.push_back(c);
    tail_.push_back(c);
    if (c == '/') {
      if (depth_ > 0) variable_ = true;
      ++separators_;
    }
  }

  // Translates glob[begin, end); `start_ok`/`end_ok`: whether `begin`/`end`
  // are component boundaries (for "**").
  void Run(absl::string_view glob, size_t begin, size_t end, bool start_ok, bool end_ok) {
    for (size_t i = begin; i < end && error_.empty(); ++i) {
      const char c = glob[i];
      switch (c) {
        case '\\':
          if (i + 1 >= end) {
            error_ = "it ends with an unescaped '\\'";
            return;
          }
          Literal(glob[++i]);
          break;
        case '*': {
          size_t j = i;
          while (j < end && glob[j] == '*') ++j;
          const bool at_start =
              i == extra_start_ || (i == begin ? start_ok : glob[i - 1] == '/');
          const bool at_end = j == end ? end_ok
                                       : glob[j] == '/' ||
                                             (glob[j] == '\\' && j + 1 < end && glob[j + 1] == '/');
          special_ = true;
          tail_.clear();
          if (j - i >= 2 && at_start && at_end) {
            variable_ = true;
            if (j == end) {
              out_.append(".*");
            } else {
              out_.append("(?:.*/)?");
              j += glob[j] == '/' ? 1 : 2;
            }
          } else {
            out_.append("[^/]*");
          }
          i = j - 1;
          break;
        }
        case '?':
          special_ = true;
          tail_.clear();
          out_.append("[^/]");
          break;
        case '[': {
          const Bracket b = ParseBracket(glob.substr(0, end), i);
          if (!b.valid) {
            error_ = "a '[' is not closed or names an unknown [:class:] (write '\\[' for a '[')";
            return;
          }
          special_ = true;
          tail_.clear();
          if (b.bytes.none()) nothing_ = true;
          AppendClass(b.bytes, &out_);
          i = b.end;
          break;
        }
        case '{': {
          const size_t close = braces_ ? BraceEnd(glob.substr(0, end), i) : absl::string_view::npos;
          if (close == absl::string_view::npos) {
            Literal(c);
            break;
          }
          special_ = true;
          const bool at_start = i == begin ? start_ok : glob[i - 1] == '/';
          const bool at_end = close + 1 == end ? end_ok : glob[close + 1] == '/';
          ++depth_;
          out_.append("(?:");
          size_t alt = i + 1;
          for (size_t j = i + 1; j <= close; ++j) {
            const char d = glob[j];
            if (d == '\\') {
              ++j;
            } else if (d == '[') {
              const Bracket b = ParseBracket(glob.substr(0, close), j);
              if (b.valid) j = b.end;
            } else if (d == '{') {
              const size_t inner = BraceEnd(glob.substr(0, close), j);
              if (inner != absl::string_view::npos) j = inner;
            } else if (d == ',' || j == close) {
              if (alt > i + 1) out_.push_back('|');
              Run(glob, alt, j, at_start, at_end);
              alt = j + 1;
            }
          }
          out_.push_back(')');
          --depth_;
          tail_.clear();
          i = close;
          break;
        }
        default:
          Literal(c);
      }
    }
  }

  const bool braces_;
  std::string out_;
  std::string error_;
  std::string prefix_;
  std::string tail_;
  bool nothing_ = false;
  bool special_ = false;   // a wildcard was seen
  bool variable_ = false;  // "**", or a '/' inside braces
  int separators_ = 0;
  int depth_ = 0;  // brace nesting
  size_t extra_start_ = absl::string_view::npos;
};

// Fills in `p` from `body` (no '!', no trailing '/'); the reason when the
// glob can match nothing, "" otherwise.
std::string CompileBody(absl::string_view body, bool braces, GlobPattern* p) {
  p->anchored = body.find('/') != absl::string_view::npos;
  if (!body.empty() && body.front() == '/') body.remove_prefix(1);
  // "**/name" is "name" at any depth.
  if (body.size() > 3 && body.substr(0, 3) == "**/" &&
      body.find('/', 3) == absl::string_view::npos) {
    body.remove_prefix(3);
    p->anchored = false;
  }
  if (body.empty()) return "it is empty";
  GlobTranslator t(braces);
  if (!braces && p->anchored) {  // a .gitignore line, matched as git does
    const size_t special = body.find_first_of("*?[\\");
    if (special != absl::string_view::npos && body[special] == '*') t.StartComponentAt(special);
  }
  t.Translate(body);
  if (!t.error().empty()) return t.error();
  if (t.matches_nothing()) return "a bracket in it matches no character";
  p->regex = t.regex();
  p->components = p->anchored ? t.components() : -1;
  p->literal = t.prefix();
  p->suffix = t.suffix();
  p->form = GlobPattern::Form::kRegex;
  if (t.literal()) {
    p->form = GlobPattern::Form::kLiteral;
  } else if (!p->anchored && body.size() > 1 && body[0] == '*' && body[1] != '*') {
    GlobTranslator rest(braces);
    rest.Translate(body.substr(1));
    if (rest.error().empty() && rest.literal()) {
      p->form = GlobPattern::Form::kSuffix;
      p->literal = rest.prefix();
    }
  }
  return "";
}

RE2::Options GlobRe2Options() {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);  // paths are bytes
  options.set_dot_nl(true);
  options.set_log_errors(false);
  return options;
}

}  // namespace

GlobTarget MakeGlobTarget(absl::string_view path) {
  GlobTarget t;
  t.path = path;
  const size_t slash = path.rfind('/');
  t.name = slash == absl::string_view::npos ? path : path.substr(slash + 1);
  t.components = 1 + static_cast<int>(std::count(path.begin(), path.end(), '/'));
  return t;
}

std::optional<GlobPattern> ParseGitignoreLine(absl::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // Trailing spaces are dropped unless escaped with a backslash.
  while (!line.empty() && line.back() == ' ') {
    size_t backslashes = 0;
    for (size_t j = line.size() - 1; j-- > 0 && line[j] == '\\';) ++backslashes;
    if (backslashes % 2 == 1) break;
    line.remove_suffix(1);
  }
  if (line.empty() || line.front() == '#') return std::nullopt;
  GlobPattern p;
  p.source = std::string(line);
  if (line.front() == '!') {
    p.negated = true;
    line.remove_prefix(1);
  }
  if (!line.empty() && line.back() == '/') {
    p.dir_only = true;
    line.remove_suffix(1);
  }
  // "/" or "!" alone, and patterns git can never match, match nothing.
  if (line.empty() || !CompileBody(line, /*braces=*/false, &p).empty()) return std::nullopt;
  return p;
}

absl::StatusOr<GlobPattern> ParseUserGlob(absl::string_view glob) {
  GlobPattern p;
  p.source = std::string(glob);
  absl::string_view body = glob;
  if (!body.empty() && body.front() == '!') {
    p.negated = true;
    body.remove_prefix(1);
  }
  while (body.size() >= 2 && body.substr(0, 2) == "./") body.remove_prefix(2);
  if (!body.empty() && body.back() == '/') {
    p.dir_only = true;
    body.remove_suffix(1);
  }
  if (body.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "glob '", glob, "' matches nothing; give a pattern such as '*.cc' or 'src/**/*.h'"));
  }
  const std::string problem = CompileBody(body, /*braces=*/true, &p);
  if (!problem.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("glob '", glob, "' can match nothing: ", problem));
  }
  RE2 re(p.regex, GlobRe2Options());
  if (!re.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("glob '", glob, "' is not valid: ", re.error()));
  }
  return p;
}

absl::StatusOr<std::unique_ptr<GlobSet>> GlobSet::Create(std::vector<GlobPattern> patterns,
                                                         bool skip_invalid) {
  std::unique_ptr<GlobSet> set(new GlobSet());
  const RE2::Options options = GlobRe2Options();
  auto add = [&options](RegexGroup& group, const std::string& regex, int index) {
    if (group.set == nullptr) group.set = std::make_unique<RE2::Set>(options, RE2::ANCHOR_BOTH);
    if (group.set->Add(regex, nullptr) >= 0) group.index.push_back(index);
  };
  for (GlobPattern& p : patterns) {
    const int index = static_cast<int>(set->patterns_.size());
    std::unique_ptr<RE2> re;
    if (p.form == GlobPattern::Form::kRegex) {
      re = std::make_unique<RE2>(p.regex, options);
      if (!re->ok()) {
        if (skip_invalid) continue;
        return absl::InvalidArgumentError(
            absl::StrCat("glob '", p.source, "' is not valid: ", re->error()));
      }
      const Kind kind = KindOf(p);
      const Group g = kind == kFixedPath ? kFixedGroup : p.anchored ? kVariableGroup : kNameGroup;
      add(set->dirs_[g], p.regex, index);
      if (!p.dir_only) add(set->files_[g], p.regex, index);
      set->members_[g].push_back(index);
    } else {
      set->fast_.insert(set->fast_.begin(), index);
    }
    if (!p.negated) set->has_positive_ = true;
    set->regexes_.push_back(std::move(re));
    set->patterns_.push_back(std::move(p));
  }
  for (int g = 0; g < kGroups; ++g) {
    for (RegexGroup* group : {&set->files_[g], &set->dirs_[g]}) {
      if (group->set != nullptr && !group->set->Compile()) {
        return absl::ResourceExhaustedError("too many glob patterns to compile");
      }
    }
  }
  return set;
}

GlobSet::Kind GlobSet::KindOf(const GlobPattern& p) {
  if (!p.anchored) return p.form == GlobPattern::Form::kRegex ? kOther : kNameLiteral;
  return p.components >= 0 && p.components <= kMaxFixedComponents ? kFixedPath : kOther;
}

int GlobSet::MatchGroup(const RegexGroup& group, absl::string_view text, bool is_dir) const {
  if (group.set == nullptr) return -1;
  std::vector<int> hits;
  RE2::Set::ErrorInfo error;
  const re2::StringPiece piece(text.data(), text.size());
  if (group.set->Match(piece, &hits, &error)) {
    int best = -1;
    for (int h : hits) best = std::max(best, group.index[static_cast<size_t>(h)]);
    return best;
  }
  if (error.kind == RE2::Set::kNoError) return -1;
  // The DFA ran out of memory (a huge ignore file): match one by one.
  for (size_t k = group.index.size(); k-- > 0;) {
    const size_t i = static_cast<size_t>(group.index[k]);
    if (patterns_[i].dir_only && !is_dir) continue;
    if (RE2::FullMatch(piece, *regexes_[i])) return static_cast<int>(i);
  }
  return -1;
}

bool GlobSet::MayMatch(Group g, const GlobTarget& target, bool is_dir) const {
  const absl::string_view text = g == kNameGroup ? target.name : target.path;
  for (int i : members_[g]) {
    const GlobPattern& p = patterns_[static_cast<size_t>(i)];
    if (p.dir_only && !is_dir) continue;
    if (g == kFixedGroup && p.components != target.components) continue;
    if (absl::EndsWith(text, p.suffix) && absl::StartsWith(text, p.literal)) return true;
  }
  return false;
}

const GlobPattern* GlobSet::Match(absl::string_view path, bool is_dir) const {
  return Match(MakeGlobTarget(path), is_dir);
}

const GlobPattern* GlobSet::Match(const GlobTarget& target, bool is_dir, unsigned kinds) const {
  int best = -1;
  // Last first: the first hit is the deciding one among them.
  for (size_t k = 0; k < fast_.size() && (kinds & (kNameLiteral | kFixedPath)) != 0; ++k) {
    const int i = fast_[k];
    const GlobPattern& p = patterns_[static_cast<size_t>(i)];
    if ((p.dir_only && !is_dir) || (KindOf(p) & kinds) == 0) continue;
    const bool hit = p.form == GlobPattern::Form::kSuffix ? absl::EndsWith(target.name, p.literal)
                     : p.anchored                         ? target.path == p.literal
                                                          : target.name == p.literal;
    if (hit) {
      best = i;
      break;
    }
  }
  for (Group g : {kNameGroup, kFixedGroup, kVariableGroup}) {
    if ((kinds & (g == kFixedGroup ? kFixedPath : kOther)) == 0 || members_[g].empty() ||
        !MayMatch(g, target, is_dir)) {
      continue;
    }
    const RegexGroup& group = is_dir ? dirs_[g] : files_[g];
    best = std::max(best, MatchGroup(group, g == kNameGroup ? target.name : target.path, is_dir));
  }
  return best < 0 ? nullptr : &patterns_[static_cast<size_t>(best)];
}

}  // namespace toolexec::fs

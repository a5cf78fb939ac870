#include "tools/builtin/search/glob.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace toolexec::search {
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

// Index of the ']' closing a class opened at glob[open], or npos.
size_t ClassEnd(absl::string_view glob, size_t open) {
  size_t j = open + 1;
  if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) ++j;
  if (j < glob.size() && glob[j] == ']') ++j;  // a leading ']' is a member
  while (j < glob.size() && glob[j] != ']') {
    if (glob[j] == '\\') ++j;
    ++j;
  }
  return j < glob.size() ? j : absl::string_view::npos;
}

// Index of the '}' closing a brace group opened at glob[open], or npos.
size_t BraceEnd(absl::string_view glob, size_t open) {
  int depth = 0;
  for (size_t j = open; j < glob.size(); ++j) {
    const char c = glob[j];
    if (c == '\\') {
      ++j;
    } else if (c == '[') {
      const size_t end = ClassEnd(glob, j);
      if (end != absl::string_view::npos) j = end;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (--depth == 0) return j;
    }
  }
  return absl::string_view::npos;
}

// Splits at top-level occurrences of `sep` (outside classes, braces, escapes).
std::vector<absl::string_view> SplitTopLevel(absl::string_view glob, char sep, bool braces) {
  std::vector<absl::string_view> parts;
  size_t start = 0;
  for (size_t j = 0; j < glob.size(); ++j) {
    const char c = glob[j];
    if (c == '\\') {
      ++j;
    } else if (c == '[') {
      const size_t end = ClassEnd(glob, j);
      if (end != absl::string_view::npos) j = end;
    } else if (c == '{' && braces) {
      const size_t end = BraceEnd(glob, j);
      if (end != absl::string_view::npos) j = end;
    } else if (c == sep) {
      parts.push_back(glob.substr(start, j - start));
      start = j + 1;
    }
  }
  parts.push_back(glob.substr(start));
  return parts;
}

// Translates a run of glob text with no special meaning for "**" or '/'.
void TranslateSegment(absl::string_view glob, bool braces, std::string* out) {
  for (size_t i = 0; i < glob.size(); ++i) {
    const char c = glob[i];
    switch (c) {
      case '\\':
        if (i + 1 < glob.size()) {
          AppendLiteral(glob[++i], out);
        } else {
          AppendLiteral('\\', out);
        }
        break;
      case '*':
        while (i + 1 < glob.size() && glob[i + 1] == '*') ++i;
        out->append("[^/]*");
        break;
      case '?':
        out->append("[^/]");
        break;
      case '[': {
        const size_t end = ClassEnd(glob, i);
        if (end == absl::string_view::npos) {
          AppendLiteral('[', out);
          break;
        }
        size_t j = i + 1;
        out->push_back('[');
        if (glob[j] == '!' || glob[j] == '^') {
          out->append("^/");  // a negated class never matches the separator
          ++j;
        }
        for (bool first = true; j < end; ++j, first = false) {
          char m = glob[j];
          if (m == '\\' && j + 1 < end) m = glob[++j];
          if (m == ']' || m == '[' || m == '\\' || (m == '^' && first)) {
            out->push_back('\\');
            out->push_back(m);
          } else if (m == 0) {
            out->append("\\x00");
          } else {
            out->push_back(m);
          }
        }
        out->push_back(']');
        i = end;
        break;
      }
      case '{': {
        const size_t end = braces ? BraceEnd(glob, i) : absl::string_view::npos;
        if (end == absl::string_view::npos) {
          AppendLiteral('{', out);
          break;
        }
        out->append("(?:");
        bool first = true;
        for (absl::string_view alt : SplitTopLevel(glob.substr(i + 1, end - i - 1), ',', braces)) {
          if (!first) out->push_back('|');
          first = false;
          TranslateSegment(alt, braces, out);
        }
        out->push_back(')');
        i = end;
        break;
      }
      default:
        AppendLiteral(c, out);
    }
  }
}

RE2::Options GlobRe2Options() {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);  // paths are bytes
  options.set_dot_nl(true);
  options.set_log_errors(false);
  return options;
}

}  // namespace

std::string GlobToRegex(absl::string_view glob, bool braces, bool* anchored) {
  if (!glob.empty() && glob.front() == '/') {
    *anchored = true;
    glob.remove_prefix(1);
  } else {
    *anchored = SplitTopLevel(glob, '/', braces).size() > 1;
  }
  const std::vector<absl::string_view> parts = SplitTopLevel(glob, '/', braces);
  std::string out;
  if (!*anchored) out = "(?:.*/)?";
  if (parts.size() == 1 && parts[0] == "**") return out + ".*";
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    if (parts[i] == "**") {
      out.append(last ? ".*" : "(?:.*/)?");
      continue;
    }
    TranslateSegment(parts[i], braces, &out);
    if (!last) out.push_back('/');
  }
  return out;
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
  } else if (line.size() >= 2 && line[0] == '\\' && (line[1] == '!' || line[1] == '#')) {
    line.remove_prefix(1);
  }
  if (!line.empty() && line.back() == '/') {
    p.dir_only = true;
    line.remove_suffix(1);
  }
  if (line.empty()) return std::nullopt;  // "/" or "!" alone matches nothing
  p.regex = GlobToRegex(line, /*braces=*/false, &p.anchored);
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
  p.regex = GlobToRegex(body, /*braces=*/true, &p.anchored);
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
  set->all_set_ = std::make_unique<RE2::Set>(options, RE2::ANCHOR_BOTH);
  set->file_set_ = std::make_unique<RE2::Set>(options, RE2::ANCHOR_BOTH);
  for (GlobPattern& p : patterns) {
    auto re = std::make_unique<RE2>(p.regex, options);
    if (!re->ok()) {
      if (skip_invalid) continue;
      return absl::InvalidArgumentError(
          absl::StrCat("glob '", p.source, "' is not valid: ", re->error()));
    }
    const int index = static_cast<int>(set->patterns_.size());
    if (set->all_set_->Add(p.regex, nullptr) < 0) continue;  // cannot fail after RE2 accepted it
    set->all_index_.push_back(index);
    if (!p.dir_only) {
      set->file_set_->Add(p.regex, nullptr);
      set->file_index_.push_back(index);
    }
    if (!p.negated) set->has_positive_ = true;
    set->regexes_.push_back(std::move(re));
    set->patterns_.push_back(std::move(p));
  }
  if (!set->all_set_->Compile() || !set->file_set_->Compile()) {
    return absl::ResourceExhaustedError("too many glob patterns to compile");
  }
  return set;
}

int GlobSet::MatchSet(const RE2::Set& set, const std::vector<int>& index, absl::string_view path,
                      bool is_dir) const {
  if (index.empty()) return -1;
  std::vector<int> hits;
  RE2::Set::ErrorInfo error;
  if (set.Match(re2::StringPiece(path.data(), path.size()), &hits, &error)) {
    int best = -1;
    for (int h : hits) best = std::max(best, index[h]);
    return best;
  }
  if (error.kind == RE2::Set::kNoError) return -1;
  // The DFA ran out of memory (a huge ignore file): match one by one.
  for (size_t i = patterns_.size(); i-- > 0;) {
    if (patterns_[i].dir_only && !is_dir) continue;
    if (RE2::FullMatch(re2::StringPiece(path.data(), path.size()), *regexes_[i])) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

const GlobPattern* GlobSet::Match(absl::string_view path, bool is_dir) const {
  const int i = is_dir ? MatchSet(*all_set_, all_index_, path, is_dir)
                       : MatchSet(*file_set_, file_index_, path, is_dir);
  return i < 0 ? nullptr : &patterns_[i];
}

}  // namespace toolexec::search

// V4A patches: parsing them, and locating and applying their hunks. See
// apply_patch_v4a.h.
#include "tools/files/apply_patch_v4a.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/types/span.h"
#include "tools/files/edit_engine.h"

namespace toolexec::builtin::v4a {
namespace {

// "@@ -12,5 +12,6 @@ text": a unified-diff range header, and the text after it.
bool UnifiedRangeHeader(absl::string_view header, absl::string_view* rest) {
  absl::string_view h = header;
  if (!absl::ConsumePrefix(&h, "-")) return false;
  size_t close = h.find(" @@");
  if (close == absl::string_view::npos) return false;
  for (char c : h.substr(0, close)) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)) && c != ',' && c != ' ' && c != '+') {
      return false;
    }
  }
  *rest = absl::StripAsciiWhitespace(h.substr(close + 3));
  return true;
}

}  // namespace

absl::Status ParseError(int line, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid patch (line ", line, "): ", message, "; nothing was changed"));
}

absl::StatusOr<std::vector<Op>> ParsePatch(absl::string_view input) {
  std::vector<std::string> lines;
  for (absl::string_view l : absl::StrSplit(input, '\n')) {
    absl::ConsumeSuffix(&l, "\r");
    lines.emplace_back(l);
  }
  auto trimmed = [&](size_t i) { return absl::StripAsciiWhitespace(lines[i]); };
  size_t first = 0, last = lines.size();  // [first, last)
  while (first < last && trimmed(first).empty()) ++first;
  while (last > first && trimmed(last - 1).empty()) --last;
  // The heredoc of OpenAI's examples: %%bash / apply_patch <<"EOF" ... EOF.
  if (first < last && trimmed(first) == "%%bash") ++first;
  if (first < last) {
    absl::string_view head = trimmed(first);
    size_t heredoc = head.find("<<");
    if (heredoc != absl::string_view::npos &&
        (heredoc == 0 || absl::StartsWith(head, "apply_patch") ||
         absl::StartsWith(head, "applypatch"))) {
      std::string marker(absl::StripAsciiWhitespace(head.substr(heredoc + 2)));
      if (marker.size() >= 2 && (marker.front() == '\'' || marker.front() == '"') &&
          marker.back() == marker.front()) {
        marker = marker.substr(1, marker.size() - 2);
      }
      if (marker.empty() || last - first < 2 || trimmed(last - 1) != marker) {
        return ParseError(static_cast<int>(first + 1),
                          absl::StrCat("the heredoc '", head, "' is not closed by a line '",
                                       marker, "' at the end"));
      }
      ++first;
      --last;
    }
  }
  if (first >= last || trimmed(first) != "*** Begin Patch") {
    return ParseError(static_cast<int>(first + 1),
                      "the first line of the patch must be '*** Begin Patch'");
  }
  if (last - first < 2 || trimmed(last - 1) != "*** End Patch") {
    return ParseError(static_cast<int>(last), "the last line of the patch must be '*** End Patch'");
  }
  std::vector<Op> ops;
  size_t i = first + 1;
  const size_t end = last - 1;
  auto line_no = [](size_t index) { return static_cast<int>(index + 1); };
  while (i < end) {
    absl::string_view t = trimmed(i);
    if (t.empty()) {
      ++i;
      continue;
    }
    Op op;
    op.line = line_no(i);
    absl::string_view path = t;
    if (absl::ConsumePrefix(&path, "*** Add File:")) {
      op.kind = OpKind::kAdd;
    } else if (absl::ConsumePrefix(&path, "*** Delete File:")) {
      op.kind = OpKind::kDelete;
    } else if (absl::ConsumePrefix(&path, "*** Update File:")) {
      op.kind = OpKind::kUpdate;
    } else {
      return ParseError(line_no(i), absl::StrCat("'", t,
                                                  "' is not a file operation; expected '*** Add "
                                                  "File: <path>', '*** Delete File: <path>' or "
                                                  "'*** Update File: <path>'"));
    }
    op.path = std::string(absl::StripAsciiWhitespace(path));
    if (op.path.empty()) return ParseError(line_no(i), absl::StrCat(op.Marker(), " names no path"));
    ++i;
    if (op.kind == OpKind::kAdd) {
      while (i < end && absl::StartsWith(lines[i], "+")) {
        absl::StrAppend(&op.contents, absl::string_view(lines[i]).substr(1), "\n");
        ++i;
      }
    } else if (op.kind == OpKind::kUpdate) {
      absl::string_view move = i < end ? trimmed(i) : "";
      if (absl::ConsumePrefix(&move, "*** Move to:")) {
        op.move_to = std::string(absl::StripAsciiWhitespace(move));
        if (op.move_to.empty()) return ParseError(line_no(i), "'*** Move to:' names no path");
        ++i;
      }
      while (i < end) {
        if (trimmed(i).empty() && (i + 1 >= end || absl::StartsWith(lines[i + 1], "@@") ||
                                   absl::StartsWith(lines[i + 1], "***"))) {
          ++i;  // a blank line between hunks
          continue;
        }
        if (absl::StartsWith(lines[i], "***") && trimmed(i) != "*** End of File") break;
        Hunk hunk;
        hunk.line = line_no(i);
        bool header = false;
        while (i < end && absl::StartsWith(lines[i], "@@")) {
          header = true;
          absl::string_view context = absl::StripAsciiWhitespace(
              absl::string_view(lines[i]).substr(2));
          absl::string_view after_range;
          if (UnifiedRangeHeader(context, &after_range)) context = after_range;
          if (!context.empty()) hunk.contexts.emplace_back(context);
          ++i;
        }
        if (!header && !op.hunks.empty()) {
          return ParseError(line_no(i), absl::StrCat("expected '@@' to start the next hunk of '",
                                                     op.path, "', got '", lines[i], "'"));
        }
        size_t body_start = i;
        for (; i < end; ++i) {
          const std::string& l = lines[i];
          if (absl::StripAsciiWhitespace(l) == "*** End of File") {
            hunk.end_of_file = true;
            ++i;
            break;
          }
          if (l.empty() || l[0] == ' ') {
            hunk.new_from_old.push_back(static_cast<int>(hunk.old_lines.size()));
            hunk.old_lines.push_back(l.empty() ? "" : l.substr(1));
            hunk.new_lines.push_back(hunk.old_lines.back());
          } else if (l[0] == '-') {
            hunk.old_lines.push_back(l.substr(1));
          } else if (l[0] == '+') {
            hunk.new_from_old.push_back(-1);
            hunk.new_lines.push_back(l.substr(1));
          } else if (i == body_start && !absl::StartsWith(l, "@@") && !absl::StartsWith(l, "***")) {
            return ParseError(line_no(i),
                              absl::StrCat("unexpected line '", l, "' in a hunk of '", op.path,
                                           "': every line of a hunk starts with ' ' (context), "
                                           "'-' (removed) or '+' (added)"));
          } else {
            break;  // the next hunk or file operation
          }
        }
        if (hunk.old_lines.empty() && hunk.new_lines.empty()) {
          return ParseError(hunk.line, absl::StrCat("a hunk of '", op.path, "' has no lines"));
        }
        op.hunks.push_back(std::move(hunk));
      }
      if (op.hunks.empty() && op.move_to.empty()) {
        return ParseError(op.line, absl::StrCat("'*** Update File: ", op.path,
                                                "' has no hunks (nor a '*** Move to:')"));
      }
    }
    ops.push_back(std::move(op));
  }
  if (ops.empty()) return ParseError(line_no(first), "the patch has no file operations");
  return ops;
}

// ---------------------------------------------------------------------------
// Locating hunks

namespace {

absl::string_view StripTrailing(absl::string_view s) {
  while (!s.empty() && absl::ascii_isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The first index >= start where `pattern` matches `lines` (exact, then
// ignoring trailing whitespace, then leading and trailing whitespace, then,
// with `prefix`, a line that starts with the pattern once both are trimmed);
// at end of file the last possible index is tried first.
std::optional<size_t> Seek(const std::vector<absl::string_view>& lines,
                           const std::vector<std::string>& pattern, size_t start, bool eof,
                           bool prefix = false) {
  if (pattern.empty()) return start;
  if (pattern.size() > lines.size()) return std::nullopt;
  const size_t last = lines.size() - pattern.size();
  using Eq = bool (*)(absl::string_view, absl::string_view);
  const Eq levels[] = {
      [](absl::string_view a, absl::string_view b) { return a == b; },
      [](absl::string_view a, absl::string_view b) { return StripTrailing(a) == StripTrailing(b); },
      [](absl::string_view a, absl::string_view b) {
        return absl::StripAsciiWhitespace(a) == absl::StripAsciiWhitespace(b);
      },
      [](absl::string_view a, absl::string_view b) {
        return absl::StartsWith(absl::StripAsciiWhitespace(a), absl::StripAsciiWhitespace(b));
      },
  };
  auto matches_at = [&](Eq eq, size_t at) {
    for (size_t k = 0; k < pattern.size(); ++k) {
      if (!eq(lines[at + k], pattern[k])) return false;
    }
    return true;
  };
  for (Eq eq : absl::MakeConstSpan(levels, prefix ? 4 : 3)) {
    if (eof && matches_at(eq, last)) return last;
    for (size_t at = start; at <= last; ++at) {
      if (matches_at(eq, at)) return at;
    }
  }
  return std::nullopt;
}

struct Replacement {
  size_t start;
  size_t old_len;
  const Hunk* hunk;  // its new lines replace old_len lines from start
  size_t new_len;
};

}  // namespace

absl::StatusOr<std::string> ApplyHunks(const Op& op, const std::string& display,
                                       absl::string_view text, const CancellationToken& cancel) {
  std::vector<absl::string_view> lines = absl::StrSplit(text, '\n');
  if (text.empty() || text.back() == '\n') lines.pop_back();  // the piece after the last "\n"
  std::vector<Replacement> replacements;
  size_t at = 0;
  for (size_t h = 0; h < op.hunks.size(); ++h) {
    const Hunk& hunk = op.hunks[h];
    auto failed = [&](absl::string_view what) {
      return absl::FailedPreconditionError(absl::StrCat(
          "hunk ", h + 1, " of '", display, "' (", hunk.Header(), ", patch line ", hunk.line,
          ") did not apply: ", what, "; nothing was changed"));
    };
    for (const std::string& context : hunk.contexts) {
      auto found = Seek(lines, {context}, at, false, /*prefix=*/true);
      if (!found.has_value()) {
        const std::string hint = MissHint(text, context, "view_file", cancel);
        return failed(absl::StrCat("its context line '", context, "' was not found",
                                   at > 0 ? absl::StrCat(" after line ", at) : "",
                                   hint.empty() ? "" : ".", hint));
      }
      at = *found + 1;
    }
    if (hunk.old_lines.empty()) {
      const size_t insert_at = hunk.contexts.empty() || hunk.end_of_file ? lines.size() : at;
      replacements.push_back({insert_at, 0, &hunk, hunk.new_lines.size()});
      continue;
    }
    size_t old_len = hunk.old_lines.size(), new_len = hunk.new_lines.size();
    auto found = Seek(lines, hunk.old_lines, at, hunk.end_of_file);
    // Trailing empty context lines (often a blank line before the next @@)
    // need not be in the file.
    while (!found.has_value() && old_len > 0 && new_len > 0 && hunk.old_lines[old_len - 1].empty() &&
           hunk.new_lines[new_len - 1].empty()) {
      --old_len;
      --new_len;
      std::vector<std::string> shorter(hunk.old_lines.begin(), hunk.old_lines.begin() + old_len);
      found = Seek(lines, shorter, at, hunk.end_of_file);
    }
    if (!found.has_value()) {
      return failed(absl::StrCat(
          "its lines were not found", at > 0 ? absl::StrCat(" after line ", at) : "", ":\n",
          absl::StrJoin(hunk.old_lines, "\n"), "\n",
          MissHint(text, absl::StrJoin(hunk.old_lines, "\n"), "view_file", cancel)));
    }
    replacements.push_back({*found, old_len, &hunk, new_len});
    at = *found + old_len;
  }
  std::stable_sort(replacements.begin(), replacements.end(),
                   [](const Replacement& a, const Replacement& b) { return a.start < b.start; });
  std::string out;
  out.reserve(text.size());
  size_t next = 0;  // the first line not yet copied
  bool any = false;
  auto append = [&](absl::string_view line) {
    if (any) out.push_back('\n');
    out.append(line.data(), line.size());
    any = true;
  };
  for (const Replacement& r : replacements) {
    if (r.start < next) {
      return absl::FailedPreconditionError(absl::StrCat(
          "hunks of '", display, "' overlap (two change line ", r.start + 1,
          "); merge them into one hunk; nothing was changed"));
    }
    for (; next < r.start; ++next) append(lines[next]);
    for (size_t k = 0; k < r.new_len; ++k) {
      const int old = r.hunk->new_from_old[k];
      append(old >= 0 ? lines[r.start + old] : absl::string_view(r.hunk->new_lines[k]));
    }
    next = r.start + r.old_len;
  }
  for (; next < lines.size(); ++next) append(lines[next]);
  if (any) out.push_back('\n');  // codex ends every updated file with one
  return out;
}

}  // namespace toolexec::builtin::v4a

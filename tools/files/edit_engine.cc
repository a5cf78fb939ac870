#include "tools/files/edit_engine.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "tools/runtime/utf8.h"
#include "tools/files/file_tools.h"
#include "tools/workspace/text.h"

namespace toolexec::builtin {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }

// `s` with every run of whitespace collapsed to one space and the ends trimmed.
std::string CollapseWhitespace(absl::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool in_space = false;
  for (char c : s) {
    if (IsSpace(c)) {
      in_space = true;
      continue;
    }
    if (in_space && !out.empty()) out.push_back(' ');
    in_space = false;
    out.push_back(c);
  }
  return out;
}

// The line where `needle` matches `text` if runs of whitespace are treated as
// equal (indentation, trailing spaces, tabs vs spaces), or 0.
int FindIgnoringWhitespace(absl::string_view text, absl::string_view needle) {
  std::string n = CollapseWhitespace(needle);
  if (n.empty()) return 0;
  // Collapse `text` the same way (without trimming); whitespace runs become
  // one space. A second pass maps the match back to a line number.
  auto collapse = [&](auto&& emit) {
    bool in_space = false;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (IsSpace(c)) {
        if (!in_space && !emit(' ', i)) return;
        in_space = true;
        continue;
      }
      in_space = false;
      if (!emit(c, i)) return;
    }
  };
  std::string t;
  t.reserve(text.size());
  collapse([&](char c, size_t) {
    t.push_back(c);
    return true;
  });
  size_t pos = t.find(n);
  if (pos == std::string::npos) return 0;
  size_t seen = 0, offset = 0;
  collapse([&](char, size_t i) {
    if (seen++ == pos) {
      offset = i;
      return false;
    }
    return true;
  });
  // A match that starts on a whitespace run starts at the run's first byte:
  // name the line of the first non-space byte after it instead.
  while (offset < text.size() && IsSpace(text[offset])) ++offset;
  return LineNumberAt(text, offset);
}

absl::string_view LineAt(absl::string_view text, int number) {
  size_t pos = 0;
  for (int i = 1; i < number; ++i) {
    size_t nl = text.find('\n', pos);
    if (nl == absl::string_view::npos) return "";
    pos = nl + 1;
  }
  size_t nl = text.find('\n', pos);
  return text.substr(pos, nl == absl::string_view::npos ? absl::string_view::npos : nl - pos);
}

std::string Quote(absl::string_view line) {
  line = absl::StripAsciiWhitespace(line);
  std::string out;
  bool cut = AppendCut(&out, line, 120);
  std::string safe;
  AppendSanitizedUtf8(&safe, out);
  return absl::StrCat("`", safe, cut ? "..." : "", "`");
}

// The line of `text` most similar to the first non-blank line of `needle`
// (Dice coefficient of byte bigrams, whitespace-trimmed), if any scores >= 0.5.
struct Similar {
  int line = 0;
  double score = 0;
};
Similar MostSimilarLine(absl::string_view text, absl::string_view needle,
                        const CancellationToken& cancel) {
  absl::string_view first;
  for (absl::string_view l : absl::StrSplit(needle, '\n')) {
    l = absl::StripAsciiWhitespace(l);
    if (!l.empty()) {
      first = l;
      break;
    }
  }
  constexpr size_t kMaxLine = 1000;
  if (first.size() < 3) return {};
  first = first.substr(0, kMaxLine);
  auto bigram = [](absl::string_view s, size_t i) {
    return static_cast<uint16_t>(static_cast<unsigned char>(s[i]) << 8 |
                                 static_cast<unsigned char>(s[i + 1]));
  };
  std::vector<int> counts(65536, 0);
  const int needle_bigrams = static_cast<int>(first.size()) - 1;
  for (size_t i = 0; i + 1 < first.size(); ++i) ++counts[bigram(first, i)];
  std::vector<uint16_t> taken;
  Similar best;
  int number = 0;
  for (absl::string_view l : absl::StrSplit(text, '\n')) {
    ++number;
    if ((number & 4095) == 0 && cancel.cancelled()) break;
    l = absl::StripAsciiWhitespace(l).substr(0, kMaxLine);
    if (l.size() < 2) continue;
    int common = 0;
    for (size_t i = 0; i + 1 < l.size(); ++i) {
      uint16_t b = bigram(l, i);
      if (counts[b] > 0) {
        --counts[b];
        taken.push_back(b);
        ++common;
      }
    }
    for (uint16_t b : taken) ++counts[b];
    taken.clear();
    double score = 2.0 * common / (needle_bigrams + static_cast<int>(l.size()) - 1);
    if (score > best.score) best = {number, score};
  }
  if (best.score < 0.5) return {};
  return best;
}

// "    12\t" at the start of a line: copied from a numbered view.
bool HasLineNumberPrefix(absl::string_view s) {
  for (absl::string_view l : absl::StrSplit(s, '\n')) {
    size_t i = 0;
    while (i < l.size() && l[i] == ' ') ++i;
    size_t digits = i;
    while (i < l.size() && absl::ascii_isdigit(static_cast<unsigned char>(l[i]))) ++i;
    if (i > digits && i < l.size() && l[i] == '\t') return true;
  }
  return false;
}

}  // namespace

const char* EditableText::line_endings() const {
  return crlf_mode ? "crlf" : (crlf > 0 ? "mixed" : (lf > 0 ? "lf" : "none"));
}

absl::StatusOr<EditableText> ReadEditable(int dir_fd, const fs::WorkspacePath& wp,
                                          const EditLimits& limits) {
  const std::string name = wp.BaseName();
  fs::UniqueFd fd(openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    struct stat lst;
    if (err == ELOOP && fstatat(dir_fd, name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(lst.st_mode)) {
      return fs::RefuseFinalSymlink(wp, limits.tool);
    }
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no such file: ", wp.display, limits.missing_hint));
    }
    return fs::ErrnoStatus(err, wp.display, "opening");
  }
  EditableText file;
  if (fstat(fd.get(), &file.st) != 0) return fs::ErrnoStatus(errno, wp.display);
  if (S_ISDIR(file.st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("'", wp.display, "' is a directory"));
  }
  if (!S_ISREG(file.st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", wp.display, "' is not a regular file"));
  }
  if (static_cast<uint64_t>(file.st.st_size) > limits.max_file_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "'", wp.display, "' is ", file.st.st_size, " bytes; ", limits.tool, " loads at most ",
        limits.max_file_bytes, " bytes (use run_command for larger files)"));
  }
  std::string& raw = file.raw;
  raw.resize(static_cast<size_t>(file.st.st_size));
  size_t got = 0;
  while (true) {
    if (got == raw.size()) raw.resize(raw.size() + 4096);  // grew since fstat
    ssize_t n = read(fd.get(), raw.data() + got, raw.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fs::ErrnoStatus(errno, wp.display, "reading");
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got > limits.max_file_bytes) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", wp.display, "' grew past ", limits.max_file_bytes, " bytes"));
    }
  }
  raw.resize(got);

  absl::string_view body = raw;
  file.bom = absl::StartsWith(body, kUtf8Bom);
  if (file.bom) body.remove_prefix(kUtf8Bom.size());
  for (size_t i = body.find('\n'); i != absl::string_view::npos; i = body.find('\n', i + 1)) {
    (i > 0 && body[i - 1] == '\r' ? file.crlf : file.lf)++;
  }
  file.crlf_mode = file.crlf > 0 && file.lf == 0;
  file.text = file.crlf_mode ? CrlfToLf(body) : std::string(body);
  return file;
}

uint64_t EncodedSize(const EditableText& file, absl::string_view text) {
  return (file.bom ? kUtf8Bom.size() : 0) + text.size() +
         (file.crlf_mode ? static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n')) : 0);
}

std::string Encode(const EditableText& file, absl::string_view text) {
  std::string out;
  out.reserve(static_cast<size_t>(EncodedSize(file, text)));
  if (file.bom) out.append(kUtf8Bom.data(), kUtf8Bom.size());
  if (!file.crlf_mode) {
    out.append(text.data(), text.size());
    return out;
  }
  // Into the reserved buffer: no second copy of the text.
  size_t from = 0;
  for (size_t nl = text.find('\n'); nl != absl::string_view::npos; nl = text.find('\n', from)) {
    out.append(text.data() + from, nl - from).append("\r\n");
    from = nl + 1;
  }
  out.append(text.data() + from, text.size() - from);
  return out;
}

absl::Status ReplaceFile(int dir_fd, const fs::WorkspacePath& wp, const EditableText& file,
                         absl::string_view bytes) {
  fs::AtomicWriteOptions write;
  write.replace_existing = true;
  write.mode = file.st.st_mode & 07777;
  write.uid = file.st.st_uid;
  write.gid = file.st.st_gid;
  write.expect = fs::FileIdentity::Of(file.st);
  write.display = wp.display;
  return fs::WriteFileAtomic(dir_fd, wp.BaseName(), bytes, write);
}

std::string CrlfToLf(absl::string_view text) { return absl::StrReplaceAll(text, {{"\r\n", "\n"}}); }

Occurrences FindOccurrences(absl::string_view text, absl::string_view needle, size_t max_listed) {
  Occurrences out;
  if (needle.empty()) return out;
  int line = 1;
  size_t last = 0;
  for (size_t p = text.find(needle); p != absl::string_view::npos;
       p = text.find(needle, p + needle.size())) {
    if (out.lines.size() < max_listed) {
      line += static_cast<int>(std::count(text.begin() + last, text.begin() + p, '\n'));
      last = p;
      out.lines.push_back(line);
    }
    ++out.count;
  }
  return out;
}

std::string ListLines(const std::vector<int>& lines, bool more) {
  if (lines.empty()) return "";
  if (more) return absl::StrCat(absl::StrJoin(lines, ", "), ", ...");
  if (lines.size() == 1) return absl::StrCat(lines[0]);
  return absl::StrCat(absl::StrJoin(lines.begin(), lines.end() - 1, ", "), " and ", lines.back());
}

std::string MissHint(absl::string_view text, absl::string_view needle,
                     absl::string_view view_tool, const CancellationToken& cancel) {
  std::string msg;
  if (HasLineNumberPrefix(needle)) {
    absl::StrAppend(&msg, " It seems to include ", view_tool,
                    "'s line-number prefixes (\"    12<TAB>\"); remove them.");
  }
  if (int line = FindIgnoringWhitespace(text, needle); line > 0) {
    absl::StrAppend(&msg, " Line ", line, " matches if whitespace is ignored: ",
                    Quote(LineAt(text, line)), "; copy its exact indentation and spacing from ",
                    view_tool, ".");
    return msg;
  }
  Similar best = MostSimilarLine(text, needle, cancel);
  if (best.line > 0) {
    absl::StrAppend(&msg, " The closest line is ", best.line, ": ", Quote(LineAt(text, best.line)),
                    ". View the file again to see its current text.");
  } else {
    msg += " No similar line was found; view the file to check its current content.";
  }
  return msg;
}

}  // namespace toolexec::builtin

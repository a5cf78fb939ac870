// edit_file: exact string replacements, all or none (see file_tools.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "tools/builtin/file_tools.h"
#include "tools/builtin/fs/confined.h"
#include "tools/builtin/fs/text.h"
#include "tools/builtin/fs/write_lock.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::builtin {
namespace {

constexpr char kSchema[] = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "file_path": {
      "type": "string",
      "description": "The file to edit: a path relative to the workspace root, e.g. \"src/main.cc\"."
    },
    "edits": {
      "type": "array",
      "minItems": 1,
      "description": "Replacements applied in order, each to the result of the ones before. If any fails, none is applied.",
      "items": {
        "type": "object",
        "additionalProperties": false,
        "properties": {
          "old_string": {
            "type": "string",
            "description": "Exact text to replace, including whitespace and indentation, without view_file's line-number prefixes. Must occur exactly once unless replace_all is true; include surrounding lines to make it unique."
          },
          "new_string": {
            "type": "string",
            "description": "The text to put in its place."
          },
          "replace_all": {
            "type": "boolean",
            "default": false,
            "description": "Replace every occurrence of old_string."
          }
        },
        "required": ["old_string", "new_string"]
      }
    },
    "dry_run": {
      "type": "boolean",
      "default": false,
      "description": "Return the diff without writing the file."
    },
    "expected_sha256": {
      "type": "string",
      "description": "The file's sha256 as view_file (or a previous edit_file) reported it; the edit is refused if the file has changed since."
    }
  },
  "required": ["file_path", "edits"]
})json";

constexpr absl::string_view kBom = "\xEF\xBB\xBF";
constexpr size_t kMaxListedLines = 20;

std::string PathOf(const JsonValue& input) { return StringField(input, "file_path", "?"); }

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
  fs::AppendSanitizedUtf8(&safe, out);
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

// "    12\t" at the start of a line: copied from view_file's output.
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

// `note` follows the file's name (e.g. that another write ran just before).
std::string MissMessage(absl::string_view text, absl::string_view old_string, size_t index,
                        const std::string& display, absl::string_view note,
                        const CancellationToken& cancel) {
  std::string msg = absl::StrCat("edits[", index, "].old_string was not found in '", display, "'");
  if (index > 0) absl::StrAppend(&msg, " (after applying edits[0..", index - 1, "])");
  absl::StrAppend(&msg, note, ".");
  if (HasLineNumberPrefix(old_string)) {
    msg += " It seems to include view_file's line-number prefixes (\"    12<TAB>\"); remove them.";
  }
  if (int line = FindIgnoringWhitespace(text, old_string); line > 0) {
    absl::StrAppend(&msg, " Line ", line, " matches if whitespace is ignored: ",
                    Quote(LineAt(text, line)),
                    "; copy its exact indentation and spacing from view_file.");
    return msg;
  }
  Similar best = MostSimilarLine(text, old_string, cancel);
  if (best.line > 0) {
    absl::StrAppend(&msg, " The closest line is ", best.line, ": ", Quote(LineAt(text, best.line)),
                    ". View the file again to see its current text.");
  } else {
    msg += " No similar line was found; view the file to check its current content.";
  }
  return msg;
}

struct Edit {
  std::string old_string;
  std::string new_string;
  bool replace_all = false;
};

std::string Description(const BuiltinOptions& options) {
  return "Edits a text file in the workspace by exact string replacement. Each edit replaces "
         "old_string with new_string; old_string must match the file exactly (whitespace "
         "included, without view_file's line-number prefixes) and occur once, unless "
         "replace_all is true. Edits apply in order and atomically: all or none. Returns a "
         "unified diff and the new sha256. dry_run shows the diff without writing; "
         "expected_sha256 refuses the edit if the file changed since you read it. Several "
         "edits of one file in one batch apply one after another, each to the file as the "
         "previous one left it. Keeps the file's line endings (CRLF files may be edited with "
         "\\n), BOM and permissions.";
}

}  // namespace

EditFileTool::EditFileTool(const BuiltinOptions& options)
    : Tool(ToolSpec("edit_file", Description(options), kSchema)
               .Type(ToolType::kTextEdit)
               .Tags({kTagFile, kTagPathScoped, kTagMinimal})),
      options_(options) {}

absl::StatusOr<Json> EditFileTool::Call(const JsonValue& args, ToolContext& ctx) const {
  auto file_path = StringArg(args, "file_path");
  if (!file_path.has_value()) return absl::InvalidArgumentError("file_path is required");
  if (!args.HasMember("edits") || !args["edits"].IsArray() || args["edits"].Empty()) {
    return absl::InvalidArgumentError("edits must be a non-empty array of {old_string, new_string}");
  }
  std::vector<Edit> edits;
  for (rapidjson::SizeType i = 0; i < args["edits"].Size(); ++i) {
    const JsonValue& e = args["edits"][i];
    auto old_s = StringArg(e, "old_string");
    auto new_s = StringArg(e, "new_string");
    if (!old_s.has_value() || !new_s.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("edits[", i, "] needs string old_string and new_string"));
    }
    Edit edit{std::string(*old_s), std::string(*new_s), BoolField(e, "replace_all")};
    if (edit.old_string.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "edits[", i, "].old_string is empty; quote the text to replace (to insert, include a "
          "neighbouring line in old_string and new_string; to write a whole file, use "
          "create_file)"));
    }
    if (edit.old_string == edit.new_string) {
      return absl::InvalidArgumentError(absl::StrCat(
          "edits[", i, "]: old_string and new_string are the same; there is nothing to change"));
    }
    edits.push_back(std::move(edit));
  }
  const bool dry_run = BoolField(args, "dry_run");
  std::optional<std::string> expected;
  if (auto e = StringArg(args, "expected_sha256"); e.has_value() && !e->empty()) {
    std::string lower = absl::AsciiStrToLower(*e);
    if (lower.size() != 64 || lower.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected_sha256 must be 64 hex digits (as view_file reports it), got '", *e, "'"));
    }
    expected = std::move(lower);
  }

  // --- open and read, never through a symlink (the write replaces this name) ---
  auto wp = fs::ResolveWorkspacePath(ctx.info().workspaces, *file_path, "file_path");
  if (!wp.ok()) return wp.status();
  const std::string name = wp->BaseName();
  if (wp->trailing_slash || name.empty() || name == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("file_path '", *file_path, "' names a directory, not a file"));
  }
  auto dir = fs::OpenDirectory(wp->Parent());
  if (!dir.ok()) return dir.status();
  // A write holds the file's writer lock from the read to the rename, so it
  // starts from the latest content and no other write of the daemon lands in
  // between (see fs/write_lock.h). A dry run writes nothing and does not wait.
  std::optional<fs::FileWriteLock> lock;
  if (!dry_run) {
    auto acquired = fs::FileWriteLock::Acquire(dir->get(), name, ctx.cancellation(), wp->display);
    if (!acquired.ok()) return acquired.status();
    lock.emplace(std::move(*acquired));
  }
  // Said when an edit no longer applies and another write had the lock first.
  const std::string after_other_write =
      lock.has_value() && lock->waited()
          ? absl::StrCat(" (another write of '", wp->display, "' finished just before this edit)")
          : "";
  fs::UniqueFd fd(openat(dir->get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    struct stat lst;
    if (err == ELOOP && fstatat(dir->get(), name.c_str(), &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISLNK(lst.st_mode)) {
      return fs::RefuseFinalSymlink(*wp, "edit_file");
    }
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no such file: ", wp->display,
                                              " (to create it, use create_file)"));
    }
    return fs::ErrnoStatus(err, wp->display, "opening");
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return fs::ErrnoStatus(errno, wp->display);
  if (S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("'", wp->display, "' is a directory"));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", wp->display, "' is not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > options_.max_file_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "'", wp->display, "' is ", st.st_size, " bytes; edit_file loads at most ",
        options_.max_file_bytes, " bytes (use run_command for larger files)"));
  }
  std::string raw;
  raw.resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  while (true) {
    if (got == raw.size()) raw.resize(raw.size() + 4096);  // grew since fstat
    ssize_t n = read(fd.get(), raw.data() + got, raw.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fs::ErrnoStatus(errno, wp->display, "reading");
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
    if (got > options_.max_file_bytes) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", wp->display, "' grew past ", options_.max_file_bytes, " bytes"));
    }
  }
  raw.resize(got);
  fd.reset();
  const std::string previous_sha = Sha256Hex(raw);
  if (expected.has_value() && *expected != previous_sha) {
    return absl::FailedPreconditionError(absl::StrCat(
        "file changed since read: sha256 is ", previous_sha, ", expected ", *expected,
        after_other_write, "; view '", wp->display,
        "' again and redo the edit against its current content"));
  }

  // --- normalize: BOM off, CRLF -> LF when every line ending is CRLF ---
  absl::string_view body = raw;
  const bool bom = absl::StartsWith(body, kBom);
  if (bom) body.remove_prefix(kBom.size());
  size_t crlf = 0, lf = 0;
  for (size_t i = body.find('\n'); i != absl::string_view::npos; i = body.find('\n', i + 1)) {
    (i > 0 && body[i - 1] == '\r' ? crlf : lf)++;
  }
  const bool crlf_mode = crlf > 0 && lf == 0;
  std::string text = crlf_mode ? absl::StrReplaceAll(body, {{"\r\n", "\n"}}) : std::string(body);
  const std::string original = text;

  // --- apply, in memory; each result is sized (and capped) before it is built ---
  auto too_big = [&](absl::string_view what, uint64_t size) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " would make '", wp->display, "' ", size, " bytes; edit_file writes at most ",
        options_.max_file_bytes,
        " bytes (max_file_bytes): replace fewer occurrences, or use run_command for larger "
        "files"));
  };
  int64_t replacements = 0;
  for (size_t i = 0; i < edits.size(); ++i) {
    if (ctx.cancelled()) return absl::CancelledError("edit_file was cancelled");
    Edit& e = edits[i];
    if (crlf_mode) {
      e.old_string = absl::StrReplaceAll(e.old_string, {{"\r\n", "\n"}});
      e.new_string = absl::StrReplaceAll(e.new_string, {{"\r\n", "\n"}});
    }
    auto matches = [&](auto&& each) {
      for (size_t p = text.find(e.old_string); p != std::string::npos;
           p = text.find(e.old_string, p + e.old_string.size())) {
        each(p);
      }
    };
    uint64_t count = 0;
    std::vector<size_t> first;  // where the first kMaxListedLines matches start
    matches([&](size_t p) {
      if (first.size() < kMaxListedLines) first.push_back(p);
      ++count;
    });
    if (count == 0) {
      return absl::FailedPreconditionError(
          MissMessage(text, e.old_string, i, wp->display, after_other_write, ctx.cancellation()));
    }
    if (count > 1 && !e.replace_all) {
      std::vector<int> lines;
      int line = 1;
      size_t last = 0;
      for (size_t p : first) {
        line += static_cast<int>(std::count(text.begin() + last, text.begin() + p, '\n'));
        last = p;
        lines.push_back(line);
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "edits[", i, "].old_string occurs ", count, " times in '", wp->display, "'",
          i > 0 ? absl::StrCat(" (after applying edits[0..", i - 1, "])") : "", " (lines ",
          absl::StrJoin(lines, ", "), count > kMaxListedLines ? ", ..." : "",
          ")", after_other_write,
          "; include more surrounding lines to make it unique, or set replace_all: true to "
          "replace every occurrence"));
    }
    // count * old_string.size() <= text.size(), and count and new_string are
    // bounded by the file and the request: no overflow in 64 bits.
    const uint64_t size = text.size() - count * e.old_string.size() + count * e.new_string.size();
    if (size > options_.max_file_bytes) {
      auto bytes = [](size_t n) { return absl::StrCat(n, n == 1 ? " byte" : " bytes"); };
      return too_big(absl::StrCat("edits[", i, "] (", count,
                                  count == 1 ? " replacement" : " replacements", " of ",
                                  bytes(e.old_string.size()), " by ", bytes(e.new_string.size()),
                                  ")"),
                     size);
    }
    std::string next;
    next.reserve(static_cast<size_t>(size));
    size_t from = 0;
    matches([&](size_t p) {
      next.append(text, from, p - from);
      next.append(e.new_string);
      from = p + e.old_string.size();
    });
    next.append(text, from, std::string::npos);
    text = std::move(next);
    replacements += static_cast<int64_t>(count);
  }

  // --- back to the file's conventions ---
  const uint64_t out_size =
      (bom ? kBom.size() : 0) + text.size() +
      (crlf_mode ? static_cast<uint64_t>(std::count(text.begin(), text.end(), '\n')) : 0);
  if (out_size > options_.max_file_bytes) return too_big("the edits", out_size);
  std::string out_bytes;
  out_bytes.reserve(static_cast<size_t>(out_size));
  if (bom) out_bytes.append(kBom.data(), kBom.size());
  if (crlf_mode) {  // into the reserved buffer: no second copy of the text
    size_t from = 0;
    for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
      out_bytes.append(text, from, nl - from).append("\r\n");
      from = nl + 1;
    }
    out_bytes.append(text, from, std::string::npos);
  } else {
    out_bytes += text;
  }
  const std::string new_sha = Sha256Hex(out_bytes);

  DiffStats stats;
  bool diff_truncated = false;
  std::string diff = UnifiedDiff(original, text, wp->display, 3, &stats, &ctx.cancellation(),
                                 options_.view_max_bytes, &diff_truncated);
  if (ctx.cancelled()) return absl::CancelledError("edit_file was cancelled");

  bool written = false;
  if (!dry_run && out_bytes != raw) {
    fs::AtomicWriteOptions write;
    write.replace_existing = true;
    write.mode = st.st_mode & 07777;
    write.uid = st.st_uid;
    write.gid = st.st_gid;
    write.expect = fs::FileIdentity::Of(st);
    write.display = wp->display;
    if (absl::Status s = fs::WriteFileAtomic(dir->get(), name, out_bytes, write); !s.ok()) return s;
    written = true;
  }

  Json out = MakeObject();
  auto& a = out.GetAllocator();
  out.AddMember("path", JsonValue(wp->display, a), a);
  out.AddMember("replacements", replacements, a);
  out.AddMember("diff", JsonValue(diff, a), a);
  if (diff_truncated) out.AddMember("diff_truncated", true, a);
  out.AddMember("sha256", JsonValue(new_sha, a), a);
  out.AddMember("previous_sha256", JsonValue(previous_sha, a), a);
  out.AddMember("dry_run", dry_run, a);
  out.AddMember("written", written, a);
  out.AddMember("lines_added", stats.added, a);
  out.AddMember("lines_removed", stats.removed, a);
  const char* endings = crlf_mode ? "crlf" : (crlf > 0 ? "mixed" : (lf > 0 ? "lf" : "none"));
  out.AddMember("line_endings", JsonValue(endings, a), a);
  if (bom) out.AddMember("bom", true, a);
  return out;
}

std::string EditFileTool::display_title(const JsonValue& input) const { return PathOf(input); }

DisplayResult EditFileTool::display(const JsonValue& input, const JsonValue& result) const {
  return TextDisplay(display_title(input), ContentType::kPlainText, StringField(result, "diff"),
                     kFileDisplayMaxBytes);
}

std::string EditFileTool::compact_summary(const JsonValue& input, const JsonValue& result,
                                          bool ok) const {
  std::string path = PathOf(input);
  if (!ok) return absl::StrCat("[edit_file: ", path, ": error]");
  auto num = [&](const char* key) { return IntArg(result, key, 0); };
  bool dry = BoolField(result, "dry_run");
  int64_t n = num("replacements");
  return absl::StrCat("[edit_file: ", path, dry ? " (dry run)" : "", " ", n,
                      n == 1 ? " replacement" : " replacements", ", +", num("lines_added"), " -",
                      num("lines_removed"), "]");
}

std::vector<std::string> EditFileTool::resources(const JsonValue& input) const {
  auto path = StringArg(input, "file_path");
  if (!path.has_value() || path->empty()) return {};
  return {PathResource(*path)};
}

std::vector<PermissionRequirement> EditFileTool::required_permissions(
    const JsonValue& input) const {
  return PathPermission(PathOf(input), PermissionLevel::kWrite);
}

}  // namespace toolexec::builtin

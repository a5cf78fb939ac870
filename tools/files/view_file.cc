// view_file: numbered lines of a workspace file (see file_tools.h).
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/files/file_tools.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/text.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::builtin {
namespace {

constexpr char kSchema[] = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "file_path": {
      "type": "string",
      "description": "The file to read: a path relative to the workspace root, e.g. \"src/main.cc\" (an absolute path must lie inside the workspace)."
    },
    "start_line": {
      "type": "integer",
      "minimum": 1,
      "description": "First line to show, 1-based. Default 1."
    },
    "end_line": {
      "type": "integer",
      "minimum": 1,
      "description": "Last line to show, 1-based and inclusive. Default: as many lines as the output limits allow."
    }
  },
  "required": ["file_path"]
})json";

constexpr size_t kChunk = 256 * 1024;

std::string HumanSize(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " bytes");
  if (bytes < 1024 * 1024) return absl::StrFormat("%.1f KiB", bytes / 1024.0);
  return absl::StrFormat("%.1f MiB", bytes / (1024.0 * 1024.0));
}

// One line kept for output: where it is in `kept`, and what it really was.
struct KeptLine {
  size_t begin = 0;
  size_t len = 0;       // bytes kept (may be less than full_len)
  uint64_t full_len = 0;  // bytes of the line, without "\n"
  bool has_newline = false;
};

// Streams a file once: counts lines and line endings, hashes it, and keeps the
// bytes of lines [first, last] up to a byte budget.
class Scanner {
 public:
  Scanner(int64_t first, int64_t last, size_t budget) : first_(first), last_(last), budget_(budget) {}

  void Feed(absl::string_view chunk) {
    sha_.Update(chunk);
    size_ += chunk.size();
    size_t pos = 0;
    while (pos < chunk.size()) {
      const char* nl = static_cast<const char*>(
          std::memchr(chunk.data() + pos, '\n', chunk.size() - pos));
      size_t end = nl == nullptr ? chunk.size() : static_cast<size_t>(nl - chunk.data());
      if (line_ >= first_ && line_ <= last_) Keep(chunk.substr(pos, end - pos));
      if (nl == nullptr) {
        prev_ = chunk.back();
        break;
      }
      bool cr = end > 0 ? chunk[end - 1] == '\r' : prev_ == '\r';
      (cr ? crlf_ : lf_)++;
      if (open_) lines_.back().has_newline = true;
      ++line_;
      open_ = false;
      pos = end + 1;
      prev_ = '\n';
    }
  }

  // Lines in the file.
  int64_t total_lines() const { return size_ == 0 ? 0 : line_ - (prev_ == '\n' ? 1 : 0); }
  uint64_t size() const { return size_; }
  uint64_t crlf() const { return crlf_; }
  uint64_t lf() const { return lf_; }
  bool final_newline() const { return prev_ == '\n'; }
  std::string sha256() { return sha_.HexDigest(); }
  const std::vector<KeptLine>& lines() const { return lines_; }
  const std::string& kept() const { return kept_; }

 private:
  void Keep(absl::string_view piece) {
    if (!open_) {
      if (kept_.size() > budget_) return;  // formatting will stop before here anyway
      lines_.push_back(KeptLine{kept_.size(), 0, 0, false});
      open_ = true;
    }
    KeptLine& l = lines_.back();
    l.full_len += piece.size();
    size_t room = budget_ + 8 > kept_.size() ? budget_ + 8 - kept_.size() : 0;
    size_t take = std::min(room, piece.size());
    kept_.append(piece.data(), take);
    l.len += take;
  }

  const int64_t first_, last_;
  const size_t budget_;
  fs::Sha256 sha_;
  uint64_t size_ = 0, crlf_ = 0, lf_ = 0;
  int64_t line_ = 1;  // the line the next byte belongs to
  char prev_ = 0;     // the last byte seen
  bool open_ = false;  // lines_.back() is the current line, still growing
  std::vector<KeptLine> lines_;
  std::string kept_;
};

absl::StatusOr<size_t> ReadSome(int fd, char* buf, size_t want, const std::string& display) {
  size_t got = 0;
  while (got < want) {
    ssize_t n = read(fd, buf + got, want - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fs::ErrnoStatus(errno, display, "reading");
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  return got;
}

std::string PathOf(const JsonValue& input) { return StringField(input, "file_path", "?"); }

std::string Description(const BuiltinOptions& options) {
  return absl::StrCat(
      "Reads a text file in the workspace and returns its lines numbered like `cat -n` "
      "(\"     1\\t<text>\"; the number and tab are not part of the file). Use start_line and "
      "end_line (1-based, inclusive) to read part of a large file. At most ",
      options.view_max_lines, " lines or ", options.view_max_bytes,
      " bytes are returned per call; when output is cut, `truncated` is true and `hint` names "
      "the start_line to continue from. Also returns total_lines, line_endings and the "
      "file's sha256 (pass it to edit_file as expected_sha256). Binary files are described "
      "(size, mime type), not shown.");
}

}  // namespace

ViewFileTool::ViewFileTool(const BuiltinOptions& options)
    : Tool(ToolSpec("view_file", Description(options), kSchema)
               .Type(ToolType::kFileRead)
               .Tags({kTagReadOnly, kTagFile, kTagPathScoped, kTagMinimal})),
      options_(options) {}

absl::StatusOr<ViewedLines> ViewLines(const fs::WorkspacePath& wp, int64_t start,
                                      std::optional<int64_t> end, size_t max_chars,
                                      const BuiltinOptions& options, ToolContext& ctx,
                                      absl::string_view tool) {
  auto file = fs::OpenRegularFile(wp);
  if (!file.ok()) return file.status();

  const uint32_t max_lines = std::max<uint32_t>(1, options.view_max_lines);
  const size_t max_bytes = std::max<uint64_t>(64, options.view_max_bytes);
  int64_t last_wanted = start + max_lines - 1;
  if (end.has_value()) last_wanted = std::min(last_wanted, *end);
  Scanner scan(start, last_wanted, max_bytes);

  std::string buf;
  buf.resize(static_cast<size_t>(
      std::min<uint64_t>(kChunk, static_cast<uint64_t>(std::max<off_t>(file->st.st_size, 0)) + 1)));
  bool first = true;
  // A file that keeps growing (a log being written) is read up to its size at
  // open plus max_file_bytes, so the call ends.
  uint64_t budget = static_cast<uint64_t>(std::max<off_t>(file->st.st_size, 0)) +
                    std::max<uint64_t>(options.max_file_bytes, kChunk);
  ViewedLines viewed;
  while (budget > 0) {
    if (ctx.cancelled()) return absl::CancelledError(absl::StrCat(tool, " was cancelled"));
    auto got = ReadSome(file->fd.get(), buf.data(),
                        static_cast<size_t>(std::min<uint64_t>(buf.size(), budget)), wp.display);
    if (!got.ok()) return got.status();
    absl::string_view chunk(buf.data(), *got);
    if (first) {
      first = false;
      if (fs::LooksBinary(chunk.substr(0, fs::kBinarySniffBytes))) {
        std::string mime = fs::GuessMimeType(chunk, wp.display);
        Json& out = viewed.result;
        out.SetObject();
        auto& a = out.GetAllocator();
        out.AddMember("path", JsonValue(wp.display, a), a);
        out.AddMember("binary", true, a);
        out.AddMember("size_bytes", static_cast<uint64_t>(file->st.st_size), a);
        out.AddMember("mime_type", JsonValue(mime, a), a);
        out.AddMember("message",
                      JsonValue(absl::StrCat("'", wp.display, "' is a binary file (", mime, ", ",
                                             HumanSize(file->st.st_size),
                                             "); its content is not shown"),
                                a),
                      a);
        return viewed;
      }
      if (buf.size() < kChunk && *got == buf.size()) buf.resize(kChunk);  // it grew
    }
    if (*got == 0) break;
    budget -= *got;
    scan.Feed(chunk);
  }

  const int64_t total = scan.total_lines();
  // Format the kept lines within the byte budget, straight into `content`.
  std::string content;
  const std::string& kept = scan.kept();
  content.reserve(std::min<size_t>(max_bytes, kept.size() + 8 * scan.lines().size()) + 1);
  bool invalid_utf8 = false, bom = false, cut_line = false;
  int64_t shown_end = start - 1;
  const int64_t wanted_end = end.has_value() ? std::min(*end, total) : total;
  bool byte_limit = false;  // else the line limit cut the output
  bool char_limit = false;  // the character budget cut it
  size_t chars = 0;
  for (size_t i = 0; i < scan.lines().size(); ++i) {
    const KeptLine& l = scan.lines()[i];
    const int64_t number = start + static_cast<int64_t>(i);
    if (number > wanted_end) break;
    absl::string_view text(kept.data() + l.begin, l.len);
    if (number == 1 && absl::StartsWith(text, "\xEF\xBB\xBF")) {
      bom = true;
      text.remove_prefix(3);
    }
    const size_t mark = content.size();
    AppendLineNumber(&content, number);
    invalid_utf8 |= AppendSanitizedUtf8(&content, text);
    const bool complete = l.len == l.full_len;
    if (complete && l.has_newline) content.push_back('\n');
    chars += Utf8Chars(absl::string_view(content).substr(mark));
    if (content.size() <= max_bytes && chars <= max_chars && complete) {
      shown_end = number;
      continue;
    }
    char_limit = chars > max_chars;
    byte_limit = !char_limit;
    if (shown_end >= start) {  // show it next time instead
      content.resize(mark);
      break;
    }
    // A single line larger than the whole budget: show its start.
    size_t room = max_bytes > 80 ? max_bytes - 80 : max_bytes / 2;
    size_t room_chars = max_chars > 80 ? max_chars - 80 : max_chars / 2;
    absl::string_view piece(content.data() + mark, content.size() - mark);
    piece = piece.substr(0, Utf8SafePrefix(piece, std::min(room, piece.size())));
    content.resize(mark + Utf8PrefixBytes(piece, room_chars));
    absl::StrAppend(&content, " [... line ", number, " cut: it is ", HumanSize(l.full_len), "]\n");
    shown_end = number;
    cut_line = true;
    break;
  }
  // A line cut short is truncated output too, even when it is the last one.
  viewed.more_lines = shown_end < wanted_end;
  viewed.cut_line = cut_line;
  viewed.limit = char_limit   ? absl::StrCat("the ", max_chars, "-character budget")
                 : byte_limit ? absl::StrCat("the ", max_bytes, "-byte limit")
                              : absl::StrCat("the ", max_lines, "-line limit");
  viewed.char_limit = char_limit;
  const bool truncated = viewed.more_lines || cut_line;

  Json& out = viewed.result;
  out.SetObject();
  auto& a = out.GetAllocator();
  out.AddMember("path", JsonValue(wp.display, a), a);
  out.AddMember("content", JsonValue(content, a), a);
  out.AddMember("start_line", start, a);
  out.AddMember("end_line", shown_end, a);
  out.AddMember("total_lines", total, a);
  out.AddMember("truncated", truncated, a);
  if (viewed.more_lines) out.AddMember("next_start_line", shown_end + 1, a);
  out.AddMember("size_bytes", scan.size(), a);
  out.AddMember("sha256", JsonValue(scan.sha256(), a), a);
  const char* endings = scan.crlf() == 0 ? (scan.lf() == 0 ? "none" : "lf")
                        : scan.lf() == 0 ? "crlf"
                                         : "mixed";
  out.AddMember("line_endings", JsonValue(endings, a), a);
  if (bom) out.AddMember("bom", true, a);
  if (total > 0 && !scan.final_newline()) out.AddMember("final_newline", false, a);
  if (invalid_utf8) out.AddMember("invalid_utf8", true, a);
  return viewed;
}

absl::StatusOr<Json> ViewFileTool::Call(const JsonValue& args, ToolContext& ctx) const {
  auto file_path = StringArg(args, "file_path");
  if (!file_path.has_value()) return absl::InvalidArgumentError("file_path is required");
  int64_t start = IntArg(args, "start_line", 1);
  std::optional<int64_t> end;
  if (args.HasMember("end_line") && args["end_line"].IsInt64()) end = args["end_line"].GetInt64();
  if (start < 1) return absl::InvalidArgumentError("start_line must be at least 1");
  if (end.has_value() && *end < start) {
    return absl::InvalidArgumentError(
        absl::StrCat("end_line (", *end, ") is before start_line (", start, ")"));
  }

  auto wp = fs::ResolveWorkspacePath(ctx.info().workspaces, *file_path, "file_path");
  if (!wp.ok()) return wp.status();
  // The model_content budget, less room for the continuation marker.
  auto viewed = ViewLines(*wp, start, end, ctx.info().model_content.TextChars(200), options_, ctx,
                          "view_file");
  if (!viewed.ok()) {
    if (absl::IsFailedPrecondition(viewed.status()) &&
        absl::StrContains(viewed.status().message(), "is a directory")) {
      return absl::FailedPreconditionError(absl::StrCat(
          "'", wp->display, "' is a directory; use list_directory to see what it holds"));
    }
    return viewed.status();
  }
  Json& out = viewed->result;
  if (BoolField(out, "binary")) return std::move(out);
  const int64_t total = IntArg(out, "total_lines", 0);
  if (total == 0 && start > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_line ", start, " is beyond the end of '", wp->display, "': the file is empty"));
  }
  if (total > 0 && start > total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "start_line ", start, " is beyond the end of '", wp->display, "', which has ", total,
        total == 1 ? " line" : " lines", "; use start_line between 1 and ", total));
  }
  if (BoolField(out, "truncated")) {
    const int64_t shown_end = IntArg(out, "end_line", 0);
    std::string hint = absl::StrCat("Showing lines ", start, "-", shown_end, " of ", total,
                                    " (cut at ", viewed->limit, ").");
    if (viewed->more_lines) {
      absl::StrAppend(&hint, " Call view_file with start_line=", shown_end + 1, " to continue.");
    }
    if (viewed->cut_line) {
      absl::StrAppend(&hint, " Line ", shown_end, " is longer than ",
                      viewed->char_limit ? "the character budget" : "the byte limit",
                      " and was cut; search it with grep_search.");
    }
    // Where the payload has always had it: after truncated and next_start_line.
    Json ordered = MakeObject();
    auto& a = ordered.GetAllocator();
    for (auto& m : out.GetObject()) {
      const bool after = absl::string_view(m.name.GetString()) == "size_bytes";
      if (after) ordered.AddMember("hint", JsonValue(hint, a), a);
      ordered.AddMember(JsonValue(m.name, a), JsonValue(m.value, a), a);
    }
    return ordered;
  }
  return std::move(out);
}

std::string ViewFileTool::display_title(const JsonValue& input) const { return PathOf(input); }

DisplayResult ViewFileTool::display(const JsonValue& input, const JsonValue& result) const {
  std::string content = StringField(result, "content");
  if (result.IsObject() && result.HasMember("binary")) content = StringField(result, "message");
  return TextDisplay(display_title(input), ContentType::kPlainText, std::move(content),
                     kFileDisplayMaxBytes);
}

std::string ViewFileTool::model_content(const JsonValue& input, const JsonValue& result,
                                        const ModelContentBudget& budget) const {
  if (!result.IsObject() || !result.HasMember("content")) {
    return result.IsObject() && result.HasMember("message")
               ? StringField(result, "message")
               : DefaultModelContent(result, budget.max_chars);
  }
  const int64_t total = IntArg(result, "total_lines", 0);
  const int64_t first = IntArg(result, "start_line", 1);
  const int64_t last = IntArg(result, "end_line", 0);
  std::string text = StringField(result, "content");
  if (total == 0) return absl::StrCat("'", PathOf(input), "' is empty.");
  if (!text.empty() && text.back() != '\n') text.push_back('\n');
  if (result.HasMember("next_start_line")) {
    // U+2013 between the line numbers, as a person writes a range.
    absl::StrAppend(&text, "[showing lines ", GroupDigits(first), "\u2013", GroupDigits(last),
                    " of ", GroupDigits(total), "; continue with start_line=", last + 1, "]");
  } else if (BoolField(result, "truncated")) {
    absl::StrAppend(&text, "[showing lines ", GroupDigits(first), "\u2013", GroupDigits(last),
                    " of ", GroupDigits(total), "; line ", GroupDigits(last),
                    " was cut: it is too long to show; search it with grep_search]");
  } else if (first > 1 || last < total) {
    absl::StrAppend(&text, "[lines ", GroupDigits(first), "\u2013", GroupDigits(last), " of ",
                    GroupDigits(total), "]");
  }
  if (BoolField(result, "invalid_utf8")) {
    absl::StrAppend(&text, "\n[bytes that are not UTF-8 are shown as U+FFFD]");
  }
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

std::string ViewFileTool::compact_summary(const JsonValue& input, const JsonValue& result,
                                          bool ok) const {
  std::string path = PathOf(input);
  if (!ok) return absl::StrCat("[view_file: ", path, ": error]");
  if (result.IsObject() && result.HasMember("binary")) {
    return absl::StrCat("[view_file: ", path, " (binary, ", StringField(result, "mime_type"), ")]");
  }
  if (result.IsObject() && result.HasMember("end_line") && result["end_line"].IsInt64() &&
      result.HasMember("start_line") && result["start_line"].IsInt64()) {
    int64_t s = result["start_line"].GetInt64(), e = result["end_line"].GetInt64();
    if (e < s) return absl::StrCat("[view_file: ", path, " (empty)]");
    return absl::StrCat("[view_file: ", path, " lines ", s, "-", e, "]");
  }
  return absl::StrCat("[view_file: ", path, "]");
}

std::vector<PermissionRequirement> ViewFileTool::required_permissions(
    const JsonValue& input) const {
  return PathPermission(PathOf(input), PermissionLevel::kRead);
}

}  // namespace toolexec::builtin

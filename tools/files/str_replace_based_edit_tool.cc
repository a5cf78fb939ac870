// str_replace_based_edit_tool: Anthropic's text editor tool (see file_tools.h).
//
// The result texts follow Anthropic's documentation of the tool
// (text_editor_20250728) and its reference implementation: view prints
// "Here's the result of running `cat -n` on <path>:" and `cat -n` lines;
// str_replace answers "Successfully replaced text at exactly one location.",
// and its errors start with the documented "No match found for replacement.
// Please check your text and try again." and "Found N matches for replacement
// text. Please provide more context to make a unique match."; create answers
// "File created successfully at: <path>". Each adds what toolexec knows
// besides (the lines of the matches, the closest line of a miss, a numbered
// snippet of the edit).
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/runtime/utf8.h"
#include "tools/files/edit_engine.h"
#include "tools/files/file_tools.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/text.h"
#include "tools/workspace/write_lock.h"
#include "tools/search/search_tools.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::builtin {
namespace {

constexpr char kName[] = "str_replace_based_edit_tool";

constexpr char kSchema[] = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "command": {
      "type": "string",
      "enum": ["view", "create", "str_replace", "insert"],
      "description": "The command to run: view, create, str_replace or insert."
    },
    "path": {
      "type": "string",
      "description": "The file or directory: a path relative to the workspace root, or an absolute path inside it, e.g. \"src/main.py\"."
    },
    "view_range": {
      "type": "array",
      "items": {"type": "integer"},
      "minItems": 2,
      "maxItems": 2,
      "description": "view of a file only: [first, last] line numbers, 1-based and inclusive, e.g. [11, 12] shows lines 11 and 12; [first, -1] shows from line first to the end of the file. Without it the whole file is shown (up to the output limit)."
    },
    "file_text": {
      "type": "string",
      "description": "create: the content of the new file."
    },
    "old_str": {
      "type": "string",
      "description": "str_replace: the exact text to replace, whitespace and indentation included, without line-number prefixes. It must occur exactly once in the file."
    },
    "new_str": {
      "type": "string",
      "description": "str_replace: the text to put in place of old_str (absent: old_str is deleted). insert: the text to insert, when insert_text is not given."
    },
    "insert_line": {
      "type": "integer",
      "description": "insert: the line after which the text is inserted; 0 inserts at the start of the file."
    },
    "insert_text": {
      "type": "string",
      "description": "insert: the text to insert after line insert_line."
    },
    "max_characters": {
      "type": "integer",
      "minimum": 1,
      "description": "view of a file: show at most this many characters of numbered lines (whole lines; the rest is named with the view_range to continue from)."
    }
  },
  "required": ["command", "path"]
})json";

// Lines shown around an edit, as Anthropic's reference implementation does.
constexpr int kSnippetLines = 4;
constexpr size_t kMaxListedLines = 20;

std::string PathOf(const JsonValue& input) { return StringField(input, "path", "?"); }
std::string CommandOf(const JsonValue& input) { return StringField(input, "command", "?"); }

// `text`'s lines first..last (1-based, clamped), numbered like `cat -n`,
// as valid UTF-8.
std::string NumberedLines(absl::string_view text, int64_t first, int64_t last) {
  std::string out;
  int64_t number = 1;
  size_t pos = 0;
  while (number <= last) {
    size_t nl = text.find('\n', pos);
    absl::string_view line =
        text.substr(pos, nl == absl::string_view::npos ? absl::string_view::npos : nl - pos);
    if (number >= first) {
      AppendLineNumber(&out, number);
      AppendSanitizedUtf8(&out, line);
      out.push_back('\n');
    }
    if (nl == absl::string_view::npos) break;
    pos = nl + 1;
    if (pos == text.size()) break;  // the final newline starts no line
    ++number;
  }
  return out;
}

std::string Snippet(absl::string_view path, absl::string_view text, int64_t first, int64_t last) {
  return absl::StrCat("Here's the result of running `cat -n` on a snippet of ", path, ":\n",
                      NumberedLines(text, std::max<int64_t>(1, first), last));
}

// A result object with the fields every command has.
Json Result(const fs::WorkspacePath& wp, absl::string_view output) {
  Json out = MakeObject();
  auto& a = out.GetAllocator();
  out.AddMember("path", JsonValue(wp.display, a), a);
  std::string safe;
  AppendSanitizedUtf8(&safe, output);
  out.AddMember("output", JsonValue(safe, a), a);
  return out;
}

// Arguments for a call of another file tool: {key: path}.
Json PathArgs(const char* key, absl::string_view path) {
  Json args = MakeObject();
  auto& a = args.GetAllocator();
  args.AddMember(rapidjson::StringRef(key),
                 JsonValue(path.data(), static_cast<rapidjson::SizeType>(path.size()), a), a);
  return args;
}

absl::Status FileNotFound(absl::string_view path, bool writing) {
  return absl::NotFoundError(absl::StrCat(
      "File not found: the path ", path, " does not exist. Please provide a valid path",
      writing ? " (to make a new file, use the `create` command)." : "."));
}

std::string Description(const BuiltinOptions& options) {
  return absl::StrCat(
      "Views, creates and edits files in the workspace (Anthropic's text editor tool). "
      "view: a file with its lines numbered like `cat -n` (view_range [start, end] for part of "
      "it, end -1 = to the end; at most ",
      options.view_max_lines, " lines or ", options.view_max_bytes,
      " bytes per call), or a directory's files and directories up to 2 levels deep, hidden "
      "ones left out. create: a new file with file_text (an existing file is refused). "
      "str_replace: replaces old_str, which must occur exactly once, with new_str. insert: "
      "inserts insert_text after line insert_line (0 = at the start). Edits are atomic and "
      "keep the file's line endings, BOM and permissions.");
}

}  // namespace

// In path_scoped and provider_tools (not file_tools, which [Tool sets] fixes as
// view_file, create_file and edit_file), with Anthropic's
// provider-defined form of the tool for a harness that declares it that way.
StrReplaceBasedEditTool::StrReplaceBasedEditTool(const BuiltinOptions& options)
    : Tool(ToolSpec(kName, Description(options), kSchema)
               .Type(ToolType::kTextEdit)
               .Tags({kTagPathScoped, kTagProvider})
               .ProviderConfig(
                   R"({"type":"text_editor_20250728","name":"str_replace_based_edit_tool"})")),
      options_(options) {}

absl::StatusOr<Json> StrReplaceBasedEditTool::Call(const JsonValue& args, ToolContext& ctx) const {
  const std::string command = CommandOf(args);
  auto path = StringArg(args, "path");
  if (!path.has_value()) return absl::InvalidArgumentError("path is required");
  auto wp = fs::ResolveWorkspacePath(ctx.info().workspaces, *path, "path");
  if (!wp.ok()) return wp.status();

  if (command == "view") {
    auto opened = fs::OpenBeneath(*wp, O_PATH);
    if (!opened.ok()) {
      if (absl::IsNotFound(opened.status())) return FileNotFound(*path, false);
      return opened.status();
    }
    struct stat st;
    if (fstat(opened->get(), &st) != 0) return fs::ErrnoStatus(errno, wp->display);
    if (S_ISDIR(st.st_mode)) {
      if (args.HasMember("view_range")) {
        return absl::InvalidArgumentError(
            "The `view_range` parameter is not allowed when `path` points to a directory.");
      }
      ListDirectoryTool list(options_);
      Json list_args = PathArgs("directory_path", *path);
      list_args.AddMember("depth", 2, list_args.GetAllocator());
      list_args.AddMember("include_hidden", false, list_args.GetAllocator());
      auto listed = list.Call(list_args, ctx);
      if (!listed.ok()) return listed.status();
      std::string base(*path);
      while (base.size() > 1 && base.back() == '/') base.pop_back();
      std::string text = absl::StrCat("Here's the files and directories up to 2 levels deep in ",
                                      base, ", excluding hidden items:\n", base, "\n");
      for (const JsonValue& e : (*listed)["entries"].GetArray()) {
        absl::StrAppend(&text, base, "/", StringField(e, "name"),
                        StringField(e, "type") == "dir" ? "/" : "", "\n");
      }
      if (BoolField(*listed, "truncated")) {
        absl::StrAppend(&text, "<response clipped><NOTE>Only the first ",
                        UintField(*listed, "count"),
                        " entries are shown; view a subdirectory to see the rest.</NOTE>\n");
      }
      Json out = Result(*wp, text);
      out.AddMember("directory", true, out.GetAllocator());
      return out;
    }
    int64_t start = 1;
    std::optional<int64_t> end;
    std::string range_text;  // as given, for messages
    if (args.HasMember("view_range")) {
      const JsonValue& range = args["view_range"];
      if (!range.IsArray() || range.Size() != 2 || !range[0].IsInt64() || !range[1].IsInt64()) {
        return absl::InvalidArgumentError(
            "Invalid `view_range`. It should be a list of two integers.");
      }
      start = range[0].GetInt64();
      const int64_t last = range[1].GetInt64();
      range_text = absl::StrCat("[", start, ", ", last, "]");
      if (start < 1) {
        return absl::InvalidArgumentError(absl::StrCat("Invalid `view_range`: ", range_text,
                                                       ". Its first element `", start,
                                                       "` should be at least 1."));
      }
      if (last != -1 && last < start) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Invalid `view_range`: ", range_text, ". Its second element `", last,
            "` should be larger or equal than its first `", start,
            "`, or -1 for the end of the file."));
      }
      if (last != -1) end = last;
    }
    // What the text around the lines may take: the header names the path,
    // the note the range to continue from.
    const std::string header =
        absl::StrCat("Here's the result of running `cat -n` on ", *path, ":\n");
    const size_t reserve = 500 + Utf8Chars(header);
    size_t max_chars = ctx.info().model_content.TextChars(reserve);
    const bool limited = args.HasMember("max_characters") && args["max_characters"].IsInt64();
    if (limited) {
      max_chars = std::min<size_t>(
          max_chars, static_cast<size_t>(std::max<int64_t>(1, args["max_characters"].GetInt64())));
    }
    auto viewed = ViewLines(*wp, start, end, max_chars, options_, ctx, kName);
    if (!viewed.ok()) return viewed.status();
    const Json& lines = viewed->result;
    if (BoolField(lines, "binary")) return Result(*wp, StringField(lines, "message"));
    const int64_t total = IntArg(lines, "total_lines", 0);
    if (start > std::max<int64_t>(total, 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Invalid `view_range`: ", range_text, ". Its first element `", start,
          "` should be within the range of lines of the file: [1, ", total, "]."));
    }
    if (end.has_value() && *end > total) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Invalid `view_range`: ", range_text, ". Its second element `", *end,
          "` should be smaller than the number of lines in the file: `", total,
          "` (or -1 for the end of the file)."));
    }
    const int64_t shown_end = IntArg(lines, "end_line", 0);
    std::string text = absl::StrCat(header, StringField(lines, "content"));
    if (!text.empty() && text.back() != '\n') text.push_back('\n');
    if (BoolField(lines, "truncated")) {
      const bool by_request = viewed->char_limit && limited &&
                              static_cast<int64_t>(max_chars) == args["max_characters"].GetInt64();
      const std::string why =
          by_request ? absl::StrCat("max_characters ", max_chars) : viewed->limit;
      absl::StrAppend(&text, "<response clipped><NOTE>To save on context only part of this file "
                             "has been shown to you: lines ",
                      start, "-", shown_end, " of ", total, " (cut at ", why, ").");
      if (viewed->cut_line) {
        absl::StrAppend(&text, " Line ", shown_end,
                        " is longer than that and was cut; search it with `grep -n`.");
      }
      if (viewed->more_lines) {
        absl::StrAppend(&text, " View the rest with view_range [", shown_end + 1,
                        ", -1], or search the file with `grep -n` for the lines you need.");
      }
      absl::StrAppend(&text, "</NOTE>\n");
    }
    Json out = Result(*wp, text);
    auto& a = out.GetAllocator();
    out.AddMember("start_line", start, a);
    out.AddMember("end_line", shown_end, a);
    out.AddMember("total_lines", total, a);
    out.AddMember("truncated", BoolField(lines, "truncated"), a);
    out.AddMember("sha256", JsonValue(StringField(lines, "sha256"), a), a);
    return out;
  }

  // --- the commands that write name a file ---
  const std::string name = wp->BaseName();
  if (wp->trailing_slash || name.empty() || name == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("The path ", *path, " is a directory and only the `view` command can be "
                     "used on directories"));
  }

  if (command == "create") {
    auto file_text = StringArg(args, "file_text");
    if (!file_text.has_value()) {
      return absl::InvalidArgumentError("Parameter `file_text` is required for command: create");
    }
    if (file_text->size() > options_.max_file_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("file_text is ", file_text->size(),
                                                     " bytes; the limit is ",
                                                     options_.max_file_bytes));
    }
    auto created = WriteWholeFile(*wp, *file_text, /*overwrite=*/false, kName, ctx);
    if (absl::IsAlreadyExists(created.status())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "File already exists at: ", *path,
          ". Cannot overwrite files using command `create`; change it with `str_replace` or "
          "`insert`."));
    }
    if (!created.ok()) return created.status();
    Json out = Result(*wp, absl::StrCat("File created successfully at: ", *path));
    out.AddMember("bytes_written", static_cast<uint64_t>(file_text->size()), out.GetAllocator());
    out.AddMember("sha256", JsonValue(fs::Sha256Hex(*file_text), out.GetAllocator()),
                  out.GetAllocator());
    return out;
  }

  if (command != "str_replace" && command != "insert") {
    return absl::InvalidArgumentError(absl::StrCat(
        "Unrecognized command ", command, ". The allowed commands for the ", kName,
        " tool are: view, create, str_replace, insert"));
  }
  // Arguments first, then the file.
  std::string old_str, new_str;
  int64_t insert_line = 0;
  if (command == "str_replace") {
    auto o = StringArg(args, "old_str");
    if (!o.has_value()) {
      return absl::InvalidArgumentError("Parameter `old_str` is required for command: str_replace");
    }
    if (o->empty()) {
      return absl::InvalidArgumentError(
          "Parameter `old_str` is empty; quote the text to replace (to add text at a line, use "
          "the `insert` command).");
    }
    old_str = std::string(*o);
    new_str = std::string(StringArg(args, "new_str").value_or(""));
  } else {
    if (!args.HasMember("insert_line") || !args["insert_line"].IsInt64()) {
      return absl::InvalidArgumentError("Parameter `insert_line` is required for command: insert");
    }
    insert_line = args["insert_line"].GetInt64();
    // Claude 4 models send insert_text (text_editor_20250728); earlier tool
    // versions, new_str.
    auto text = StringArg(args, "insert_text");
    auto n = StringArg(args, "new_str");
    if (text.has_value() && n.has_value() && *text != *n) {
      return absl::InvalidArgumentError(
          "Parameters `insert_text` and `new_str` differ; give the text to insert once, as "
          "`insert_text`.");
    }
    if (!text.has_value()) text = n;
    if (!text.has_value()) {
      return absl::InvalidArgumentError("Parameter `insert_text` is required for command: insert");
    }
    new_str = std::string(*text);
  }

  auto dir = fs::OpenDirectory(wp->Parent());
  if (!dir.ok()) {
    if (absl::IsNotFound(dir.status())) return FileNotFound(*path, true);
    return dir.status();
  }
  // Held from the read to the rename (fs/write_lock.h).
  auto lock = fs::FileWriteLock::Acquire(dir->get(), name, ctx.cancellation(), wp->display);
  if (!lock.ok()) return lock.status();
  auto file = ReadEditable(dir->get(), *wp, EditLimits{kName, options_.max_file_bytes, ""});
  if (absl::IsNotFound(file.status())) return FileNotFound(*path, true);
  if (!file.ok()) return file.status();
  if (file->crlf_mode) {
    old_str = CrlfToLf(old_str);
    new_str = CrlfToLf(new_str);
  }
  const std::string& text = file->text;
  std::string next;
  std::string output;
  if (command == "str_replace") {
    const Occurrences found = FindOccurrences(text, old_str, kMaxListedLines);
    if (found.count == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "No match found for replacement. Please check your text and try again. old_str does "
          "not occur in ",
          *path, ".", MissHint(text, old_str, "the `view` command", ctx.cancellation())));
    }
    if (found.count > 1) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Found ", found.count,
          " matches for replacement text. Please provide more context to make a unique match. "
          "old_str occurs in ",
          *path, " at lines ", ListLines(found.lines, found.count > kMaxListedLines), "."));
    }
    const size_t at = text.find(old_str);
    const uint64_t size = text.size() - old_str.size() + new_str.size();
    if (size > options_.max_file_bytes) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the replacement would make ", *path, " ", size, " bytes; ", kName, " writes at most ",
          options_.max_file_bytes, " bytes"));
    }
    next.reserve(size);
    next.append(text, 0, at).append(new_str).append(text, at + old_str.size(), std::string::npos);
    const int64_t line = found.lines.front();
    const int64_t new_lines = std::count(new_str.begin(), new_str.end(), '\n');
    output = absl::StrCat("Successfully replaced text at exactly one location.\n",
                          Snippet(*path, next, line - kSnippetLines,
                                  line + new_lines + kSnippetLines));
  } else {
    // Lines end at "\n"; a last line without one still counts.
    const int64_t lines = static_cast<int64_t>(std::count(text.begin(), text.end(), '\n')) +
                          (!text.empty() && text.back() != '\n' ? 1 : 0);
    if (insert_line < 0 || insert_line > lines) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Invalid `insert_line` parameter: ", insert_line,
          ". It should be within the range of lines of the file: [0, ", lines, "] (", *path,
          " has ", lines, lines == 1 ? " line" : " lines", "; 0 inserts at the start, ", lines,
          " at the end)."));
    }
    size_t at = 0;
    for (int64_t i = 0; i < insert_line; ++i) {
      size_t nl = text.find('\n', at);
      at = nl == std::string::npos ? text.size() : nl + 1;
    }
    // new_str goes in as whole lines: it ends with "\n" unless it follows a
    // last line that has none (then it starts a line of its own instead).
    const bool after_unterminated = at == text.size() && !text.empty() && text.back() != '\n';
    std::string piece = after_unterminated ? "\n" : "";
    piece += new_str;
    if (!after_unterminated && (new_str.empty() || new_str.back() != '\n')) piece += "\n";
    const uint64_t size = text.size() + piece.size();
    if (size > options_.max_file_bytes) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the insertion would make ", *path, " ", size, " bytes; ", kName, " writes at most ",
          options_.max_file_bytes, " bytes"));
    }
    next.reserve(size);
    next.append(text, 0, at).append(piece).append(text, at, std::string::npos);
    const int64_t inserted = std::max<int64_t>(1, std::count(piece.begin(), piece.end(), '\n'));
    output = absl::StrCat("The file ", *path, " has been edited. ",
                          Snippet(*path, next, insert_line + 1 - kSnippetLines,
                                  insert_line + inserted + kSnippetLines),
                          "Review the changes and make sure they are as expected (correct "
                          "indentation, no duplicate lines, etc). Edit the file again if "
                          "necessary.");
  }
  if (EncodedSize(*file, next) > options_.max_file_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the edit would make ", *path, " ", EncodedSize(*file, next), " bytes; ", kName,
        " writes at most ", options_.max_file_bytes, " bytes"));
  }
  const std::string bytes = Encode(*file, next);
  fs::DiffStats stats;
  bool diff_truncated = false;
  std::string diff = fs::UnifiedDiff(text, next, wp->display, 3, &stats, &ctx.cancellation(),
                                 options_.view_max_bytes, &diff_truncated);
  if (ctx.cancelled()) return absl::CancelledError(absl::StrCat(kName, " was cancelled"));
  if (bytes != file->raw) {
    if (absl::Status s = ReplaceFile(dir->get(), *wp, *file, bytes); !s.ok()) return s;
  }
  Json out = Result(*wp, output);
  auto& a = out.GetAllocator();
  out.AddMember("diff", JsonValue(diff, a), a);
  if (diff_truncated) out.AddMember("diff_truncated", true, a);
  out.AddMember("sha256", JsonValue(fs::Sha256Hex(bytes), a), a);
  out.AddMember("lines_added", stats.added, a);
  out.AddMember("lines_removed", stats.removed, a);
  out.AddMember("line_endings", JsonValue(file->line_endings(), a), a);
  if (file->bom) out.AddMember("bom", true, a);
  return out;
}

std::string StrReplaceBasedEditTool::model_content(const JsonValue& /*input*/,
                                                   const JsonValue& result,
                                                   const ModelContentBudget& budget) const {
  // The reference tool's answer is its text; the payload's other fields are
  // for the harness.
  if (result.IsObject() && result.HasMember("output") && result["output"].IsString()) {
    return StringField(result, "output");
  }
  return DefaultModelContent(result, budget.max_chars);
}

std::string StrReplaceBasedEditTool::display_title(const JsonValue& input) const {
  return absl::StrCat(CommandOf(input), " ", PathOf(input));
}

DisplayResult StrReplaceBasedEditTool::display(const JsonValue& input,
                                               const JsonValue& result) const {
  const bool edit = result.IsObject() && result.HasMember("diff");
  return TextDisplay(display_title(input), ContentType::kPlainText,
                     StringField(result, edit ? "diff" : "output"), kFileDisplayMaxBytes);
}

std::string StrReplaceBasedEditTool::compact_summary(const JsonValue& input,
                                                     const JsonValue& result, bool ok) const {
  const std::string head = absl::StrCat("[", kName, ": ", CommandOf(input), " ", PathOf(input));
  if (!ok) return absl::StrCat(head, ": error]");
  if (result.IsObject() && result.HasMember("lines_added")) {
    return absl::StrCat(head, " +", IntArg(result, "lines_added", 0), " -",
                        IntArg(result, "lines_removed", 0), "]");
  }
  return absl::StrCat(head, "]");
}

std::vector<PermissionRequirement> StrReplaceBasedEditTool::required_permissions(
    const JsonValue& input) const {
  // A view may list a directory two levels deep: recursive read.
  if (CommandOf(input) == "view") return PathPermission(PathOf(input), PermissionLevel::kRead, true);
  return PathPermission(PathOf(input), PermissionLevel::kWrite);
}

std::vector<std::string> StrReplaceBasedEditTool::resources(const JsonValue& input) const {
  // Writes of one file in a batch run in call order; a view runs alongside.
  auto path = StringArg(input, "path");
  if (CommandOf(input) == "view" || !path.has_value() || path->empty()) return {};
  return {PathResource(*path)};
}

}  // namespace toolexec::builtin

// edit_file: exact string replacements, all or none (see file_tools.h).

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/files/edit_engine.h"
#include "tools/files/file_tools.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/write_lock.h"
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

constexpr size_t kMaxListedLines = 20;

std::string PathOf(const JsonValue& input) { return StringField(input, "file_path", "?"); }

// `note` follows the file's name (e.g. that another write ran just before).
std::string MissMessage(absl::string_view text, absl::string_view old_string, size_t index,
                        const std::string& display, absl::string_view note,
                        const CancellationToken& cancel) {
  std::string msg = absl::StrCat("edits[", index, "].old_string was not found in '", display, "'");
  if (index > 0) absl::StrAppend(&msg, " (after applying edits[0..", index - 1, "])");
  absl::StrAppend(&msg, note, ".", MissHint(text, old_string, "view_file", cancel));
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
  EditLimits limits{"edit_file", options_.max_file_bytes, " (to create it, use create_file)"};
  auto file = ReadEditable(dir->get(), *wp, limits);
  if (!file.ok()) return file.status();
  const std::string& raw = file->raw;
  const std::string previous_sha = fs::Sha256Hex(raw);
  if (expected.has_value() && *expected != previous_sha) {
    return absl::FailedPreconditionError(absl::StrCat(
        "file changed since read: sha256 is ", previous_sha, ", expected ", *expected,
        after_other_write, "; view '", wp->display,
        "' again and redo the edit against its current content"));
  }

  std::string text = file->text;
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
    if (file->crlf_mode) {
      e.old_string = CrlfToLf(e.old_string);
      e.new_string = CrlfToLf(e.new_string);
    }
    auto matches = [&](auto&& each) {
      for (size_t p = text.find(e.old_string); p != std::string::npos;
           p = text.find(e.old_string, p + e.old_string.size())) {
        each(p);
      }
    };
    const Occurrences found = FindOccurrences(text, e.old_string, kMaxListedLines);
    const uint64_t count = found.count;
    if (count == 0) {
      return absl::FailedPreconditionError(
          MissMessage(text, e.old_string, i, wp->display, after_other_write, ctx.cancellation()));
    }
    if (count > 1 && !e.replace_all) {
      return absl::FailedPreconditionError(absl::StrCat(
          "edits[", i, "].old_string occurs ", count, " times in '", wp->display, "'",
          i > 0 ? absl::StrCat(" (after applying edits[0..", i - 1, "])") : "", " (lines ",
          absl::StrJoin(found.lines, ", "), count > kMaxListedLines ? ", ..." : "",
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
  const uint64_t out_size = EncodedSize(*file, text);
  if (out_size > options_.max_file_bytes) return too_big("the edits", out_size);
  const std::string out_bytes = Encode(*file, text);
  const std::string new_sha = fs::Sha256Hex(out_bytes);

  fs::DiffStats stats;
  bool diff_truncated = false;
  std::string diff = fs::UnifiedDiff(original, text, wp->display, 3, &stats, &ctx.cancellation(),
                                 options_.view_max_bytes, &diff_truncated);
  if (ctx.cancelled()) return absl::CancelledError("edit_file was cancelled");

  bool written = false;
  if (!dry_run && out_bytes != raw) {
    if (absl::Status s = ReplaceFile(dir->get(), *wp, *file, out_bytes); !s.ok()) return s;
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
  out.AddMember("line_endings", JsonValue(file->line_endings(), a), a);
  if (file->bom) out.AddMember("bom", true, a);
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

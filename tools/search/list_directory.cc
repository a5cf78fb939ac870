#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/workspace/confined_path.h"
#include "tools/search/grep.h"
#include "tools/search/search_tools.h"
#include "tools/workspace/walker.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::builtin {
namespace {

using search_support::AddString;
using search_support::KeepWithinChars;
using search_support::ListingModelContent;
using search_support::PathArg;

constexpr int kMaxDepth = 32;

struct Listed {
  std::string path;  // relative to the listed directory
  fs::EntryKind kind;
  uint64_t size = 0;
  std::string target;  // symlinks
};

const char* KindName(fs::EntryKind kind) {
  switch (kind) {
    case fs::EntryKind::kFile:
      return "file";
    case fs::EntryKind::kDir:
      return "dir";
    case fs::EntryKind::kSymlink:
      return "symlink";
    case fs::EntryKind::kOther:
      break;
  }
  return "other";
}

std::string DirectoryOf(const JsonValue& input) { return PathArg(input, "directory_path"); }

// One entry as a person reads it: "src/", "a.txt  (12 bytes)", "l -> target".
std::string EntryLine(const JsonValue& e) {
  const std::string type = StringField(e, "type");
  std::string line = absl::StrCat(StringField(e, "name"), type == "dir" ? "/" : "");
  if (type == "file") absl::StrAppend(&line, "  (", UintField(e, "size"), " bytes)");
  if (type == "symlink") absl::StrAppend(&line, " -> ", StringField(e, "target"));
  line.push_back('\n');
  return line;
}

std::string EntriesText(const JsonValue& result) {
  std::string text;
  if (!result.IsObject() || !result.HasMember("entries") || !result["entries"].IsArray()) {
    return text;
  }
  for (const JsonValue& e : result["entries"].GetArray()) text += EntryLine(e);
  return text;
}

std::string Description(const BuiltinOptions& options) {
  return absl::StrCat(
      "Lists the entries of a directory in the workspace: name (relative to the listed "
      "directory), type (file, dir, symlink, other) and size in bytes. depth=1 lists only the "
      "directory's own entries; a larger depth also lists subdirectories, breadth first. Hidden "
      "entries (names starting with '.') are left out unless include_hidden. Symlinks are shown "
      "with their target but never followed. At most ",
      options.list_max_entries, " entries are returned; `truncated` says when there were more.");
}

std::string Schema(const BuiltinOptions& options) {
  return absl::StrCat(R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "directory_path": {
      "type": "string",
      "description": "The directory to list, relative to the workspace root (or absolute inside the workspace).",
      "default": "."
    },
    "depth": {
      "type": "integer",
      "description": "How many levels to list: 1 = only the directory's own entries.",
      "minimum": 1,
      "maximum": )json",
                      kMaxDepth, R"json(,
      "default": 1
    },
    "include_hidden": {
      "type": "boolean",
      "description": "Also list entries whose name starts with '.'.",
      "default": false
    }
  }
})json");
}

}  // namespace

ListDirectoryTool::ListDirectoryTool(const BuiltinOptions& options)
    : Tool(ToolSpec("list_directory", Description(options), Schema(options))
               .Type(ToolType::kFileRead)
               .Tags({kTagReadOnly, kTagPathScoped, kTagMinimal})),
      options_(options) {}

absl::StatusOr<Json> ListDirectoryTool::Call(const JsonValue& args, ToolContext& ctx) const {
  const std::string dir_arg = DirectoryOf(args);
  const int depth = static_cast<int>(std::clamp<int64_t>(IntArg(args, "depth", 1), 1, kMaxDepth));
  const bool include_hidden = BoolArg(args, "include_hidden", false);
  const size_t cap = std::max<uint32_t>(options_.list_max_entries, 1);

  absl::StatusOr<fs::ConfinedPath> start =
      fs::OpenConfined(ctx.info().workspaces, dir_arg, "directory_path");
  if (!start.ok()) return start.status();
  const std::string display = start->Display(start->relative);
  if (!start->is_dir) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", display, "' is a file, not a directory; use view_file to read it"));
  }

  // Breadth first, each directory's entries in name order, so a cap keeps
  // whole shallow levels and the same call always returns the same entries.
  std::vector<Listed> listed;
  bool truncated = false;
  uint64_t unreadable = 0;
  std::vector<std::string> level = {""};
  for (int d = 1; d <= depth && !level.empty() && !truncated; ++d) {
    std::vector<std::string> next;
    for (const std::string& dir : level) {
      if (ctx.cancelled()) return absl::CancelledError("list_directory was cancelled");
      fs::UniqueFd fd(dir.empty()
                              ? openat(start->fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
                              : fs::OpenSubdirNoFollow(start->fd.get(), dir));
      std::vector<fs::DirEntry> entries;
      if (!fd.valid() || !fs::ReadEntries(fd.get(), &entries)) {
        if (dir.empty()) return fs::ErrnoStatus(errno, display, "listing");
        ++unreadable;
        continue;
      }
      std::sort(
          entries.begin(), entries.end(),
          [](const fs::DirEntry& a, const fs::DirEntry& b) { return a.name < b.name; });
      for (const fs::DirEntry& e : entries) {
        if (!include_hidden && e.name.front() == '.') continue;
        if (listed.size() >= cap) {
          truncated = true;
          break;
        }
        Listed item;
        item.path = fs::JoinRelative(dir, e.name);
        item.kind = e.kind;
        struct stat st;
        if (fstatat(fd.get(), e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
          item.size = static_cast<uint64_t>(st.st_size);
        }
        if (e.kind == fs::EntryKind::kSymlink) {
          char target[4096];
          const ssize_t n = readlinkat(fd.get(), e.name.c_str(), target, sizeof target);
          if (n > 0) item.target.assign(target, static_cast<size_t>(n));
        }
        // .git is listed but never expanded: its contents are noise.
        if (e.kind == fs::EntryKind::kDir && d < depth && e.name != ".git") {
          next.push_back(item.path);
        }
        listed.push_back(std::move(item));
      }
      if (truncated) break;
    }
    level = std::move(next);
  }
  std::sort(listed.begin(), listed.end(),
            [](const Listed& a, const Listed& b) { return fs::PathLess(a.path, b.path); });

  Json result = MakeObject();
  auto& alloc = result.GetAllocator();
  AddString(result, result, "directory", SanitizeUtf8(display));
  JsonValue entries(rapidjson::kArrayType);
  for (const Listed& item : listed) {
    JsonValue e(rapidjson::kObjectType);
    AddString(result, e, "name", SanitizeUtf8(item.path));
    AddString(result, e, "type", KindName(item.kind));
    if (item.kind != fs::EntryKind::kDir) e.AddMember("size", item.size, alloc);
    if (!item.target.empty()) AddString(result, e, "target", SanitizeUtf8(item.target));
    entries.PushBack(e, alloc);
  }
  const size_t dropped = KeepWithinChars(entries, ctx.info().model_content.TextChars(),
                                         [](const JsonValue& e) { return Utf8Chars(EntryLine(e)); });
  const size_t shown = listed.size() - dropped;
  result.AddMember("entries", entries, alloc);
  result.AddMember("count", static_cast<uint64_t>(shown), alloc);
  result.AddMember("truncated", truncated || dropped > 0, alloc);
  if (unreadable > 0) result.AddMember("unreadable_directories", unreadable, alloc);
  if (truncated || dropped > 0) {
    AddString(result, result, "hint",
              absl::StrCat("showing the first ", GroupDigits(shown),
                           truncated ? absl::StrCat(" entries (listing stopped at ", cap, ")")
                                     : absl::StrCat(" of ", GroupDigits(listed.size()),
                                                    " entries"),
                           "; list a subdirectory or use a smaller depth"));
  }
  return result;
}

std::string ListDirectoryTool::display_title(const JsonValue& input) const {
  return DirectoryOf(input);
}

DisplayResult ListDirectoryTool::display(const JsonValue& input, const JsonValue& result) const {
  std::string text;
  if (result.IsObject() && result.HasMember("error")) {
    text = StringField(result, "error");
  } else if (result.IsObject() && result.HasMember("entries") && result["entries"].IsArray()) {
    text = EntriesText(result);
    if (BoolField(result, "truncated")) absl::StrAppend(&text, "... (truncated)\n");
  }
  return TextDisplay(display_title(input), ContentType::kPlainText, std::move(text),
                     kSearchDisplayMaxBytes);
}

std::string ListDirectoryTool::model_content(const JsonValue& /*input*/, const JsonValue& result,
                                             const ModelContentBudget& /*budget*/) const {
  return ListingModelContent(result, EntriesText(result), "The directory is empty.");
}

std::string ListDirectoryTool::compact_summary(const JsonValue& input, const JsonValue& result,
                                               bool ok) const {
  const std::string dir = DirectoryOf(input);
  if (!ok) return absl::StrCat("[list_directory: ", dir, ": error]");
  return absl::StrCat("[list_directory: ", dir, ": ", UintField(result, "count"), " entries",
                      BoolField(result, "truncated") ? ", truncated" : "", "]");
}

std::vector<PermissionRequirement> ListDirectoryTool::required_permissions(
    const JsonValue& input) const {
  const bool recursive = IntArg(input, "depth", 1) > 1;
  return PathPermission(DirectoryOf(input), PermissionLevel::kRead, recursive);
}

}  // namespace toolexec::builtin

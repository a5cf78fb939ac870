// memory: Anthropic's memory_20250818 tool. Files under /memories, kept per
// user (the session's user_id) in a directory of the daemon's
// (BuiltinOptions::memory_dir), so they outlive sessions and restarts.
//
// Confinement: /memories/<rel> is <memory_dir>/<user>/<rel>, or
// <memory_dir>/@<caller>/<user>/<rel> for a session an authenticated caller
// opened (a caller's users are its own, as its artifacts are), and every path
// is resolved beneath the user's directory handle by the confined-path layer
// (workspace/confined.h: openat2 RESOLVE_BENEATH or its O_NOFOLLOW walk), so "..",
// absolute symbolic links and links that lead out are refused by the kernel;
// names are never decoded ("%2e%2e" is a file called that). The user's
// directory name is the user id with every byte outside [A-Za-z0-9._-]
// written as %XX (and "." and ".." escaped), so no id names another's
// directory or leaves memory_dir; the caller's is escaped the same way, and
// as '@' is always escaped no user id spells a caller's directory.
//
// Texts: the commands, arguments, results and errors are those of Anthropic's
// reference implementation (the SDK's local file system memory tool):
// "File created successfully at: …", "The memory file has been edited. …",
// "Successfully deleted …", and so on. A failure is an error result whose
// message is the reference's error text.
//
// Policy [Deciding what runs]: a call needs the virtual path /memories/<rel> (Read for view,
// Write otherwise; both paths of a rename), so path rules such as
// path_glob "memories/**" judge memory writes as writes.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <cerrno>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/builtin.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/tool_context.h"

namespace toolexec {
namespace {

constexpr char kSchema[] = R"json({
  "type": "object",
  "properties": {
    "command": {
      "type": "string",
      "enum": ["view", "create", "str_replace", "insert", "delete", "rename"],
      "description": "The operation."
    },
    "path": {"type": "string", "description": "A path under /memories (view, create, str_replace, insert, delete)."},
    "view_range": {
      "type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
      "description": "view: [first, last] line, 1-based; last -1 = to the end."
    },
    "file_text": {"type": "string", "description": "create: the file's content."},
    "old_str": {"type": "string", "description": "str_replace: the text to replace; must appear exactly once."},
    "new_str": {"type": "string", "description": "str_replace: the replacement."},
    "insert_line": {"type": "integer", "minimum": 0, "description": "insert: the line after which to insert (0 = at the top)."},
    "insert_text": {"type": "string", "description": "insert: the text to insert."},
    "old_path": {"type": "string", "description": "rename: the current path."},
    "new_path": {"type": "string", "description": "rename: the new path."}
  },
  "required": ["command"],
  "additionalProperties": false
})json";

constexpr char kRoot[] = "/memories";
constexpr int kLineNumberWidth = 6;

absl::Status Fail(absl::string_view message) {
  return ToolError(ErrorCode::kToolFailed, message);
}

// The user's directory name (see the header comment).
std::string UserDirName(absl::string_view user) {
  if (user.empty()) return "_default";
  std::string out;
  for (unsigned char c : user) {
    if (absl::ascii_isalnum(c) || c == '_' || c == '-' || (c == '.' && user != "." && user != "..")) {
      out += static_cast<char>(c);
    } else {
      absl::StrAppendFormat(&out, "%%%02X", c);
    }
  }
  return out;
}

// "1.5K" as the reference formats sizes.
std::string FormatSize(uint64_t bytes) {
  if (bytes == 0) return "0B";
  const char* units[] = {"B", "K", "M", "G"};
  int i = 0;
  double size = static_cast<double>(bytes);
  while (size >= 1024 && i < 3) {
    size /= 1024;
    ++i;
  }
  if (size == static_cast<double>(static_cast<uint64_t>(size))) {
    return absl::StrCat(static_cast<uint64_t>(size), units[i]);
  }
  return absl::StrFormat("%.1f%s", size, units[i]);
}

std::string Numbered(int64_t n, absl::string_view line) {
  return absl::StrFormat("%*d\t%s", kLineNumberWidth, n, line);
}

absl::StatusOr<std::string> ReadAll(int fd) {
  std::string data;
  char buf[65536];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "memory file", "reading");
    }
    if (n == 0) break;
    data.append(buf, n);
  }
  return data;
}

class MemoryTool final : public Tool {
 public:
  explicit MemoryTool(std::string dir)
      : Tool(ToolSpec("memory",
                      "Your memory directory, /memories, kept across conversations: view a "
                      "directory or a file (with line numbers), create a file, str_replace "
                      "text in it, insert lines, delete, or rename. Check it before a task; "
                      "record what you learn as you go.",
                      kSchema)
                 .Type(ToolType::kTextEdit)
                 .NeedsContext()
                 .Tags({kTagDestructive, kTagProvider})),
        dir_(std::move(dir)) {}

  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    auto root = UserRoot(ctx.info().caller, ctx.info().user_id);
    if (!root.ok()) return root.status();
    const std::string command = builtin::StringField(args, "command");
    absl::StatusOr<std::string> text;
    if (command == "view") {
      text = View(*root, args);
    } else if (command == "create") {
      text = Create(*root, args);
    } else if (command == "str_replace") {
      text = StrReplace(*root, args);
    } else if (command == "insert") {
      text = Insert(*root, args);
    } else if (command == "delete") {
      text = Delete(*root, args);
    } else {
      text = Rename(*root, args);
    }
    if (!text.ok()) return text.status();
    Json out = MakeObject();
    out.AddMember("output", JsonValue(text->data(), static_cast<rapidjson::SizeType>(text->size()),
                                      out.GetAllocator()),
                  out.GetAllocator());
    return out;
  }

  std::string model_content(const JsonValue& /*input*/, const JsonValue& result,
                            const ModelContentBudget& budget) const override {
    return CutMiddle(builtin::StringField(result, "output"), budget.max_chars);
  }

  std::string display_title(const JsonValue& input) const override {
    std::string cmd = builtin::StringField(input, "command");
    std::string path = builtin::StringField(input, "path", builtin::StringField(input, "old_path"));
    return absl::StrCat("memory ", cmd, " ", path);
  }

  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override {
    const std::string command = builtin::StringField(input, "command");
    const PermissionLevel level =
        command == "view" ? PermissionLevel::kRead : PermissionLevel::kWrite;
    std::vector<PermissionRequirement> needs;
    for (const char* key : {"path", "old_path", "new_path"}) {
      auto p = builtin::StringArg(input, key);
      if (!p.has_value()) continue;
      PermissionRequirement r;
      r.kind = PermissionRequirement::Kind::kPath;
      // Only a path under /memories is ever touched; anything else is
      // refused by the call, and judged as the root here.
      r.value = IsMemoryPath(*p) ? std::string(*p) : kRoot;
      r.level = level;
      r.recursive = command == "delete" || command == "rename";
      needs.push_back(std::move(r));
    }
    if (needs.empty()) return PathPermission(kRoot, level);
    return needs;
  }

  // Calls of a batch that touch the memory store run in call order.
  std::vector<std::string> resources(const JsonValue& /*input*/) const override {
    return {"memory-store"};
  }

 private:
  static bool IsMemoryPath(absl::string_view p) {
    return p == kRoot || absl::StartsWith(p, absl::StrCat(kRoot, "/"));
  }

  absl::StatusOr<std::shared_ptr<const fs::ConfinedRoot>> UserRoot(absl::string_view caller,
                                                                    absl::string_view user) const {
    std::string path = dir_;
    if (!caller.empty()) absl::StrAppend(&path, "/@", UserDirName(caller));
    absl::StrAppend(&path, "/", UserDirName(user));
    if (absl::Status made = MakeDirectories(path, 0700); !made.ok()) return made;
    return fs::ConfinedRoot::Open(path);
  }

  // /memories/<rel> beneath the user's root; the reference's errors.
  static absl::StatusOr<fs::WorkspacePath> Resolve(
      const std::shared_ptr<const fs::ConfinedRoot>& root, absl::string_view path) {
    if (!IsMemoryPath(path)) {
      return Fail(absl::StrCat("Path must start with /memories, got: ", path));
    }
    absl::string_view tail = path.substr(sizeof(kRoot) - 1);
    while (absl::ConsumePrefix(&tail, "/")) {
    }
    std::string rel = tail.empty() ? "." : std::string(tail);
    // Lexically above /memories is refused as such, whether or not the
    // directories on the way exist (the kernel refuses what a link does).
    const std::string normal = NormalizePath(rel);
    if (normal == ".." || absl::StartsWith(normal, "../")) {
      return ToolError(ErrorCode::kDenied,
                       absl::StrCat("Path ", path, " would escape /memories directory"));
    }
    auto wp = fs::ResolveWorkspacePath({root}, rel, "path");
    if (!wp.ok()) {
      if (ErrorCodeOf(wp.status()) == ErrorCode::kDenied) {
        return ToolError(ErrorCode::kDenied,
                         absl::StrCat("Path ", path, " would escape /memories directory"));
      }
      return wp.status();
    }
    return *wp;
  }

  // Refuses what leads out of /memories (DENIED), as the reference does,
  // naming the path as the model gave it.
  static absl::Status EscapeOr(const absl::Status& s, absl::string_view path,
                               absl::string_view otherwise) {
    if (ErrorCodeOf(s) == ErrorCode::kDenied) {
      return ToolError(ErrorCode::kDenied,
                       absl::StrCat("Path ", path, " would escape /memories directory"));
    }
    if (s.code() == absl::StatusCode::kNotFound) return Fail(otherwise);
    return s;
  }

  static std::string PathArg(const JsonValue& args, const char* key) {
    return builtin::StringField(args, key);
  }

  static absl::StatusOr<std::string> RequireArg(const JsonValue& args, const char* key,
                                                absl::string_view command) {
    auto v = builtin::StringArg(args, key);
    if (!v.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Parameter `", key, "` is required for command: ", command));
    }
    return std::string(*v);
  }

  // The file's text, or the reference's errors for a missing path or a
  // directory.
  static absl::StatusOr<std::string> ReadText(const fs::WorkspacePath& wp,
                                              absl::string_view path) {
    auto opened = fs::OpenRegularFile(wp);
    if (!opened.ok()) {
      if (opened.status().code() == absl::StatusCode::kFailedPrecondition) {
        return Fail(absl::StrCat("The path ", path, " is not a file."));
      }
      return EscapeOr(opened.status(), path,
                      absl::StrCat("The path ", path,
                                   " does not exist. Please provide a valid path."));
    }
    return ReadAll(opened->fd.get());
  }

  static absl::Status WriteText(const fs::WorkspacePath& wp, absl::string_view data,
                                bool replace) {
    auto dir = fs::MakeDirectories(wp.Parent());
    if (!dir.ok()) return dir.status();
    AtomicWriteOptions o;
    o.replace_existing = replace;
    o.display = wp.display;
    return fs::WriteFileAtomic(dir->get(), wp.BaseName(), data, o);
  }

  absl::StatusOr<std::string> View(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                   const JsonValue& args) const {
    auto path = RequireArg(args, "path", "view");
    if (!path.ok()) return path.status();
    auto wp = Resolve(root, *path);
    if (!wp.ok()) return wp.status();
    auto probe = fs::OpenBeneath(*wp, O_PATH);
    if (!probe.ok()) {
      return EscapeOr(probe.status(), *path,
                      absl::StrCat("The path ", *path,
                                   " does not exist. Please provide a valid path."));
    }
    struct stat st;
    if (fstat(probe->get(), &st) != 0) return ErrnoStatus(errno, *path);
    if (S_ISDIR(st.st_mode)) return ViewDirectory(*wp, *path, st);
    auto content = ReadText(*wp, *path);
    if (!content.ok()) return content.status();
    std::vector<absl::string_view> lines = absl::StrSplit(*content, '\n');
    int64_t first = 1, last = static_cast<int64_t>(lines.size());
    if (args.HasMember("view_range")) {
      const auto& r = args["view_range"].GetArray();
      first = std::max<int64_t>(1, r[0].GetInt64());
      if (r[1].GetInt64() != -1) last = std::min<int64_t>(last, r[1].GetInt64());
    }
    std::string out = absl::StrCat("Here's the content of ", *path, " with line numbers:");
    for (int64_t n = first; n <= last; ++n) {
      absl::StrAppend(&out, "\n", Numbered(n, lines[n - 1]));
    }
    return out;
  }

  // Up to two levels, hidden entries and node_modules left out, sorted by name.
  static absl::StatusOr<std::string> ViewDirectory(const fs::WorkspacePath& wp,
                                                   absl::string_view path,
                                                   const struct stat& st) {
    std::vector<std::string> lines = {absl::StrCat(FormatSize(st.st_size), "\t", path)};
    std::function<void(const fs::WorkspacePath&, const std::string&, int)> walk =
        [&](const fs::WorkspacePath& dir, const std::string& prefix, int depth) {
          auto fd = fs::OpenDirectory(dir);
          if (!fd.ok()) return;
          DIR* d = fdopendir(dup(fd->get()));
          if (d == nullptr) return;
          std::vector<std::string> names;
          while (struct dirent* e = readdir(d)) {
            if (e->d_name[0] == '.' || absl::string_view(e->d_name) == "node_modules") continue;
            names.emplace_back(e->d_name);
          }
          closedir(d);
          std::sort(names.begin(), names.end());
          for (const std::string& name : names) {
            struct stat es;
            if (fstatat(fd->get(), name.c_str(), &es, AT_SYMLINK_NOFOLLOW) != 0) continue;
            const std::string rel = prefix.empty() ? name : absl::StrCat(prefix, "/", name);
            if (S_ISDIR(es.st_mode)) {
              lines.push_back(absl::StrCat(FormatSize(es.st_size), "\t", path, "/", rel, "/"));
              if (depth < 2) {
                walk(dir.WithRelative(dir.relative == "." ? name
                                                          : absl::StrCat(dir.relative, "/", name)),
                     rel, depth + 1);
              }
            } else if (S_ISREG(es.st_mode)) {
              lines.push_back(absl::StrCat(FormatSize(es.st_size), "\t", path, "/", rel));
            }
          }
        };
    walk(wp, "", 1);
    return absl::StrCat("Here're the files and directories up to 2 levels deep in ", path,
                        ", excluding hidden items and node_modules:\n",
                        absl::StrJoin(lines, "\n"));
  }

  absl::StatusOr<std::string> Create(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                     const JsonValue& args) const {
    auto path = RequireArg(args, "path", "create");
    if (!path.ok()) return path.status();
    auto text = RequireArg(args, "file_text", "create");
    if (!text.ok()) return text.status();
    auto wp = Resolve(root, *path);
    if (!wp.ok()) return wp.status();
    if (wp->relative == ".") return Fail(absl::StrCat("File ", *path, " already exists"));
    absl::Status s = WriteText(*wp, *text, /*replace=*/false);
    if (!s.ok()) {
      if (absl::StrContains(s.message(), "already exists")) {
        return Fail(absl::StrCat("File ", *path, " already exists"));
      }
      return EscapeOr(s, *path, s.message());
    }
    return absl::StrCat("File created successfully at: ", *path);
  }

  absl::StatusOr<std::string> StrReplace(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                         const JsonValue& args) const {
    auto path = RequireArg(args, "path", "str_replace");
    if (!path.ok()) return path.status();
    auto old_str = RequireArg(args, "old_str", "str_replace");
    if (!old_str.ok()) return old_str.status();
    const std::string new_str = builtin::StringField(args, "new_str");
    auto wp = Resolve(root, *path);
    if (!wp.ok()) return wp.status();
    auto content = ReadText(*wp, *path);
    if (!content.ok()) return content.status();
    std::vector<size_t> at;
    if (!old_str->empty()) {
      for (size_t pos = content->find(*old_str); pos != std::string::npos;
           pos = content->find(*old_str, pos + 1)) {
        at.push_back(pos);
      }
    }
    if (at.empty()) {
      return Fail(absl::StrCat("No replacement was performed, old_str `", *old_str,
                               "` did not appear verbatim in ", *path, "."));
    }
    if (at.size() > 1) {
      std::vector<std::string> line_numbers;
      for (size_t pos : at) {
        line_numbers.push_back(
            absl::StrCat(std::count(content->begin(), content->begin() + pos, '\n') + 1));
      }
      return Fail(absl::StrCat("No replacement was performed. Multiple occurrences of old_str `",
                               *old_str, "` in lines: ", absl::StrJoin(line_numbers, ", "),
                               ". Please ensure it is unique"));
    }
    const int64_t changed = std::count(content->begin(), content->begin() + at[0], '\n');
    std::string updated = *content;
    updated.replace(at[0], old_str->size(), new_str);
    if (absl::Status s = WriteText(*wp, updated, /*replace=*/true); !s.ok()) return s;
    std::vector<absl::string_view> lines = absl::StrSplit(updated, '\n');
    const int64_t from = std::max<int64_t>(0, changed - 2);
    const int64_t to = std::min<int64_t>(static_cast<int64_t>(lines.size()), changed + 3);
    std::string out =
        "The memory file has been edited. Here is the snippet showing the change (with line "
        "numbers):";
    for (int64_t n = from + 1; n <= to; ++n) absl::StrAppend(&out, "\n", Numbered(n, lines[n - 1]));
    return out;
  }

  absl::StatusOr<std::string> Insert(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                     const JsonValue& args) const {
    auto path = RequireArg(args, "path", "insert");
    if (!path.ok()) return path.status();
    auto text = RequireArg(args, "insert_text", "insert");
    if (!text.ok()) return text.status();
    if (!args.HasMember("insert_line")) {
      return absl::InvalidArgumentError("Parameter `insert_line` is required for command: insert");
    }
    const int64_t at = args["insert_line"].GetInt64();
    auto wp = Resolve(root, *path);
    if (!wp.ok()) return wp.status();
    auto content = ReadText(*wp, *path);
    if (!content.ok()) return content.status();
    // Lines as Python's splitlines() gives them for "\n" text.
    std::vector<std::string> lines = absl::StrSplit(*content, '\n');
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    if (at < 0 || at > static_cast<int64_t>(lines.size())) {
      return Fail(absl::StrCat("Invalid `insert_line` parameter: ", at,
                               ". It should be within the range [0, ", lines.size(), "]."));
    }
    std::string inserted = *text;
    while (!inserted.empty() && inserted.back() == '\n') inserted.pop_back();
    lines.insert(lines.begin() + at, std::move(inserted));
    std::string updated = absl::StrJoin(lines, "\n");
    if (updated.empty() || updated.back() != '\n') updated += '\n';
    if (absl::Status s = WriteText(*wp, updated, /*replace=*/true); !s.ok()) return s;
    return absl::StrCat("The file ", *path, " has been edited.");
  }

  absl::StatusOr<std::string> Delete(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                     const JsonValue& args) const {
    auto path = RequireArg(args, "path", "delete");
    if (!path.ok()) return path.status();
    auto wp = Resolve(root, *path);
    if (!wp.ok()) return wp.status();
    if (wp->relative == ".") return Fail("Cannot delete the /memories directory itself");
    auto parent = fs::OpenDirectory(wp->Parent());
    if (!parent.ok()) {
      return EscapeOr(parent.status(), *path, absl::StrCat("The path ", *path, " does not exist"));
    }
    absl::Status s = RemoveTree(parent->get(), wp->BaseName());
    if (!s.ok()) {
      return EscapeOr(s, *path, absl::StrCat("The path ", *path, " does not exist"));
    }
    return absl::StrCat("Successfully deleted ", *path);
  }

  // Removes `name` in `dir`: a file or symbolic link, or a directory with
  // everything in it (children opened O_NOFOLLOW, never through a link).
  static absl::Status RemoveTree(int dir, const std::string& name) {
    if (unlinkat(dir, name.c_str(), 0) == 0) return absl::OkStatus();
    if (errno != EISDIR && errno != EPERM) return ErrnoStatus(errno, name, "deleting");
    int fd = openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return ErrnoStatus(errno, name, "deleting");
    DIR* d = fdopendir(fd);
    if (d == nullptr) {
      close(fd);
      return ErrnoStatus(errno, name, "deleting");
    }
    std::vector<std::string> children;
    while (struct dirent* e = readdir(d)) {
      std::string child = e->d_name;
      if (child != "." && child != "..") children.push_back(std::move(child));
    }
    for (const std::string& c : children) {
      if (absl::Status s = RemoveTree(dirfd(d), c); !s.ok()) {
        closedir(d);
        return s;
      }
    }
    closedir(d);
    if (unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0) return ErrnoStatus(errno, name, "deleting");
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Rename(const std::shared_ptr<const fs::ConfinedRoot>& root,
                                     const JsonValue& args) const {
    auto old_path = RequireArg(args, "old_path", "rename");
    if (!old_path.ok()) return old_path.status();
    auto new_path = RequireArg(args, "new_path", "rename");
    if (!new_path.ok()) return new_path.status();
    auto from = Resolve(root, *old_path);
    if (!from.ok()) return from.status();
    auto to = Resolve(root, *new_path);
    if (!to.ok()) return to.status();
    if (from->relative == "." || to->relative == ".") {
      return Fail("Cannot rename the /memories directory itself");
    }
    auto from_dir = fs::OpenDirectory(from->Parent());
    if (!from_dir.ok()) {
      return EscapeOr(from_dir.status(), *old_path,
                      absl::StrCat("The path ", *old_path, " does not exist"));
    }
    auto to_dir = fs::MakeDirectories(to->Parent());
    if (!to_dir.ok()) return EscapeOr(to_dir.status(), *new_path, to_dir.status().message());
    // RENAME_NOREPLACE: the destination is checked and taken in one step.
    if (renameat2(from_dir->get(), from->BaseName().c_str(), to_dir->get(),
                  to->BaseName().c_str(), RENAME_NOREPLACE) != 0) {
      if (errno == EEXIST) {
        return Fail(absl::StrCat("The destination ", *new_path, " already exists"));
      }
      if (errno == ENOENT) return Fail(absl::StrCat("The path ", *old_path, " does not exist"));
      return ErrnoStatus(errno, *old_path, "renaming");
    }
    return absl::StrCat("Successfully renamed ", *old_path, " to ", *new_path);
  }

  const std::string dir_;
};

}  // namespace

absl::Status RegisterMemoryTool(ToolRegistry& registry, const BuiltinOptions& options) {
  if (options.memory_dir.empty()) return absl::OkStatus();
  if (options.memory_dir.front() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_dir '", options.memory_dir, "' must be an absolute path"));
  }
  if (absl::Status made = MakeDirectories(options.memory_dir, 0700); !made.ok()) return made;
  struct stat st;
  if (stat(options.memory_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_dir '", options.memory_dir, "' is not a directory"));
  }
  return registry.Register(std::make_unique<MemoryTool>(options.memory_dir), "built-in");
}

}  // namespace toolexec

// create_file: writes a whole file atomically (see file_tools.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "tools/files/file_tools.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/text.h"
#include "tools/workspace/write_lock.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::builtin {
namespace {

// file_path is not "required" in the schema because its alias TargetFile may
// stand in for it; Call() insists on exactly one path.
constexpr char kSchema[] = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "file_path": {
      "type": "string",
      "description": "The file to create: a path relative to the workspace root, e.g. \"src/new.cc\". Missing parent directories are created. Required (TargetFile is accepted as an alias)."
    },
    "TargetFile": {
      "type": "string",
      "description": "Alias of file_path."
    },
    "contents": {
      "type": "string",
      "description": "The complete content of the file."
    },
    "overwrite": {
      "type": "boolean",
      "default": false,
      "description": "Replace the file if it exists. Default false: an existing file is an error (to change part of a file, use edit_file)."
    }
  },
  "required": ["contents"]
})json";

struct PathChoice {
  absl::string_view path;
  const char* param;
};

absl::StatusOr<PathChoice> ChoosePath(const JsonValue& args) {
  auto file_path = StringArg(args, "file_path");
  auto target = StringArg(args, "TargetFile");
  if (!file_path.has_value() && !target.has_value()) {
    return absl::InvalidArgumentError(
        "file_path is required (TargetFile is accepted as an alias of it)");
  }
  if (file_path.has_value() && target.has_value() && *file_path != *target) {
    return absl::InvalidArgumentError(absl::StrCat(
        "file_path ('", *file_path, "') and its alias TargetFile ('", *target,
        "') name different files; give only file_path"));
  }
  if (file_path.has_value()) return PathChoice{*file_path, "file_path"};
  return PathChoice{*target, "TargetFile"};
}

std::string PathOf(const JsonValue& input) {
  auto choice = ChoosePath(input);
  return choice.ok() ? std::string(choice->path) : std::string("?");
}

std::string Description(const BuiltinOptions& options) {
  return "Creates a file in the workspace with the given contents, creating missing parent "
         "directories. The write is atomic: readers see the old file or the new one, never a "
         "mix. Fails if the file exists unless overwrite is true; to change part of an "
         "existing file use edit_file instead. Refuses to write through a symbolic link.";
}

}  // namespace

absl::StatusOr<bool> WriteWholeFile(const fs::WorkspacePath& wp, absl::string_view contents,
                                    bool overwrite, absl::string_view tool, ToolContext& ctx) {
  const std::string name = wp.BaseName();
  if (ctx.cancelled()) return absl::CancelledError(absl::StrCat(tool, " was cancelled"));
  auto dir = fs::MakeDirectories(wp.Parent());
  if (!dir.ok()) return dir.status();
  // From the existence check to the rename, no other write of this file by
  // the daemon runs (see fs/write_lock.h).
  auto lock = fs::FileWriteLock::Acquire(dir->get(), name, ctx.cancellation(), wp.display);
  if (!lock.ok()) return lock.status();

  fs::AtomicWriteOptions write;
  write.display = wp.display;
  struct stat st;
  bool exists = fstatat(dir->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  if (!exists && errno != ENOENT) return fs::ErrnoStatus(errno, wp.display);
  if (exists) {
    if (S_ISLNK(st.st_mode)) return fs::RefuseFinalSymlink(wp, tool);
    if (S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", wp.display, "' is a directory; give a file path"));
    }
    if (!S_ISREG(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", wp.display, "' exists and is not a regular file"));
    }
    if (!overwrite) {
      return absl::AlreadyExistsError(
          absl::StrCat("'", wp.display, "' already exists (", st.st_size, " bytes)"));
    }
    write.replace_existing = true;
    write.mode = st.st_mode & 07777;
    write.uid = st.st_uid;
    write.gid = st.st_gid;
  }
  // Without overwrite the rename refuses a file that appeared meanwhile.
  if (absl::Status s = fs::WriteFileAtomic(dir->get(), name, contents, write); !s.ok()) {
    if (!exists && absl::IsFailedPrecondition(s) && absl::StrContains(s.message(), "already exists")) {
      return absl::AlreadyExistsError(
          absl::StrCat("'", wp.display, "' already exists (it was created meanwhile)"));
    }
    return s;
  }
  return !exists;
}

CreateFileTool::CreateFileTool(const BuiltinOptions& options)
    : Tool(ToolSpec("create_file", Description(options), kSchema)
               .Type(ToolType::kTextEdit)
               .Tags({kTagFile, kTagPathScoped, kTagMinimal})),
      options_(options) {}

absl::StatusOr<Json> CreateFileTool::Call(const JsonValue& args, ToolContext& ctx) const {
  auto choice = ChoosePath(args);
  if (!choice.ok()) return choice.status();
  auto contents = StringArg(args, "contents");
  if (!contents.has_value()) return absl::InvalidArgumentError("contents is required");
  bool overwrite = BoolField(args, "overwrite");
  if (contents->size() > options_.max_file_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("contents is ", contents->size(),
                                                   " bytes; the limit is ",
                                                   options_.max_file_bytes));
  }

  auto wp = fs::ResolveWorkspacePath(ctx.info().workspaces, choice->path, choice->param);
  if (!wp.ok()) return wp.status();
  const std::string name = wp->BaseName();
  if (wp->trailing_slash || name.empty() || name == "..") {
    return absl::InvalidArgumentError(absl::StrCat(
        choice->param, " '", choice->path, "' names a directory; end it with a file name"));
  }
  auto created = WriteWholeFile(*wp, *contents, overwrite, "create_file", ctx);
  if (absl::IsAlreadyExists(created.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        created.status().message(),
        "; pass overwrite: true to replace it, or use edit_file to change part of it"));
  }
  if (!created.ok()) return created.status();

  Json out = MakeObject();
  auto& a = out.GetAllocator();
  out.AddMember("path", JsonValue(wp->display, a), a);
  out.AddMember("bytes_written", static_cast<uint64_t>(contents->size()), a);
  out.AddMember("created", *created, a);
  out.AddMember("sha256", JsonValue(fs::Sha256Hex(*contents), a), a);
  return out;
}

std::string CreateFileTool::display_title(const JsonValue& input) const { return PathOf(input); }

DisplayResult CreateFileTool::display(const JsonValue& input, const JsonValue& result) const {
  DisplayResult d;
  d.title = display_title(input);
  d.content_type = ContentType::kPlainText;
  auto contents = StringArg(input, "contents");
  if (contents.has_value()) {
    d.full_length = contents->size();
    std::string cut;
    d.is_truncated = AppendCut(&cut, *contents, kFileDisplayMaxBytes);
    AppendSanitizedUtf8(&d.content, cut);
  }
  return d;
}

std::string CreateFileTool::compact_summary(const JsonValue& input, const JsonValue& result,
                                            bool ok) const {
  std::string path = PathOf(input);
  if (!ok) return absl::StrCat("[create_file: ", path, ": error]");
  uint64_t bytes = UintField(result, "bytes_written");
  bool created = BoolField(result, "created");
  return absl::StrCat("[create_file: ", path, " (", bytes, " bytes, ",
                      created ? "created" : "overwritten", ")]");
}

std::vector<std::string> CreateFileTool::resources(const JsonValue& input) const {
  auto choice = ChoosePath(input);
  if (!choice.ok() || choice->path.empty()) return {};
  return {PathResource(choice->path)};
}

std::vector<PermissionRequirement> CreateFileTool::required_permissions(
    const JsonValue& input) const {
  return PathPermission(PathOf(input), PermissionLevel::kWrite);
}

}  // namespace toolexec::builtin

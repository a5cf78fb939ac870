// apply_patch: OpenAI's apply_patch tool, V4A patches (see file_tools.h). The
// patch format, and how a hunk is located, are in apply_patch_v4a.h.
//
// As codex does (its apply_patch scenario suite): an Add File or a Move to
// onto an existing file replaces it (keeping that file's mode), and an
// updated file always ends with a newline. What toolexec decides where the
// references differ or are silent: a path may appear in one operation only;
// an Update File with a Move to and no hunks renames the file; an updated
// file keeps its BOM, CRLF line endings and mode; and a patch applies whole
// or not at all (below), where codex keeps the operations before a failing
// one.
//
// The Responses API's native tool sends one operation per call instead of a
// patch: {"operation": {"type": "create_file" | "update_file" |
// "delete_file", "path": ..., "diff": ...}}, the diff in V4A form (hunks for
// an update, "+" lines for a new file; a create diff without "+" prefixes is
// taken as the file's content). It is applied as the one-operation patch it
// stands for.
//
// All or nothing: the patch is parsed, every path resolved beneath the
// workspace and every hunk located against the files as they are, before
// anything changes. Then missing parent directories of new files are made,
// the write locks of every file are taken together (FileWriteLock::AcquireAll,
// one global order, so concurrent patches cannot deadlock), the plan is
// computed again from the files as read under the locks, and the files are
// written in patch order, each atomically; if a write fails, those before it
// are undone in reverse order (new files removed, old contents and removed
// files put back with their mode). Directories made for new files stay.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/runtime/utf8.h"
#include "tools/files/apply_patch_v4a.h"
#include "tools/files/edit_engine.h"
#include "tools/files/file_tools.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/text.h"
#include "tools/workspace/write_lock.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::builtin {
namespace {

using v4a::ApplyHunks;
using v4a::Op;
using v4a::OpKind;
using v4a::ParseError;
using v4a::ParsePatch;

constexpr char kSchema[] = R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "input": {
      "type": "string",
      "description": "The apply_patch command that you wish to execute: a patch from '*** Begin Patch' to '*** End Patch'."
    },
    "operation": {
      "type": "object",
      "description": "Instead of input: one operation of the Responses API's apply_patch tool.",
      "additionalProperties": false,
      "properties": {
        "type": {"type": "string", "enum": ["create_file", "update_file", "delete_file"]},
        "path": {"type": "string"},
        "diff": {"type": "string"}
      },
      "required": ["type", "path"]
    }
  }
})json";

// The patch a call stands for: `input` as given, or the Responses API's
// `operation` as the one-operation patch it means.
absl::StatusOr<std::string> PatchText(const JsonValue& args) {
  const bool has_input = args.IsObject() && args.HasMember("input");
  const bool has_operation = args.IsObject() && args.HasMember("operation");
  if (has_input == has_operation) {
    return absl::InvalidArgumentError(
        has_input ? "give either input (a patch) or operation, not both"
                  : "input (the patch text, from '*** Begin Patch' to '*** End Patch') or "
                    "operation ({type, path, diff}) is required");
  }
  if (has_input) {
    auto input = StringArg(args, "input");
    if (!input.has_value()) return absl::InvalidArgumentError("input must be a string");
    return std::string(*input);
  }
  const JsonValue& op = args["operation"];
  const std::string type = StringField(op, "type");
  auto path = StringArg(op, "path");
  if (!path.has_value() || absl::StripAsciiWhitespace(*path).empty()) {
    return absl::InvalidArgumentError("operation.path (the file) is required");
  }
  std::optional<absl::string_view> diff = StringArg(op, "diff");
  std::string patch = "*** Begin Patch\n";
  if (type == "delete_file") {
    absl::StrAppend(&patch, "*** Delete File: ", *path, "\n");
  } else if (type == "update_file") {
    if (!diff.has_value()) {
      return absl::InvalidArgumentError("operation.diff (the V4A hunks) is required for update_file");
    }
    absl::StrAppend(&patch, "*** Update File: ", *path, "\n", *diff);
    if (!diff->empty() && diff->back() != '\n') patch.push_back('\n');
  } else if (type == "create_file") {
    if (!diff.has_value()) {
      return absl::InvalidArgumentError(
          "operation.diff (the new file's lines, each prefixed '+') is required for create_file");
    }
    std::vector<absl::string_view> lines = absl::StrSplit(*diff, '\n');
    if (!lines.empty() && lines.back().empty()) lines.pop_back();  // after the last "\n"
    const bool v4a = std::all_of(lines.begin(), lines.end(), [](absl::string_view l) {
      return absl::StartsWith(l, "+");
    });
    absl::StrAppend(&patch, "*** Add File: ", *path, "\n");
    for (absl::string_view line : lines) {
      absl::ConsumeSuffix(&line, "\r");
      absl::StrAppend(&patch, v4a ? "" : "+", line, "\n");
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "operation.type '", type, "' is not one of create_file, update_file, delete_file"));
  }
  absl::StrAppend(&patch, "*** End Patch\n");
  return patch;
}

// ---------------------------------------------------------------------------
// Files

// One file the patch writes or removes.
struct Target {
  fs::WorkspacePath wp;
  std::string name;
  fs::UniqueFd dir;  // its parent directory; invalid while it does not exist
};

// What one operation does, computed from the files as they are.
struct Planned {
  std::optional<EditableText> before;    // Update and Delete: the file read
  std::optional<EditableText> replaced;  // Add, Move to: the file already there
  std::string after;                     // Add and Update: the bytes to write
  std::string diff;
};

// The file an Add File or a Move to replaces, if there is one: read whole
// (to put it back if a later write fails). A directory, symlink or special
// file there is refused.
absl::StatusOr<std::optional<EditableText>> Replaced(const Target& t, absl::string_view marker,
                                                     const EditLimits& limits) {
  if (!t.dir.valid()) return std::nullopt;
  auto file = ReadEditable(t.dir.get(), t.wp, limits);
  if (absl::IsNotFound(file.status())) return std::nullopt;
  if (!file.ok()) {
    return absl::Status(file.status().code(),
                        absl::StrCat(marker, " '", t.wp.display, "': ", file.status().message(),
                                     "; nothing was changed"));
  }
  return std::optional<EditableText>(*std::move(file));
}

absl::Status Absent(const Target& t, absl::string_view marker) {
  return absl::NotFoundError(absl::StrCat(marker, ": no such file: ", t.wp.display,
                                          "; nothing was changed"));
}

std::string Description() {
  return "Applies a patch to files in the workspace (OpenAI's apply_patch, V4A format). Pass "
         "the whole patch as `input`:\n"
         "*** Begin Patch\n"
         "*** Add File: path/new.py\n"
         "+line of the new file\n"
         "*** Update File: path/old.py\n"
         "*** Move to: path/renamed.py   (optional)\n"
         "@@ def function_or_class_containing_the_change():\n"
         " context line\n"
         "-removed line\n"
         "+added line\n"
         " context line\n"
         "*** Delete File: path/obsolete.py\n"
         "*** End Patch\n"
         "Show about 3 lines of context above and below each change; use @@ lines naming the "
         "enclosing class or function when context alone is not unique. Paths are relative to "
         "the workspace. All files change or none: a hunk that does not apply fails the whole "
         "patch, naming the file and the hunk. An added or moved-to file replaces one that "
         "exists.";
}

}  // namespace

ApplyPatchTool::ApplyPatchTool(const BuiltinOptions& options)
    : Tool(ToolSpec("apply_patch", Description(), kSchema)
               .Type(ToolType::kTextEdit)
               .Tags({kTagPathScoped, kTagProvider})),
      options_(options) {}

absl::StatusOr<Json> ApplyPatchTool::Call(const JsonValue& args, ToolContext& ctx) const {
  auto input = PatchText(args);
  if (!input.ok()) return input.status();
  auto parsed = ParsePatch(*input);
  if (!parsed.ok()) return parsed.status();
  const std::vector<Op>& ops = *parsed;

  // --- every path confined, each in one operation only ---
  std::vector<Target> targets;  // ops[k] uses targets[source[k]] (and [dest[k]] when moving)
  std::vector<int> source(ops.size(), -1), dest(ops.size(), -1);
  auto add_target = [&](const Op& op, const std::string& path) -> absl::StatusOr<int> {
    auto wp = fs::ResolveWorkspacePath(ctx.info().workspaces, path, "input");
    if (!wp.ok()) return wp.status();
    std::string name = wp->BaseName();
    if (wp->trailing_slash || name.empty() || name == "..") {
      return ParseError(op.line, absl::StrCat("'", path, "' names a directory, not a file"));
    }
    for (const Target& t : targets) {
      if (t.wp.display == wp->display) {
        return ParseError(op.line, absl::StrCat("'", wp->display,
                                                "' appears in two file operations; a file may "
                                                "be added, updated, moved or deleted once per "
                                                "patch"));
      }
    }
    targets.push_back(Target{*std::move(wp), std::move(name), fs::UniqueFd()});
    return static_cast<int>(targets.size() - 1);
  };
  for (size_t k = 0; k < ops.size(); ++k) {
    auto s = add_target(ops[k], ops[k].path);
    if (!s.ok()) return s.status();
    source[k] = *s;
    if (!ops[k].move_to.empty()) {
      auto d = add_target(ops[k], ops[k].move_to);
      if (!d.ok()) return d.status();
      dest[k] = *d;
    }
  }
  // New files may be in directories that do not exist yet (made later).
  for (size_t k = 0; k < ops.size(); ++k) {
    for (int index : {source[k], dest[k]}) {
      if (index < 0) continue;
      Target& t = targets[index];
      auto dir = fs::OpenDirectory(t.wp.Parent());
      const bool may_be_new = ops[k].kind == OpKind::kAdd || index == dest[k];
      if (dir.ok()) {
        t.dir = *std::move(dir);
      } else if (absl::IsNotFound(dir.status()) && !may_be_new) {
        return Absent(t, ops[k].Marker());
      } else if (!absl::IsNotFound(dir.status())) {
        return dir.status();
      }
    }
  }

  EditLimits limits{"apply_patch", options_.max_file_bytes, ""};
  auto plan = [&]() -> absl::StatusOr<std::vector<Planned>> {
    std::vector<Planned> planned(ops.size());
    for (size_t k = 0; k < ops.size(); ++k) {
      const Op& op = ops[k];
      Target& t = targets[source[k]];
      Planned& p = planned[k];
      if (ctx.cancelled()) return absl::CancelledError("apply_patch was cancelled");
      if (op.kind == OpKind::kAdd) {
        auto replaced = Replaced(t, "*** Add File", limits);
        if (!replaced.ok()) return replaced.status();
        p.replaced = *std::move(replaced);
        if (op.contents.size() > options_.max_file_bytes) {
          return absl::FailedPreconditionError(
              absl::StrCat("*** Add File '", t.wp.display, "' is ", op.contents.size(),
                           " bytes; apply_patch writes at most ", options_.max_file_bytes));
        }
        p.after = op.contents;
        p.diff = fs::UnifiedDiff(p.replaced.has_value() ? absl::string_view(p.replaced->raw) : "",
                             p.after, t.wp.display, 3, nullptr, &ctx.cancellation(),
                             options_.view_max_bytes);
        continue;
      }
      auto file = ReadEditable(t.dir.get(), t.wp, limits);
      if (absl::IsNotFound(file.status())) return Absent(t, op.Marker());
      if (!file.ok()) return file.status();
      if (op.kind == OpKind::kUpdate) {
        if (dest[k] >= 0) {
          auto replaced = Replaced(targets[dest[k]], "*** Move to", limits);
          if (!replaced.ok()) return replaced.status();
          p.replaced = *std::move(replaced);
        }
        auto text = ApplyHunks(op, t.wp.display, file->text, ctx.cancellation());
        if (!text.ok()) return text.status();
        if (EncodedSize(*file, *text) > options_.max_file_bytes) {
          return absl::FailedPreconditionError(absl::StrCat(
              "the patch would make '", t.wp.display, "' ", EncodedSize(*file, *text),
              " bytes; apply_patch writes at most ", options_.max_file_bytes));
        }
        p.after = Encode(*file, *text);
        p.diff = fs::UnifiedDiff(file->text, *text,
                             dest[k] >= 0 ? targets[dest[k]].wp.display : t.wp.display, 3,
                             nullptr, &ctx.cancellation(), options_.view_max_bytes);
      } else {
        p.diff = fs::UnifiedDiff(file->text, "", t.wp.display, 3, nullptr, &ctx.cancellation(),
                             options_.view_max_bytes);
      }
      p.before = *std::move(file);
    }
    return planned;
  };

  // --- check everything against the files as they are, changing nothing ---
  if (auto dry = plan(); !dry.ok()) return dry.status();

  // --- then for real, under every file's write lock ---
  for (Target& t : targets) {
    if (t.dir.valid()) continue;
    auto made = fs::MakeDirectories(t.wp.Parent());
    if (!made.ok()) return made.status();
    t.dir = *std::move(made);
  }
  std::vector<fs::FileWriteLock::Target> lock_targets;
  for (const Target& t : targets) lock_targets.push_back({t.dir.get(), t.name, t.wp.display});
  auto locks = fs::FileWriteLock::AcquireAll(lock_targets, ctx.cancellation());
  if (!locks.ok()) return locks.status();
  auto planned = plan();
  if (!planned.ok()) return planned.status();

  // Undo steps of the writes done so far, run in reverse on a failure.
  std::vector<std::function<absl::Status()>> undo;
  auto restore = [](Target& t, const EditableText& before) {
    return [&t, &before]() {
      fs::AtomicWriteOptions w;
      w.replace_existing = true;
      w.mode = before.st.st_mode & 07777;
      w.uid = before.st.st_uid;
      w.gid = before.st.st_gid;
      w.display = t.wp.display;
      return fs::WriteFileAtomic(t.dir.get(), t.name, before.raw, w);
    };
  };
  auto remove = [](Target& t) {
    return [&t]() -> absl::Status {
      if (unlinkat(t.dir.get(), t.name.c_str(), 0) != 0 && errno != ENOENT) {
        return fs::ErrnoStatus(errno, t.wp.display, "removing");
      }
      return absl::OkStatus();
    };
  };
  // Removes the file `before` was read from, if it is still that file.
  auto unlink_read = [](Target& t, const EditableText& before) -> absl::Status {
    struct stat st;
    if (fstatat(t.dir.get(), t.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !(fs::FileIdentity::Of(st) == fs::FileIdentity::Of(before.st))) {
      return absl::FailedPreconditionError(
          absl::StrCat("'", t.wp.display, "' changed while the patch was being applied"));
    }
    if (unlinkat(t.dir.get(), t.name.c_str(), 0) != 0) {
      return fs::ErrnoStatus(errno, t.wp.display, "removing");
    }
    fsync(t.dir.get());
    return absl::OkStatus();
  };
  auto write_new = [](Target& t, absl::string_view bytes, const EditableText* like) {
    fs::AtomicWriteOptions w;
    w.display = t.wp.display;
    if (like != nullptr) {
      w.mode = like->st.st_mode & 07777;
      w.uid = like->st.st_uid;
      w.gid = like->st.st_gid;
    }
    return fs::WriteFileAtomic(t.dir.get(), t.name, bytes, w);
  };

  Json out = MakeObject();
  auto& a = out.GetAllocator();
  JsonValue added(rapidjson::kArrayType), modified(rapidjson::kArrayType),
      deleted(rapidjson::kArrayType);
  std::string diff;
  absl::Status failure;
  for (size_t k = 0; k < ops.size() && failure.ok(); ++k) {
    const Op& op = ops[k];
    Target& t = targets[source[k]];
    const Planned& p = (*planned)[k];
    if (op.kind == OpKind::kAdd) {
      if (p.replaced.has_value()) {
        failure = ReplaceFile(t.dir.get(), t.wp, *p.replaced, p.after);
        if (failure.ok()) undo.push_back(restore(t, *p.replaced));
      } else {
        failure = write_new(t, p.after, nullptr);
        if (failure.ok()) undo.push_back(remove(t));
      }
      if (failure.ok()) added.PushBack(JsonValue(t.wp.display, a), a);
    } else if (op.kind == OpKind::kDelete) {
      failure = unlink_read(t, *p.before);
      if (failure.ok()) {
        undo.push_back(restore(t, *p.before));
        deleted.PushBack(JsonValue(t.wp.display, a), a);
      }
    } else if (dest[k] < 0) {
      if (p.after != p.before->raw) failure = ReplaceFile(t.dir.get(), t.wp, *p.before, p.after);
      if (failure.ok()) {
        undo.push_back(restore(t, *p.before));
        modified.PushBack(JsonValue(t.wp.display, a), a);
      }
    } else {
      Target& d = targets[dest[k]];
      if (p.replaced.has_value()) {
        failure = ReplaceFile(d.dir.get(), d.wp, *p.replaced, p.after);
        if (failure.ok()) undo.push_back(restore(d, *p.replaced));
      } else {
        failure = write_new(d, p.after, &*p.before);
        if (failure.ok()) undo.push_back(remove(d));
      }
      if (failure.ok()) failure = unlink_read(t, *p.before);
      if (failure.ok()) {
        undo.push_back(restore(t, *p.before));
        modified.PushBack(JsonValue(d.wp.display, a), a);
      }
    }
    if (failure.ok()) diff += p.diff;
  }
  if (!failure.ok()) {
    std::vector<std::string> not_undone;
    for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
      if (absl::Status s = (*it)(); !s.ok()) not_undone.emplace_back(s.message());
    }
    return absl::Status(
        failure.code(),
        absl::StrCat("apply_patch failed: ", failure.message(),
                     not_undone.empty()
                         ? "; the files written before it were restored: nothing was changed"
                         : absl::StrCat("; restoring the files written before it failed too: ",
                                        absl::StrJoin(not_undone, "; "))));
  }

  std::string output = "Success. Updated the following files:\n";
  for (const auto& [list, letter] : {std::pair<const JsonValue*, const char*>{&added, "A"},
                                     {&modified, "M"},
                                     {&deleted, "D"}}) {
    for (const JsonValue& path : list->GetArray()) {
      absl::StrAppend(&output, letter, " ", absl::string_view(path.GetString(),
                                                              path.GetStringLength()), "\n");
    }
  }
  std::string safe_output;
  AppendSanitizedUtf8(&safe_output, output);
  out.AddMember("output", JsonValue(safe_output, a), a);
  out.AddMember("added", added, a);
  out.AddMember("modified", modified, a);
  out.AddMember("deleted", deleted, a);
  std::string cut;
  const bool diff_truncated = AppendCut(&cut, diff, options_.view_max_bytes);
  out.AddMember("diff", JsonValue(cut, a), a);
  if (diff_truncated) out.AddMember("diff_truncated", true, a);
  return out;
}

std::string ApplyPatchTool::model_content(const JsonValue& /*input*/, const JsonValue& result,
                                          const ModelContentBudget& budget) const {
  // What codex's apply_patch prints; the diff and lists are for the harness.
  if (result.IsObject() && result.HasMember("output") && result["output"].IsString()) {
    return StringField(result, "output");
  }
  return DefaultModelContent(result, budget.max_chars);
}

DisplayResult ApplyPatchTool::display(const JsonValue& /*input*/, const JsonValue& result) const {
  return TextDisplay("apply_patch", ContentType::kPlainText, StringField(result, "diff"),
                     kFileDisplayMaxBytes);
}

std::string ApplyPatchTool::compact_summary(const JsonValue& /*input*/, const JsonValue& result,
                                            bool ok) const {
  if (!ok) return "[apply_patch: error]";
  auto count = [&](const char* key) {
    return result.IsObject() && result.HasMember(key) && result[key].IsArray()
               ? result[key].Size()
               : 0u;
  };
  return absl::StrCat("[apply_patch: ", count("added"), " added, ", count("modified"),
                      " modified, ", count("deleted"), " deleted]");
}

std::vector<PermissionRequirement> ApplyPatchTool::required_permissions(
    const JsonValue& input) const {
  auto text = PatchText(input);
  auto ops = text.ok() ? ParsePatch(*text) : absl::StatusOr<std::vector<Op>>(text.status());
  // A patch that does not parse changes nothing, but its paths are unknown:
  // ask for the whole workspace rather than for nothing (fail closed).
  if (!ops.ok()) return PathPermission(".", PermissionLevel::kWrite, /*recursive=*/true);
  std::vector<PermissionRequirement> out;
  for (const Op& op : *ops) {
    for (const std::string* path : {&op.path, &op.move_to}) {
      if (path->empty()) continue;
      auto one = PathPermission(*path, PermissionLevel::kWrite);
      out.insert(out.end(), one.begin(), one.end());
    }
  }
  return out;
}

std::vector<std::string> ApplyPatchTool::resources(const JsonValue& input) const {
  auto text = PatchText(input);
  auto ops = text.ok() ? ParsePatch(*text) : absl::StatusOr<std::vector<Op>>(text.status());
  if (!ops.ok()) return {};  // fails without touching a file
  std::vector<std::string> out;
  for (const Op& op : *ops) {
    for (const std::string* path : {&op.path, &op.move_to}) {
      if (!path->empty()) out.push_back(PathResource(*path));
    }
  }
  return out;
}

}  // namespace toolexec::builtin

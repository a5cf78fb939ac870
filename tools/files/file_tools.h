// The file tools ([Tool sets] file_tools: view_file, create_file, edit_file), and the
// editing tools models are trained on, str_replace_based_edit_tool
// (Anthropic) and apply_patch (OpenAI), which are in the provider_tools set
// instead (both in path_scoped); one class per .cc file, and the
// helpers they share (SHA-256, unified diff, argument access). The editing
// ones share the edit engine of edit_engine.h. Paths go through the confined path layer (tools/workspace), so
// every path is resolved beneath the call's workspace in the kernel [Deciding what runs].
//
// Errors follow fs/confined.h: INVALID_ARGUMENTS for bad arguments, DENIED for
// a path outside the workspace, TOOL_FAILED (NotFound / FailedPrecondition)
// for a missing file, a wrong kind of file, a refused overwrite, a stale
// expected_sha256 or an edit that does not apply.
//
// Thread safety: the tools hold only their immutable options; Call() may run
// concurrently. Writers of one file are serialized in the daemon: create_file
// and edit_file hold the file's fs::FileWriteLock from their read or
// existence check to their rename (fs/write_lock.h), so a reported write is
// never overwritten by a write that started from older content. Hence several
// edit_file calls of one file in one batch all apply, one after another (in
// no set order), each to the content the previous one wrote; an edit that no
// longer applies to that content fails and says another write ran first; and
// of several edits that give the same expected_sha256 exactly one applies.
// A dry run takes no lock; apply_patch holds the locks of all its files at
// once (FileWriteLock::AcquireAll). Writers outside the daemon are detected, not
// excluded (WriteFileAtomic's `expect`: "changed while it was being edited").
#ifndef TOOLEXEC_TOOLS_FILES_FILE_TOOLS_H_
#define TOOLEXEC_TOOLS_FILES_FILE_TOOLS_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/builtin.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/diff.h"
#include "tools/workspace/sha256.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool.h"


namespace toolexec::builtin {

// How much of a result the display [Display] carries before it is cut.
inline constexpr size_t kFileDisplayMaxBytes = 16 * 1024;

// view_file{file_path*, start_line=1, end_line}: the lines start_line..end_line
// (1-based, inclusive) of a text file, numbered like `cat -n`
// ("     1\t<line>\n"; "\r" of CRLF lines kept; no "\n" after a last line that
// has none), capped at view_max_lines lines, view_max_bytes bytes and the
// call's model_content budget of characters (less 200 for the marker).
// Result: {path, content, start_line, end_line, total_lines, truncated,
//   [next_start_line, hint] when truncated, size_bytes, sha256 (of the whole
//   file, for edit_file's expected_sha256), line_endings ("lf", "crlf",
//   "mixed", "none"), and only when notable: bom:true (a UTF-8 BOM, not shown),
//   final_newline:false, invalid_utf8:true (bytes shown as U+FFFD)}.
// A binary file: {path, binary:true, size_bytes, mime_type, message}.
class ViewFileTool final : public Tool {
 public:
  explicit ViewFileTool(const BuiltinOptions& options);
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  std::string display_title(const JsonValue& input) const override;
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  // The numbered lines, then "[showing lines 1–400 of 1,186; continue with
  // start_line=401]" when cut.
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override;
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override;

 private:
  BuiltinOptions options_;
};

// create_file{file_path* | TargetFile*, contents*, overwrite=false}: writes a
// whole file atomically (temp file + fsync + rename in the same directory),
// creating missing parent directories. Refuses an existing file unless
// overwrite (then keeps its mode as edit_file does), and always refuses a
// symlink at the target.
// Result: {path, bytes_written, created (false when it replaced a file), sha256}.
class CreateFileTool final : public Tool {
 public:
  explicit CreateFileTool(const BuiltinOptions& options);
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  std::string display_title(const JsonValue& input) const override;
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override;
  // The file it writes (a dry run too: it sees the writes before it).
  std::vector<std::string> resources(const JsonValue& input) const override;

 private:
  BuiltinOptions options_;
};

// edit_file{file_path*, edits*[{old_string, new_string, replace_all=false}],
// dry_run=false, expected_sha256}: applies every edit in memory, in order, to
// the result of the ones before; all or none. Each old_string must occur
// exactly once (or replace_all); a miss names the closest line. A CRLF file is
// matched and edited as LF and written back as CRLF; a UTF-8 BOM, the mode and
// (best effort) the owner are kept. Atomic like create_file; refuses a
// symlink (edit its target).
// Sizes: the file read and the file written (after each edit, and with its
// BOM and CRLF endings) are at most max_file_bytes; an edit's result size is
// counted from its matches before it is built, so an over-large result fails
// at once naming the sizes, for a dry run too. The diff is built up to
// view_max_bytes and then cut (diff_truncated); lines_added/removed count the
// whole change.
// Mode: kept with its set-user-ID, set-group-ID and sticky bits (set after the
// write and the chown, which make the kernel clear set-ID bits for a normal
// user's write and for any chown). Only when the owner (group) could not be
// kept, i.e. a normal user edits another user's file in a directory it may
// write, is set-user-ID (set-group-ID) dropped: the new file is the daemon
// user's, and is never made set-ID to it.
// Result: {path, replacements, diff (unified, 3 lines of context), sha256 (new
// content), previous_sha256, dry_run, written, lines_added, lines_removed,
// line_endings, [bom], [diff_truncated]}.
class EditFileTool final : public Tool {
 public:
  explicit EditFileTool(const BuiltinOptions& options);
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  std::string display_title(const JsonValue& input) const override;
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override;
  // The file it writes (a dry run too: it sees the writes before it).
  std::vector<std::string> resources(const JsonValue& input) const override;

 private:
  BuiltinOptions options_;
};

// str_replace_based_edit_tool{command*, path*, view_range, max_characters,
// file_text, old_str, new_str, insert_line, insert_text}: Anthropic's text
// editor tool (text_editor_20250728),
// executed here. Its provider_config is Anthropic's provider-defined form,
// {"type":"text_editor_20250728","name":"str_replace_based_edit_tool"}, so a
// harness may declare it that way; the parameters schema is the same tool as
// a plain function. Commands:
//   view: a file as `cat -n` shows it (view_range [start, end], 1-based,
//     end -1 = to the end; capped like view_file), or a directory: its
//     entries two levels deep, hidden ones left out.
//   create: a new file with file_text (parents made); an existing file is
//     refused, as in Anthropic's reference implementation.
//   str_replace: old_str must occur exactly once; none or several is an error
//     saying how many and on which lines.
//   insert: insert_text (what Claude 4 models send; new_str, what earlier
//     versions send, is taken too) as whole lines after line insert_line
//     (0 = at the start, the line count = at the end).
// A view shows whole lines within max_characters (when given) and the
// call's model_content budget; when lines are left out, the text ends with a
// note naming the lines shown and the view_range to continue from.
// Writes go through the edit engine (edit_engine.h): atomic, one writer per
// file, line endings, BOM and mode kept. Result: {path, output (the text for
// the model, in the shape Anthropic's documentation and reference
// implementation give), ...command-specific fields}; model_content is
// `output` alone, the plain text the reference tool answers.
class StrReplaceBasedEditTool final : public Tool {
 public:
  explicit StrReplaceBasedEditTool(const BuiltinOptions& options);
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override;
  std::string display_title(const JsonValue& input) const override;
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override;
  std::vector<std::string> resources(const JsonValue& input) const override;

 private:
  BuiltinOptions options_;
};

// apply_patch{input | operation}: OpenAI's apply_patch tool in its function
// form, the patch text in V4A format as `input` (optionally wrapped in the
// `%%bash` / `apply_patch <<"EOF"` ... `EOF` heredoc of OpenAI's examples), or
// one operation of the Responses API's native tool, {"operation": {"type":
// "create_file" | "update_file" | "delete_file", "path", "diff"}}.
// See apply_patch_v4a.h for the grammar and how hunks are located. All files of
// a patch change or none: the whole patch is parsed, every path confined and
// every hunk located before anything is written; the files' write locks are
// held together; a write that fails undoes the ones before it.
// Result: {output ("Success. Updated the following files:\nA x\nM y\nD z\n"),
// added[], modified[], deleted[], diff}; model_content is `output`, as codex
// prints it.
class ApplyPatchTool final : public Tool {
 public:
  explicit ApplyPatchTool(const BuiltinOptions& options);
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override;
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override;
  std::vector<std::string> resources(const JsonValue& input) const override;

 private:
  BuiltinOptions options_;
};

// ---------------------------------------------------------------------------
// Shared helpers

// The core of create_file: writes `contents` to `wp` atomically, creating
// missing parent directories, holding the file's write lock from the
// existence check to the rename. An existing file is replaced only with
// `overwrite` (keeping its mode and owner), else AlreadyExists
// ("'x' already exists (N bytes)"); a symlink, directory or special file
// there is refused. True when the file was created, false when replaced.
absl::StatusOr<bool> WriteWholeFile(const fs::WorkspacePath& wp, absl::string_view contents,
                                    bool overwrite, absl::string_view tool, ToolContext& ctx);

// What ViewLines read: `result` is view_file's payload without its hint
// (content, start_line, end_line, total_lines, truncated, [next_start_line],
// size_bytes, sha256, line_endings, ...), or {path, binary:true, size_bytes,
// mime_type, message} for a binary file. A start beyond the end is not an
// error here: end_line is start - 1 and content "" (each tool says it in its
// own words).
struct ViewedLines {
  Json result;
  bool more_lines = false;  // lines after end_line were wanted but left out
  bool cut_line = false;    // the last line shown was cut short
  bool char_limit = false;  // the character limit cut it (else bytes or lines)
  std::string limit;        // "the 30000-character budget", "the 2000-line limit", ...
};

// The core of view_file: lines start..end (end absent: to the end of the
// file) of `wp`, numbered like `cat -n`, at most options.view_max_lines
// lines, options.view_max_bytes bytes and `max_chars` characters. Fails for
// what is not a regular file. `tool` names the caller in messages.
absl::StatusOr<ViewedLines> ViewLines(const fs::WorkspacePath& wp, int64_t start,
                                      std::optional<int64_t> end, size_t max_chars,
                                      const BuiltinOptions& options, ToolContext& ctx,
                                      absl::string_view tool);

// Appends "<number right-aligned in 6 columns>\t", as `cat -n` numbers a line.
void AppendLineNumber(std::string* out, int64_t number);



// 1-based line number of byte `offset` in `text`.
int LineNumberAt(absl::string_view text, size_t offset);

// Appends `text` to `out` cut to `max` bytes on a UTF-8 boundary; returns
// whether it was cut.
bool AppendCut(std::string* out, absl::string_view text, size_t max);

}  // namespace toolexec::builtin

#endif  // TOOLEXEC_TOOLS_FILES_FILE_TOOLS_H_

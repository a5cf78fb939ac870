// The file tools (S6 file_tools): view_file, create_file, edit_file, one class
// per .cc file, and the helpers they share (SHA-256, unified diff, argument
// access). Paths go through the confined path layer (tools/builtin/fs), so
// every path is resolved beneath the call's workspace in the kernel (S12).
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
// A dry run takes no lock. Writers outside the daemon are detected, not
// excluded (WriteFileAtomic's `expect`: "changed while it was being edited").
#ifndef TOOLEXEC_TOOLS_BUILTIN_FILE_TOOLS_H_
#define TOOLEXEC_TOOLS_BUILTIN_FILE_TOOLS_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/builtin/builtin.h"
#include "tools/builtin/json_fields.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool.h"

typedef struct evp_md_ctx_st EVP_MD_CTX;

namespace toolexec::builtin {

// How much of a result the display (S13) carries before it is cut.
inline constexpr size_t kFileDisplayMaxBytes = 16 * 1024;

// view_file{file_path*, start_line=1, end_line}: the lines start_line..end_line
// (1-based, inclusive) of a text file, numbered like `cat -n`
// ("     1\t<line>\n"; "\r" of CRLF lines kept; no "\n" after a last line that
// has none), capped at view_max_lines lines and view_max_bytes bytes.
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

// ---------------------------------------------------------------------------
// Shared helpers

// Incremental SHA-256 (OpenSSL libcrypto). Not thread-safe; one per use.
class Sha256 final {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(absl::string_view data);
  // Lower-case hex of the digest. Call once.
  std::string HexDigest();

 private:
  EVP_MD_CTX* ctx_;
};
std::string Sha256Hex(absl::string_view data);

struct DiffStats {
  int added = 0;
  int removed = 0;
};

// A unified diff (like `diff -u`) of two texts, line by line: "--- a/<label>",
// "+++ b/<label>", "@@ -l,n +l,n @@" hunks with `context` lines of context,
// "\ No newline at end of file" where a last line has none. "" when equal.
// Invalid UTF-8 is replaced with U+FFFD so the diff is a valid string. Very
// different texts (more than a few thousand changed lines) fall back to
// replacing the whole differing middle. Cancelled -> stops early and returns "".
// The text is cut at `max_bytes` (on a UTF-8 boundary; `*truncated` says so)
// and never built beyond it, whatever the size of the change; `stats` count
// the whole change.
std::string UnifiedDiff(absl::string_view old_text, absl::string_view new_text,
                        absl::string_view label, int context, DiffStats* stats,
                        const CancellationToken* cancel = nullptr,
                        size_t max_bytes = std::numeric_limits<size_t>::max(),
                        bool* truncated = nullptr);

// 1-based line number of byte `offset` in `text`.
int LineNumberAt(absl::string_view text, size_t offset);

// Appends `text` to `out` cut to `max` bytes on a UTF-8 boundary; returns
// whether it was cut.
bool AppendCut(std::string* out, absl::string_view text, size_t max);

}  // namespace toolexec::builtin

#endif  // TOOLEXEC_TOOLS_BUILTIN_FILE_TOOLS_H_

// The edit engine the editing tools share (edit_file, str_replace_based_edit_tool,
// apply_patch): read a text file for a read-modify-write, edit its text with
// the file's conventions taken off (UTF-8 BOM, CRLF line endings), put them
// back, and replace the file atomically keeping its mode and owner.
//
// How a tool uses it, holding the file's fs::FileWriteLock from the read to
// the write (fs/write_lock.h):
//
//   auto file = ReadEditable(dir_fd, wp, limits);    // never through a symlink
//   std::string text = ... edit file->text ...;      // LF endings, no BOM
//   std::string bytes = Encode(*file, text);         // BOM and CRLF again
//   ReplaceFile(dir_fd, wp, *file, bytes);           // temp + fsync + rename
//
// Conventions: a file whose every line ending is CRLF is edited as LF and
// written back as CRLF (so "\n" in a tool's arguments matches it); a file with
// mixed endings is edited byte for byte. A UTF-8 BOM is taken off for editing
// and put back. Mode (set-ID and sticky bits included) and, best effort, owner
// and group are kept (fs::WriteFileAtomic).
//
// Errors follow fs/confined.h: NotFound for a missing file, FailedPrecondition
// for a directory, a non-regular file, a symlink at the path (DENIED when it
// leads out), a file over the size limit, or one changed by another writer
// between the read and the rename.
//
// Thread safety: pure functions over their arguments.
#ifndef TOOLEXEC_TOOLS_FILES_EDIT_ENGINE_H_
#define TOOLEXEC_TOOLS_FILES_EDIT_ENGINE_H_

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/cancellation.h"

namespace toolexec::builtin {

inline constexpr absl::string_view kUtf8Bom = "\xEF\xBB\xBF";

// A text file as read for editing.
struct EditableText {
  std::string raw;      // the bytes on disk
  struct stat st = {};  // their stat, to keep mode and owner and detect changes
  bool bom = false;     // raw starts with a UTF-8 BOM (not part of `text`)
  bool crlf_mode = false;  // every line ending is CRLF; `text` has LF
  uint64_t crlf = 0;    // line endings counted in raw
  uint64_t lf = 0;
  std::string text;     // what is edited: raw without BOM, CRLF -> LF in crlf_mode

  // "crlf", "mixed", "lf" or "none".
  const char* line_endings() const;
};

struct EditLimits {
  // The tool, named in messages ("edit_file loads at most ...").
  absl::string_view tool;
  uint64_t max_file_bytes = 0;
  // Appended to "no such file: <path>", e.g. " (to create it, use create_file)".
  absl::string_view missing_hint;
};

// Opens `name` (wp's last component) in `dir_fd` (wp's parent, from
// fs::OpenDirectory) without following a final symlink, and reads it whole.
absl::StatusOr<EditableText> ReadEditable(int dir_fd, const fs::WorkspacePath& wp,
                                          const EditLimits& limits);

// `text` with LF endings and no BOM -> `text` as `file` writes it: its BOM
// again, and CRLF endings in crlf_mode. EncodedSize is the size of that
// result, computed without building it (to check a limit first).
uint64_t EncodedSize(const EditableText& file, absl::string_view text);
std::string Encode(const EditableText& file, absl::string_view text);

// Replaces the file `file` was read from with `bytes`, atomically, keeping its
// mode and owner; refused if the file was replaced or changed since the read.
absl::Status ReplaceFile(int dir_fd, const fs::WorkspacePath& wp, const EditableText& file,
                         absl::string_view bytes);

// `text` with CRLF turned into LF (for arguments applied to a crlf_mode file).
std::string CrlfToLf(absl::string_view text);

// Where `needle` occurs in `text`, without overlaps: how many times, and the
// 1-based lines where the first `max_listed` start.
struct Occurrences {
  uint64_t count = 0;
  std::vector<int> lines;
};
Occurrences FindOccurrences(absl::string_view text, absl::string_view needle, size_t max_listed);

// The lines as "4, 9 and 12" (", ..." when `more`).
std::string ListLines(const std::vector<int>& lines, bool more);

// Why `needle` does not occur in `text`, as sentences to add to a miss
// message: line-number prefixes copied from a numbered view, the line that
// matches if whitespace is ignored, else the most similar line, else that
// none is similar. `view_tool` names the tool to view the file again with.
std::string MissHint(absl::string_view text, absl::string_view needle,
                     absl::string_view view_tool, const CancellationToken& cancel);

}  // namespace toolexec::builtin

#endif  // TOOLEXEC_TOOLS_FILES_EDIT_ENGINE_H_

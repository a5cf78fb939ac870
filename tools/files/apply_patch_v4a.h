// V4A patches, the format of OpenAI's apply_patch tool: parsing a patch into
// file operations, and applying an Update File's hunks to a text. The tool
// (apply_patch.cc) resolves the paths and writes the files.
//
// The patch format, as OpenAI documents it (GPT-4.1 prompting guide, Codex):
//
//   *** Begin Patch
//   *** Add File: <path>          then the new file's lines, each prefixed "+"
//   *** Delete File: <path>
//   *** Update File: <path>
//   *** Move to: <new path>       optional, right after Update File
//   @@ <context line>             a hunk; "@@" alone when no context is needed;
//   @@ <narrower context line>    several @@ lines narrow the search in turn
//    <context>  -<removed>  +<added>     one per line; an empty line is context
//   *** End of File               optional, the hunk's lines end the file
//   *** End Patch
//
// Also accepted, as OpenAI's examples and reference implementation do: the
// patch wrapped in a heredoc ("%%bash" / "apply_patch <<\"EOF\"" ... "EOF"),
// spaces around the markers, CRLF line endings, a first hunk without "@@",
// and a unified-diff range header ("@@ -12,5 +12,6 @@") treated as "@@".
//
// Locating a hunk, as the reference implementations do: each @@ context line
// is searched for from where the previous hunk ended, then the hunk's old
// lines (context and "-" lines) from there, at "*** End of File" from the end
// first. Each search tries an exact match, then one ignoring trailing
// whitespace, then one ignoring leading and trailing whitespace; the first
// match wins (V4A hunks need not be unique: the context disambiguates). An @@
// line names the enclosing class or function, so it also matches a line that
// starts with it ("@@ class BaseClass" finds "class BaseClass(Base):"), as the
// documentation's own example needs. A hunk ending in empty context lines is
// retried without them. A hunk with only "+" lines is inserted after its last
// @@ context line, or at the end of the file when it has none. Context lines
// keep the file's text (a whitespace-insensitive match changes only the "-"
// and "+" lines).
//
// Thread safety: pure functions over their arguments.
#ifndef TOOLEXEC_TOOLS_FILES_APPLY_PATCH_V4A_H_
#define TOOLEXEC_TOOLS_FILES_APPLY_PATCH_V4A_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/cancellation.h"

namespace toolexec::builtin::v4a {

struct Hunk {
  std::vector<std::string> contexts;  // the @@ lines' text, in order
  std::vector<std::string> old_lines;
  std::vector<std::string> new_lines;
  // For each new line: the index in old_lines of the same context line, or
  // -1 for an added line. Context lines keep the file's own text.
  std::vector<int> new_from_old;
  bool end_of_file = false;
  int line = 0;  // where it starts in the patch text, 1-based
  std::string Header() const {
    if (contexts.empty()) return "@@";
    return absl::StrCat("@@ ", absl::StrJoin(contexts, " @@ "));
  }
};

enum class OpKind { kAdd, kDelete, kUpdate };

struct Op {
  OpKind kind;
  std::string path;
  std::string move_to;   // Update only; "" = no move
  std::string contents;  // Add only
  std::vector<Hunk> hunks;
  int line = 0;
  const char* Marker() const {
    switch (kind) {
      case OpKind::kAdd:
        return "*** Add File";
      case OpKind::kDelete:
        return "*** Delete File";
      case OpKind::kUpdate:
        break;
    }
    return "*** Update File";
  }
};

// InvalidArgument: the patch is not valid at its line `line` (1-based);
// nothing was changed.
absl::Status ParseError(int line, absl::string_view message);

// The file operations of `input`, in patch order, or a ParseError.
absl::StatusOr<std::vector<Op>> ParsePatch(absl::string_view input);

// `text` (LF endings) with `op`'s hunks applied, or why a hunk did not apply.
absl::StatusOr<std::string> ApplyHunks(const Op& op, const std::string& display,
                                       absl::string_view text, const CancellationToken& cancel);

}  // namespace toolexec::builtin::v4a

#endif  // TOOLEXEC_TOOLS_FILES_APPLY_PATCH_V4A_H_

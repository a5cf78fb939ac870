// Unified diffs of two texts: what the file tools report of an edit and what
// a checkpoint's diff shows. Thread safety: a pure function.
#ifndef TOOLEXEC_TOOLS_WORKSPACE_DIFF_H_
#define TOOLEXEC_TOOLS_WORKSPACE_DIFF_H_

#include <cstddef>
#include <limits>
#include <string>

#include "absl/strings/string_view.h"
#include "tools/runtime/cancellation.h"

namespace toolexec::fs {

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

}  // namespace toolexec::fs

#endif  // TOOLEXEC_TOOLS_WORKSPACE_DIFF_H_

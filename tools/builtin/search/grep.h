// The grep engine behind search_directory and grep_search: walks a directory
// in parallel (walker.h), searches each file with a LineMatcher, and collects
// a deterministic, capped result.
//
// Files: read with pread() calls of exactly 1 MiB into a per-worker buffer
// (a file is processed block by block at line boundaries, so a huge file is
// never held whole, and cancellation is checked between blocks). The binary
// rule: a file with a NUL byte in any block read is binary and skipped, as
// ripgrep does when walking; blocks are read in order and the first 1 MiB
// (or the whole smaller file) is always checked before any match is reported.
// In files_with_matches mode a file is done at its first matching line, so a
// match before the first block with a NUL is reported (ripgrep decides on its
// first, smaller buffer instead). Each read asks for 1 MiB whatever the
// worker's buffer grew to for earlier files, so the decision depends only on
// the file. A file that starts with a UTF-16 byte order mark (LE or BE) is
// transcoded to UTF-8 and searched, as ripgrep does (line numbers and text
// are the transcoded ones); one over 16 MiB is counted as binary.
//
// Results are sorted by path, then line number, whatever order the workers
// finished in, and capped at max_results: the first files (files and count
// modes) or the first matching lines (content mode) in that order; the totals
// still count everything, so `truncated` is exact. Memory stays bounded by the
// cap however many matches there are.
#ifndef TOOLEXEC_TOOLS_BUILTIN_SEARCH_GREP_H_
#define TOOLEXEC_TOOLS_BUILTIN_SEARCH_GREP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/builtin/search/confine.h"
#include "tools/builtin/search/glob.h"
#include "tools/builtin/search/matcher.h"
#include "tools/runtime/cancellation.h"

namespace toolexec::search {

enum class OutputMode { kFilesWithMatches, kContent, kCount };

struct GrepRequest {
  MatcherOptions matcher;
  // If set, used instead of compiling `matcher` (a caller that validated the
  // pattern already); must outlive the call.
  const LineMatcher* compiled = nullptr;
  OutputMode mode = OutputMode::kFilesWithMatches;
  int context_lines = 0;          // content mode: lines before and after each match
  size_t max_results = 1000;      // files (files/count modes) or matching lines (content)
  const GlobSet* glob = nullptr;  // grep_search's `glob` (WalkOptions::overrides)
  int threads = 0;                // 0 = DefaultWalkThreads()
  size_t max_line_bytes = 2000;   // longer line texts are cut (on a UTF-8 boundary)
  const CancellationToken* cancellation = nullptr;
};

struct GrepLine {
  uint64_t number = 0;  // 1-based
  std::string text;     // valid UTF-8 (invalid bytes become U+FFFD), no line end
  bool is_context = false;
  bool cut = false;  // text was longer than max_line_bytes
};

struct GrepFile {
  std::string path;             // relative to the workspace root
  uint64_t matches = 0;         // matching lines in the file (1 in files mode)
  std::vector<GrepLine> lines;  // content mode: matches and context, by number
};

struct GrepResult {
  std::vector<GrepFile> files;    // sorted by path, capped
  uint64_t total_files = 0;       // files with a match
  uint64_t total_matches = 0;     // matching lines (files mode: = total_files)
  uint64_t returned_matches = 0;  // matching lines in `files` (content mode)
  uint64_t files_searched = 0;
  uint64_t binary_skipped = 0;
  uint64_t unreadable = 0;  // files and directories that could not be read
  bool truncated = false;
};

// Searches `start` (a directory, walked; or a single file, searched even if
// hidden or ignored, as when a file is named to ripgrep). Cancelled if the
// request's token trips; InvalidArgument for a bad pattern.
absl::StatusOr<GrepResult> Grep(const ConfinedPath& start, const GrepRequest& request);

// Text for JSON: invalid UTF-8 replaced by U+FFFD, cut to at most `max_bytes`
// (on a character boundary; *cut set when it was cut). A trailing '\r' is
// dropped.
std::string DisplayLine(absl::string_view line, size_t max_bytes, bool* cut);

// Valid UTF-8 for a path or name (invalid bytes become U+FFFD).
std::string SanitizeUtf8(absl::string_view text);

}  // namespace toolexec::search

#endif  // TOOLEXEC_TOOLS_BUILTIN_SEARCH_GREP_H_

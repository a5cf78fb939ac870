// The grep engine behind search_directory and grep_search: walks a directory
// in parallel (walker.h), searches each file with a LineMatcher, and collects
// a deterministic, capped result.
//
// Files: read with pread() calls of exactly 1 MiB into a buffer the search
// of that file owns (a file is processed block by block at line boundaries,
// so a huge file is never held whole, and cancellation is checked between
// blocks). The binary
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
// Memory: the buffer starts at 1 MiB + 4 KiB and doubles while a line does
// not fit, up to kMaxLineBytes + 1 MiB. A line longer than kMaxLineBytes is
// not held whole: it is searched in windows of the buffer's size that
// overlap by 4 KiB, and counts once however many windows match; its text is
// its first max_line_bytes bytes, always reported `cut`. A match that spans
// more than the overlap at a window edge is not found, '^' and '$' also
// match at window edges, and such a line is never before-context of a later
// match (ripgrep holds the whole line instead).
// Every buffer, and the file and transcoding of a UTF-16 file, is charged to
// one process-wide budget (kDefaultGrepBufferBudget), so concurrent searches
// together never hold more. A search that finds no room for its first
// buffer waits until another search frees some (polling its cancellation
// token every 50 ms); growth never waits: without room, the line is searched
// in windows of the buffer it has. Nothing waits while holding budget, so
// waiting cannot deadlock. A UTF-16 file that cannot fit in the budget at all
// is counted as binary. Memory is freed when the file's search ends: nothing
// is kept between files or calls.
//
// Results are sorted by path, then line number, whatever order the workers
// finished in, and capped at max_results: the first files (files and count
// modes) or the first matching lines (content mode) in that order; the totals
// still count everything, so `truncated` is exact. Memory stays bounded by the
// cap however many matches there are.
#ifndef TOOLEXEC_TOOLS_SEARCH_GREP_H_
#define TOOLEXEC_TOOLS_SEARCH_GREP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/workspace/confined_path.h"
#include "tools/workspace/glob.h"
#include "tools/search/matcher.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::search {

enum class OutputMode { kFilesWithMatches, kContent, kCount };

// Lines up to this long are held whole; longer ones are searched in windows.
inline constexpr size_t kMaxLineBytes = 4 << 20;
// The most file data all searches in the process hold at once.
inline constexpr size_t kDefaultGrepBufferBudget = 256 << 20;

struct GrepRequest {
  MatcherOptions matcher;
  // If set, used instead of compiling `matcher` (a caller that validated the
  // pattern already); must outlive the call.
  const LineMatcher* compiled = nullptr;
  OutputMode mode = OutputMode::kFilesWithMatches;
  int context_lines = 0;          // content mode: lines before and after each match
  size_t max_results = 1000;      // files (files/count modes) or matching lines (content)
  const fs::GlobSet* glob = nullptr;  // grep_search's `glob` (WalkOptions::overrides)
  int threads = 0;                // 0 = DefaultWalkThreads()
  size_t max_line_bytes = 2000;   // longer line texts are cut (on a UTF-8 boundary)
  const CancellationToken* cancellation = nullptr;
  // The policy's filter of a walk's files (WalkOptions::left_out); may be null.
  const LeftOutFn* left_out = nullptr;
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
  uint64_t left_out = 0;    // files the policy kept from the search
  bool truncated = false;
};

// Searches `start` (a directory, walked; or a single file, searched even if
// hidden or ignored, as when a file is named to ripgrep). Cancelled if the
// request's token trips; InvalidArgument for a bad pattern.
absl::StatusOr<GrepResult> Grep(const fs::ConfinedPath& start, const GrepRequest& request);

// Text for JSON: invalid UTF-8 replaced by U+FFFD (tools/runtime/utf8.h), cut to at most
// `max_bytes` (on a character boundary; *cut set when it was cut). A trailing '\r' is dropped.
std::string DisplayLine(absl::string_view line, size_t max_bytes, bool* cut);

// The bytes of file data the grep engine holds, process-wide, across every
// call and worker.
struct GrepBufferUsage {
  size_t held = 0;    // allocated now
  size_t peak = 0;    // most held at once since the last ResetGrepBufferPeak()
  size_t budget = 0;  // the most ever held at once
};
GrepBufferUsage GrepBuffers();
void ResetGrepBufferPeak();
// Changes the budget (at least one first buffer, 1 MiB + 4 KiB).
void SetGrepBufferBudget(size_t bytes);

}  // namespace toolexec::search

#endif  // TOOLEXEC_TOOLS_SEARCH_GREP_H_

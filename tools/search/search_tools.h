// The search tools (the README's "The built-in tools"): list_directory, find_file,
// search_directory and grep_search, one class per .cc file in tools/builtin/,
// registered by RegisterSearchTools in that order. All four are path-scoped
// [Tool sets] [Deciding what runs]: their path is opened beneath the call's workspace by
// fs::OpenConfined, and the walk below it never follows a symlink.
//
// The walks of find_file, search_directory and grep_search leave out the
// entries the policy keeps from the call (CallInfo::left_out_by_policy) and
// say how many in left_out_by_policy (and a line of model_content).
//
// Errors: INVALID_ARGUMENTS for bad arguments (an invalid regex or glob, with
// RE2's message), DENIED for a path outside the workspace, TOOL_FAILED for a
// missing path or a file where a directory is wanted, CANCELLED when the call
// is cancelled mid-walk.
//
// Thread safety: the tools hold only their immutable options; Call() may run
// concurrently (each call walks with its own worker threads).
#ifndef TOOLEXEC_TOOLS_SEARCH_SEARCH_TOOLS_H_
#define TOOLEXEC_TOOLS_SEARCH_SEARCH_TOOLS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "tools/builtin.h"
#include "tools/runtime/json_fields.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::search {
struct GrepResult;
}  // namespace toolexec::search

namespace toolexec::builtin {

// How much of a result the display [Display] carries before it is cut.
inline constexpr size_t kSearchDisplayMaxBytes = 16 * 1024;

// list_directory{directory_path=".", depth=1, include_hidden=false}: the
// entries below a directory, `depth` levels deep, breadth first (so a cap
// keeps the shallow levels whole), then sorted by path. Hidden entries are
// left out unless include_hidden; symlinks are listed, never followed.
// Result: {directory, entries:[{name (relative to the listed directory),
// type: file|dir|symlink|other, size (files and symlinks), [target]
// (symlinks)}], count, truncated, [hint]}.
class ListDirectoryTool final : public Tool {
 public:
  explicit ListDirectoryTool(const BuiltinOptions& options);
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  std::string display_title(const JsonValue& input) const override;
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  // The lines of the result, then "[<hint>]" (e.g. "showing the first N of M").
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override;
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override;

 private:
  BuiltinOptions options_;
};

// find_file{pattern*, directory_path=".", max_results}: files, directories
// and symlinks whose path (relative to directory_path) matches a glob
// (workspace/glob.h: "*.md" matches a name at any depth, "src/*.h" is anchored,
// "**/" spans directories, {a,b} alternatives), honouring .gitignore and
// skipping hidden entries and .git. Result: {pattern, directory, paths
// (relative to the workspace root, sorted; directories end in '/'), count
// (all matches), truncated, [hint]}.
// Each search tool also stops adding entries (paths, matches) once their
// lines pass the call's model_content budget, and then says so in
// truncated and hint ("showing the first N of M ...").
class FindFileTool final : public Tool {
 public:
  explicit FindFileTool(const BuiltinOptions& options);
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  std::string display_title(const JsonValue& input) const override;
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  // The lines of the result, then "[<hint>]" (e.g. "showing the first N of M").
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override;
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override;

 private:
  BuiltinOptions options_;
};

// search_directory{query*, directory_path=".", num_results, case_sensitive=false}:
// the lines containing a literal string, with grep_search's engine and rules.
// Result: {query, directory, matches:[{file, line, text, [text_truncated]}],
// num_matches (all), num_files, truncated, [hint]}.
class SearchDirectoryTool final : public Tool {
 public:
  explicit SearchDirectoryTool(const BuiltinOptions& options);
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  std::string display_title(const JsonValue& input) const override;
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  // The lines of the result, then "[<hint>]" (e.g. "showing the first N of M").
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override;
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override;

 private:
  BuiltinOptions options_;
};

// grep_search{pattern* (RE2), path=".", glob, output_mode=files_with_matches,
// case_insensitive=false, context_lines=0, max_results}: ripgrep's defaults
// (.gitignore honoured, hidden files and binaries skipped, no symlinks
// followed), results sorted by path then line. Result by output_mode:
//   files_with_matches: {files:[path], num_files, truncated}
//   content: {matches:[{file, line, text, [context:true], [text_truncated]}],
//             num_matches, num_files, truncated}
//   count: {counts:[{file, count}], num_matches, num_files, truncated}
// each with {pattern, path, output_mode}, and when notable: binary_files_skipped,
// unreadable, hint. grep_search does not write (spec().read_only), though it
// has no read_only tag: [Tool sets]'s read_only set does not include it.
class GrepSearchTool final : public Tool {
 public:
  explicit GrepSearchTool(const BuiltinOptions& options);
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override;
  std::string display_title(const JsonValue& input) const override;
  DisplayResult display(const JsonValue& input, const JsonValue& result) const override;
  // The lines of the result, then "[<hint>]" (e.g. "showing the first N of M").
  std::string model_content(const JsonValue& input, const JsonValue& result,
                            const ModelContentBudget& budget) const override;
  std::string compact_summary(const JsonValue& input, const JsonValue& result,
                              bool ok) const override;
  std::vector<PermissionRequirement> required_permissions(const JsonValue& input) const override;

 private:
  BuiltinOptions options_;
};

namespace search_support {

// `s` quoted for a title or summary, cut to `max` bytes with "...".
std::string Quoted(absl::string_view s, size_t max = 60);
// The path argument `key` (directory_path, path): the workspace root "." when
// absent or empty.
std::string PathArg(const JsonValue& args, const char* key);
// Adds a string member (copied).
void AddString(Json& doc, JsonValue& object, const char* key, absl::string_view value);
// The matching (and context) lines of a content-mode search, in order:
// [{file, line, text, [context: true], [text_truncated: true]}].
JsonValue MatchesJson(Json& doc, const search::GrepResult& result);
// Lines for a person, as ripgrep prints them: "file:line:text" for a match,
// "file-line-text" for context, "--" between groups that are not adjacent.
std::string MatchesText(const JsonValue& matches);
// The characters one element of `matches` takes in MatchesText, at most
// (with its newline and a possible "--" line before it).
size_t MatchChars(const JsonValue& match);
// The characters of a string element and its newline.
size_t StringLineChars(const JsonValue& s);

// Keeps the leading elements of the array `items` whose lines
// (chars_of(element), newline included) fit in `max_chars` together, and
// drops the rest: a result's payload stays within the call's model_content
// budget (model_content.h). Returns how many were dropped.
size_t KeepWithinChars(JsonValue& items, size_t max_chars,
                       absl::FunctionRef<size_t(const JsonValue&)> chars_of);

// A search tool's model_content: `text` (its lines), then "[<hint>]" when
// the result is truncated and "[N files left out by policy]" when the walk
// left some out; `empty` when there are no lines.
std::string ListingModelContent(const JsonValue& result, std::string text,
                                absl::string_view empty);

// The filter of the files a walk must leave out (CallInfo::left_out_by_policy),
// or null when there is none.
const LeftOutFn* LeftOutFilter(const ToolContext& ctx);
// Adds left_out_by_policy: `count` to a search's result when it is not 0.
void AddLeftOut(Json& result, uint64_t count);

}  // namespace search_support
}  // namespace toolexec::builtin

#endif  // TOOLEXEC_TOOLS_SEARCH_SEARCH_TOOLS_H_

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/workspace/confined_path.h"
#include "tools/search/grep.h"
#include "tools/search/search_tools.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::builtin {
namespace {

using search_support::AddLeftOut;
using search_support::AddString;
using search_support::KeepWithinChars;
using search_support::LeftOutFilter;
using search_support::ListingModelContent;
using search_support::MatchChars;
using search_support::MatchesJson;
using search_support::MatchesText;
using search_support::PathArg;
using search_support::Quoted;

std::string DirectoryOf(const JsonValue& input) { return PathArg(input, "directory_path"); }

std::string Description(const BuiltinOptions& options) {
  return absl::StrCat(
      "Searches the files under a directory of the workspace for a literal string (not a regex; "
      "use grep_search for regular expressions) and returns each matching line as {file, line, "
      "text}, sorted by file then line. Case-insensitive unless case_sensitive is true. Like "
      "ripgrep: files ignored by .gitignore, hidden files and binary files are skipped. At most ",
      options.search_max_results,
      " lines (num_results); `truncated` says when there were more, and num_matches counts all.");
}

std::string Schema(const BuiltinOptions& options) {
  return absl::StrCat(R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "query": {
      "type": "string",
      "description": "The text to find, taken literally (special characters need no escaping). It cannot span lines.",
      "minLength": 1
    },
    "directory_path": {
      "type": "string",
      "description": "The directory (or a single file) to search, relative to the workspace root (or absolute inside the workspace).",
      "default": "."
    },
    "num_results": {
      "type": "integer",
      "description": "The most matching lines to return (at most )json",
                      options.search_max_results, R"json().",
      "minimum": 1,
      "default": )json",
                      options.search_max_results, R"json(
    },
    "case_sensitive": {
      "type": "boolean",
      "description": "Match case exactly (by default the search ignores case).",
      "default": false
    }
  },
  "required": ["query"]
})json");
}

}  // namespace

SearchDirectoryTool::SearchDirectoryTool(const BuiltinOptions& options)
    : Tool(ToolSpec("search_directory", Description(options), Schema(options))
               .Type(ToolType::kFileRead)
               .Tags({kTagReadOnly, kTagPathScoped, kTagMinimal})),
      options_(options) {}

absl::StatusOr<Json> SearchDirectoryTool::Call(const JsonValue& args, ToolContext& ctx) const {
  const std::string query = StringField(args, "query");
  const std::string dir_arg = DirectoryOf(args);
  const int64_t cap = std::max<int64_t>(options_.search_max_results, 1);
  const size_t limit =
      static_cast<size_t>(std::clamp<int64_t>(IntArg(args, "num_results", cap), 1, cap));
  if (query.empty()) return absl::InvalidArgumentError("query must not be empty");

  absl::StatusOr<fs::ConfinedPath> start =
      fs::OpenConfined(ctx.info().workspaces, dir_arg, "directory_path");
  if (!start.ok()) return start.status();

  search::GrepRequest request;
  request.matcher.pattern = query;
  request.matcher.literal = true;
  request.matcher.case_insensitive = !BoolArg(args, "case_sensitive", false);
  request.mode = search::OutputMode::kContent;
  request.max_results = limit;
  request.cancellation = &ctx.cancellation();
  request.left_out = LeftOutFilter(ctx);
  absl::StatusOr<search::GrepResult> r = search::Grep(*start, request);
  if (!r.ok()) return r.status();

  Json result = MakeObject();
  auto& alloc = result.GetAllocator();
  AddString(result, result, "query", query);
  AddString(result, result, "directory", SanitizeUtf8(start->Display(start->relative)));
  JsonValue matches = MatchesJson(result, *r);
  // Lines past the model_content budget are dropped too.
  const bool truncated =
      KeepWithinChars(matches, ctx.info().model_content.TextChars(), MatchChars) > 0 ||
      r->truncated;
  const size_t shown = matches.Size();
  result.AddMember("matches", matches, alloc);
  result.AddMember("num_matches", r->total_matches, alloc);
  result.AddMember("num_files", r->total_files, alloc);
  result.AddMember("truncated", truncated, alloc);
  if (r->binary_skipped > 0) result.AddMember("binary_files_skipped", r->binary_skipped, alloc);
  if (r->unreadable > 0) result.AddMember("unreadable", r->unreadable, alloc);
  AddLeftOut(result, r->left_out);
  if (truncated) {
    AddString(result, result, "hint",
              absl::StrCat("showing the first ", GroupDigits(shown), " of ",
                           GroupDigits(r->total_matches),
                           " matching lines; narrow the query or directory_path, or raise "
                           "num_results (at most ",
                           cap, ")"));
  }
  return result;
}

std::string SearchDirectoryTool::display_title(const JsonValue& input) const {
  return absl::StrCat(Quoted(StringField(input, "query")), " in ", DirectoryOf(input));
}

std::string SearchDirectoryTool::model_content(const JsonValue& /*input*/,
                                               const JsonValue& result,
                                               const ModelContentBudget& /*budget*/) const {
  return ListingModelContent(
      result, result.IsObject() && result.HasMember("matches") ? MatchesText(result["matches"]) : "",
      "No matches.");
}

DisplayResult SearchDirectoryTool::display(const JsonValue& input, const JsonValue& result) const {
  std::string text;
  if (result.IsObject() && result.HasMember("error")) {
    text = StringField(result, "error");
  } else if (result.IsObject() && result.HasMember("matches")) {
    text = MatchesText(result["matches"]);
    if (BoolField(result, "truncated")) {
      absl::StrAppend(&text, "... (", UintField(result, "num_matches"),
                      " matching lines in all)\n");
    }
  }
  return TextDisplay(display_title(input), ContentType::kPlainText, std::move(text),
                     kSearchDisplayMaxBytes);
}

std::string SearchDirectoryTool::compact_summary(const JsonValue& input, const JsonValue& result,
                                                 bool ok) const {
  const std::string what = display_title(input);
  if (!ok) return absl::StrCat("[search_directory: ", what, ": error]");
  const uint64_t matches = UintField(result, "num_matches");
  const uint64_t files = UintField(result, "num_files");
  return absl::StrCat("[search_directory: ", what, ": ", matches,
                      matches == 1 ? " match in " : " matches in ", files,
                      files == 1 ? " file" : " files",
                      BoolField(result, "truncated") ? ", truncated" : "", "]");
}

std::vector<PermissionRequirement> SearchDirectoryTool::required_permissions(
    const JsonValue& input) const {
  return PathPermission(DirectoryOf(input), PermissionLevel::kRead, true);
}

}  // namespace toolexec::builtin

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tools/workspace/confined_path.h"
#include "tools/workspace/glob.h"
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
using search_support::StringLineChars;

constexpr int kMaxContextLines = 100;

std::string PathOf(const JsonValue& input) { return PathArg(input, "path"); }

std::string ModeOf(const JsonValue& input) {
  return StringField(input, "output_mode", "files_with_matches");
}

std::string CountLine(const JsonValue& c) {
  return absl::StrCat(StringField(c, "file"), ":", UintField(c, "count"), "\n");
}

// Matching lines among `matches` (the rest are context lines).
size_t CountMatchLines(const JsonValue& matches) {
  size_t n = 0;
  for (const JsonValue& m : matches.GetArray()) n += !BoolField(m, "context");
  return n;
}

// The result's lines, as ripgrep prints them for its output mode.
std::string ResultText(const JsonValue& result) {
  std::string text;
  if (!result.IsObject()) return text;
  if (result.HasMember("matches")) return MatchesText(result["matches"]);
  if (result.HasMember("files") && result["files"].IsArray()) {
    for (const JsonValue& f : result["files"].GetArray()) {
      if (f.IsString()) {
        absl::StrAppend(&text, absl::string_view(f.GetString(), f.GetStringLength()), "\n");
      }
    }
  } else if (result.HasMember("counts") && result["counts"].IsArray()) {
    for (const JsonValue& c : result["counts"].GetArray()) text += CountLine(c);
  }
  return text;
}

std::string Description(const BuiltinOptions& options) {
  return absl::StrCat(
      "Searches file contents with a regular expression (RE2 syntax, like ripgrep's: no "
      "backreferences or lookaround) under a directory or in one file of the workspace. Like "
      "ripgrep: files ignored by .gitignore, hidden files and binary files are skipped, and "
      "symlinks are not followed. output_mode: 'files_with_matches' (default) lists the files that "
      "match; 'content' returns the matching lines as {file, line, text}, with context_lines "
      "lines of context around each (marked context: true); 'count' returns the number of "
      "matching lines per file. A match never spans lines. glob limits the search to files "
      "matching a glob ('*.cc', '**/*.{ts,tsx}', 'src/**'; '!*.md' excludes). Results are sorted "
      "by path, then line; at most ",
      options.search_max_results,
      " files or lines (max_results), with `truncated` when there were more.");
}

std::string Schema(const BuiltinOptions& options) {
  return absl::StrCat(R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "pattern": {
      "type": "string",
      "description": "The regular expression (RE2 syntax), e.g. 'fn\\s+main', 'TODO|FIXME', 'std::(unique|shared)_ptr<'. Escape special characters with '\\' to match them literally."
    },
    "path": {
      "type": "string",
      "description": "The directory or file to search, relative to the workspace root (or absolute inside the workspace).",
      "default": "."
    },
    "glob": {
      "type": "string",
      "description": "Only search files whose path (relative to `path`) matches this glob, e.g. '*.py', 'src/**/*.h', '*.{c,h}'; a leading '!' excludes matches instead."
    },
    "output_mode": {
      "type": "string",
      "enum": ["files_with_matches", "content", "count"],
      "description": "files_with_matches: the matching files; content: the matching lines; count: matching lines per file.",
      "default": "files_with_matches"
    },
    "case_insensitive": {
      "type": "boolean",
      "description": "Ignore case when matching.",
      "default": false
    },
    "context_lines": {
      "type": "integer",
      "description": "With output_mode 'content': how many lines before and after each match to include.",
      "minimum": 0,
      "maximum": )json",
                      kMaxContextLines, R"json(,
      "default": 0
    },
    "max_results": {
      "type": "integer",
      "description": "The most files (files_with_matches, count) or matching lines (content) to return (at most )json",
                      options.search_max_results, R"json().",
      "minimum": 1,
      "default": )json",
                      options.search_max_results, R"json(
    }
  },
  "required": ["pattern"]
})json");
}

}  // namespace

GrepSearchTool::GrepSearchTool(const BuiltinOptions& options)
    : Tool(ToolSpec("grep_search", Description(options), Schema(options))
               .Type(ToolType::kFileRead)
               .ReadOnly()
               .Tags({kTagPathScoped})),
      options_(options) {}

absl::StatusOr<Json> GrepSearchTool::Call(const JsonValue& args, ToolContext& ctx) const {
  const std::string pattern = StringField(args, "pattern");
  const std::string path_arg = PathOf(args);
  const std::string glob_arg = StringField(args, "glob");
  const std::string mode_arg = ModeOf(args);
  const int64_t cap = std::max<int64_t>(options_.search_max_results, 1);

  search::GrepRequest request;
  request.matcher.pattern = pattern;
  request.matcher.case_insensitive = BoolArg(args, "case_insensitive", false);
  if (mode_arg == "files_with_matches") {
    request.mode = search::OutputMode::kFilesWithMatches;
  } else if (mode_arg == "content") {
    request.mode = search::OutputMode::kContent;
  } else if (mode_arg == "count") {
    request.mode = search::OutputMode::kCount;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "output_mode '", mode_arg, "' is not one of files_with_matches, content, count"));
  }
  request.context_lines =
      static_cast<int>(std::clamp<int64_t>(IntArg(args, "context_lines", 0), 0, kMaxContextLines));
  request.max_results =
      static_cast<size_t>(std::clamp<int64_t>(IntArg(args, "max_results", cap), 1, cap));
  request.cancellation = &ctx.cancellation();
  request.left_out = LeftOutFilter(ctx);

  // Validate what the model wrote before touching the file system.
  absl::StatusOr<std::unique_ptr<search::LineMatcher>> check =
      search::LineMatcher::Create(request.matcher);
  if (!check.ok()) return check.status();
  request.compiled = check->get();
  std::unique_ptr<fs::GlobSet> glob;
  if (!glob_arg.empty()) {
    absl::StatusOr<fs::GlobPattern> g = fs::ParseUserGlob(glob_arg);
    if (!g.ok()) return g.status();
    absl::StatusOr<std::unique_ptr<fs::GlobSet>> set =
        fs::GlobSet::Create({*std::move(g)}, /*skip_invalid=*/false);
    if (!set.ok()) return set.status();
    glob = *std::move(set);
    request.glob = glob.get();
  }

  absl::StatusOr<fs::ConfinedPath> start =
      fs::OpenConfined(ctx.info().workspaces, path_arg, "path");
  if (!start.ok()) return start.status();
  absl::StatusOr<search::GrepResult> r = search::Grep(*start, request);
  if (!r.ok()) return r.status();

  Json result = MakeObject();
  auto& alloc = result.GetAllocator();
  AddString(result, result, "pattern", pattern);
  AddString(result, result, "path", SanitizeUtf8(start->Display(start->relative)));
  AddString(result, result, "output_mode", mode_arg);
  // Entries past the model_content budget are dropped too (KeepWithinChars).
  const size_t budget = ctx.info().model_content.TextChars();
  bool truncated = r->truncated;
  std::string shown;
  switch (request.mode) {
    case search::OutputMode::kFilesWithMatches: {
      JsonValue files(rapidjson::kArrayType);
      for (const search::GrepFile& f : r->files) {
        files.PushBack(
            JsonValue(f.path.data(), static_cast<rapidjson::SizeType>(f.path.size()), alloc),
            alloc);
      }
      truncated |= KeepWithinChars(files, budget, StringLineChars) > 0;
      shown = absl::StrCat("the first ", GroupDigits(files.Size()), " of ",
                           GroupDigits(r->total_files), " matching files");
      result.AddMember("files", files, alloc);
      result.AddMember("num_files", r->total_files, alloc);
      break;
    }
    case search::OutputMode::kContent: {
      JsonValue matches = MatchesJson(result, *r);
      truncated |= KeepWithinChars(matches, budget, MatchChars) > 0;
      shown = absl::StrCat("the first ", GroupDigits(CountMatchLines(matches)), " of ",
                           GroupDigits(r->total_matches), " matching lines");
      result.AddMember("matches", matches, alloc);
      result.AddMember("num_matches", r->total_matches, alloc);
      result.AddMember("num_files", r->total_files, alloc);
      break;
    }
    case search::OutputMode::kCount: {
      JsonValue counts(rapidjson::kArrayType);
      for (const search::GrepFile& f : r->files) {
        JsonValue c(rapidjson::kObjectType);
        AddString(result, c, "file", f.path);
        c.AddMember("count", f.matches, alloc);
        counts.PushBack(c, alloc);
      }
      truncated |= KeepWithinChars(counts, budget, [](const JsonValue& c) {
                     return Utf8Chars(CountLine(c));
                   }) > 0;
      shown = absl::StrCat("counts for the first ", GroupDigits(counts.Size()), " of ",
                           GroupDigits(r->total_files), " matching files");
      result.AddMember("counts", counts, alloc);
      result.AddMember("num_matches", r->total_matches, alloc);
      result.AddMember("num_files", r->total_files, alloc);
      break;
    }
  }
  result.AddMember("truncated", truncated, alloc);
  if (r->binary_skipped > 0) result.AddMember("binary_files_skipped", r->binary_skipped, alloc);
  if (r->unreadable > 0) result.AddMember("unreadable", r->unreadable, alloc);
  AddLeftOut(result, r->left_out);
  if (truncated) {
    AddString(result, result, "hint",
              absl::StrCat("showing ", shown,
                           "; narrow the pattern, path or glob, or raise max_results (at most ",
                           cap, ")"));
  }
  return result;
}

std::string GrepSearchTool::display_title(const JsonValue& input) const {
  std::string title = absl::StrCat(Quoted(StringField(input, "pattern")), " in ", PathOf(input));
  const std::string glob = StringField(input, "glob");
  if (!glob.empty()) absl::StrAppend(&title, " (", glob, ")");
  return title;
}

std::string GrepSearchTool::model_content(const JsonValue& /*input*/, const JsonValue& result,
                                          const ModelContentBudget& /*budget*/) const {
  return ListingModelContent(result, ResultText(result), "No matches.");
}

DisplayResult GrepSearchTool::display(const JsonValue& input, const JsonValue& result) const {
  std::string text = result.IsObject() && result.HasMember("error") ? StringField(result, "error")
                                                                     : ResultText(result);
  if (BoolField(result, "truncated")) absl::StrAppend(&text, "... (truncated)\n");
  return TextDisplay(display_title(input), ContentType::kPlainText, std::move(text),
                     kSearchDisplayMaxBytes);
}

std::string GrepSearchTool::compact_summary(const JsonValue& input, const JsonValue& result,
                                            bool ok) const {
  const std::string what = display_title(input);
  if (!ok) return absl::StrCat("[grep_search: ", what, ": error]");
  const uint64_t files = UintField(result, "num_files");
  const char* file_word = files == 1 ? " file" : " files";
  const char* truncated = BoolField(result, "truncated") ? ", truncated" : "";
  if (ModeOf(input) == "files_with_matches") {
    return absl::StrCat("[grep_search: ", what, ": ", files, file_word, truncated, "]");
  }
  const uint64_t matches = UintField(result, "num_matches");
  return absl::StrCat("[grep_search: ", what, ": ", matches,
                      matches == 1 ? " match in " : " matches in ", files, file_word, truncated,
                      "]");
}

std::vector<PermissionRequirement> GrepSearchTool::required_permissions(
    const JsonValue& input) const {
  return PathPermission(PathOf(input), PermissionLevel::kRead, true);
}

}  // namespace toolexec::builtin

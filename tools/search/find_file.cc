#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "tools/workspace/confined_path.h"
#include "tools/workspace/glob.h"
#include "tools/search/grep.h"
#include "tools/search/search_tools.h"
#include "tools/workspace/walker.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::builtin {
namespace {

using search_support::AddLeftOut;
using search_support::AddString;
using search_support::KeepWithinChars;
using search_support::LeftOutFilter;
using search_support::ListingModelContent;
using search_support::PathArg;
using search_support::Quoted;
using search_support::StringLineChars;

std::string DirectoryOf(const JsonValue& input) { return PathArg(input, "directory_path"); }

// The paths of a result, one a line.
std::string PathsText(const JsonValue& result) {
  std::string text;
  if (!result.IsObject() || !result.HasMember("paths") || !result["paths"].IsArray()) return text;
  for (const JsonValue& p : result["paths"].GetArray()) {
    if (p.IsString()) absl::StrAppend(&text, absl::string_view(p.GetString(), p.GetStringLength()), "\n");
  }
  return text;
}

bool HasGlobSyntax(absl::string_view pattern) {
  return pattern.find_first_of("*?[{/") != absl::string_view::npos;
}

// The first `cap` paths in PathLess order, and how many there were.
class PathCollector {
 public:
  explicit PathCollector(size_t cap) : cap_(cap) {}
  void Add(std::string path) {
    absl::MutexLock lock(&mu_);
    ++total_;
    if (paths_.size() >= cap_ && fs::PathLess(*paths_.rbegin(), path)) return;
    paths_.insert(std::move(path));
    if (paths_.size() > cap_) paths_.erase(std::prev(paths_.end()));
  }
  uint64_t total() {
    absl::MutexLock lock(&mu_);
    return total_;
  }
  std::vector<std::string> Take() {
    absl::MutexLock lock(&mu_);
    return std::vector<std::string>(paths_.begin(), paths_.end());
  }

 private:
  const size_t cap_;
  absl::Mutex mu_;
  std::set<std::string, fs::PathLessCmp> paths_ ABSL_GUARDED_BY(mu_);
  uint64_t total_ ABSL_GUARDED_BY(mu_) = 0;
};

std::string Description(const BuiltinOptions& options) {
  return absl::StrCat(
      "Finds files and directories in the workspace whose path matches a glob pattern, like "
      "ripgrep --files --glob. A pattern without '/' matches a name at any depth ('*.md', "
      "'Makefile'); a pattern with '/' is matched against the path relative to directory_path "
      "('src/*.h'; '**' spans directories: '**/*.cc', 'src/**/test_*.py'); '{a,b}' gives "
      "alternatives ('*.{h,cc}'). Files ignored by .gitignore, hidden entries and .git are "
      "skipped; symlinks are listed but not followed. Returns paths relative to the workspace "
      "root, sorted; directories end with '/'. At most ",
      options.search_max_results, " paths (max_results); `truncated` says when there were more.");
}

std::string Schema(const BuiltinOptions& options) {
  return absl::StrCat(R"json({
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "pattern": {
      "type": "string",
      "description": "Glob to match, e.g. '*.cc', '**/*_test.py', 'src/*.h', 'README*', '*.{ts,tsx}'.",
      "minLength": 1
    },
    "directory_path": {
      "type": "string",
      "description": "The directory to search, relative to the workspace root (or absolute inside the workspace).",
      "default": "."
    },
    "max_results": {
      "type": "integer",
      "description": "The most paths to return (at most )json",
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

FindFileTool::FindFileTool(const BuiltinOptions& options)
    : Tool(ToolSpec("find_file", Description(options), Schema(options))
               .Type(ToolType::kFileRead)
               .Tags({kTagReadOnly, kTagPathScoped})),
      options_(options) {}

absl::StatusOr<Json> FindFileTool::Call(const JsonValue& args, ToolContext& ctx) const {
  const std::string pattern = StringField(args, "pattern");
  const std::string dir_arg = DirectoryOf(args);
  const size_t cap = static_cast<size_t>(
      std::clamp<int64_t>(IntArg(args, "max_results", options_.search_max_results), 1,
                          std::max<int64_t>(options_.search_max_results, 1)));

  absl::StatusOr<fs::GlobPattern> glob = fs::ParseUserGlob(pattern);
  if (!glob.ok()) return glob.status();
  const bool negated = glob->negated;
  absl::StatusOr<std::unique_ptr<fs::GlobSet>> set =
      fs::GlobSet::Create({*std::move(glob)}, /*skip_invalid=*/false);
  if (!set.ok()) return set.status();

  absl::StatusOr<fs::ConfinedPath> start =
      fs::OpenConfined(ctx.info().workspaces, dir_arg, "directory_path");
  if (!start.ok()) return start.status();
  const std::string display = start->Display(start->relative);
  if (!start->is_dir) {
    return absl::FailedPreconditionError(
        absl::StrCat("'", display, "' is a file, not a directory; give the directory to search"));
  }

  PathCollector collector(cap);
  fs::WalkOptions walk;
  walk.visit_dirs = true;
  walk.visit_symlinks = true;
  walk.cancellation = &ctx.cancellation();
  walk.left_out = LeftOutFilter(ctx);
  absl::StatusOr<fs::WalkStats> stats =
      fs::Walk(*start, walk, [&](const fs::WalkEntry& e, int) {
        const bool is_dir = e.kind == fs::EntryKind::kDir;
        const bool matched = ((*set)->Match(e.start_path, is_dir) != nullptr) != negated;
        if (!matched) return;
        std::string path = SanitizeUtf8(start->Display(e.path));
        if (is_dir) path.push_back('/');
        collector.Add(std::move(path));
      });
  if (!stats.ok()) return stats.status();

  const std::vector<std::string> paths = collector.Take();
  const uint64_t total = collector.total();
  Json result = MakeObject();
  auto& alloc = result.GetAllocator();
  AddString(result, result, "pattern", pattern);
  AddString(result, result, "directory", SanitizeUtf8(display));
  JsonValue list(rapidjson::kArrayType);
  for (const std::string& p : paths) {
    list.PushBack(JsonValue(p.data(), static_cast<rapidjson::SizeType>(p.size()), alloc), alloc);
  }
  const size_t shown =
      paths.size() - KeepWithinChars(list, ctx.info().model_content.TextChars(), StringLineChars);
  result.AddMember("paths", list, alloc);
  result.AddMember("count", total, alloc);
  result.AddMember("truncated", total > shown, alloc);
  AddLeftOut(result, stats->left_out);
  if (total > shown) {
    AddString(result, result, "hint",
              absl::StrCat("showing the first ", GroupDigits(shown), " of ", GroupDigits(total),
                           " paths; narrow the pattern or directory_path"));
  } else if (total == 0 && !HasGlobSyntax(pattern)) {
    AddString(result, result, "hint",
              absl::StrCat("no name equals '", pattern, "'; the pattern is a glob, so use '*",
                           pattern, "*' to match names that contain it"));
  }
  return result;
}

std::string FindFileTool::display_title(const JsonValue& input) const {
  return absl::StrCat(Quoted(StringField(input, "pattern")), " in ", DirectoryOf(input));
}

std::string FindFileTool::model_content(const JsonValue& /*input*/, const JsonValue& result,
                                        const ModelContentBudget& /*budget*/) const {
  return ListingModelContent(result, PathsText(result), "No path matches.");
}

DisplayResult FindFileTool::display(const JsonValue& input, const JsonValue& result) const {
  std::string text;
  if (result.IsObject() && result.HasMember("error")) {
    text = StringField(result, "error");
  } else if (result.IsObject() && result.HasMember("paths") && result["paths"].IsArray()) {
    text = PathsText(result);
    if (BoolField(result, "truncated")) {
      absl::StrAppend(&text, "... (", UintField(result, "count"), " in all)\n");
    }
  }
  return TextDisplay(display_title(input), ContentType::kPlainText, std::move(text),
                     kSearchDisplayMaxBytes);
}

std::string FindFileTool::compact_summary(const JsonValue& input, const JsonValue& result,
                                          bool ok) const {
  const std::string what = display_title(input);
  if (!ok) return absl::StrCat("[find_file: ", what, ": error]");
  const uint64_t count = UintField(result, "count");
  return absl::StrCat("[find_file: ", what, ": ", count, count == 1 ? " path" : " paths",
                      BoolField(result, "truncated") ? ", truncated" : "", "]");
}

std::vector<PermissionRequirement> FindFileTool::required_permissions(
    const JsonValue& input) const {
  return PathPermission(DirectoryOf(input), PermissionLevel::kRead, true);
}

}  // namespace toolexec::builtin

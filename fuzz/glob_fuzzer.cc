// Fuzzes the glob and .gitignore matcher (tools/workspace/glob.h): the
// pattern parsers and GlobSet, whose shortcuts (literal and suffix compares,
// RE2::Set groups, skipping patterns by component count and literal prefix)
// are checked against the plain definition: the last pattern whose regex
// matches the path (anchored) or its last component (not anchored) decides,
// directory-only patterns counting only for directories.
// Input: the first line is the path (relative, '/'-separated); every further
// line is a .gitignore line and also a user glob.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "re2/re2.h"
#include "tools/workspace/glob.h"

namespace {

using toolexec::fs::GlobPattern;
using toolexec::fs::GlobSet;

// The deciding pattern by the definition, one RE2 per pattern: its index or -1.
int Reference(const std::vector<GlobPattern>& patterns, absl::string_view path, bool is_dir) {
  RE2::Options options;
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_dot_nl(true);
  options.set_log_errors(false);
  const toolexec::fs::GlobTarget target = toolexec::fs::MakeGlobTarget(path);
  for (int i = static_cast<int>(patterns.size()) - 1; i >= 0; --i) {
    const GlobPattern& p = patterns[static_cast<size_t>(i)];
    if (p.dir_only && !is_dir) continue;
    RE2 re(p.regex, options);
    if (!re.ok()) continue;
    const absl::string_view text = p.anchored ? target.path : target.name;
    if (RE2::FullMatch(re2::StringPiece(text.data(), text.size()), re)) return i;
  }
  return -1;
}

void Check(const std::vector<GlobPattern>& parsed, absl::string_view path, const char* kind) {
  auto set = GlobSet::Create(parsed, /*skip_invalid=*/true);
  if (!set.ok()) return;
  const std::vector<GlobPattern>& patterns = (*set)->patterns();
  for (bool is_dir : {false, true}) {
    const GlobPattern* got = (*set)->Match(path, is_dir);
    const int want = Reference(patterns, path, is_dir);
    const int got_index = got == nullptr ? -1 : static_cast<int>(got - patterns.data());
    if (got_index != want) {
      std::string list;
      for (const GlobPattern& p : patterns) absl::StrAppend(&list, "\n  '", p.source, "' -> ", p.regex);
      std::fprintf(stderr, "%s set: path '%s' (dir %d) matched pattern %d, expected %d:%s\n", kind,
                   std::string(path).c_str(), is_dir, got_index, want, list.c_str());
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(absl::string_view(reinterpret_cast<const char*>(data), size), '\n');
  if (lines.size() < 2 || lines.size() > 64) return 0;
  const absl::string_view path = lines[0];
  // Paths as the walker gives them: relative, no empty component.
  if (path.empty() || path.front() == '/' || path.back() == '/' ||
      path.find("//") != absl::string_view::npos) {
    return 0;
  }
  std::vector<GlobPattern> gitignore;
  std::vector<GlobPattern> user;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (auto p = toolexec::fs::ParseGitignoreLine(lines[i])) gitignore.push_back(*std::move(p));
    if (auto p = toolexec::fs::ParseUserGlob(lines[i]); p.ok()) user.push_back(*std::move(p));
  }
  Check(gitignore, path, ".gitignore");
  Check(user, path, "user glob");
  return 0;
}

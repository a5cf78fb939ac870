// Differential test of the walker's ignore rules against git itself: random
// trees with random .gitignore files (nested), .git/info/exclude and a global
// excludes file, a workspace that is the repository or a directory inside it,
// and a start directory that is the workspace or below it. The oracle is
// `git ls-files --others --exclude-standard` run in a hermetic environment
// (its own HOME and XDG_CONFIG_HOME, no system config); the walker must list
// exactly the files git lists under the start directory.
//
// The trees stay outside the differences walker.h documents (hidden names
// other than .gitignore, an ignored start directory or workspace, .ignore
// files, core.excludesFile in the configuration of a repository inside the
// workspace), so every path must agree.
//
// Seeded and deterministic: TOOLEXEC_GITIGNORE_SEED and TOOLEXEC_GITIGNORE_TREES
// change the seed (default 20261203) and the number of trees (default 250).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "tests/common/shell.h"
#include "tests/unit/builtin/search_test_util.h"
#include "tools/workspace/confined_path.h"
#include "tools/workspace/walker.h"

namespace toolexec::search {

using fs::OpenConfined;
using fs::Walk;
using fs::WalkEntry;
using fs::WalkOptions;
namespace {

using search_testing::ScopedEnv;
using search_testing::TempWorkspace;

// File and directory names: plain ones, and ones full of glob syntax.
const std::vector<std::string>& Names() {
  static const auto* names = new std::vector<std::string>{
      "a",     "b",     "ab",     "ba",   "a1",    "b2",    "1",      "7x",    "1.txt", "a.txt",
      "x.log", "y.log", "p].txt", "a[1]", "x*y",   "q?",    "#c",     "!n",    "sp ace", "tr ",
      "z\\w",  "A",     "B.TXT",  "d-e",  "a.b.c", "~t",    "build",  "doc",   "gen",   "keep.log",
      "o^k",   "c:d",   "u_v",    "[x]",  "e!",    "f#",    "tab\tx", "9.log", "Q",     "a2.c"};
  return *names;
}

class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  // Uniform in [0, n).
  size_t Below(size_t n) { return static_cast<size_t>(gen_() % n); }
  bool Chance(int percent) { return Below(100) < static_cast<size_t>(percent); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  std::mt19937_64 gen_;
};

// `name` as a glob that matches exactly it.
std::string Escape(const std::string& name) {
  std::string out;
  for (char c : name) {
    if (c == '*' || c == '?' || c == '[' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  if (!out.empty() && (out[0] == '!' || out[0] == '#')) out.insert(0, "\\");
  if (!out.empty() && out.back() == ' ') out.insert(out.size() - 1, "\\");
  return out;
}

std::string RandomBracket(Rng& rng, char hint) {
  static const std::vector<std::string> kClasses = {
      "alnum", "alpha", "blank", "cntrl", "digit", "graph",
      "lower", "print", "punct", "space", "upper", "xdigit"};
  std::string b = "[";
  if (rng.Chance(25)) b += rng.Chance(50) ? "!" : "^";
  if (rng.Chance(10)) b += "]";
  const size_t items = 1 + rng.Below(3);
  for (size_t i = 0; i < items; ++i) {
    switch (rng.Below(6)) {
      case 0:
        b += absl::StrCat("[:", rng.Pick(kClasses), ":]");
        break;
      case 1:
        b += rng.Chance(50) ? "a-c" : "0-9";
        break;
      case 2:
        b += "\\]";
        break;
      case 3:
        b += rng.Chance(50) ? "-" : "/";
        break;
      default:
        if (hint == '\\' || hint == ']' || hint == '[') b.push_back('\\');
        b.push_back(hint);
    }
  }
  return b + "]";
}

// One component of a pattern: usually a mutated name, so that it matches.
std::string RandomComponent(Rng& rng) {
  if (rng.Chance(10)) return "**";
  if (rng.Chance(8)) return "*";
  const std::string& name = rng.Pick(Names());
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const size_t roll = rng.Below(100);
    if (roll < 8) {
      out += "?";
    } else if (roll < 14) {
      out += "*";
    } else if (roll < 22) {
      out += RandomBracket(rng, c);
    } else if (roll < 24) {
      out += "**";
    } else {
      std::string one(1, c);
      out += (c == '*' || c == '?' || c == '[' || c == '\\') ? "\\" + one : one;
    }
  }
  return out;
}

std::string RandomPatternLine(Rng& rng) {
  const size_t roll = rng.Below(100);
  if (roll < 4) return "# " + rng.Pick(Names());
  if (roll < 7) return rng.Chance(50) ? "" : "   ";
  if (roll < 10) {
    static const std::vector<std::string> kOdd = {"foo[", "a[b",       "x\\",   "[[:bogus:]]",
                                                  "a[/]b", "a\\/b",    "[z-a]", "\\!n",
                                                  "\\#c",  "tr\\ ",    "a/**/", "**/",
                                                  "/**",   "[]]*",     "*[!]a]", "[[:digit:]].txt"};
    return rng.Pick(kOdd);
  }
  std::string line;
  if (rng.Chance(20)) line += "!";
  if (rng.Chance(20)) line += "/";
  if (rng.Chance(20)) line += "**/";
  const size_t parts = rng.Chance(70) ? 1 : 2 + rng.Below(2);
  for (size_t i = 0; i < parts; ++i) {
    if (i > 0) line += "/";
    line += rng.Chance(75) ? RandomComponent(rng) : Escape(rng.Pick(Names()));
  }
  if (rng.Chance(20)) line += "/";
  if (line == "!" || line.empty()) line = "*";
  return line;
}

std::string RandomIgnoreFile(Rng& rng, size_t max_lines) {
  std::string text;
  const size_t lines = 1 + rng.Below(max_lines);
  for (size_t i = 0; i < lines; ++i) absl::StrAppend(&text, RandomPatternLine(rng), "\n");
  return text;
}

using ::toolexec::testing::Shell;

std::string Quote(const std::string& s) { return "'" + s + "'"; }

struct Tree {
  std::vector<std::string> dirs;   // repository-relative, "" for the root
  std::vector<std::string> files;  // repository-relative
  std::map<std::string, std::string> ignore_files;  // path -> content, for messages
};

Tree MakeTree(Rng& rng, const TempWorkspace& base, const std::string& repo) {
  Tree t;
  t.dirs.push_back("");
  for (size_t i = 0; i < t.dirs.size(); ++i) {
    const std::string dir = t.dirs[i];
    const size_t depth = dir.empty() ? 0 : std::count(dir.begin(), dir.end(), '/') + 1;
    std::set<std::string> used;
    const size_t files = rng.Below(5);
    for (size_t k = 0; k < files; ++k) {
      const std::string& name = rng.Pick(Names());
      if (!used.insert(name).second) continue;
      t.files.push_back(dir.empty() ? name : dir + "/" + name);
      base.Write(repo + "/" + t.files.back(), "x");
    }
    const size_t subdirs = depth >= 3 ? 0 : rng.Below(depth == 0 ? 4 : 3);
    for (size_t k = 0; k < subdirs; ++k) {
      const std::string& name = rng.Pick(Names());
      if (!used.insert(name).second) continue;
      t.dirs.push_back(dir.empty() ? name : dir + "/" + name);
      base.Mkdir(repo + "/" + t.dirs.back());
    }
    if (rng.Chance(dir.empty() ? 85 : 35)) {
      const std::string path = dir.empty() ? ".gitignore" : dir + "/.gitignore";
      t.ignore_files[path] = RandomIgnoreFile(rng, 6);
      base.Write(repo + "/" + path, t.ignore_files[path]);
    }
  }
  return t;
}

bool Hidden(const std::string& path) {
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (!part.empty() && part[0] == '.') return true;
  }
  return false;
}

bool Below(const std::string& path, const std::string& dir) {
  return dir.empty() || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                         path[dir.size()] == '/');
}

// The directories that hold a file git lists (so neither they nor their
// ancestors are ignored), below `under`.
std::vector<std::string> ListedDirs(const std::set<std::string>& listed, const std::string& under) {
  std::set<std::string> dirs;
  for (const std::string& f : listed) {
    for (size_t slash = f.find('/'); slash != std::string::npos; slash = f.find('/', slash + 1)) {
      const std::string d = f.substr(0, slash);
      if (Below(d, under)) dirs.insert(d);
    }
  }
  return std::vector<std::string>(dirs.begin(), dirs.end());
}

TEST(SearchGitignoreDiffTest, WalkerListsWhatGitLists) {
  if (Shell("git --version 2>/dev/null").find("git version") == std::string::npos) {
    FAIL() << "git is needed as the oracle (scripts/setup.sh installs it)";
  }
  const char* seed_env = getenv("TOOLEXEC_GITIGNORE_SEED");
  const char* trees_env = getenv("TOOLEXEC_GITIGNORE_TREES");
  const uint64_t seed = seed_env ? strtoull(seed_env, nullptr, 10) : 20261203;
  const int trees = trees_env ? atoi(trees_env) : 250;
  Rng rng(seed);

  TempWorkspace base;
  base.Mkdir("home");
  base.Mkdir("xdg/git");
  // The walker reads the same global configuration git does.
  ScopedEnv home("HOME", base.Abs("home").c_str());
  ScopedEnv xdg("XDG_CONFIG_HOME", base.Abs("xdg").c_str());
  ScopedEnv nosystem("GIT_CONFIG_NOSYSTEM", "1");
  ScopedEnv global("GIT_CONFIG_GLOBAL", nullptr);
  const std::string git_env = absl::StrCat("HOME=", Quote(base.Abs("home")),
                                           " XDG_CONFIG_HOME=", Quote(base.Abs("xdg")),
                                           " GIT_CONFIG_NOSYSTEM=1 LC_ALL=C git ");

  uint64_t paths_total = 0, paths_agree = 0;
  int trees_checked = 0, trees_agree = 0, trees_below_repo = 0, trees_below_workspace = 0;
  std::vector<std::string> first_disagreements;
  for (int n = 0; n < trees; ++n) {
    const std::string repo = absl::StrCat("t", n);
    base.Mkdir(repo);
    Shell(absl::StrCat(git_env, "init -q ", Quote(base.Abs(repo)), " >/dev/null 2>&1"));
    Tree tree = MakeTree(rng, base, repo);

    // Lower-precedence sources: .git/info/exclude and a global excludes file
    // (the default one, or one named by core.excludesFile).
    std::remove(base.Abs("xdg/git/ignore").c_str());
    std::remove(base.Abs("home/.gitconfig").c_str());
    if (rng.Chance(30)) {
      tree.ignore_files[".git/info/exclude"] = RandomIgnoreFile(rng, 3);
      base.Write(repo + "/.git/info/exclude", tree.ignore_files[".git/info/exclude"]);
    }
    bool excludes_in_repo_config = false;
    if (rng.Chance(30)) {
      const std::string text = RandomIgnoreFile(rng, 3);
      tree.ignore_files["(global excludes)"] = text;
      switch (rng.Below(3)) {
        case 0:
          base.Write("xdg/git/ignore", text);
          break;
        case 1:
          base.Write(absl::StrCat("excludes", n), text);
          base.Write("home/.gitconfig",
                     absl::StrCat("[core]\n\texcludesFile = ", base.Abs(absl::StrCat("excludes", n)),
                                  "\n"));
          break;
        default:
          base.Write(absl::StrCat("excludes", n), text);
          excludes_in_repo_config = true;
          Shell(absl::StrCat(git_env, "-C ", Quote(base.Abs(repo)), " config core.excludesFile ",
                           Quote(base.Abs(absl::StrCat("excludes", n)))));
      }
    }

    const std::string out = Shell(absl::StrCat(git_env, "-C ", Quote(base.Abs(repo)),
                                             " ls-files -z --others --exclude-standard"));
    std::set<std::string> git_listed;
    for (absl::string_view p : absl::StrSplit(out, '\0', absl::SkipEmpty())) {
      if (!Hidden(std::string(p))) git_listed.insert(std::string(p));
    }

    // The workspace: the repository, or (outside the documented differences)
    // a directory in it that is not ignored.
    std::string ws_rel;
    const std::vector<std::string> ws_candidates = ListedDirs(git_listed, "");
    if (!ws_candidates.empty() && rng.Chance(excludes_in_repo_config ? 100 : 30)) {
      ws_rel = rng.Pick(ws_candidates);
    } else if (excludes_in_repo_config) {
      continue;  // a repository config inside the workspace is not trusted
    }
    std::string start_rel = ws_rel;
    const std::vector<std::string> start_candidates = ListedDirs(git_listed, ws_rel);
    if (!start_candidates.empty() && rng.Chance(25)) start_rel = rng.Pick(start_candidates);
    ++trees_checked;
    trees_below_repo += !ws_rel.empty();
    trees_below_workspace += start_rel != ws_rel;

    std::set<std::string> expected;
    for (const std::string& p : git_listed) {
      if (Below(p, start_rel)) expected.insert(p);
    }
    const std::string ws_abs = ws_rel.empty() ? base.Abs(repo) : base.Abs(repo + "/" + ws_rel);
    const std::string start_arg =
        start_rel == ws_rel ? "." : start_rel.substr(ws_rel.empty() ? 0 : ws_rel.size() + 1);
    std::set<std::string> walked;
    auto start = OpenConfined(testing::Roots({ws_abs}), start_arg, "path");
    ASSERT_TRUE(start.ok()) << start.status();
    absl::Mutex mu;
    WalkOptions options;
    options.threads = 2;
    auto stats = Walk(*start, options, [&](const WalkEntry& e, int) {
      absl::MutexLock lock(&mu);
      walked.insert(ws_rel.empty() ? std::string(e.path) : absl::StrCat(ws_rel, "/", e.path));
    });
    ASSERT_TRUE(stats.ok()) << stats.status();

    std::set<std::string> all = expected;
    all.insert(walked.begin(), walked.end());
    bool tree_ok = true;
    for (const std::string& p : all) {
      ++paths_total;
      const bool by_git = expected.count(p) > 0;
      const bool by_walker = walked.count(p) > 0;
      if (by_git == by_walker) {
        ++paths_agree;
        continue;
      }
      tree_ok = false;
      if (first_disagreements.size() < 12) {
        std::string files;
        for (const auto& [path, text] : tree.ignore_files) {
          absl::StrAppend(&files, "    ", path, ":\n      ",
                          absl::StrJoin(absl::StrSplit(text, '\n', absl::SkipEmpty()), "\n      "),
                          "\n");
        }
        first_disagreements.push_back(absl::StrCat(
            "tree ", n, " (workspace '", ws_rel, "', start '", start_rel, "'): '", p, "' ",
            by_git ? "listed by git only" : "listed by the walker only", "\n", files));
      }
    }
    trees_agree += tree_ok;
  }
  const double percent = paths_total == 0 ? 100.0 : 100.0 * paths_agree / paths_total;
  printf("gitignore differential (seed %llu): %d/%d trees agree fully; %llu/%llu paths agree "
         "(%.2f%%); %d trees with the workspace below the repository root, %d with the start "
         "below the workspace\n",
         static_cast<unsigned long long>(seed), trees_agree, trees_checked,
         static_cast<unsigned long long>(paths_agree),
         static_cast<unsigned long long>(paths_total), percent, trees_below_repo,
         trees_below_workspace);
  for (const std::string& d : first_disagreements) printf("%s", d.c_str());
  EXPECT_EQ(paths_agree, paths_total) << "see the disagreements printed above";
}

}  // namespace
}  // namespace toolexec::search

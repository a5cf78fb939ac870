// The parallel directory walk (tools/builtin/search/walker.h): ignore files,
// hidden entries, .git, glob overrides, symlinks never followed, cancellation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "tests/unit/builtin/search_test_util.h"
#include "tools/builtin/search/confine.h"
#include "tools/builtin/search/walker.h"

namespace toolexec::search {
namespace {

using search_testing::TempWorkspace;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

struct Visited {
  absl::Mutex mu;
  std::vector<std::string> paths;
};

// The workspace-relative paths a walk of `dir` visits (directories end in '/').
std::vector<std::string> WalkPaths(const TempWorkspace& ws, const std::string& dir,
                                   WalkOptions options = {}, absl::Status* status = nullptr) {
  auto start = OpenConfined(testing::Roots({ws.path()}), dir, "path");
  EXPECT_TRUE(start.ok()) << start.status();
  Visited v;
  auto stats = Walk(*start, options, [&](const WalkEntry& e, int) {
    absl::MutexLock lock(&v.mu);
    v.paths.push_back(std::string(e.path) + (e.kind == EntryKind::kDir ? "/" : ""));
  });
  if (status != nullptr) *status = stats.status();
  EXPECT_TRUE(stats.ok() || status != nullptr) << stats.status();
  std::sort(v.paths.begin(), v.paths.end());
  return v.paths;
}

WalkOptions WithDirs() {
  WalkOptions o;
  o.visit_dirs = true;
  o.visit_symlinks = true;
  return o;
}

TEST(SearchWalkerTest, VisitsEveryFileOnce) {
  TempWorkspace ws;
  for (int d = 0; d < 20; ++d) {
    for (int f = 0; f < 50; ++f) {
      ws.Write("d" + std::to_string(d) + "/s/f" + std::to_string(f), "x");
    }
  }
  for (int threads : {1, 2, 8}) {
    WalkOptions o;
    o.threads = threads;
    EXPECT_EQ(WalkPaths(ws, ".", o).size(), 1000u) << threads;
  }
}

TEST(SearchWalkerTest, SkipsHiddenAndGit) {
  TempWorkspace ws;
  ws.Write("a.txt", "");
  ws.Write(".hidden", "");
  ws.Write(".config/x", "");
  ws.Write(".git/HEAD", "");
  ws.Write("src/.env", "");
  EXPECT_THAT(WalkPaths(ws, "."), ElementsAre("a.txt"));
  WalkOptions o;
  o.skip_hidden = false;
  EXPECT_THAT(WalkPaths(ws, ".", o), ElementsAre(".config/x", ".hidden", "a.txt", "src/.env"));
}

TEST(SearchWalkerTest, ExplicitHiddenStartIsWalked) {
  TempWorkspace ws;
  ws.Write(".github/workflows/ci.yml", "");
  EXPECT_THAT(WalkPaths(ws, ".github"), ElementsAre(".github/workflows/ci.yml"));
}

TEST(SearchWalkerTest, GitignoreSemantics) {
  TempWorkspace ws;
  ws.Write(".gitignore",
           "# build output\n"
           "*.o\n"
           "!keep.o\n"
           "/only_root.txt\n"
           "logs/\n"
           "doc/**/gen\n");
  ws.Write("a.o", "");
  ws.Write("keep.o", "");
  ws.Write("sub/b.o", "");
  ws.Write("sub/keep.o", "");
  ws.Write("only_root.txt", "");
  ws.Write("sub/only_root.txt", "");
  ws.Write("logs/today", "");
  ws.Write("sub/logs/today", "");
  ws.Write("logs_file", "");  // not a directory named logs
  ws.Write("doc/gen", "");
  ws.Write("doc/x/y/gen", "");
  ws.Write("doc/x/gen.md", "");
  EXPECT_THAT(WalkPaths(ws, "."), ElementsAre("doc/x/gen.md", "keep.o", "logs_file", "sub/keep.o",
                                              "sub/only_root.txt"));
}

TEST(SearchWalkerTest, NestedGitignoreTakesPrecedence) {
  TempWorkspace ws;
  ws.Write(".gitignore", "*.gen\n");
  ws.Write("lib/.gitignore", "!*.gen\nlocal.txt\n");
  ws.Write("a.gen", "");
  ws.Write("lib/b.gen", "");
  ws.Write("lib/local.txt", "");
  ws.Write("local.txt", "");
  ws.Write("lib/deep/c.gen", "");
  EXPECT_THAT(WalkPaths(ws, "."), ElementsAre("lib/b.gen", "lib/deep/c.gen", "local.txt"));
}

TEST(SearchWalkerTest, AnchoredPatternsAreRelativeToTheirGitignore) {
  TempWorkspace ws;
  ws.Write("sub/.gitignore", "/x.txt\ny/z.txt\n");
  ws.Write("sub/x.txt", "");
  ws.Write("sub/deeper/x.txt", "");
  ws.Write("sub/y/z.txt", "");
  ws.Write("x.txt", "");
  ws.Write("y/z.txt", "");
  EXPECT_THAT(WalkPaths(ws, "."), ElementsAre("sub/deeper/x.txt", "x.txt", "y/z.txt"));
}

TEST(SearchWalkerTest, AncestorIgnoreFilesApplyBelowTheStart) {
  TempWorkspace ws;
  ws.Write(".gitignore", "*.tmp\nsrc/gen/\n");
  ws.Write("src/a.tmp", "");
  ws.Write("src/a.cc", "");
  ws.Write("src/gen/x.cc", "");
  EXPECT_THAT(WalkPaths(ws, "src"), ElementsAre("src/a.cc"));
  // Naming an ignored directory searches it, as ripgrep does.
  EXPECT_THAT(WalkPaths(ws, "src/gen"), ElementsAre("src/gen/x.cc"));
}

TEST(SearchWalkerTest, IgnoreAndGitExcludeFiles) {
  TempWorkspace ws;
  ws.Write(".ignore", "a.txt\n");
  ws.Write(".git/info/exclude", "b.txt\n");
  ws.Write(".gitignore", "!a.txt\n");  // .ignore takes precedence over .gitignore
  ws.Write("a.txt", "");
  ws.Write("b.txt", "");
  ws.Write("c.txt", "");
  EXPECT_THAT(WalkPaths(ws, "."), ElementsAre("c.txt"));
  WalkOptions o;
  o.use_ignore_files = false;
  EXPECT_THAT(WalkPaths(ws, ".", o), ElementsAre("a.txt", "b.txt", "c.txt"));
}

TEST(SearchWalkerTest, IgnoredDirectoryIsNotEntered) {
  TempWorkspace ws;
  ws.Write(".gitignore", "node_modules/\n!node_modules/keep.js\n");
  ws.Write("node_modules/keep.js", "");
  ws.Write("index.js", "");
  EXPECT_THAT(WalkPaths(ws, ".", WithDirs()), ElementsAre("index.js"));
}

TEST(SearchWalkerTest, SymlinksAreNeverFollowed) {
  TempWorkspace outside;
  outside.Write("secret.txt", "secret");
  outside.Write("dir/inner.txt", "secret");
  TempWorkspace ws;
  ws.Write("real/a.txt", "");
  ws.Symlink(outside.path(), "out_dir");
  ws.Symlink(outside.Abs("secret.txt"), "out_file");
  ws.Symlink("real", "in_dir");
  ws.Symlink(".", "loop");
  EXPECT_THAT(WalkPaths(ws, "."), ElementsAre("real/a.txt"));
  EXPECT_THAT(WalkPaths(ws, ".", WithDirs()),
              ElementsAre("in_dir", "loop", "out_dir", "out_file", "real/", "real/a.txt"));
}

TEST(SearchWalkerTest, DirectorySwappedForASymlinkMidWalkNeverLeadsOut) {
  // A racing thread keeps swapping the directory "d" for a symlink to a
  // directory outside; no walk may ever visit a file from outside.
  TempWorkspace outside;
  for (int i = 0; i < 20; ++i) outside.Write("secret" + std::to_string(i), "");
  TempWorkspace ws;
  for (int i = 0; i < 20; ++i) ws.Write("d/inside" + std::to_string(i), "");
  ws.Symlink(outside.path(), "link");
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string d = ws.Abs("d"), link = ws.Abs("link"), tmp = ws.Abs("tmp");
    while (!stop.load()) {
      rename(d.c_str(), tmp.c_str());
      rename(link.c_str(), d.c_str());  // "d" is now the symlink
      rename(d.c_str(), link.c_str());
      rename(tmp.c_str(), d.c_str());
    }
  });
  int visited_inside = 0;
  for (int run = 0; run < 300; ++run) {
    for (const std::string& p : WalkPaths(ws, ".")) {
      EXPECT_EQ(p.find("secret"), std::string::npos) << p;
      visited_inside += p.find("inside") != std::string::npos;
    }
  }
  stop.store(true);
  swapper.join();
  EXPECT_GT(visited_inside, 0);
}

TEST(SearchWalkerTest, OverridesLikeRipgrepGlobs) {
  TempWorkspace ws;
  ws.Write(".gitignore", "ignored.cc\nbuild/\n");
  ws.Write("a.cc", "");
  ws.Write("b.h", "");
  ws.Write(".hidden.cc", "");
  ws.Write("ignored.cc", "");
  ws.Write("sub/c.cc", "");
  ws.Write("build/d.cc", "");
  auto only_cc = *GlobSet::Create({*ParseUserGlob("*.cc")}, false);
  WalkOptions o;
  o.overrides = only_cc.get();
  // A positive glob beats hidden and ignore rules for files (rg -g), but an
  // ignored directory is still not entered.
  EXPECT_THAT(WalkPaths(ws, ".", o), ElementsAre(".hidden.cc", "a.cc", "ignored.cc", "sub/c.cc"));
  auto not_cc = *GlobSet::Create({*ParseUserGlob("!*.cc")}, false);
  o.overrides = not_cc.get();
  EXPECT_THAT(WalkPaths(ws, ".", o), ElementsAre("b.h"));
  // Globs are relative to the start directory.
  auto anchored = *GlobSet::Create({*ParseUserGlob("sub/*.cc")}, false);
  o.overrides = anchored.get();
  EXPECT_THAT(WalkPaths(ws, ".", o), ElementsAre("sub/c.cc"));
}

TEST(SearchWalkerTest, MaxDepth) {
  TempWorkspace ws;
  ws.Write("a", "");
  ws.Write("d/b", "");
  ws.Write("d/e/c", "");
  WalkOptions o = WithDirs();
  o.max_depth = 1;
  EXPECT_THAT(WalkPaths(ws, ".", o), ElementsAre("a", "d/"));
  o.max_depth = 2;
  EXPECT_THAT(WalkPaths(ws, ".", o), ElementsAre("a", "d/", "d/b", "d/e/"));
}

TEST(SearchWalkerTest, StartMustBeADirectory) {
  TempWorkspace ws;
  ws.Write("f", "");
  auto start = OpenConfined(testing::Roots({ws.path()}), "f", "path");
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(Walk(*start, {}, [](const WalkEntry&, int) {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SearchWalkerTest, CancellationStopsTheWalk) {
  TempWorkspace ws;
  for (int d = 0; d < 40; ++d) {
    for (int f = 0; f < 100; ++f) ws.Write("d" + std::to_string(d) + "/f" + std::to_string(f), "");
  }
  auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
  ASSERT_TRUE(start.ok());
  CancellationToken token;
  WalkOptions o;
  o.cancellation = &token;
  std::atomic<int> visited{0};
  std::atomic<int> after_cancel{0};
  auto stats = Walk(*start, o, [&](const WalkEntry&, int) {
    if (token.cancelled()) ++after_cancel;
    if (++visited == 10) token.Cancel(CancelReason::kCancelled);
  });
  EXPECT_EQ(stats.status().code(), absl::StatusCode::kCancelled);
  EXPECT_LT(visited.load(), 4000);
  // Once the token is cancelled, each worker finishes at most the file it is
  // on. (Counted from the cancel itself: on a loaded machine the other
  // workers may visit many files between the 10th visit and the Cancel call.)
  EXPECT_LE(after_cancel.load(), DefaultWalkThreads());
}

TEST(SearchWalkerTest, ReadEntriesAndOpenSubdirNoFollow) {
  TempWorkspace outside;
  TempWorkspace ws;
  ws.Write("a/b/c.txt", "");
  ws.Symlink(outside.path(), "a/out");
  ws.Symlink("b", "a/in");
  auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
  ASSERT_TRUE(start.ok());
  UniqueFd b(OpenSubdirNoFollow(start->fd.get(), "a/b"));
  ASSERT_TRUE(b.valid());
  std::vector<DirEntry> entries;
  ASSERT_TRUE(ReadEntries(b.get(), &entries));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].name, "c.txt");
  EXPECT_EQ(entries[0].kind, EntryKind::kFile);
  EXPECT_LT(OpenSubdirNoFollow(start->fd.get(), "a/out"), 0);
  EXPECT_LT(OpenSubdirNoFollow(start->fd.get(), "a/in"), 0);  // even one that stays inside
  EXPECT_LT(OpenSubdirNoFollow(start->fd.get(), ".."), 0);
}

}  // namespace
}  // namespace toolexec::search

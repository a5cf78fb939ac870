// The parallel directory walk (tools/workspace/walker.h): ignore files,
// hidden entries, .git, glob overrides, symlinks never followed, cancellation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <new>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "tests/common/thread_limit.h"
#include "tests/unit/builtin/search_test_util.h"
#include "tools/workspace/confined_path.h"
#include "tools/workspace/walker.h"

namespace toolexec::search {

using fs::DefaultWalkThreads;
using fs::DirEntry;
using fs::EntryKind;
using fs::GlobSet;
using fs::OpenConfined;
using fs::OpenSubdirNoFollow;
using fs::ParseUserGlob;
using fs::ReadEntries;
using fs::Walk;
using fs::WalkEntry;
using fs::WalkOptions;
using fs::WalkStats;
using fs::kMaxWalkHelperThreads;
namespace {

using search_testing::ScopedEnv;
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

// The worker index is the visitor's key to per-worker state without locks:
// directories and symlinks, like files, come with the index of the thread
// that visits them, so one index is never used by two threads.
TEST(SearchWalkerTest, EveryEntryComesWithItsOwnThreadsWorkerIndex) {
  TempWorkspace ws;
  for (int d = 0; d < 200; ++d) {
    ws.Write("d" + std::to_string(d) + "/sub/f", "x");
    ws.Symlink("sub", "d" + std::to_string(d) + "/link");
  }
  WalkOptions o = WithDirs();
  o.threads = 4;
  auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
  ASSERT_TRUE(start.ok()) << start.status();
  absl::Mutex mu;
  std::vector<std::vector<std::thread::id>> threads_of(4);
  size_t entries = 0;
  auto stats = Walk(*start, o, [&](const WalkEntry&, int worker) {
    absl::MutexLock lock(&mu);
    ++entries;
    std::vector<std::thread::id>& seen = threads_of[static_cast<size_t>(worker)];
    if (std::find(seen.begin(), seen.end(), std::this_thread::get_id()) == seen.end()) {
      seen.push_back(std::this_thread::get_id());
    }
  });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(entries, 200u * 4);  // d, d/sub, d/sub/f, d/link
  for (size_t w = 0; w < threads_of.size(); ++w) EXPECT_LE(threads_of[w].size(), 1u) << w;
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

TEST(SearchWalkerTest, ThePolicysFilterLeavesOutEntriesByAbsolutePathAndCountsThem) {
  TempWorkspace ws;
  ws.Write("keep.txt", "");
  ws.Write("prod.env", "");
  ws.Write("secret/a.txt", "");
  ws.Write("secret/b.env", "");
  ASSERT_EQ(symlink("prod.env", ws.Abs("link.env").c_str()), 0);
  absl::Mutex mu;
  std::vector<std::string> asked;
  const LeftOutFn left_out = [&](absl::string_view path) {
    absl::MutexLock lock(&mu);
    asked.emplace_back(path);
    return absl::EndsWith(path, ".env") || absl::EndsWith(path, "/secret");
  };
  WalkOptions o = WithDirs();
  o.left_out = &left_out;
  auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
  ASSERT_TRUE(start.ok()) << start.status();
  Visited v;
  auto stats = Walk(*start, o, [&](const WalkEntry& e, int) {
    absl::MutexLock lock(&v.mu);
    v.paths.emplace_back(e.path);
  });
  ASSERT_TRUE(stats.ok()) << stats.status();
  // A directory left out is not visited, but its files are still judged.
  EXPECT_THAT(v.paths, UnorderedElementsAre("keep.txt", "secret/a.txt"));
  EXPECT_EQ(stats->left_out, 4u);  // prod.env, link.env, secret, secret/b.env
  EXPECT_EQ(stats->files, 2u);
  absl::MutexLock lock(&mu);
  EXPECT_THAT(asked, ::testing::Contains(ws.Abs("secret/b.env")));
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

// Many walks at once share one budget of helper threads: 48 concurrent walks
// that each ask for 8 workers add at most kMaxWalkHelperThreads threads to
// the 48 that run them, not 48 * 7.
TEST(SearchWalkerTest, ConcurrentWalksShareOneHelperBudget) {
  TempWorkspace ws;
  for (int d = 0; d < 10; ++d) {
    for (int f = 0; f < 20; ++f) ws.Write("d" + std::to_string(d) + "/f" + std::to_string(f), "x");
  }
  constexpr int kWalks = 48;
  auto threads_now = [] {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
    }
    return 0;
  };
  const int before = threads_now();
  std::atomic<int> walking{0};
  std::atomic<int> peak{0};
  std::vector<std::thread> walkers;
  for (int w = 0; w < kWalks; ++w) {
    walkers.emplace_back([&] {
      auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
      if (!start.ok()) return;
      WalkOptions o;
      o.threads = 8;
      std::atomic<bool> first{true};
      (void)Walk(*start, o, [&](const WalkEntry&, int) {
        if (first.exchange(false)) ++walking;
        // Keep every walk going until all have begun (or a generous bound).
        for (int i = 0; i < 10000 && walking.load() < kWalks; ++i) {
          absl::SleepFor(absl::Milliseconds(1));
        }
        int now = threads_now();
        int seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
      });
    });
  }
  for (std::thread& t : walkers) t.join();
  EXPECT_EQ(walking.load(), kWalks);
  EXPECT_LE(peak.load(), before + kWalks + kMaxWalkHelperThreads);
}

// What the visitor throws on any worker (memory running out, say) reaches the
// caller once every helper has stopped; it never terminates the process.
TEST(SearchWalkerTest, AnExceptionInAnyWorkerReachesTheCaller) {
  TempWorkspace ws;
  for (int d = 0; d < 20; ++d) {
    for (int f = 0; f < 20; ++f) ws.Write("d" + std::to_string(d) + "/f" + std::to_string(f), "x");
  }
  auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
  ASSERT_TRUE(start.ok()) << start.status();
  for (int throwing_worker : {0, 1, 3}) {
    WalkOptions o;
    o.threads = 4;
    std::atomic<int> visits{0};
    auto visit = [&](const WalkEntry&, int worker) {
      ++visits;
      // Until the chosen worker gets a file, everyone visits; then it throws.
      if (worker == throwing_worker || visits.load() > 300) throw std::bad_alloc();
    };
    EXPECT_THROW((void)Walk(*start, o, visit), std::bad_alloc) << throwing_worker;
  }
}

// A walk whose helper threads cannot start walks on the calling thread alone.
TEST(SearchWalkerTest, WalksWithFewerWorkersWhenThreadsCannotStart) {
  TempWorkspace ws;
  for (int d = 0; d < 10; ++d) {
    for (int f = 0; f < 30; ++f) ws.Write("d" + std::to_string(d) + "/f" + std::to_string(f), "x");
  }
  ASSERT_EQ(chmod(ws.path().c_str(), 0755), 0);  // readable by the child's uid
  int code = testing::RunInChild([&] {
    if (!testing::StopNewThreads()) return 2;
    WalkOptions o;
    o.threads = 8;
    auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
    if (!start.ok()) return 3;
    std::atomic<int> visited{0};
    absl::StatusOr<WalkStats> stats = Walk(*start, o, [&](const WalkEntry&, int) { ++visited; });
    if (!stats.ok()) return 4;
    return visited.load() == 300 ? 0 : 5;
  });
  EXPECT_EQ(code, 0);
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

TEST(SearchWalkerTest, RepositoryIgnoreFilesAboveTheWorkspace) {
  TempWorkspace repo;
  repo.Mkdir("home");
  ScopedEnv home("HOME", repo.Abs("home").c_str());
  ScopedEnv xdg("XDG_CONFIG_HOME", nullptr);
  ScopedEnv nosystem("GIT_CONFIG_NOSYSTEM", "1");
  ScopedEnv global("GIT_CONFIG_GLOBAL", nullptr);
  repo.Write(".git/info/exclude", "from_exclude.txt\n");
  repo.Write(".git/config", "[core]\n\tbare = false\n\texcludesFile = \"" + repo.Abs("excludes") +
                                "\" ; a comment\n");
  repo.Write("excludes", "from_config.txt\n");
  repo.Write("home/.config/git/ignore", "not_used.txt\n");  // core.excludesFile wins
  repo.Write(".gitignore", "*.tmp\nsub/ws/anchored.txt\n!keep.tmp\n");
  repo.Write("sub/.gitignore", "from_sub.txt\nws/gen/\n");
  for (const char* f : {"a.txt", "x.tmp", "keep.tmp", "from_exclude.txt", "from_config.txt",
                        "not_used.txt", "anchored.txt", "inner/anchored.txt", "from_sub.txt",
                        "gen/g.txt"}) {
    repo.Write(std::string("sub/ws/") + f, "");
  }
  auto walk = [&](const std::string& start) {
    auto root = OpenConfined(testing::Roots({repo.Abs("sub/ws")}), start, "path");
    EXPECT_TRUE(root.ok()) << root.status();
    std::vector<std::string> paths;
    absl::Mutex mu;
    EXPECT_TRUE(Walk(*root, {}, [&](const WalkEntry& e, int) {
                  absl::MutexLock lock(&mu);
                  paths.emplace_back(e.path);
                }).ok());
    std::sort(paths.begin(), paths.end());
    return paths;
  };
  EXPECT_THAT(walk("."), ElementsAre("a.txt", "inner/anchored.txt", "keep.tmp", "not_used.txt"));
  EXPECT_THAT(walk("inner"), ElementsAre("inner/anchored.txt"));

  // Without core.excludesFile, the default global file applies.
  repo.Write(".git/config", "[core]\n\tbare = false\n");
  EXPECT_THAT(walk("."), ElementsAre("a.txt", "from_config.txt", "inner/anchored.txt",
                                     "keep.tmp"));
}

TEST(SearchWalkerTest, RepositoryConfigInsideTheWorkspaceIsNotTrusted) {
  TempWorkspace outside;
  outside.Write("secret_names", "a.txt\n");
  TempWorkspace ws;
  ScopedEnv home("HOME", outside.path().c_str());
  ScopedEnv xdg("XDG_CONFIG_HOME", nullptr);
  ScopedEnv nosystem("GIT_CONFIG_NOSYSTEM", "1");
  ScopedEnv global("GIT_CONFIG_GLOBAL", nullptr);
  ws.Write(".git/config", "[core]\n\texcludesFile = " + outside.Abs("secret_names") + "\n");
  ws.Write(".git/info/exclude", "b.txt\n");
  outside.Write(".config/git/ignore", "c.txt\n");  // the daemon's own global file applies
  ws.Write("a.txt", "");
  ws.Write("b.txt", "");
  ws.Write("c.txt", "");
  ws.Write("d.txt", "");
  EXPECT_THAT(WalkPaths(ws, "."), ElementsAre("a.txt", "d.txt"));
}

// Creates `levels` nested directories "d" below `root`, each holding
// `files` and a .gitignore with `ignore`, without ever naming a long path.
void MakeChain(const std::string& root, int levels, const std::vector<std::string>& files,
               const std::string& ignore) {
  UniqueFd dir(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir.valid());
  auto put = [](int at, const std::string& name, const std::string& text) {
    UniqueFd f(openat(at, name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    ASSERT_TRUE(f.valid());
    ASSERT_EQ(::write(f.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  };
  for (int i = 0; i < levels; ++i) {
    put(dir.get(), ".gitignore", ignore);
    for (const std::string& f : files) put(dir.get(), f, "x");
    ASSERT_EQ(mkdirat(dir.get(), "d", 0755), 0);
    dir.reset(openat(dir.get(), "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(dir.valid());
  }
}

TEST(SearchWalkerTest, DeepChainOfIgnoreFilesStaysFast) {
  // Every level's rules apply to every entry below it; matching must not
  // re-match each ancestor's patterns against each whole path.
  constexpr int kLevels = 3000;
  TempWorkspace ws;
  MakeChain(ws.path(), kLevels, {"f.txt", "x.log", "keep.log", "build"},
            "*.log\n!keep.log\nbuild/\n/local\nd/*/never\n[[:digit:]]*.o\n");
  auto start = OpenConfined(testing::Roots({ws.path()}), ".", "path");
  ASSERT_TRUE(start.ok());
  CancellationToken token;
  absl::Notification done;
  std::thread watchdog([&] {
    // A generous bound (matching each ancestor's patterns against each whole
    // path took minutes here); the walk takes a few seconds of CPU at most.
    if (!done.WaitForNotificationWithTimeout(absl::Seconds(60))) {
      token.Cancel(CancelReason::kTimeout);
    }
  });
  WalkOptions o;
  o.cancellation = &token;
  std::atomic<int> files{0};
  std::atomic<int> logs{0};
  const absl::Time began = absl::Now();
  struct rusage before;
  getrusage(RUSAGE_SELF, &before);
  auto stats = Walk(*start, o, [&](const WalkEntry& e, int) {
    ++files;
    if (e.name == "x.log") ++logs;
  });
  done.Notify();
  watchdog.join();
  struct rusage after;
  getrusage(RUSAGE_SELF, &after);
  auto cpu = [](const struct rusage& u) {
    return absl::DurationFromTimeval(u.ru_utime) + absl::DurationFromTimeval(u.ru_stime);
  };
  printf("walk of a %d-level chain with a .gitignore at each level: %s wall, %s CPU\n", kLevels,
         absl::FormatDuration(absl::Now() - began).c_str(),
         absl::FormatDuration(cpu(after) - cpu(before)).c_str());
  ASSERT_TRUE(stats.ok()) << stats.status() << " (the walk took longer than 60 s)";
  EXPECT_EQ(files.load(), 3 * kLevels);  // f.txt, keep.log and the file "build"
  EXPECT_EQ(logs.load(), 0);
  // The chain is too deep for path-based removal.
  EXPECT_EQ(system(("rm -rf '" + ws.path() + "/d'").c_str()), 0);
}

}  // namespace
}  // namespace toolexec::search

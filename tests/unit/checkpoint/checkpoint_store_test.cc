// The checkpoint store against git as the oracle: a tree is committed in a
// scratch repository, a checkpoint taken, the tree changed by shell commands
// (edits, chmod, symlinks, renames, deletions, empty directories, binary
// files, a directory replaced by a file and back), the checkpoint restored,
// and then `git status --porcelain` and `git diff` must both be empty (git
// compares content, executable bits and symlinks as links), and the set of
// directories, empty ones included, must be what it was.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/common/shell.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/file_io.h"
#include "tools/workspace/confined.h"
#include "tools/workspace/checkpoint/manifest.h"
#include "tools/workspace/checkpoint/store.h"
#include "tools/workspace/write_lock.h"

namespace toolexec::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::toolexec::testing::Shell;
using ::toolexec::testing::ShellQuote;

std::string MakeTempDir(const char* what) {
  const char* base = getenv("TMPDIR");
  std::string templ = absl::StrCat(base != nullptr && *base != '\0' ? base : "/tmp", "/toolexec-",
                                   what, "-XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) return "";
  char real[PATH_MAX];
  return realpath(templ.c_str(), real) != nullptr ? std::string(real) : templ;
}

void WriteFile(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

// Time for a file's stat to be older than the next walk's start by more than
// the margin the store leaves (so the test knows which files it reads).
void LetTimePass() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = MakeTempDir("home");
    ws_ = MakeTempDir("ws");
    store_dir_ = MakeTempDir("store");
    ASSERT_FALSE(ws_.empty());
    // No global excludes file or git configuration from the machine.
    setenv("HOME", home_.c_str(), 1);
    setenv("XDG_CONFIG_HOME", home_.c_str(), 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    auto root = fs::ConfinedRoot::Open(ws_);
    ASSERT_TRUE(root.ok()) << root.status();
    root_ = *root;
    options_.store_dir = store_dir_;
    OpenStore();
  }
  void TearDown() override {
    store_.reset();
    for (const std::string& d : {home_, ws_, store_dir_}) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }

  void OpenStore() {
    store_.reset();
    auto store = CheckpointStore::Open(options_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // Runs `script` in the workspace; fails the test on a non-zero exit.
  std::string Sh(const std::string& script) {
    int status = 0;
    std::string out = Shell(absl::StrCat("cd ", ShellQuote(ws_), " && ( ", script, " ) 2>&1"), &status);
    EXPECT_EQ(status, 0) << script << "\n" << out;
    return out;
  }
  std::string Git(const std::string& args) {
    return Sh(absl::StrCat("git -c user.name=t -c user.email=t@t -c core.fileMode=true ", args));
  }
  // Every directory below the workspace (not .git), sorted.
  std::string Dirs() { return Sh("find . -path ./.git -prune -o -type d -print | LC_ALL=C sort"); }

  CheckpointInfo Take(const std::string& session = "s1", TakeStats* stats = nullptr) {
    auto info = store_->Take(root_, TakeRequest{session, "b1", {"run_command"}}, stats);
    EXPECT_TRUE(info.ok()) << info.status();
    return info.ok() ? *info : CheckpointInfo();
  }
  RestoreResult Restore(const std::string& id, const std::vector<std::string>& paths = {},
                        bool dry_run = false, const std::string& session = "s1") {
    auto r = store_->Restore(root_, session, id, paths, dry_run, TakeRequest{session, "", {"restore"}},
                             nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : RestoreResult();
  }

  std::string home_, ws_, store_dir_;
  std::shared_ptr<const fs::ConfinedRoot> root_;
  StoreOptions options_;
  std::unique_ptr<CheckpointStore> store_;
};

// A tree with what a restore must put back: text and binary files, an
// executable, symlinks to a file, a directory and nowhere, empty directories,
// a hidden file, and ignored content.
void MakeTree(const std::string& ws) {
  WriteFile(ws + "/README.md", "# project\nline two\n");
  WriteFile(ws + "/src/main.c", "int main(void) { return 0; }\n");
  WriteFile(ws + "/src/util/strings.c", "/* strings */\n");
  WriteFile(ws + "/scripts/run.sh", "#!/bin/sh\necho run\n");
  WriteFile(ws + "/assets/logo.bin", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
  WriteFile(ws + "/.env", "KEY=1\n");
  WriteFile(ws + "/.gitignore", "node_modules/\n*.log\n");
  WriteFile(ws + "/node_modules/dep/index.js", "module.exports = 1;\n");
  WriteFile(ws + "/debug.log", "log\n");
  std::filesystem::create_directories(ws + "/empty/inner");
  std::filesystem::create_directories(ws + "/build");
  chmod((ws + "/scripts/run.sh").c_str(), 0755);
  symlink("src/main.c", (ws + "/main-link").c_str());
  symlink("src", (ws + "/src-link").c_str());
  symlink("missing/target", (ws + "/dangling").c_str());
}

TEST_F(CheckpointStoreTest, RestoreUndoesWhatCommandsChangedAsGitSeesIt) {
  MakeTree(ws_);
  Git("init -q . && git -c user.name=t -c user.email=t@t add -A && "
      "git -c user.name=t -c user.email=t@t commit -qm base");
  ASSERT_EQ(Git("status --porcelain"), "");
  const std::string dirs_before = Dirs();
  const CheckpointInfo cp = Take();
  ASSERT_FALSE(cp.id.empty());

  Sh("echo changed >> README.md"
     " && chmod +x src/main.c && chmod -x scripts/run.sh"
     " && mv src/util/strings.c src/strings.c"
     " && rm -r empty && mkdir -p newdir/deeper && echo new > newfile.txt"
     " && rm main-link && echo not-a-link > main-link"
     " && rm src-link && ln -s scripts src-link"
     " && rm dangling && mkdir dangling && echo x > dangling/f"
     " && rm -r build && echo file > build"
     " && printf '\\000\\001\\002' > assets/logo.bin"
     " && echo secret >> .env"
     " && echo more >> node_modules/dep/index.js && echo log2 > debug.log");
  ASSERT_NE(Git("status --porcelain"), "");

  const RestoreResult r = Restore(cp.id);
  EXPECT_FALSE(r.undo_checkpoint_id.empty());
  EXPECT_EQ(Git("status --porcelain --untracked-files=all"), "");
  EXPECT_EQ(Git("diff"), "");
  EXPECT_EQ(Dirs(), dirs_before);
  // Links are links again, with their targets.
  EXPECT_EQ(std::filesystem::read_symlink(ws_ + "/src-link"), "src");
  EXPECT_EQ(std::filesystem::read_symlink(ws_ + "/dangling"), "missing/target");
  struct stat st;
  ASSERT_EQ(stat((ws_ + "/scripts/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  // Ignored content is not part of a checkpoint: a restore leaves it as it is
  // and says so.
  EXPECT_EQ(Sh("cat node_modules/dep/index.js"), "module.exports = 1;\nmore\n");
  EXPECT_EQ(Sh("cat debug.log"), "log2\n");
  std::vector<std::string> not_restored;
  for (const LeftOut& l : r.not_restored) not_restored.push_back(l.path);
  EXPECT_THAT(not_restored, ElementsAre("debug.log", "node_modules"));

  // The undo checkpoint puts the changed tree back.
  Restore(r.undo_checkpoint_id);
  EXPECT_EQ(Sh("cat README.md"), "# project\nline two\nchanged\n");
  EXPECT_EQ(Sh("cat build"), "file\n");
  EXPECT_EQ(std::filesystem::read_symlink(ws_ + "/src-link"), "scripts");
  EXPECT_TRUE(std::filesystem::is_directory(ws_ + "/newdir/deeper"));
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/empty"));
}

// A directory made after the checkpoint that now holds ignored content (a
// package with its __pycache__, a folder with a log) keeps that content and
// so stays; the restore deletes the rest of it and succeeds.
TEST_F(CheckpointStoreTest, ADirectoryHoldingIgnoredContentStaysAndTheRestoreSucceeds) {
  WriteFile(ws_ + "/.gitignore", "__pycache__/\n*.log\n");
  WriteFile(ws_ + "/main.py", "print(1)\n");
  const CheckpointInfo cp = Take();
  Sh("mkdir -p pkg/__pycache__ pkg/sub empty && echo m > pkg/mod.py"
     " && echo c > pkg/__pycache__/mod.pyc && echo l > pkg/sub/run.log && echo n > pkg/sub/new.py");
  const RestoreResult r = Restore(cp.id);
  EXPECT_EQ(Sh("find . | LC_ALL=C sort"),
            ".\n./.gitignore\n./main.py\n./pkg\n./pkg/__pycache__\n./pkg/__pycache__/mod.pyc\n"
            "./pkg/sub\n./pkg/sub/run.log\n");
  std::vector<std::string> changes;
  for (const FileChange& c : r.changes) changes.push_back(c.path);
  EXPECT_THAT(changes, ElementsAre("empty/", "pkg/mod.py", "pkg/sub/new.py"));
}

TEST_F(CheckpointStoreTest, AFileWhereADirectoryNowHoldsIgnoredContentIsNamedNotRestored) {
  WriteFile(ws_ + "/.gitignore", "*.log\n");
  WriteFile(ws_ + "/build", "a file\n");
  WriteFile(ws_ + "/main.py", "print(1)\n");
  const CheckpointInfo cp = Take();
  Sh("rm build && mkdir build && echo l > build/run.log && echo o > build/out.py"
     " && echo 2 > main.py");
  const RestoreResult r = Restore(cp.id);  // succeeds: everything else is put back
  EXPECT_EQ(Sh("cat main.py && find build | LC_ALL=C sort"), "print(1)\nbuild\nbuild/run.log\n");
  ASSERT_EQ(r.not_restored.size(), 1u);
  EXPECT_EQ(r.not_restored[0].path, "build");
  EXPECT_EQ(r.not_restored[0].reason, LeftOutReason::kInTheWay);
}

TEST_F(CheckpointStoreTest, UnchangedFilesAreNotRead) {
  constexpr int kFiles = 10000;
  for (int i = 0; i < kFiles; ++i) {
    WriteFile(absl::StrCat(ws_, "/d", i % 100, "/f", i, ".txt"), absl::StrCat("content ", i, "\n"));
  }
  LetTimePass();
  TakeStats first;
  Take("s1", &first);
  EXPECT_EQ(first.files_read, static_cast<uint64_t>(kFiles));
  Sh("echo a >> d1/f1.txt && echo b > d2/f2.txt && printf 'same size!!\\n' > d3/f3.txt");
  LetTimePass();
  TakeStats second;
  const CheckpointInfo cp2 = Take("s1", &second);
  EXPECT_EQ(second.files_read, 3u);
  EXPECT_EQ(second.entries, static_cast<uint64_t>(kFiles + 100));
  EXPECT_EQ(cp2.files_changed, 3u);
  TakeStats third;
  Take("s1", &third);
  EXPECT_EQ(third.files_read, 0u);
}

TEST_F(CheckpointStoreTest, AFileChangedJustBeforeAWalkIsReadAgainNextTime) {
  WriteFile(ws_ + "/a.txt", "one\n");
  TakeStats first;
  Take("s1", &first);  // a.txt was written a moment ago: its stat is not trusted
  LetTimePass();
  TakeStats second;
  Take("s1", &second);
  EXPECT_EQ(second.files_read, 1u);
  TakeStats third;
  Take("s1", &third);
  EXPECT_EQ(third.files_read, 0u);
}

TEST_F(CheckpointStoreTest, DiffNamesChangesAndShowsText) {
  MakeTree(ws_);
  const CheckpointInfo a = Take();
  Sh("echo changed >> README.md && chmod +x src/main.c && rm src/util/strings.c"
     " && echo new > new.txt && printf '\\000\\377' > assets/logo.bin");
  auto now = store_->Diff(root_, "s1", a.id, "", {});
  ASSERT_TRUE(now.ok()) << now.status();
  std::vector<std::string> changes;
  for (const FileChange& c : now->changes) changes.push_back(absl::StrCat(ChangeKindName(c.kind), " ", c.path));
  EXPECT_THAT(changes, ElementsAre("modified README.md", "modified assets/logo.bin", "added new.txt",
                                   "mode changed src/main.c", "deleted src/util/strings.c"));
  EXPECT_THAT(now->unified_diff, ::testing::HasSubstr("+changed\n"));
  EXPECT_THAT(now->unified_diff, ::testing::HasSubstr("old mode 100644\nnew mode 100755\n"));
  EXPECT_THAT(now->unified_diff,
              ::testing::HasSubstr("Binary files a/assets/logo.bin and b/assets/logo.bin differ\n"));
  EXPECT_THAT(now->unified_diff, ::testing::HasSubstr("-/* strings */\n"));
  // Between two checkpoints, and limited to some paths.
  const CheckpointInfo b = Take();
  auto between = store_->Diff(root_, "s1", a.id, b.id, {"src"});
  ASSERT_TRUE(between.ok()) << between.status();
  changes.clear();
  for (const FileChange& c : between->changes) changes.push_back(c.path);
  EXPECT_THAT(changes, ElementsAre("src/main.c", "src/util/strings.c"));
  EXPECT_EQ(store_->Diff(root_, "other", a.id, "", {}).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(CheckpointStoreTest, DryRunChangesNothingAndPathsLimitARestore) {
  MakeTree(ws_);
  const CheckpointInfo cp = Take();
  Sh("echo x >> README.md && echo y >> src/main.c && rm scripts/run.sh");
  const RestoreResult dry = Restore(cp.id, {}, true);
  EXPECT_TRUE(dry.undo_checkpoint_id.empty());
  EXPECT_EQ(dry.changes.size(), 3u);
  EXPECT_EQ(Sh("tail -n1 README.md"), "x\n");
  EXPECT_EQ(store_->List("s1").size(), 1u);

  const RestoreResult some = Restore(cp.id, {"src/", "./scripts"});
  std::vector<std::string> paths;
  for (const FileChange& c : some.changes) paths.push_back(c.path);
  EXPECT_THAT(paths, ElementsAre("scripts/run.sh", "src/main.c"));
  EXPECT_EQ(Sh("cat src/main.c"), "int main(void) { return 0; }\n");
  EXPECT_EQ(Sh("cat scripts/run.sh"), "#!/bin/sh\necho run\n");
  EXPECT_EQ(Sh("tail -n1 README.md"), "x\n");  // not asked for
  EXPECT_EQ(store_->Restore(root_, "s1", cp.id, {"../etc"}, true, {}, nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CheckpointStoreTest, ApprovalSeesTheChangesFirstAndCanStopARestore) {
  WriteFile(ws_ + "/a.txt", "a\n");
  const CheckpointInfo cp = Take();
  Sh("echo b > a.txt");
  std::vector<std::string> seen;
  auto r = store_->Restore(root_, "s1", cp.id, {}, false, TakeRequest{"s1", "", {"restore"}},
                           [&](const std::vector<FileChange>& changes) {
                             for (const FileChange& c : changes) seen.push_back(c.path);
                             return absl::PermissionDeniedError("no");
                           });
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(seen, ElementsAre("a.txt"));
  EXPECT_EQ(Sh("cat a.txt"), "b\n");
}

TEST_F(CheckpointStoreTest, ARestartedStoreFindsItsCheckpointsAndItsStatCache) {
  MakeTree(ws_);
  LetTimePass();
  const CheckpointInfo cp = Take();
  Sh("echo x >> README.md");
  LetTimePass();
  OpenStore();
  ASSERT_EQ(store_->List("s1").size(), 1u);
  EXPECT_EQ(store_->List("s1")[0].id, cp.id);
  EXPECT_EQ(store_->List("s1")[0].tools, std::vector<std::string>{"run_command"});
  TakeStats stats;
  Take("s1", &stats);
  EXPECT_EQ(stats.files_read, 1u);  // README.md only
  Restore(cp.id);
  EXPECT_EQ(Sh("cat README.md"), "# project\nline two\n");
}

TEST_F(CheckpointStoreTest, OldestCheckpointsAreDroppedAndTheirContentWithThem) {
  options_.keep_per_session = 2;
  OpenStore();
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    WriteFile(ws_ + "/f.txt", absl::StrCat("version ", i, "\n"));
    ids.push_back(Take().id);
  }
  const std::vector<CheckpointInfo> kept = store_->List("s1");
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].id, ids[2]);
  EXPECT_EQ(kept[1].id, ids[3]);
  // Only the content the kept checkpoints use is stored.
  EXPECT_EQ(Shell(absl::StrCat("find ", ShellQuote(store_dir_ + "/objects"), " -type f | wc -l")), "2\n");
  // Another session's checkpoints are its own.
  Take("s2");
  EXPECT_EQ(store_->List("s2").size(), 1u);
  EXPECT_EQ(store_->List("s1").size(), 2u);

  options_.keep_per_session = 0;
  options_.max_store_bytes = 1;  // nothing fits: only the newest stays
  OpenStore();
  const CheckpointInfo newest = Take("s1");
  EXPECT_THAT(store_->List("s2"), IsEmpty());
  ASSERT_EQ(store_->List("s1").size(), 1u);
  EXPECT_EQ(store_->List("s1")[0].id, newest.id);
}

TEST_F(CheckpointStoreTest, FilesOverTheLimitAreLeftOutAndNeverDeleted) {
  options_.max_file_bytes = 10;
  OpenStore();
  WriteFile(ws_ + "/small.txt", "small\n");
  WriteFile(ws_ + "/big.txt", "far more than ten bytes\n");
  const CheckpointInfo cp = Take();
  Sh("echo changed > big.txt && echo changed > small.txt");
  const RestoreResult r = Restore(cp.id);
  EXPECT_EQ(Sh("cat small.txt"), "small\n");
  EXPECT_EQ(Sh("cat big.txt"), "changed\n");
  ASSERT_EQ(r.not_restored.size(), 1u);
  EXPECT_EQ(r.not_restored[0].path, "big.txt");
  EXPECT_EQ(r.not_restored[0].reason, LeftOutReason::kTooLarge);
}

TEST_F(CheckpointStoreTest, IncludeIgnoredTakesIgnoredContentToo) {
  options_.include_ignored = true;
  OpenStore();
  WriteFile(ws_ + "/.gitignore", "out/\n");
  WriteFile(ws_ + "/out/a.o", "object\n");
  const CheckpointInfo cp = Take();
  Sh("rm -r out");
  Restore(cp.id);
  EXPECT_EQ(Sh("cat out/a.o"), "object\n");
}

// A restore takes the write locks the file tools take (fs::FileWriteLock) of
// what it changes. Another call's edit of a file the restore puts back (here
// a holder of the file's lock, as edit_file holds it from its read to its
// rename, writing after the restore's undo checkpoint read the tree) finishes
// first; the restore then reads the tree again, so its undo checkpoint holds
// the edit, and puts the checkpoint's content over it.
TEST_F(CheckpointStoreTest, RestoreTakesTheWriteLocksOfWhatItChangesAndKeepsAConcurrentEdit) {
  WriteFile(ws_ + "/f", "one\n");
  WriteFile(ws_ + "/g", "g one\n");
  const CheckpointInfo before = Take();
  WriteFile(ws_ + "/f", "two\n");
  WriteFile(ws_ + "/g", "g two\n");
  UniqueFd dir(open(ws_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir.valid());
  CancellationToken never;
  auto held = fs::FileWriteLock::Acquire(dir.get(), "f", never, "f");
  ASSERT_TRUE(held.ok()) << held.status();

  std::atomic<bool> done{false};
  absl::StatusOr<RestoreResult> restored;
  std::thread restore([&] {
    restored = store_->Restore(root_, "s1", before.id, {}, false,
                               TakeRequest{"s1", "", {"restore"}}, nullptr);
    done = true;
  });
  // The restore waits for the holder (a generous bound: it gets there at
  // once; a restore that takes no lock ends the wait by finishing).
  for (int i = 0; i < 30000 && !done && fs::FileWriteLock::UsersForTesting(dir.get(), "f") < 2;
       ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_FALSE(done) << "the restore did not wait for the write lock of f";
  EXPECT_EQ(fs::FileWriteLock::UsersForTesting(dir.get(), "f"), 2);
  EXPECT_EQ(Sh("cat f g"), "two\ng two\n");  // nothing restored while it waits
  // The edit's write, as edit_file makes it, then its lock released.
  AtomicWriteOptions write;
  write.replace_existing = true;
  write.display = "f";
  ASSERT_TRUE(WriteFileAtomic(dir.get(), "f", "three\n", write).ok());
  { fs::FileWriteLock release = std::move(*held); }
  restore.join();
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(Sh("cat f g"), "one\ng one\n");
  EXPECT_EQ(fs::FileWriteLock::KeysInUse(), 0u);
  // The undo checkpoint is the tree after the edit, not before it.
  Restore(restored->undo_checkpoint_id);
  EXPECT_EQ(Sh("cat f g"), "three\ng two\n");
}

TEST(ManifestTest, RoundTripsPathsWithTabsNewlinesAndBackslashes) {
  Manifest m;
  m.info.id = "cp1";
  m.info.session_id = "s\t1";
  m.info.tools = {"a", "b"};
  m.info.created_at = absl::FromUnixNanos(123);
  Entry f;
  f.path = "a\tb\nc\\d";
  f.hash = std::string(64, 'a');
  f.mode = 0755;
  f.size = 3;
  Entry l;
  l.path = "link";
  l.type = EntryType::kSymlink;
  l.target = "x\ny";
  m.entries = {f, l};
  m.left_out = {LeftOut{"big", LeftOutReason::kTooLarge, 99}};
  auto back = ParseManifest(SerializeManifest(m), "test");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->info.session_id, "s\t1");
  EXPECT_EQ(back->info.tools, m.info.tools);
  EXPECT_EQ(back->info.created_at, m.info.created_at);
  ASSERT_EQ(back->entries.size(), 2u);
  EXPECT_EQ(back->entries[0].path, f.path);
  EXPECT_EQ(back->entries[0].mode, 0755u);
  EXPECT_EQ(back->entries[1].target, "x\ny");
  EXPECT_EQ(back->left_out[0].size, 99u);
  EXPECT_EQ(ParseManifest("garbage", "test").status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace toolexec::checkpoint

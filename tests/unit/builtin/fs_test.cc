// The confined path layer ([Deciding what runs] workspace confinement, DESIGN "Paths are
// relative to the session's workspace"): root choice, the escape corpus under
// both resolvers (openat2 and the user-space walk), races, atomic writes, and
// the text helpers.
#include "tools/workspace/confined.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/files/file_tools.h"
#include "tools/workspace/text.h"
#include "tools/workspace/confined_path.h"

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::CallTool;
using testing::Quoted;
using testing::Roots;
using testing::ScopedResolver;
using testing::Str;
using testing::TempTree;
using fs::internal::Resolver;

constexpr char kSecret[] = "TOPSECRET";

std::string FdPath(int fd) {
  char buf[PATH_MAX];
  ssize_t n = readlink(absl::StrCat("/proc/self/fd/", fd).c_str(), buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

std::string ReadFd(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = pread(fd, buf, sizeof(buf), static_cast<off_t>(out.size()))) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// T/ws is the workspace; T/outside and T/ws-evil are what must stay unreachable.
class FsTree {
 public:
  FsTree() {
    t.Write("outside/secret.txt", kSecret);
    t.Write("outside/f", kSecret);
    t.Write("ws-evil/secret.txt", kSecret);
    t.Write("ws/a/b/c/file.txt", "inside\n");
    t.Write("ws/top.txt", "top\n");
    t.Symlink("ws/link_out", "../outside");
    t.Symlink("ws/link_abs", t.Abs("outside"));
    t.Symlink("ws/link_abs_in", t.Abs("ws/a"));
    t.Symlink("ws/file_link_out", "../outside/secret.txt");
    t.Symlink("ws/a/deep_out", "../../outside/secret.txt");
    t.Symlink("ws/c1", "c2");
    t.Symlink("ws/c2", "a/c3");
    t.Symlink("ws/a/c3", "../../outside");
    t.Symlink("ws/loop1", "loop2");
    t.Symlink("ws/loop2", "loop1");
    t.Symlink("ws/self", "self");
    t.Symlink("ws/a/up", "..");
    t.Symlink("ws/a/upup", "../..");
    t.Symlink("ws/proc", "/proc/self/root");
    t.Symlink("ws/proc_rel", "../../../../../../../../../../../../proc/self/root");
    t.Symlink("ws/fdlink", "/proc/self/fd");
    t.Symlink("ws/evil_prefix_link", "../ws-evil");
    t.Symlink("ws/dangling_out", "../outside/nonexistent");
    t.Symlink("ws/a/b/dot_chain", "../../a/b/../../../outside");
    // Links that stay inside.
    t.Symlink("ws/a/b/in_link", "../../a/b/c/file.txt");
    t.Symlink("ws/dl", "a/b");
    t.Symlink("ws/i1", "i2");
    t.Symlink("ws/i2", "a/b/c/file.txt");
    outside_before = t.ListAll("outside");
    evil_before = t.ListAll("ws-evil");
  }

  void ExpectOutsideUntouched() const {
    EXPECT_EQ(t.ListAll("outside"), outside_before);
    EXPECT_EQ(t.ListAll("ws-evil"), evil_before);
    EXPECT_EQ(t.Read("outside/secret.txt"), kSecret);
    EXPECT_EQ(t.Read("outside/f"), kSecret);
    EXPECT_EQ(t.Read("ws-evil/secret.txt"), kSecret);
  }

  std::string ws() const { return t.Abs("ws"); }

  TempTree t;
  std::vector<std::string> outside_before, evil_before;
};

struct EscapeCase {
  std::string path;
  ErrorCode code;
  std::string message_part;  // "" = any
};

// At least 30 ways out; every one must fail, with the code given.
std::vector<EscapeCase> EscapeCorpus(const FsTree& tree) {
  const std::string T = tree.t.path();
  std::string long_path;
  while (long_path.size() < 5000) long_path += "aaaaaaaa/";
  return {
      {"../outside/secret.txt", ErrorCode::kDenied, "'..' climbs above the workspace root"},
      {"../../../../../../etc/passwd", ErrorCode::kDenied, "climbs above"},
      {"..", ErrorCode::kDenied, "climbs above"},
      {"./../outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"a/../../outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"a/b/c/../../../../outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"a//..//..//outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"/etc/passwd", ErrorCode::kDenied, "not beneath the workspace"},
      {"/", ErrorCode::kDenied, "not beneath the workspace"},
      {T, ErrorCode::kDenied, "not beneath the workspace"},
      {T + "/outside/secret.txt", ErrorCode::kDenied, "not beneath the workspace"},
      {T + "/ws-evil/secret.txt", ErrorCode::kDenied, "not beneath the workspace"},
      {T + "/ws-evil", ErrorCode::kDenied, "not beneath the workspace"},
      {T + "/ws/../outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {T + "/ws/../ws-evil/secret.txt", ErrorCode::kDenied, "climbs above"},
      {T + "/./ws/../outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"/proc/self/root" + T + "/outside/secret.txt", ErrorCode::kDenied, "not beneath"},
      {"/proc/self/cwd/secret.txt", ErrorCode::kDenied, "not beneath"},
      {"link_out/secret.txt", ErrorCode::kDenied, "symbolic link 'link_out'"},
      {"link_out", ErrorCode::kDenied, "climbs above"},
      {"link_abs/secret.txt", ErrorCode::kDenied, "absolute"},
      {"link_abs_in/b/c/file.txt", ErrorCode::kDenied, "absolute"},
      {"file_link_out", ErrorCode::kDenied, "climbs above"},
      {"a/deep_out", ErrorCode::kDenied, "climbs above"},
      {"c1/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"c1", ErrorCode::kDenied, "climbs above"},
      {"a/upup/outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"a/up/../outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"a/up/a/up/../outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"proc" + T + "/outside/secret.txt", ErrorCode::kDenied, "absolute"},
      {"proc_rel" + T + "/outside/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"fdlink/0", ErrorCode::kDenied, "absolute"},
      {"evil_prefix_link/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"dangling_out", ErrorCode::kDenied, "climbs above"},
      {"a/b/dot_chain/secret.txt", ErrorCode::kDenied, "climbs above"},
      {"loop1", ErrorCode::kToolFailed, "symbolic links"},
      {"self/x", ErrorCode::kToolFailed, "symbolic links"},
      {"a/b/c/file.txt/../../../../outside/secret.txt", ErrorCode::kToolFailed, "not a directory"},
      {std::string("a/b\0/../../../outside/secret.txt", 32), ErrorCode::kInvalidArguments, "NUL"},
      {std::string("../outside/secret.txt\0", 22), ErrorCode::kInvalidArguments, "NUL"},
      {long_path + "x", ErrorCode::kInvalidArguments, "bytes long"},
      {std::string(300, 'n') + "/x", ErrorCode::kInvalidArguments, "limit is 255"},
      {"", ErrorCode::kInvalidArguments, "empty"},
  };
}

// Paths through links that stay inside: all must work.
std::vector<std::string> InsideCorpus(const FsTree& tree) {
  return {
      "a/b/c/file.txt",
      "./a/b/c/file.txt",
      "a/b/in_link",
      "dl/c/file.txt",
      "i1",
      "a/up/a/b/c/file.txt",
      "a/../a/b/c/file.txt",
      "a/b/c/../c/file.txt",
      tree.ws() + "/a/b/c/file.txt",
      tree.ws() + "//a/./b/c/file.txt",
  };
}

std::string ResolverName(const ::testing::TestParamInfo<Resolver>& info) {
  return info.param == Resolver::kOpenat2 ? "openat2" : "walk";
}

class FsEscapeTest : public ::testing::TestWithParam<Resolver> {
 protected:
  void SetUp() override {
    if (GetParam() == Resolver::kOpenat2 && !fs::internal::Openat2Available()) {
      GTEST_SKIP() << "openat2 is not available on this kernel";
    }
    resolver_ = std::make_unique<ScopedResolver>(GetParam());
    options_.view_max_bytes = 1 << 20;
  }
  void TearDown() override { tree_.ExpectOutsideUntouched(); }

  FsTree tree_;
  std::unique_ptr<ScopedResolver> resolver_;
  BuiltinOptions options_;
};

TEST_P(FsEscapeTest, CorpusHasThirtyEntries) { EXPECT_GE(EscapeCorpus(tree_).size(), 30u); }

TEST_P(FsEscapeTest, OpenRefusesEveryEscape) {
  for (const EscapeCase& c : EscapeCorpus(tree_)) {
    SCOPED_TRACE(Quoted(c.path));
    absl::Status status;
    auto wp = fs::ResolveWorkspacePath(Roots({tree_.ws()}), c.path);
    if (!wp.ok()) {
      status = wp.status();
    } else {
      for (int flags : {O_RDONLY, O_PATH, O_RDONLY | O_DIRECTORY}) {
        auto fd = fs::OpenBeneath(*wp, flags);
        if (fd.ok()) {
          ADD_FAILURE() << "opened " << FdPath(fd->get()) << " with flags " << flags;
          continue;
        }
        status = fd.status();
      }
    }
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(ErrorCodeOf(status), c.code) << status;
    if (!c.message_part.empty()) {
      EXPECT_THAT(status.message(), HasSubstr(c.message_part));
    }
  }
}

TEST_P(FsEscapeTest, InsideLinksWork) {
  for (const std::string& p : InsideCorpus(tree_)) {
    SCOPED_TRACE(p);
    auto wp = fs::ResolveWorkspacePath(Roots({tree_.ws()}), p);
    ASSERT_TRUE(wp.ok()) << wp.status();
    auto file = fs::OpenRegularFile(*wp);
    ASSERT_TRUE(file.ok()) << file.status();
    EXPECT_EQ(ReadFd(file->fd.get()), "inside\n");
    EXPECT_EQ(FdPath(file->fd.get()), tree_.ws() + "/a/b/c/file.txt");
  }
}

TEST_P(FsEscapeTest, ToolsRefuseEveryEscape) {
  builtin::ViewFileTool view(options_);
  builtin::CreateFileTool create(options_);
  builtin::EditFileTool edit(options_);
  const std::vector<std::string> ws = {tree_.ws()};
  for (const EscapeCase& c : EscapeCorpus(tree_)) {
    SCOPED_TRACE(Quoted(c.path));
    auto v = CallTool(view, absl::StrCat(R"({"file_path":)", Quoted(c.path), "}"), ws);
    ASSERT_FALSE(v.ok()) << ToJsonString(*v);
    EXPECT_EQ(ErrorCodeOf(v.status()), c.code) << v.status();
    for (const char* overwrite : {"false", "true"}) {
      auto w = CallTool(create,
                        absl::StrCat(R"({"file_path":)", Quoted(c.path),
                                     R"(,"contents":"PWNED","overwrite":)", overwrite, "}"),
                        ws);
      EXPECT_FALSE(w.ok()) << ToJsonString(*w);
    }
    auto e = CallTool(edit,
                      absl::StrCat(R"({"file_path":)", Quoted(c.path),
                                   R"(,"edits":[{"old_string":"TOPSECRET","new_string":"PWNED"}]})"),
                      ws);
    EXPECT_FALSE(e.ok()) << ToJsonString(*e);
    // Writing beneath the path (as a directory) must fail too.
    auto deeper = CallTool(
        create, absl::StrCat(R"({"file_path":)", Quoted(c.path + "/planted.txt"),
                             R"(,"contents":"PWNED"})"),
        ws);
    EXPECT_FALSE(deeper.ok()) << ToJsonString(*deeper);
  }
}

TEST_P(FsEscapeTest, RootWithSeveralWorkspaces) {
  TempTree other;
  other.Write("o.txt", "other\n");
  const WorkspaceRoots ws = Roots({tree_.ws(), other.path()});
  // Relative: the first root.
  auto rel = fs::ResolveWorkspacePath(ws, "top.txt");
  ASSERT_TRUE(rel.ok());
  EXPECT_EQ(rel->root->path(), tree_.ws());
  EXPECT_EQ(rel->display, "top.txt");
  EXPECT_TRUE(rel->is_default_root);
  // Absolute beneath the second: that root, displayed absolute so it can be reused.
  auto abs = fs::ResolveWorkspacePath(ws, other.path() + "/o.txt");
  ASSERT_TRUE(abs.ok());
  EXPECT_EQ(abs->root->path(), other.path());
  EXPECT_EQ(abs->relative, "o.txt");
  EXPECT_EQ(abs->display, other.path() + "/o.txt");
  auto file = fs::OpenRegularFile(*abs);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(ReadFd(file->fd.get()), "other\n");
  // Escaping the second root is refused like the first.
  auto out = fs::ResolveWorkspacePath(ws, other.path() + "/../outside");
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ErrorCodeOf(fs::OpenBeneath(*out, O_PATH).status()), ErrorCode::kDenied);
  // Outside both: the message names both roots.
  auto none = fs::ResolveWorkspacePath(ws, "/etc/passwd");
  EXPECT_EQ(ErrorCodeOf(none.status()), ErrorCode::kDenied);
  EXPECT_THAT(none.status().message(), HasSubstr(other.path()));
}

// A directory is replaced by a symlink that points out between two calls.
TEST_P(FsEscapeTest, DirectorySwappedForSymlinkBetweenCalls) {
  TempTree& t = tree_.t;
  t.Write("ws/sw/f", "inside\n");
  builtin::ViewFileTool view(options_);
  builtin::CreateFileTool create(options_);
  builtin::EditFileTool edit(options_);
  const std::vector<std::string> ws = {tree_.ws()};
  auto first = CallTool(view, R"({"file_path":"sw/f"})", ws);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(Str(*first, "content"), "     1\tinside\n");

  ASSERT_EQ(rename(t.Abs("ws/sw").c_str(), t.Abs("ws/sw_old").c_str()), 0);
  t.Symlink("ws/sw", "../outside");
  auto second = CallTool(view, R"({"file_path":"sw/f"})", ws);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(ErrorCodeOf(second.status()), ErrorCode::kDenied);
  EXPECT_FALSE(CallTool(create, R"({"file_path":"sw/new.txt","contents":"x"})", ws).ok());
  EXPECT_FALSE(
      CallTool(create, R"({"file_path":"sw/f","contents":"x","overwrite":true})", ws).ok());
  EXPECT_FALSE(CallTool(edit, R"({"file_path":"sw/f","edits":[{"old_string":"TOPSECRET","new_string":"x"}]})", ws).ok());
}

// Another thread swaps a directory and a symlink pointing out (atomically,
// RENAME_EXCHANGE) as fast as it can while reads and writes run.
TEST_P(FsEscapeTest, SwapRaceInATightLoop) {
  TempTree& t = tree_.t;
  t.Write("ws/race/f", "inside\n");
  t.Symlink("ws/alt", "../outside");
  builtin::ViewFileTool view(options_);
  builtin::CreateFileTool create(options_);
  builtin::EditFileTool edit(options_);
  const std::vector<std::string> ws = {tree_.ws()};
  std::atomic<bool> stop{false};
  std::atomic<int> swaps{0};
  std::thread swapper([&] {
    const std::string a = t.Abs("ws/race"), b = t.Abs("ws/alt");
    while (!stop.load()) {
      if (renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) ++swaps;
    }
  });
  int reads_ok = 0, writes_ok = 0;
  for (int i = 0; i < 300; ++i) {
    auto v = CallTool(view, R"({"file_path":"race/f"})", ws);
    if (v.ok()) {
      ++reads_ok;
      EXPECT_EQ(Str(*v, "content"), "     1\tinside\n");
    } else {
      EXPECT_THAT(ErrorCodeOf(v.status()), ::testing::AnyOf(ErrorCode::kDenied, ErrorCode::kToolFailed))
          << v.status();
    }
    auto w = CallTool(create,
                      absl::StrCat(R"({"file_path":"race/w)", i % 20,
                                   R"(.txt","contents":"PWNED","overwrite":true})"),
                      ws);
    if (w.ok()) ++writes_ok;
    auto e = CallTool(edit, R"({"file_path":"race/f","edits":[{"old_string":"TOPSECRET","new_string":"PWNED"}]})", ws);
    EXPECT_FALSE(e.ok());  // inside it is "inside", outside it is refused
  }
  stop = true;
  swapper.join();
  // Put "race" back as the directory before checking.
  struct stat st;
  if (lstat(t.Abs("ws/race").c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    ASSERT_EQ(renameat2(AT_FDCWD, t.Abs("ws/race").c_str(), AT_FDCWD, t.Abs("ws/alt").c_str(),
                        RENAME_EXCHANGE),
              0);
  }
  EXPECT_GT(swaps.load(), 0);
  // Some calls land in a window where "race" is the directory (not asserted:
  // scheduling decides); none ever reached outside (TearDown checks).
  RecordProperty("reads_ok", reads_ok);
  RecordProperty("writes_ok", writes_ok);
}

// Another thread moves a directory out of the workspace and back while
// lookups climb out of it with "..": the kernel's ".." (or a stale handle)
// must never land outside.
TEST_P(FsEscapeTest, DirectoryMovedOutDuringDotDotLookups) {
  TempTree& t = tree_.t;
  t.Write("ws/mv/sub/keep.txt", "k\n");
  t.Write("ws/secret.txt", "harmless\n");
  builtin::ViewFileTool view(options_);
  builtin::CreateFileTool create(options_);
  const std::vector<std::string> ws = {tree_.ws()};
  std::atomic<bool> stop{false};
  std::thread mover([&] {
    const std::string in = t.Abs("ws/mv"), out = t.Abs("outside/mv");
    while (!stop.load()) {
      if (rename(in.c_str(), out.c_str()) == 0) rename(out.c_str(), in.c_str());
    }
  });
  for (int i = 0; i < 300; ++i) {
    auto v = CallTool(view, R"({"file_path":"mv/sub/../../secret.txt"})", ws);
    if (v.ok()) {
      EXPECT_EQ(Str(*v, "content"), "     1\tharmless\n");
    }
    CallTool(create,
             absl::StrCat(R"({"file_path":"mv/sub/../../planted)", i % 10,
                          R"(.txt","contents":"PWNED","overwrite":true})"),
             ws)
        .IgnoreError();
  }
  stop = true;
  mover.join();
  // create_file may have made a fresh "mv/sub" while the real one was out
  // (it creates missing parents), so the real one may be stuck outside. It
  // must hold nothing of ours.
  if (t.Exists("outside/mv")) {
    EXPECT_EQ(t.ListAll("outside/mv"), (std::vector<std::string>{"sub", "sub/keep.txt"}));
    std::filesystem::remove_all(t.Abs("outside/mv"));
  }
  for (const std::string& p : t.ListAll("ws")) EXPECT_EQ(p.find("mv/planted"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Fs, FsEscapeTest, ::testing::Values(Resolver::kOpenat2, Resolver::kWalk),
                         ResolverName);

// ---------------------------------------------------------------------------
// The walk on its own (the ENOSYS fallback).

class FsWalkTest : public ::testing::Test {
 protected:
  int root() const { return root_->fd(); }
  void SetUp() override {
    auto r = fs::ConfinedRoot::Open(tree_.ws());
    ASSERT_TRUE(r.ok());
    root_ = *r;
  }
  FsTree tree_;
  std::shared_ptr<const fs::ConfinedRoot> root_;
};

TEST_F(FsWalkTest, OpensPlainAndLinkedPaths) {
  for (const char* p : {"a/b/c/file.txt", "a/b/in_link", "dl/c/file.txt", "i1", "a/up/top.txt"}) {
    SCOPED_TRACE(p);
    fs::internal::ResolveFailure f;
    fs::UniqueFd fd = fs::internal::WalkBeneath(root(), p, O_RDONLY, fs::FollowFinal::kYes, &f);
    ASSERT_TRUE(fd.valid()) << f.err << " " << f.detail;
    EXPECT_THAT(FdPath(fd.get()), ::testing::StartsWith(tree_.ws() + "/"));
  }
}

TEST_F(FsWalkTest, ReportsWhyItRefuses) {
  struct Case {
    const char* path;
    int err;
    const char* detail;
  } cases[] = {
      {"../x", EXDEV, "'..' climbs above the workspace root"},
      {"link_abs/secret.txt", EXDEV, "symbolic link 'link_abs' -> '"},
      {"a/deep_out", EXDEV, "symbolic link 'a/deep_out' -> '../../outside/secret.txt' climbs above"},
      {"c1", EXDEV, "'a/c3' -> '../../outside'"},
      {"loop1", ELOOP, "more than 40 symbolic links"},
      {"nope/x", ENOENT, "nope"},
      {"top.txt/x", ENOTDIR, "top.txt"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.path);
    fs::internal::ResolveFailure f;
    fs::UniqueFd fd = fs::internal::WalkBeneath(root(), c.path, O_RDONLY, fs::FollowFinal::kYes, &f);
    EXPECT_FALSE(fd.valid());
    EXPECT_EQ(f.err, c.err);
    EXPECT_THAT(f.detail, HasSubstr(c.detail));
  }
}

TEST_F(FsWalkTest, NoFollowFinal) {
  fs::internal::ResolveFailure f;
  fs::UniqueFd fd = fs::internal::WalkBeneath(root(), "i1", O_RDONLY, fs::FollowFinal::kNo, &f);
  EXPECT_FALSE(fd.valid());
  EXPECT_EQ(f.err, ELOOP);
  // With O_PATH the link itself is returned, as open(2) does.
  fs::UniqueFd link = fs::internal::WalkBeneath(root(), "i1", O_PATH, fs::FollowFinal::kNo, &f);
  ASSERT_TRUE(link.valid());
  struct stat st;
  ASSERT_EQ(fstat(link.get(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  // An outward link as the final component is not followed, so not refused.
  fs::UniqueFd out = fs::internal::WalkBeneath(root(), "link_out", O_PATH, fs::FollowFinal::kNo, &f);
  EXPECT_TRUE(out.valid());
}

// A directory wanted without following the final link: open(2) refuses a
// symlink there with ENOTDIR (the link itself is not a directory), with O_PATH
// or not, and so does the walk, whatever the link points to.
TEST_F(FsWalkTest, NoFollowFinalLinkIsNotADirectory) {
  for (int flags : {O_PATH | O_DIRECTORY, O_RDONLY | O_DIRECTORY}) {
    for (const char* p : {"i1", "a/up", "link_out"}) {
      SCOPED_TRACE(::testing::Message() << p << " flags " << flags);
      fs::UniqueFd kernel(openat(root(), p, flags | O_NOFOLLOW | O_CLOEXEC));
      EXPECT_FALSE(kernel.valid());
      EXPECT_EQ(errno, ENOTDIR);
      fs::internal::ResolveFailure f;
      fs::UniqueFd fd = fs::internal::WalkBeneath(root(), p, flags, fs::FollowFinal::kNo, &f);
      EXPECT_FALSE(fd.valid());
      EXPECT_EQ(f.err, ENOTDIR);
    }
  }
}

TEST_F(FsWalkTest, RootItselfAndDotDotInside) {
  for (const char* p : {".", "", "a/..", "a/b/../..", "a/up"}) {
    SCOPED_TRACE(p);
    fs::internal::ResolveFailure f;
    fs::UniqueFd fd =
        fs::internal::WalkBeneath(root(), p, O_RDONLY | O_DIRECTORY, fs::FollowFinal::kYes, &f);
    ASSERT_TRUE(fd.valid()) << f.detail;
    EXPECT_EQ(FdPath(fd.get()), tree_.ws());
  }
}

TEST_F(FsWalkTest, AutoResolverMatchesWalk) {
  // Both resolvers give the same answer (code and message) for every corpus entry.
  for (const EscapeCase& c : EscapeCorpus(tree_)) {
    SCOPED_TRACE(Quoted(c.path));
    auto wp = fs::ResolveWorkspacePath(Roots({tree_.ws()}), c.path);
    if (!wp.ok()) continue;
    absl::Status walk, kernel;
    {
      ScopedResolver r(Resolver::kWalk);
      walk = fs::OpenBeneath(*wp, O_RDONLY).status();
    }
    if (!fs::internal::Openat2Available()) continue;
    {
      ScopedResolver r(Resolver::kOpenat2);
      kernel = fs::OpenBeneath(*wp, O_RDONLY).status();
    }
    EXPECT_EQ(walk.code(), kernel.code());
    EXPECT_EQ(walk.message(), kernel.message());
  }
}

// ---------------------------------------------------------------------------
// Roots, directories and atomic writes.

// A root is the directory that was opened, not its path: after
// `mv r r_old; ln -s <outside> r`, and then with a new directory at "r",
// calls given the root keep reading, writing and listing beneath r_old.
TEST(FsRootTest, RootStaysTheDirectoryItOpened) {
  TempTree t;
  t.Write("r/marker.txt", "original\n");
  t.Write("out/marker.txt", "OUTSIDE\n");
  t.Write("out/outside_only.txt", "OUTSIDE\n");
  const WorkspaceRoots roots = Roots({t.Abs("r")});
  BuiltinOptions options;
  builtin::ViewFileTool view(options);
  builtin::CreateFileTool create(options);
  ASSERT_EQ(rename(t.Abs("r").c_str(), t.Abs("r_old").c_str()), 0);
  t.Symlink("r", t.Abs("out"));
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "r is a symlink out" : "r is a new directory");
    for (const std::string& path : {std::string("marker.txt"), t.Abs("r/marker.txt")}) {
      auto v = CallTool(view, absl::StrCat(R"({"file_path":)", Quoted(path), "}"), roots);
      ASSERT_TRUE(v.ok()) << v.status();
      EXPECT_EQ(Str(*v, "content"), "     1\toriginal\n");
    }
    const std::string name = absl::StrCat("new", round, ".txt");
    auto c = CallTool(create, absl::StrCat(R"({"file_path":")", name, R"(","contents":"n"})"),
                      roots);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(t.Read("r_old/" + name), "n");
    EXPECT_FALSE(std::filesystem::exists(t.Abs("out/" + name)));
    EXPECT_FALSE(std::filesystem::exists(t.Abs("r/" + name)));
    auto dir = fs::OpenConfined(roots, ".", "path");
    ASSERT_TRUE(dir.ok()) << dir.status();
    struct stat st;
    EXPECT_EQ(fstatat(dir->fd.get(), "marker.txt", &st, 0), 0);
    EXPECT_NE(fstatat(dir->fd.get(), "outside_only.txt", &st, 0), 0);
    EXPECT_NE(fstatat(dir->fd.get(), "decoy.txt", &st, 0), 0);
    if (round == 0) {
      ASSERT_EQ(unlink(t.Abs("r").c_str()), 0);
      t.Write("r/decoy.txt", "DECOY\n");
    }
  }
}

// A session's workspace: a directory resolved beneath the daemon's root and
// held as a root of its own.
TEST(FsRootTest, OpenWithinHoldsADirectoryBeneathTheRoot) {
  TempTree t;
  t.Write("ws/proj/f", "p\n");
  t.Write("ws/a.txt", "a file\n");
  t.Mkdir("out");
  t.Symlink("ws/in_link", "proj");
  t.Symlink("ws/out_link", "../out");
  const auto ws = testing::RootAt(t.Abs("ws"));
  auto open = [&](absl::string_view path) {
    auto wp = fs::ResolveWorkspacePath({ws}, path, "workspaces");
    return wp.ok() ? fs::ConfinedRoot::OpenWithin(*wp) : wp.status();
  };
  for (absl::string_view path : {"proj", "in_link", "proj/", "./proj"}) {
    auto proj = open(path);
    ASSERT_TRUE(proj.ok()) << path << ": " << proj.status();
    EXPECT_EQ((*proj)->path(), t.Abs("ws/proj")) << path;  // where the kernel found it
    EXPECT_GT((*proj)->fd(), 2);
    auto f = fs::ResolveWorkspacePath({*proj}, "f");
    ASSERT_TRUE(f.ok());
    EXPECT_TRUE(fs::OpenRegularFile(*f).ok());
  }
  auto file = open("a.txt");
  EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(file.status().message(), HasSubstr("'a.txt' is not a directory"));
  EXPECT_EQ(ErrorCodeOf(open("out_link").status()), ErrorCode::kDenied);
  EXPECT_EQ(ErrorCodeOf(open("../out").status()), ErrorCode::kDenied);
  EXPECT_EQ(ErrorCodeOf(open(t.Abs("out")).status()), ErrorCode::kDenied);
  EXPECT_EQ(open("missing").status().code(), absl::StatusCode::kNotFound);
}

TEST(FsRootTest, MissingOrUnopenableWorkspace) {
  EXPECT_EQ(fs::ResolveWorkspacePath({}, "x").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(fs::ResolveWorkspacePath({nullptr}, "x").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(fs::ConfinedRoot::Open("relative/ws").status().message(),
              HasSubstr("not an absolute path"));
  EXPECT_THAT(fs::ConfinedRoot::Open("/nonexistent-toolexec-ws").status().message(),
              HasSubstr("cannot be opened"));
}

TEST(FsRootTest, TrailingSlashRootAndPaths) {
  TempTree t;
  t.Write("f.txt", "x");
  auto wp = fs::ResolveWorkspacePath(Roots({t.path() + "/"}), t.path() + "/f.txt");
  ASSERT_TRUE(wp.ok()) << wp.status();
  EXPECT_EQ(wp->relative, "f.txt");
  auto dir = fs::ResolveWorkspacePath(Roots({t.path()}), "sub/");
  ASSERT_TRUE(dir.ok());
  EXPECT_TRUE(dir->trailing_slash);
  EXPECT_EQ(dir->relative, "sub");
  auto root = fs::ResolveWorkspacePath(Roots({t.path()}), t.path());
  ASSERT_TRUE(root.ok());
  EXPECT_EQ(root->relative, ".");
  EXPECT_EQ(root->BaseName(), "");
}

TEST(FsDirTest, OpenDirectoryAndMakeDirectories) {
  TempTree t;
  t.Write("file", "x");
  auto base = fs::ResolveWorkspacePath(Roots({t.path()}), "x/y/z");
  ASSERT_TRUE(base.ok());
  EXPECT_TRUE(absl::IsNotFound(fs::OpenDirectory(*base).status()));
  auto made = fs::MakeDirectories(*base);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(FdPath(made->get()), t.Abs("x/y/z"));
  EXPECT_TRUE(fs::MakeDirectories(*base).ok());  // idempotent
  auto file = fs::ResolveWorkspacePath(Roots({t.path()}), "file");
  EXPECT_THAT(fs::OpenDirectory(*file).status().message(), HasSubstr("is not a directory"));
  auto under_file = fs::ResolveWorkspacePath(Roots({t.path()}), "file/sub");
  EXPECT_FALSE(fs::MakeDirectories(*under_file).ok());
}

TEST(FsDirTest, MakeDirectoriesNeverCreatesOutside) {
  FsTree tree;
  for (const char* p : {"link_out/new", "../new", "link_abs/new/deeper", "c1/new",
                        "evil_prefix_link/new", "dangling_out/x"}) {
    SCOPED_TRACE(p);
    auto wp = fs::ResolveWorkspacePath(Roots({tree.ws()}), p);
    ASSERT_TRUE(wp.ok());
    auto made = fs::MakeDirectories(*wp);
    EXPECT_FALSE(made.ok());
    EXPECT_EQ(ErrorCodeOf(made.status()), ErrorCode::kDenied) << made.status();
  }
  tree.ExpectOutsideUntouched();
  EXPECT_FALSE(tree.t.Exists("new"));
}

TEST(FsWriteTest, AtomicWriteCreatesReplacesAndCleansUp) {
  TempTree t;
  auto wp = fs::ResolveWorkspacePath(Roots({t.path()}), ".");
  auto dir = fs::OpenDirectory(*wp);
  ASSERT_TRUE(dir.ok());
  fs::AtomicWriteOptions create;
  ASSERT_TRUE(fs::WriteFileAtomic(dir->get(), "a.txt", "one", create).ok());
  EXPECT_EQ(t.Read("a.txt"), "one");
  // Without replace_existing the second write is refused and nothing changes.
  absl::Status again = fs::WriteFileAtomic(dir->get(), "a.txt", "two", create);
  EXPECT_THAT(again.message(), HasSubstr("already exists"));
  EXPECT_EQ(t.Read("a.txt"), "one");
  fs::AtomicWriteOptions replace;
  replace.replace_existing = true;
  replace.mode = 0751;
  ASSERT_TRUE(fs::WriteFileAtomic(dir->get(), "a.txt", "two", replace).ok());
  EXPECT_EQ(t.Read("a.txt"), "two");
  EXPECT_EQ(t.Mode("a.txt"), 0751u);
  EXPECT_EQ(t.List(), std::vector<std::string>{"a.txt"});  // no temp files left
  EXPECT_FALSE(fs::WriteFileAtomic(dir->get(), "../x", "y", create).ok());
  EXPECT_FALSE(fs::WriteFileAtomic(dir->get(), "..", "y", create).ok());
}

TEST(FsWriteTest, ReplacesAPlantedSymlinkInsteadOfWritingThroughIt) {
  FsTree tree;
  tree.t.Symlink("ws/planted", "../outside/secret.txt");
  auto wp = fs::ResolveWorkspacePath(Roots({tree.ws()}), ".");
  auto dir = fs::OpenDirectory(*wp);
  ASSERT_TRUE(dir.ok());
  fs::AtomicWriteOptions replace;
  replace.replace_existing = true;
  ASSERT_TRUE(fs::WriteFileAtomic(dir->get(), "planted", "new", replace).ok());
  EXPECT_FALSE(tree.t.IsSymlink("ws/planted"));
  EXPECT_EQ(tree.t.Read("ws/planted"), "new");
  tree.ExpectOutsideUntouched();
}

TEST(FsWriteTest, ExpectDetectsAConcurrentChange) {
  TempTree t;
  t.Write("f", "v1");
  auto dir = fs::OpenDirectory(*fs::ResolveWorkspacePath(Roots({t.path()}), "."));
  ASSERT_TRUE(dir.ok());
  struct stat st;
  ASSERT_EQ(fstatat(dir->get(), "f", &st, 0), 0);
  fs::AtomicWriteOptions opts;
  opts.replace_existing = true;
  opts.expect = fs::FileIdentity::Of(st);
  t.Write("f.new", "v2");
  ASSERT_EQ(rename(t.Abs("f.new").c_str(), t.Abs("f").c_str()), 0);  // someone else wrote
  absl::Status s = fs::WriteFileAtomic(dir->get(), "f", "mine", opts);
  EXPECT_THAT(s.message(), HasSubstr("changed while it was being edited"));
  EXPECT_EQ(t.Read("f"), "v2");
  EXPECT_EQ(t.List(), std::vector<std::string>{"f"});
}

TEST(FsWriteTest, RefusesFifosWithoutBlocking) {
  TempTree t;
  ASSERT_EQ(mkfifo(t.Abs("pipe").c_str(), 0644), 0);
  auto wp = fs::ResolveWorkspacePath(Roots({t.path()}), "pipe");
  auto f = fs::OpenRegularFile(*wp);
  EXPECT_THAT(f.status().message(), HasSubstr("is a fifo"));
}

TEST(FsErrorTest, Convention) {
  EXPECT_EQ(ErrorCodeOf(fs::ErrnoStatus(ENOENT, "x")), ErrorCode::kToolFailed);
  EXPECT_TRUE(absl::IsNotFound(fs::ErrnoStatus(ENOENT, "x")));
  EXPECT_EQ(fs::ErrnoStatus(ENOENT, "src/x.cc").message(), "no such file or directory: src/x.cc");
  EXPECT_EQ(ErrorCodeOf(fs::ErrnoStatus(EXDEV, "x")), ErrorCode::kDenied);
  EXPECT_EQ(ErrorCodeOf(fs::ErrnoStatus(EACCES, "x")), ErrorCode::kToolFailed);
  EXPECT_EQ(ErrorCodeOf(fs::ErrnoStatus(ENAMETOOLONG, "x")), ErrorCode::kInvalidArguments);
}

// ---------------------------------------------------------------------------
// Text helpers.

TEST(FsTextTest, BinaryDetection) {
  EXPECT_FALSE(fs::LooksBinary("hello\nworld\n"));
  EXPECT_FALSE(fs::LooksBinary(""));
  EXPECT_TRUE(fs::LooksBinary(std::string("ab\0cd", 5)));
  EXPECT_TRUE(fs::LooksBinary("%PDF-1.7\nstuff"));
  EXPECT_EQ(fs::GuessMimeType("\x89PNG\r\n\x1a\nxxxx", "x.bin"), "image/png");
  EXPECT_EQ(fs::GuessMimeType("\xff\xd8\xff\xe0", "x"), "image/jpeg");
  EXPECT_EQ(fs::GuessMimeType("\x7f" "ELF\x02\x01", "a.out"), "application/x-executable");
  EXPECT_EQ(fs::GuessMimeType(std::string("RIFF\x10\0\0\0WEBPVP8 ", 16), "x"), "image/webp");
  EXPECT_EQ(fs::GuessMimeType(std::string("a\0b", 3), "x.unknown"), "application/octet-stream");
  EXPECT_EQ(fs::GuessMimeType(std::string("a\0b", 3), "lib.so"), "application/x-sharedlib");
  EXPECT_EQ(fs::GuessMimeType("plain", "notes"), "text/plain");
  // A NUL after the first 8 KiB does not count.
  std::string late(fs::kBinarySniffBytes, 'a');
  late.push_back('\0');
  EXPECT_FALSE(fs::LooksBinary(late));
}


// The listing order against its definition, on paths with long shared
// prefixes (compared a word at a time) and every kind of byte at the first
// difference: '/' sorts before every other byte, the rest byte-wise
// unsigned, a prefix first.
TEST(PathOrderTest, PathCompareIsComponentOrderOnEveryPair) {
  auto reference = [](absl::string_view a, absl::string_view b) {
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      if (a[i] == b[i]) continue;
      const int x = a[i] == '/' ? -1 : static_cast<unsigned char>(a[i]);
      const int y = b[i] == '/' ? -1 : static_cast<unsigned char>(b[i]);
      return x < y ? -1 : 1;
    }
    return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
  };
  const std::string alphabet = std::string("a/-.Z\x7f\xff") + '\0';
  std::vector<std::string> paths = {"", "a", "a/b", "a-b", "a.c", "src/mod1/file1.cc",
                                    "src/mod1/file10.cc", "src/mod1/file1.cc/x"};
  uint64_t seed = 20261207;
  auto next = [&seed] { return (seed = seed * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int i = 0; i < 400; ++i) {
    std::string p = next() % 2 == 0 ? "pkg12/mod7/shared-prefix/" : "";
    for (size_t n = next() % 20; n > 0; --n) p += alphabet[next() % alphabet.size()];
    paths.push_back(std::move(p));
  }
  for (const std::string& a : paths) {
    for (const std::string& b : paths) {
      ASSERT_EQ(fs::PathCompare(a, b), reference(a, b)) << Quoted(a) << " vs " << Quoted(b);
      ASSERT_EQ(fs::PathLess(a, b), reference(a, b) < 0);
    }
  }
}

}  // namespace
}  // namespace toolexec

// edit_file (DESIGN "Built-in tools": all or none, non-unique and missing
// matches explained, dry_run, expected_sha256, unified diff and new sha256,
// mode / line endings / BOM kept, atomic) and the unified diff helper.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <ios>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/files/file_tools.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::CallTool;
using testing::J;
using testing::Quoted;
using testing::Flag;
using testing::Int;
using testing::Str;
using testing::TempTree;


struct E {
  std::string old_string, new_string;
  bool replace_all = false;
};

std::string EditsJson(const std::vector<E>& edits) {
  std::string out = "[";
  for (size_t i = 0; i < edits.size(); ++i) {
    absl::StrAppend(&out, i ? "," : "", R"({"old_string":)", Quoted(edits[i].old_string),
                    R"(,"new_string":)", Quoted(edits[i].new_string),
                    edits[i].replace_all ? R"(,"replace_all":true)" : "", "}");
  }
  return out + "]";
}

class EditFileTest : public ::testing::Test {
 protected:
  absl::StatusOr<Json> Edit(const std::string& path, const std::vector<E>& edits,
                            const std::string& extra = "") {
    builtin::EditFileTool tool(options_);
    return CallTool(tool,
                    absl::StrCat(R"({"file_path":)", Quoted(path), R"(,"edits":)",
                                 EditsJson(edits), extra, "}"),
                    {t_.path()});
  }
  void ExpectNoTempFiles() {
    for (const std::string& p : t_.ListAll()) EXPECT_EQ(p.find(".tmp-"), std::string::npos) << p;
  }

  TempTree t_;
  BuiltinOptions options_;
};

TEST_F(EditFileTest, ReplacesOnceAndReturnsDiffAndSha) {
  const std::string before = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\n";
  t_.Write("src/f.txt", before);
  auto r = Edit("src/f.txt", {{"four\n", "FOUR\nFOUR-B\n"}});
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string after = "one\ntwo\nthree\nFOUR\nFOUR-B\nfive\nsix\nseven\neight\n";
  EXPECT_EQ(t_.Read("src/f.txt"), after);
  EXPECT_EQ(Int(*r, "replacements"), 1);
  EXPECT_EQ(Str(*r, "sha256"), fs::Sha256Hex(after));
  EXPECT_EQ(Str(*r, "previous_sha256"), fs::Sha256Hex(before));
  EXPECT_TRUE(Flag(*r, "written"));
  EXPECT_FALSE(Flag(*r, "dry_run"));
  EXPECT_EQ(Int(*r, "lines_added"), 2);
  EXPECT_EQ(Int(*r, "lines_removed"), 1);
  EXPECT_EQ(Str(*r, "line_endings"), "lf");
  EXPECT_EQ(Str(*r, "diff"),
            "--- a/src/f.txt\n"
            "+++ b/src/f.txt\n"
            "@@ -1,7 +1,8 @@\n"
            " one\n"
            " two\n"
            " three\n"
            "-four\n"
            "+FOUR\n"
            "+FOUR-B\n"
            " five\n"
            " six\n"
            " seven\n");
  ExpectNoTempFiles();
}

TEST_F(EditFileTest, NonUniqueMatchListsLines) {
  t_.Write("f", "x = 1\ny = 2\nx = 1\nz\nx = 1\n");
  auto r = Edit("f", {{"x = 1", "x = 9"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(r.status().message(), HasSubstr("occurs 3 times in 'f' (lines 1, 3, 5)"));
  EXPECT_THAT(r.status().message(), HasSubstr("replace_all: true"));
  EXPECT_EQ(t_.Read("f"), "x = 1\ny = 2\nx = 1\nz\nx = 1\n");
  auto all = Edit("f", {{"x = 1", "x = 9", true}});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(Int(*all, "replacements"), 3);
  EXPECT_EQ(t_.Read("f"), "x = 9\ny = 2\nx = 9\nz\nx = 9\n");
}

TEST_F(EditFileTest, MissNamesALineThatDiffersOnlyInWhitespace) {
  t_.Write("f.py", "def f():\n    if x:\n        return  1\n    return 2\n");
  auto r = Edit("f.py", {{"if x:\n    return 1", "if y:\n    return 1"}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(r.status().message(), HasSubstr("edits[0].old_string was not found in 'f.py'"));
  EXPECT_THAT(r.status().message(), HasSubstr("Line 2 matches if whitespace is ignored: `if x:`"));
}

TEST_F(EditFileTest, MissNamesTheMostSimilarLine) {
  t_.Write("f.cc", "int main() {\n  int counter = 0;\n  return counter;\n}\n");
  auto r = Edit("f.cc", {{"  int countr = 0;", "  int counter = 1;"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("The closest line is 2: `int counter = 0;`"));
  auto none = Edit("f.cc", {{"zzzz qqqq wwww", "x"}});
  EXPECT_THAT(none.status().message(), HasSubstr("No similar line was found"));
}

TEST_F(EditFileTest, MissSpotsLineNumberPrefixes) {
  t_.Write("f", "alpha\nbeta\n");
  auto r = Edit("f", {{"     2\tbeta", "gamma"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("line-number prefixes"));
}

TEST_F(EditFileTest, EmptyOrIdenticalStringsAreInvalid) {
  t_.Write("f", "a\n");
  auto empty = Edit("f", {{"", "x"}});
  EXPECT_EQ(ErrorCodeOf(empty.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(empty.status().message(), HasSubstr("edits[0].old_string is empty"));
  auto same = Edit("f", {{"a", "a"}});
  EXPECT_EQ(ErrorCodeOf(same.status()), ErrorCode::kInvalidArguments);
  builtin::EditFileTool tool(options_);
  auto no_edits = CallTool(tool, R"({"file_path":"f","edits":[]})", {t_.path()});
  EXPECT_EQ(ErrorCodeOf(no_edits.status()), ErrorCode::kInvalidArguments);
  auto missing_new = CallTool(tool, R"({"file_path":"f","edits":[{"old_string":"a"}]})", {t_.path()});
  EXPECT_EQ(ErrorCodeOf(missing_new.status()), ErrorCode::kInvalidArguments);
  EXPECT_EQ(t_.Read("f"), "a\n");
}

TEST_F(EditFileTest, AllOrNone) {
  t_.Write("f", "first\nsecond\n");
  auto r = Edit("f", {{"first", "1st"}, {"third", "3rd"}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(),
              HasSubstr("edits[1].old_string was not found in 'f' (after applying edits[0..0])"));
  EXPECT_EQ(t_.Read("f"), "first\nsecond\n");
  ExpectNoTempFiles();
}

TEST_F(EditFileTest, EditsApplyInOrderToEachOthersResult) {
  t_.Write("f", "a b c\n");
  auto r = Edit("f", {{"a", "x"}, {"x b", "y"}, {"y c", "done"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("f"), "done\n");
  EXPECT_EQ(Int(*r, "replacements"), 3);
}

TEST_F(EditFileTest, DryRunDoesNotWrite) {
  t_.Write("f", "keep\nchange\n");
  auto r = Edit("f", {{"change", "changed"}}, R"(,"dry_run":true)");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Flag(*r, "dry_run"));
  EXPECT_FALSE(Flag(*r, "written"));
  EXPECT_EQ(Str(*r, "diff"), "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n keep\n-change\n+changed\n");
  EXPECT_EQ(Str(*r, "sha256"), fs::Sha256Hex("keep\nchanged\n"));
  EXPECT_EQ(t_.Read("f"), "keep\nchange\n");
  ExpectNoTempFiles();
}

TEST_F(EditFileTest, ExpectedSha256) {
  const std::string v1 = "v1\n";
  t_.Write("f", v1);
  const std::string sha = fs::Sha256Hex(v1);
  t_.Write("f", "v2\n");  // someone changed it after we read it
  auto stale = Edit("f", {{"v", "w"}}, absl::StrCat(R"(,"expected_sha256":")", sha, "\""));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(ErrorCodeOf(stale.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(stale.status().message(),
              HasSubstr(absl::StrCat("file changed since read: sha256 is ",
                                     fs::Sha256Hex("v2\n"), ", expected ", sha)));
  EXPECT_EQ(t_.Read("f"), "v2\n");
  // Upper case is accepted; the current hash lets the edit through.
  std::string upper = fs::Sha256Hex("v2\n");
  for (char& c : upper) c = static_cast<char>(toupper(c));
  auto fresh = Edit("f", {{"v2", "v3"}}, absl::StrCat(R"(,"expected_sha256":")", upper, "\""));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(t_.Read("f"), "v3\n");
  auto bad = Edit("f", {{"v3", "v4"}}, R"(,"expected_sha256":"abc")");
  EXPECT_EQ(ErrorCodeOf(bad.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(bad.status().message(), HasSubstr("64 hex digits"));
}

// The sha256 view_file reports is the one edit_file checks.
TEST_F(EditFileTest, ViewThenEditWithItsSha) {
  t_.Write("f", "hello\n");
  builtin::ViewFileTool view(options_);
  auto v = CallTool(view, R"({"file_path":"f"})", {t_.path()});
  ASSERT_TRUE(v.ok());
  auto r = Edit("f", {{"hello", "bye"}}, absl::StrCat(R"(,"expected_sha256":")", Str(*v, "sha256"), "\""));
  ASSERT_TRUE(r.ok()) << r.status();
  // Chaining: the returned sha is the new file's.
  auto again = Edit("f", {{"bye", "ciao"}}, absl::StrCat(R"(,"expected_sha256":")", Str(*r, "sha256"), "\""));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(t_.Read("f"), "ciao\n");
}

TEST_F(EditFileTest, CrlfFileStaysCrlfAndMatchesLfEdits) {
  t_.Write("dos.txt", "alpha\r\nbeta\r\ngamma\r\n");
  auto r = Edit("dos.txt", {{"alpha\nbeta", "ALPHA\nBETA\nextra"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("dos.txt"), "ALPHA\r\nBETA\r\nextra\r\ngamma\r\n");
  EXPECT_EQ(Str(*r, "line_endings"), "crlf");
  EXPECT_EQ(Str(*r, "sha256"), fs::Sha256Hex("ALPHA\r\nBETA\r\nextra\r\ngamma\r\n"));
  EXPECT_THAT(Str(*r, "diff"), Not(HasSubstr("\r")));
  // old_string sent with CRLF matches too.
  auto crlf = Edit("dos.txt", {{"extra\r\ngamma", "gamma"}});
  ASSERT_TRUE(crlf.ok()) << crlf.status();
  EXPECT_EQ(t_.Read("dos.txt"), "ALPHA\r\nBETA\r\ngamma\r\n");
}

TEST_F(EditFileTest, MixedLineEndingsAreMatchedAsTheyAre) {
  t_.Write("mixed", "a\r\nb\nc\n");
  auto r = Edit("mixed", {{"b\nc", "B\nC"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("mixed"), "a\r\nB\nC\n");
  EXPECT_EQ(Str(*r, "line_endings"), "mixed");
}

TEST_F(EditFileTest, BomIsKept) {
  t_.Write("bom.txt", "\xEF\xBB\xBFhello\nworld\n");
  auto r = Edit("bom.txt", {{"hello", "howdy"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("bom.txt"), "\xEF\xBB\xBFhowdy\nworld\n");
  EXPECT_TRUE(Flag(*r, "bom"));
  EXPECT_THAT(Str(*r, "diff"), HasSubstr("-hello\n+howdy\n"));
  // An edit at the very start (after the BOM) works too.
  t_.Write("bom2.txt", "\xEF\xBB\xBF" "first\r\nsecond\r\n");
  auto r2 = Edit("bom2.txt", {{"first\nsecond", "only"}});
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_EQ(t_.Read("bom2.txt"), "\xEF\xBB\xBFonly\r\n");
}

TEST_F(EditFileTest, NoFinalNewlineIsKept) {
  t_.Write("f", "a\nb\nlast");
  auto r = Edit("f", {{"b", "B"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("f"), "a\nB\nlast");
  EXPECT_EQ(Str(*r, "diff"),
            "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n last\n\\ No newline at end of file\n");
  auto last = Edit("f", {{"last", "final"}});
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(t_.Read("f"), "a\nB\nfinal");
  EXPECT_EQ(Str(*last, "diff"),
            "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n B\n-last\n\\ No newline at end of file\n"
            "+final\n\\ No newline at end of file\n");
}

TEST_F(EditFileTest, ModeIsKept) {
  t_.Write("run.sh", "#!/bin/sh\necho hi\n", 0755);
  ASSERT_TRUE(Edit("run.sh", {{"hi", "hello"}}).ok());
  EXPECT_EQ(t_.Mode("run.sh"), 0755u);
  EXPECT_EQ(t_.Read("run.sh"), "#!/bin/sh\necho hello\n");
  t_.Write("private", "key=1\n", 0600);
  ASSERT_TRUE(Edit("private", {{"1", "2"}}).ok());
  EXPECT_EQ(t_.Mode("private"), 0600u);
  t_.Write("ro", "x\n", 0444);
  ASSERT_TRUE(Edit("ro", {{"x", "y"}}).ok());  // the directory is writable: like sed -i
  EXPECT_EQ(t_.Mode("ro"), 0444u);
  ExpectNoTempFiles();
}

// The set-user-ID, set-group-ID and sticky bits survive an edit as root
// (chown, which keeps the owner, clears them, so the mode is set after it).
TEST_F(EditFileTest, SpecialModeBitsAreKeptAsRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (EditFileAsOwnerTest covers a normal user)";
  for (mode_t mode : {07755, 04711, 02750, 01644}) {
    t_.Write("tool", "#!/bin/sh\necho hi\n", mode);
    ASSERT_EQ(t_.Mode("tool"), mode);
    ASSERT_TRUE(Edit("tool", {{"hi", "hello"}}).ok());
    EXPECT_EQ(t_.Mode("tool"), mode) << std::oct << mode;
    ASSERT_TRUE(Edit("tool", {{"hello", "hi"}}).ok());
    EXPECT_EQ(t_.Mode("tool"), mode) << std::oct << mode;
  }
}

TEST_F(EditFileTest, RefusesSymlinksAndOddFiles) {
  TempTree outside;
  outside.Write("victim", "precious\n");
  t_.Write("real.txt", "real\n");
  t_.Symlink("link.txt", "real.txt");
  t_.Symlink("out.txt", outside.Abs("victim"));
  auto in = Edit("link.txt", {{"real", "PWNED"}});
  EXPECT_EQ(ErrorCodeOf(in.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(in.status().message(), HasSubstr("is a symbolic link"));
  // A link leading out is an escape attempt: DENIED, never "edit its target".
  auto out = Edit("out.txt", {{"precious", "PWNED"}});
  EXPECT_EQ(ErrorCodeOf(out.status()), ErrorCode::kDenied);
  EXPECT_THAT(out.status().message(), HasSubstr("outside the workspace"));
  EXPECT_EQ(t_.Read("real.txt"), "real\n");
  EXPECT_EQ(outside.Read("victim"), "precious\n");
  EXPECT_TRUE(t_.IsSymlink("link.txt"));

  auto missing = Edit("nope.txt", {{"a", "b"}});
  EXPECT_TRUE(absl::IsNotFound(missing.status()));
  EXPECT_THAT(missing.status().message(), HasSubstr("use create_file"));
  t_.Mkdir("dir");
  EXPECT_THAT(Edit("dir", {{"a", "b"}}).status().message(), HasSubstr("is a directory"));
  auto escape = Edit("../x", {{"a", "b"}});
  EXPECT_EQ(ErrorCodeOf(escape.status()), ErrorCode::kDenied);
}

TEST_F(EditFileTest, MaxFileBytes) {
  options_.max_file_bytes = 16;
  t_.Write("big", std::string(17, 'a'));
  auto r = Edit("big", {{"a", "b", true}});
  EXPECT_THAT(r.status().message(), HasSubstr("edit_file loads at most 16 bytes"));
}

// The result is capped like the input (max_file_bytes), and its size is
// computed before it is built: a replace_all that would blow a file up fails
// at once, naming the sizes, for a dry run too.
TEST_F(EditFileTest, ResultOverMaxFileBytesIsRefusedBeforeItIsBuilt) {
  std::string lines;
  for (int i = 0; i < 100000; ++i) lines += "a\n";  // 200,000 bytes
  t_.Write("f", lines);
  const std::string wide(200, 'w');
  for (const char* extra : {"", R"(,"dry_run":true)"}) {
    auto r = Edit("f", {{"a", wide, true}}, extra);
    ASSERT_FALSE(r.ok()) << extra;
    EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
    EXPECT_THAT(r.status().message(),
                HasSubstr("edits[0] (100000 replacements of 1 byte by 200 bytes) would make 'f' "
                          "20100000 bytes; edit_file writes at most 10485760 bytes"));
  }
  EXPECT_EQ(t_.Read("f"), lines);
  ExpectNoTempFiles();

  options_.max_file_bytes = 100;
  t_.Write("g", "0123456789\n");
  // Within the cap, up to the byte.
  auto fits = Edit("g", {{"0123456789", std::string(99, 'x')}});
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_EQ(t_.Read("g").size(), 100u);
  auto over = Edit("g", {{"\n", "y\n"}});
  EXPECT_THAT(over.status().message(), HasSubstr("would make 'g' 101 bytes"));
  // Every step counts: a later edit that would shrink it back does not help.
  t_.Write("g", "0123456789\n");
  auto step = Edit("g", {{"0", std::string(200, 'x')}, {std::string(200, 'x'), "0"}});
  EXPECT_THAT(step.status().message(), HasSubstr("edits[0] (1 replacement of 1 byte by 200 bytes) "
                                                 "would make 'g' 210 bytes"));
  // A CRLF file is written back with "\r\n": that counts too.
  std::string crlf;
  for (int i = 0; i < 20; ++i) crlf += "a\r\n";  // 60 bytes; 40 bytes as LF
  t_.Write("dos", crlf);
  auto doubled = Edit("dos", {{"a", "a\nb", true}});  // 80 bytes as LF, 120 as CRLF
  EXPECT_THAT(doubled.status().message(), HasSubstr("would make 'dos' 120 bytes"));
  EXPECT_EQ(t_.Read("dos"), crlf);
}

// The diff in the result is bounded by view_max_bytes however large the
// change, and marked as cut; the line counts still cover the whole change.
TEST_F(EditFileTest, DiffIsBounded) {
  options_.view_max_bytes = 1000;
  std::string lines;
  for (int i = 0; i < 20000; ++i) absl::StrAppend(&lines, "line ", i, "\n");
  t_.Write("f", lines);
  auto r = Edit("f", {{"line", "LINE", true}}, R"(,"dry_run":true)");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(Str(*r, "diff").size(), 1000u);
  EXPECT_TRUE(Flag(*r, "diff_truncated"));
  EXPECT_EQ(Int(*r, "lines_added"), 20000);
  EXPECT_EQ(Int(*r, "lines_removed"), 20000);
}

TEST_F(EditFileTest, InvalidUtf8FileEditsBytewise) {
  t_.Write("latin1", "caf\xe9 = 1\n");
  auto r = Edit("latin1", {{"= 1", "= 2"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("latin1"), "caf\xe9 = 2\n");
  EXPECT_THAT(Str(*r, "diff"), HasSubstr("-caf\xEF\xBF\xBD = 1\n"));  // shown sanitized
  EXPECT_TRUE(ParseJson(ToJsonString(*r)).ok());
}

TEST_F(EditFileTest, DisplayAndSummary) {
  t_.Write("src/a.cc", "x\n");
  builtin::EditFileTool tool(options_);
  Json input = J(R"({"file_path":"src/a.cc","edits":[{"old_string":"x","new_string":"y"}]})");
  auto r = CallTool(tool, ToJsonString(input), {t_.path()});
  ASSERT_TRUE(r.ok());
  DisplayResult d = tool.display(input, *r);
  EXPECT_EQ(d.title, "src/a.cc");
  EXPECT_EQ(d.content, Str(*r, "diff"));
  EXPECT_EQ(tool.compact_summary(input, *r, true), "[edit_file: src/a.cc 1 replacement, +1 -1]");
  Json dry = J(R"({"replacements":2,"dry_run":true,"lines_added":2,"lines_removed":0})");
  EXPECT_EQ(tool.compact_summary(input, dry, true),
            "[edit_file: src/a.cc (dry run) 2 replacements, +2 -0]");
  EXPECT_EQ(tool.compact_summary(input, J(R"({"error":"x"})"), false), "[edit_file: src/a.cc: error]");
}

TEST_F(EditFileTest, HonoursCancellation) {
  t_.Write("f", "a\n");
  builtin::EditFileTool tool(options_);
  CancellationToken token;
  token.Cancel(CancelReason::kCancelled);
  auto r = CallTool(tool, R"({"file_path":"f","edits":[{"old_string":"a","new_string":"b"}]})",
                    {t_.path()}, &token);
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kCancelled);
  EXPECT_EQ(t_.Read("f"), "a\n");
}

// ---------------------------------------------------------------------------
// Mode bits as a normal user who owns the file. The kernel clears
// set-user-ID and set-group-ID when a normal user writes or chowns a file, so
// edit_file sets the mode after both; and a file it cannot keep the owner of
// (another user's) loses those bits rather than becoming set-user-ID to the
// daemon's user. Run as root, the test reruns itself as nobody (65534).

constexpr uid_t kNobody = 65534;
constexpr char kNobodyDirEnv[] = "TOOLEXEC_TEST_NOBODY_DIR";

// Runs this test binary's `test` as uid and gid kNobody, with kNobodyDirEnv
// set to `dir`; its wait status, or -1 if it could not be started.
int RunSelfAsNobody(const std::string& test, const std::string& dir) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  std::string filter = "--gtest_filter=" + test;
  std::string env_dir = absl::StrCat(kNobodyDirEnv, "=", dir);
  char* argv[] = {self, filter.data(), nullptr};
  char* envp[] = {env_dir.data(), nullptr};
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {  // only async-signal-safe calls from here
    if (syscall(SYS_setgroups, 0, nullptr) != 0 ||
        syscall(SYS_setresgid, kNobody, kNobody, kNobody) != 0 ||
        syscall(SYS_setresuid, kNobody, kNobody, kNobody) != 0) {
      _exit(126);
    }
    execve(self, argv, envp);
    _exit(errno == EACCES ? 77 : 127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

TEST(EditFileAsOwnerTest, SpecialModeBitsAreKept) {
  if (geteuid() == 0) {
    TempTree shared;
    ASSERT_EQ(chown(shared.path().c_str(), kNobody, kNobody), 0);
    shared.Write("theirs", "#!/bin/sh\necho hi\n", 04755);  // root's, in nobody's directory
    int status = RunSelfAsNobody("EditFileAsOwnerTest.SpecialModeBitsAreKept", shared.path());
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
      GTEST_SKIP() << "the test binary is not executable by uid " << kNobody;
    }
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 0);
    EXPECT_TRUE(shared.Exists("ran-as-nobody"));
    return;
  }
  TempTree t;
  BuiltinOptions options;
  builtin::EditFileTool tool(options);
  auto edit = [&](const std::string& root, const std::string& path) {
    return CallTool(tool,
                    absl::StrCat(R"({"file_path":)", Quoted(path),
                                 R"(,"edits":[{"old_string":"hi","new_string":"hello"}]})"),
                    {root});
  };
  t.Write("mine", "#!/bin/sh\necho hi\n", 06755);
  ASSERT_EQ(t.Mode("mine"), 06755u);
  auto r = edit(t.path(), "mine");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t.Read("mine"), "#!/bin/sh\necho hello\n");
  EXPECT_EQ(t.Mode("mine"), 06755u);

  const char* shared = getenv(kNobodyDirEnv);
  if (shared == nullptr) return;
  auto theirs = edit(shared, "theirs");
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  struct stat st;
  ASSERT_EQ(stat((std::string(shared) + "/theirs").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, geteuid());  // the owner could not be kept...
  EXPECT_EQ(st.st_mode & 07777, 0755u);  // ...so it is not set-user-ID to us
  std::ofstream(std::string(shared) + "/ran-as-nobody") << "ok\n";
}

// ---------------------------------------------------------------------------
// The unified diff on its own.

TEST(EditDiffTest, Shapes) {
  EXPECT_EQ(fs::UnifiedDiff("a\n", "a\n", "f", 3, nullptr), "");
  EXPECT_EQ(fs::UnifiedDiff("", "new\n", "f", 3, nullptr),
            "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+new\n");
  EXPECT_EQ(fs::UnifiedDiff("old\n", "", "f", 3, nullptr),
            "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-old\n");
  EXPECT_EQ(fs::UnifiedDiff("b\nc\n", "a\nb\nc\n", "f", 3, nullptr),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n+a\n b\n c\n");
  EXPECT_EQ(fs::UnifiedDiff("a\nb\n", "a\nb\nc\n", "f", 3, nullptr),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,3 @@\n a\n b\n+c\n");
  // Without context, an insertion names the line it follows.
  EXPECT_EQ(fs::UnifiedDiff("b\nc\n", "a\nb\nc\n", "f", 0, nullptr),
            "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+a\n");
  EXPECT_EQ(fs::UnifiedDiff("a\nb\n", "a\nb\nc\n", "f", 0, nullptr),
            "--- a/f\n+++ b/f\n@@ -2,0 +3 @@\n+c\n");
  EXPECT_EQ(fs::UnifiedDiff("a\nb\n", "a\nb", "f", 3, nullptr),
            "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n");
}

TEST(EditDiffTest, SeparateHunksAndMergedHunks) {
  std::string a, b;
  for (int i = 1; i <= 30; ++i) {
    absl::StrAppend(&a, i, "\n");
    absl::StrAppend(&b, i == 5 || i == 25 ? "X" : absl::StrCat(i), "\n");
  }
  fs::DiffStats stats;
  std::string d = fs::UnifiedDiff(a, b, "n", 3, &stats);
  EXPECT_EQ(d,
            "--- a/n\n+++ b/n\n"
            "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n"
            "@@ -22,7 +22,7 @@\n 22\n 23\n 24\n-25\n+X\n 26\n 27\n 28\n");
  EXPECT_EQ(stats.added, 2);
  EXPECT_EQ(stats.removed, 2);
  // Changes 6 lines apart share one hunk (their contexts touch).
  std::string c;
  for (int i = 1; i <= 30; ++i) absl::StrAppend(&c, i == 5 || i == 11 ? "X" : absl::StrCat(i), "\n");
  std::string merged = fs::UnifiedDiff(a, c, "n", 3, nullptr);
  EXPECT_THAT(merged, HasSubstr("@@ -2,13 +2,13 @@\n"));
  EXPECT_EQ(merged.find("\n@@", merged.find("@@ -2,13") + 2), std::string::npos);
}

TEST(EditDiffTest, MinimalEditScript) {
  // Myers finds the shortest script: one line moved is one delete + one insert.
  std::string d = fs::UnifiedDiff("a\nb\nc\nd\n", "b\nc\nd\na\n", "m", 0, nullptr);
  EXPECT_EQ(d, "--- a/m\n+++ b/m\n@@ -1 +0,0 @@\n-a\n@@ -4,0 +4 @@\n+a\n");
}

// The diff text stops at max_bytes (never built beyond it), on a UTF-8
// boundary even where sanitizing lengthened it; the counts cover everything.
TEST(EditDiffTest, BoundedByMaxBytes) {
  std::string a, b;
  for (int i = 0; i < 1000; ++i) {
    absl::StrAppend(&a, "old \xff ", i, "\n");  // invalid UTF-8, shown as U+FFFD
    absl::StrAppend(&b, "new ", i, "\n");
  }
  const std::string whole = fs::UnifiedDiff(a, b, "f", 3, nullptr);
  for (size_t max : {size_t{0}, size_t{1}, size_t{7}, size_t{100}, size_t{1001}, size_t{4096}}) {
    fs::DiffStats stats;
    bool truncated = false;
    std::string d = fs::UnifiedDiff(a, b, "f", 3, &stats, nullptr, max, &truncated);
    EXPECT_LE(d.size(), max);
    EXPECT_TRUE(truncated) << max;
    EXPECT_EQ(whole.substr(0, d.size()), d) << max;
    EXPECT_GE(d.size() + 3, std::min(max, whole.size())) << max;  // cut at most a partial character
    EXPECT_EQ(stats.added, 1000);
    EXPECT_EQ(stats.removed, 1000);
  }
  bool truncated = true;
  EXPECT_EQ(fs::UnifiedDiff(a, b, "f", 3, nullptr, nullptr, whole.size(), &truncated), whole);
  EXPECT_FALSE(truncated);
}

TEST(EditDiffTest, LargeRewriteFallsBackButStaysValid) {
  std::string a, b;
  for (int i = 0; i < 5000; ++i) {
    absl::StrAppend(&a, "old ", i, "\n");
    absl::StrAppend(&b, "new ", i, "\n");
  }
  fs::DiffStats stats;
  std::string d = fs::UnifiedDiff(a, b, "big", 3, &stats);
  EXPECT_EQ(stats.added, 5000);
  EXPECT_EQ(stats.removed, 5000);
  EXPECT_THAT(d, HasSubstr("@@ -1,5000 +1,5000 @@\n"));
}

}  // namespace
}  // namespace toolexec

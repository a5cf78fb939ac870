// apply_patch: OpenAI's V4A patches, driven with the examples of OpenAI's
// documentation (the Codex apply_patch instructions' combined patch, the
// GPT-4.1 prompting guide's heredoc example with nested @@ contexts) and the
// edge cases: a context that does not match names its file and hunk, adding
// and deleting files, a move, all files or none (a later file failing leaves
// the earlier ones untouched, a failed write is undone), paths outside the
// workspace refused, CRLF and BOM kept.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include "absl/strings/str_cat.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/files/file_tools.h"

namespace toolexec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::CallTool;
using testing::Quoted;
using testing::Str;
using testing::TempTree;

std::vector<std::string> Strings(const JsonValue& result, const char* key) {
  std::vector<std::string> out;
  if (!result.IsObject() || !result.HasMember(key) || !result[key].IsArray()) return out;
  for (const auto& v : result[key].GetArray()) out.emplace_back(v.GetString(), v.GetStringLength());
  return out;
}

// RLIMIT_FSIZE for one scope: a write beyond it fails (EFBIG) even as root.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old_;
    small.rlim_cur = bytes;
    if (setrlimit(RLIMIT_FSIZE, &small) != 0) ADD_FAILURE() << "setrlimit failed";
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }

 private:
  struct rlimit old_;
  sighandler_t old_handler_;
};

class ApplyPatchTest : public ::testing::Test {
 protected:
  absl::StatusOr<Json> Apply(const std::string& patch) {
    builtin::ApplyPatchTool tool(options_);
    return CallTool(tool, absl::StrCat(R"({"input":)", Quoted(patch), "}"), {t_.path()});
  }

  TempTree t_;
  BuiltinOptions options_;
};

// The combined example of OpenAI's apply_patch instructions (Codex).
TEST_F(ApplyPatchTest, DocumentedCombinedPatchAddsUpdatesMovesAndDeletes) {
  t_.Write("src/app.py", "def greet():\nprint(\"Hi\")\n", 0755);
  t_.Write("obsolete.txt", "old\n");
  auto r = Apply(
      "*** Begin Patch\n"
      "*** Add File: hello.txt\n"
      "+Hello world\n"
      "*** Update File: src/app.py\n"
      "*** Move to: src/main.py\n"
      "@@ def greet():\n"
      "-print(\"Hi\")\n"
      "+print(\"Hello, world!\")\n"
      "*** Delete File: obsolete.txt\n"
      "*** End Patch\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Str(*r, "output"),
            "Success. Updated the following files:\nA hello.txt\nM src/main.py\nD obsolete.txt\n");
  EXPECT_EQ(t_.Read("hello.txt"), "Hello world\n");
  EXPECT_EQ(t_.Read("src/main.py"), "def greet():\nprint(\"Hello, world!\")\n");
  EXPECT_EQ(t_.Mode("src/main.py"), 0755u);  // a move keeps the mode
  EXPECT_FALSE(t_.Exists("src/app.py"));
  EXPECT_FALSE(t_.Exists("obsolete.txt"));
  EXPECT_THAT(Strings(*r, "added"), ElementsAre("hello.txt"));
  EXPECT_THAT(Strings(*r, "modified"), ElementsAre("src/main.py"));
  EXPECT_THAT(Strings(*r, "deleted"), ElementsAre("obsolete.txt"));
  EXPECT_THAT(Str(*r, "diff"), HasSubstr("+print(\"Hello, world!\")"));
}

// The GPT-4.1 prompting guide's example: the patch inside its %%bash heredoc,
// two @@ lines narrowing the search to each class's method.
TEST_F(ApplyPatchTest, DocumentedHeredocExampleWithNestedContexts) {
  const std::string before =
      "class BaseClass:\n"
      "    def search():\n"
      "          pass\n"
      "\n"
      "class Subclass(BaseClass):\n"
      "    def search():\n"
      "          pass\n";
  t_.Write("pygorithm/searching/binary_search.py", before);
  auto r = Apply(
      "%%bash\n"
      "apply_patch <<\"EOF\"\n"
      "*** Begin Patch\n"
      "*** Update File: pygorithm/searching/binary_search.py\n"
      "@@ class BaseClass\n"
      "@@     def search():\n"
      "-          pass\n"
      "+          raise NotImplementedError()\n"
      "\n"
      "@@ class Subclass\n"
      "@@     def search():\n"
      "-          pass\n"
      "+          raise NotImplementedError()\n"
      "\n"
      "*** End Patch\n"
      "EOF\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("pygorithm/searching/binary_search.py"),
            "class BaseClass:\n"
            "    def search():\n"
            "          raise NotImplementedError()\n"
            "\n"
            "class Subclass(BaseClass):\n"
            "    def search():\n"
            "          raise NotImplementedError()\n");
}

TEST_F(ApplyPatchTest, ContextMismatchNamesTheFileAndTheHunk) {
  const std::string before = "def a():\n    return 1\n\ndef b():\n    return 2\n";
  t_.Write("f.py", before);
  auto r = Apply(
      "*** Begin Patch\n"
      "*** Update File: f.py\n"
      "@@ def a():\n"
      "-    return 1\n"
      "+    return 10\n"
      "@@ def b():\n"
      "-    return 3\n"
      "+    return 30\n"
      "*** End Patch");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(r.status().message(), HasSubstr("hunk 2 of 'f.py' (@@ def b():, patch line 6)"));
  EXPECT_THAT(r.status().message(), HasSubstr("    return 3"));
  EXPECT_THAT(r.status().message(), HasSubstr("nothing was changed"));
  EXPECT_EQ(t_.Read("f.py"), before);  // hunk 1 applied nowhere either

  auto context = Apply(
      "*** Begin Patch\n*** Update File: f.py\n@@ def c():\n-    return 1\n+x\n*** End Patch");
  ASSERT_FALSE(context.ok());
  EXPECT_THAT(context.status().message(),
              HasSubstr("hunk 1 of 'f.py' (@@ def c():, patch line 3) did not apply: its context "
                        "line 'def c():' was not found"));
  // The closest line is its own sentence.
  EXPECT_THAT(context.status().message(), HasSubstr("was not found. The closest line is"));
}

TEST_F(ApplyPatchTest, MatchesIgnoringTrailingThenSurroundingWhitespace) {
  t_.Write("f.py", "def f():  \n\tx = 1\t\n    y = 2\n");
  auto r = Apply(
      "*** Begin Patch\n*** Update File: f.py\n@@\n def f():\n-  x = 1\n+  x = 10\n"
      "*** End Patch");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("f.py"), "def f():  \n  x = 10\n    y = 2\n");
  // Whitespace inside a line still counts.
  auto inner = Apply("*** Begin Patch\n*** Update File: f.py\n@@\n-y  =  2\n+y = 3\n*** End Patch");
  EXPECT_FALSE(inner.ok());
}

TEST_F(ApplyPatchTest, EndOfFileAndPureAdditions) {
  t_.Write("f.txt", "a\nx\nb\nx\n");
  auto eof = Apply(
      "*** Begin Patch\n*** Update File: f.txt\n@@\n-x\n+y\n*** End of File\n*** End Patch");
  ASSERT_TRUE(eof.ok()) << eof.status();
  EXPECT_EQ(t_.Read("f.txt"), "a\nx\nb\ny\n");  // the last x, not the first
  auto add = Apply("*** Begin Patch\n*** Update File: f.txt\n@@ a\n+after a\n*** End Patch");
  ASSERT_TRUE(add.ok()) << add.status();
  EXPECT_EQ(t_.Read("f.txt"), "a\nafter a\nx\nb\ny\n");
  auto tail = Apply("*** Begin Patch\n*** Update File: f.txt\n@@\n+last\n*** End Patch");
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(t_.Read("f.txt"), "a\nafter a\nx\nb\ny\nlast\n");
  // An updated file ends with a newline, as codex writes it, even when it had none.
  t_.Write("g.txt", "1\n2");
  ASSERT_TRUE(Apply("*** Begin Patch\n*** Update File: g.txt\n@@\n-2\n+two\n*** End Patch").ok());
  EXPECT_EQ(t_.Read("g.txt"), "1\ntwo\n");
  t_.Write("h.txt", "1\n2");
  ASSERT_TRUE(Apply("*** Begin Patch\n*** Update File: h.txt\n@@\n-1\n+one\n*** End Patch").ok());
  EXPECT_EQ(t_.Read("h.txt"), "one\n2\n");
}

TEST_F(ApplyPatchTest, ASecondFileThatFailsLeavesTheFirstUntouched) {
  t_.Write("a.txt", "one\n");
  t_.Write("b.txt", "two\n");
  auto r = Apply(
      "*** Begin Patch\n"
      "*** Update File: a.txt\n@@\n-one\n+ONE\n"
      "*** Add File: new/dir/c.txt\n+c\n"
      "*** Delete File: b.txt\n"
      "*** Update File: b.txt.missing\n@@\n-x\n+y\n"
      "*** End Patch");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("b.txt.missing"));
  EXPECT_EQ(t_.Read("a.txt"), "one\n");
  EXPECT_EQ(t_.Read("b.txt"), "two\n");
  EXPECT_FALSE(t_.Exists("new"));  // not even the directory

  auto second_hunk = Apply(
      "*** Begin Patch\n"
      "*** Update File: a.txt\n@@\n-one\n+ONE\n"
      "*** Update File: b.txt\n@@\n-three\n+THREE\n"
      "*** End Patch");
  ASSERT_FALSE(second_hunk.ok());
  EXPECT_THAT(second_hunk.status().message(), HasSubstr("hunk 1 of 'b.txt'"));
  EXPECT_EQ(t_.Read("a.txt"), "one\n");
}

// A write that fails after others succeeded undoes them. RLIMIT_FSIZE makes
// the write of the large new file fail (EFBIG) even as root.
TEST_F(ApplyPatchTest, AFailedWriteUndoesTheWritesBeforeIt) {
  t_.Write("a.txt", "one\n", 0640);
  t_.Write("gone.txt", "keep me\n", 0600);
  const std::string big(64 * 1024, 'x');
  absl::StatusOr<Json> r = absl::UnknownError("not run");
  {
    FileSizeLimit limit(16 * 1024);
    r = Apply(absl::StrCat("*** Begin Patch\n"
                           "*** Update File: a.txt\n@@\n-one\n+ONE\n"
                           "*** Delete File: gone.txt\n"
                           "*** Add File: big.txt\n+",
                           big, "\n*** End Patch"));
  }
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("restored: nothing was changed"));
  EXPECT_EQ(t_.Read("a.txt"), "one\n");
  EXPECT_EQ(t_.Mode("a.txt"), 0640u);
  EXPECT_EQ(t_.Read("gone.txt"), "keep me\n");
  EXPECT_EQ(t_.Mode("gone.txt"), 0600u);
  EXPECT_FALSE(t_.Exists("big.txt"));
  for (const std::string& p : t_.ListAll()) EXPECT_EQ(p.find(".tmp-"), std::string::npos) << p;
}

// As codex does (its scenarios 010 and 011): Add File and Move to onto an
// existing file replace it, keeping that file's mode.
TEST_F(ApplyPatchTest, AddAndMoveOntoAnExistingFileReplaceIt) {
  t_.Write("a.txt", "a\n", 0640);
  auto add = Apply("*** Begin Patch\n*** Add File: a.txt\n+b\n*** End Patch");
  ASSERT_TRUE(add.ok()) << add.status();
  EXPECT_EQ(t_.Read("a.txt"), "b\n");
  EXPECT_EQ(t_.Mode("a.txt"), 0640u);
  EXPECT_THAT(Strings(*add, "added"), ElementsAre("a.txt"));
  EXPECT_THAT(Str(*add, "diff"), HasSubstr("-a\n+b\n"));
  t_.Write("old/name.txt", "from\n");
  t_.Write("renamed/name.txt", "existing\n", 0600);
  auto move = Apply(
      "*** Begin Patch\n*** Update File: old/name.txt\n*** Move to: renamed/name.txt\n@@\n"
      "-from\n+new\n*** End Patch");
  ASSERT_TRUE(move.ok()) << move.status();
  EXPECT_EQ(t_.Read("renamed/name.txt"), "new\n");
  EXPECT_FALSE(t_.Exists("old/name.txt"));
  // A directory there is not replaced.
  t_.Mkdir("d");
  auto dir = Apply("*** Begin Patch\n*** Add File: d\n+x\n*** End Patch");
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr("nothing was changed"));
}

// A replaced file is put back when a later write of the patch fails.
TEST_F(ApplyPatchTest, AFailedWriteRestoresAReplacedFile) {
  t_.Write("a.txt", "original\n", 0640);
  const std::string big(64 * 1024, 'x');
  absl::StatusOr<Json> r = absl::UnknownError("not run");
  {
    FileSizeLimit limit(16 * 1024);
    r = Apply(absl::StrCat("*** Begin Patch\n*** Add File: a.txt\n+replaced\n"
                           "*** Add File: big.txt\n+", big, "\n*** End Patch"));
  }
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("restored: nothing was changed"));
  EXPECT_EQ(t_.Read("a.txt"), "original\n");
  EXPECT_EQ(t_.Mode("a.txt"), 0640u);
  EXPECT_FALSE(t_.Exists("big.txt"));
}

TEST_F(ApplyPatchTest, DeleteOfAMissingFileAndDuplicatesAreRefused) {
  t_.Write("a.txt", "a\n");
  auto del = Apply("*** Begin Patch\n*** Delete File: nope.txt\n*** End Patch");
  ASSERT_FALSE(del.ok());
  EXPECT_THAT(del.status().message(), HasSubstr("no such file: nope.txt"));
  auto dup = Apply(
      "*** Begin Patch\n*** Delete File: a.txt\n*** Add File: ./a.txt\n+x\n*** End Patch");
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(dup.status().message(), HasSubstr("appears in two file operations"));
  // A move without hunks renames.
  ASSERT_TRUE(
      Apply("*** Begin Patch\n*** Update File: a.txt\n*** Move to: c/a.txt\n*** End Patch").ok());
  EXPECT_EQ(t_.Read("c/a.txt"), "a\n");
  EXPECT_FALSE(t_.Exists("a.txt"));
}

// The Responses API's apply_patch tool: one operation per call, as in the
// documented apply_patch_call items ({"type":"update_file","path":…,"diff":
// "@@ function main() {\n+  console.log(\"hi\");\n }"}).
class ApplyPatchOperationTest : public ApplyPatchTest {
 protected:
  absl::StatusOr<Json> Operation(const std::string& operation_json) {
    builtin::ApplyPatchTool tool(options_);
    return CallTool(tool, absl::StrCat(R"({"operation":)", operation_json, "}"), {t_.path()});
  }
};

TEST_F(ApplyPatchOperationTest, CreateUpdateAndDeleteAsTheResponsesApiSendsThem) {
  t_.Write("src/main.ts", "function main() {\n}\n");
  auto update = Operation(
      R"({"type":"update_file","path":"src/main.ts","diff":"@@ function main() {\n+  console.log(\"hi\");\n }"})");
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_EQ(t_.Read("src/main.ts"), "function main() {\n  console.log(\"hi\");\n}\n");
  EXPECT_EQ(Str(*update, "output"), "Success. Updated the following files:\nM src/main.ts\n");

  auto create = Operation(R"({"type":"create_file","path":"docs/notes.md","diff":"+# Notes\n+\n+first\n"})");
  ASSERT_TRUE(create.ok()) << create.status();
  EXPECT_EQ(t_.Read("docs/notes.md"), "# Notes\n\nfirst\n");
  // A create diff without "+" prefixes is the file's content.
  ASSERT_TRUE(Operation(R"({"type":"create_file","path":"plain.txt","diff":"a\nb\n"})").ok());
  EXPECT_EQ(t_.Read("plain.txt"), "a\nb\n");

  auto del = Operation(R"({"type":"delete_file","path":"plain.txt"})");
  ASSERT_TRUE(del.ok()) << del.status();
  EXPECT_FALSE(t_.Exists("plain.txt"));
  EXPECT_EQ(Str(*del, "output"), "Success. Updated the following files:\nD plain.txt\n");

  // What does not apply changes nothing and says why.
  auto miss = Operation(R"({"type":"update_file","path":"src/main.ts","diff":"@@\n-absent\n+x"})");
  ASSERT_FALSE(miss.ok());
  EXPECT_THAT(miss.status().message(), HasSubstr("nothing was changed"));
  for (const char* bad : {R"({"type":"rename_file","path":"a"})", R"({"type":"update_file","path":"a"})",
                          R"({"type":"delete_file","path":""})"}) {
    auto r = Operation(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kInvalidArguments) << bad;
  }
  builtin::ApplyPatchTool tool(options_);
  auto both = CallTool(tool, R"({"input":"*** Begin Patch\n*** End Patch","operation":{"type":"delete_file","path":"a"}})",
                       {t_.path()});
  EXPECT_EQ(ErrorCodeOf(both.status()), ErrorCode::kInvalidArguments);
  auto neither = CallTool(tool, "{}", {t_.path()});
  EXPECT_EQ(ErrorCodeOf(neither.status()), ErrorCode::kInvalidArguments);
  // Permissions and write ordering come from the operation's path.
  auto args = ParseJson(R"({"operation":{"type":"delete_file","path":"src/main.ts"}})");
  ASSERT_TRUE(args.ok());
  auto needs = tool.required_permissions(*args);
  ASSERT_EQ(needs.size(), 1u);
  EXPECT_EQ(needs[0].value, "src/main.ts");
  EXPECT_EQ(tool.resources(*args).size(), 1u);
}

TEST_F(ApplyPatchTest, MalformedPatchesAreInvalidArguments) {
  for (const char* bad : {"", "*** Update File: a\n", "*** Begin Patch\n*** Add File: a\n+x\n",
                          "*** Begin Patch\n*** Frobnicate File: a\n*** End Patch",
                          "*** Begin Patch\n*** Update File: a.txt\n*** End Patch",
                          "*** Begin Patch\n*** End Patch"}) {
    auto r = Apply(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kInvalidArguments) << bad;
    EXPECT_THAT(std::string(r.status().message()), StartsWith("invalid patch")) << bad;
  }
}

TEST_F(ApplyPatchTest, PathsOutsideTheWorkspaceAreRefusedAndNothingIsWritten) {
  TempTree outside;
  outside.Write("victim.txt", "v\n");
  t_.Write("a.txt", "a\n");
  for (const std::string& path : {std::string("../evil.txt"), outside.Abs("evil.txt"),
                                  std::string("sub/../../evil.txt")}) {
    auto r = Apply(absl::StrCat("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n",
                                "*** Add File: ", path, "\n+evil\n*** End Patch"));
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kDenied) << path << ": " << r.status();
  }
  auto del = Apply(absl::StrCat("*** Begin Patch\n*** Delete File: ", outside.Abs("victim.txt"),
                                "\n*** End Patch"));
  EXPECT_EQ(ErrorCodeOf(del.status()), ErrorCode::kDenied);
  EXPECT_EQ(t_.Read("a.txt"), "a\n");
  EXPECT_EQ(outside.Read("victim.txt"), "v\n");
  EXPECT_THAT(outside.List(), ElementsAre("victim.txt"));
}

TEST_F(ApplyPatchTest, CrlfBomAndCrlfPatchesAreHandled) {
  t_.Write("win.txt", "\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n");
  auto r = Apply("*** Begin Patch\r\n*** Update File: win.txt\r\n@@ one\r\n-two\r\n+TWO\r\n"
                 "+2.5\r\n three\r\n*** End Patch\r\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("win.txt"), "\xEF\xBB\xBFone\r\nTWO\r\n2.5\r\nthree\r\n");
}

TEST_F(ApplyPatchTest, DeclarationAndPermissions) {
  builtin::ApplyPatchTool tool(options_);
  EXPECT_EQ(tool.name(), "apply_patch");
  EXPECT_FALSE(tool.spec().read_only);
  EXPECT_EQ(tool.spec().type, ToolType::kTextEdit);
  EXPECT_THAT(tool.spec().parameters_schema, HasSubstr("\"input\""));
  auto args = ParseJson(absl::StrCat(
      R"({"input":)",
      Quoted("*** Begin Patch\n*** Add File: n.txt\n+x\n*** Update File: u.txt\n*** Move to: "
             "m.txt\n@@\n-a\n+b\n*** Delete File: d.txt\n*** End Patch"),
      "}"));
  ASSERT_TRUE(args.ok());
  std::vector<std::string> paths;
  for (const auto& p : tool.required_permissions(*args)) {
    EXPECT_EQ(p.level, PermissionLevel::kWrite);
    paths.push_back(p.value);
  }
  EXPECT_THAT(paths, ElementsAre("n.txt", "u.txt", "m.txt", "d.txt"));
  auto bad = ParseJson(R"({"input":"not a patch"})");
  ASSERT_TRUE(bad.ok());
  auto all = tool.required_permissions(*bad);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_TRUE(all[0].recursive);
}

}  // namespace
}  // namespace toolexec

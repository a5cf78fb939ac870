// str_replace_based_edit_tool: Anthropic's text editor tool, driven with the
// examples of Anthropic's documentation (primes.py) and the edge cases it and
// its reference implementation describe: no match, several matches, insert at
// 0 and at the end, view_range, directories, create over an existing file,
// paths outside the workspace; line endings and BOM kept.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/files/file_tools.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing::CallTool;
using testing::Quoted;
using testing::Str;
using testing::TempTree;

// primes.py as Anthropic's documentation shows it, with its syntax error on
// line 19 (the for loop lacks its colon).
constexpr char kPrimes[] =
    "def is_prime(n):\n"
    "    \"\"\"Check if a number is prime.\"\"\"\n"
    "    if n <= 1:\n"
    "        return False\n"
    "    if n <= 3:\n"
    "        return True\n"
    "    if n % 2 == 0 or n % 3 == 0:\n"
    "        return False\n"
    "    i = 5\n"
    "    while i * i <= n:\n"
    "        if n % i == 0 or n % (i + 2) == 0:\n"
    "            return False\n"
    "        i += 6\n"
    "    return True\n"
    "\n"
    "def get_primes(limit):\n"
    "    \"\"\"Generate a list of prime numbers up to the given limit.\"\"\"\n"
    "    primes = []\n"
    "    for num in range(2, limit + 1)\n"
    "        if is_prime(num):\n"
    "            primes.append(num)\n"
    "    return primes\n"
    "\n"
    "def main():\n"
    "    \"\"\"Main function to demonstrate prime number generation.\"\"\"\n"
    "    limit = 100\n"
    "    prime_list = get_primes(limit)\n"
    "    print(f\"Prime numbers up to {limit}:\")\n"
    "    print(prime_list)\n"
    "    print(f\"Found {len(prime_list)} prime numbers.\")\n"
    "\n"
    "if __name__ == \"__main__\":\n"
    "    main()\n";

class TextEditorTest : public ::testing::Test {
 protected:
  absl::StatusOr<Json> Run(const std::string& args_json) {
    builtin::StrReplaceBasedEditTool tool(options_);
    return CallTool(tool, args_json, {t_.path()});
  }
  absl::StatusOr<Json> View(const std::string& path, const std::string& range = "") {
    return Run(absl::StrCat(R"({"command":"view","path":)", Quoted(path),
                            range.empty() ? "" : absl::StrCat(R"(,"view_range":)", range), "}"));
  }
  absl::StatusOr<Json> Replace(const std::string& path, const std::string& old_str,
                               const std::string& new_str) {
    return Run(absl::StrCat(R"({"command":"str_replace","path":)", Quoted(path),
                            R"(,"old_str":)", Quoted(old_str), R"(,"new_str":)", Quoted(new_str),
                            "}"));
  }
  absl::StatusOr<Json> Insert(const std::string& path, int line, const std::string& new_str) {
    return Run(absl::StrCat(R"({"command":"insert","path":)", Quoted(path),
                            R"(,"insert_line":)", line, R"(,"new_str":)", Quoted(new_str), "}"));
  }
  absl::StatusOr<Json> Create(const std::string& path, const std::string& text) {
    return Run(absl::StrCat(R"({"command":"create","path":)", Quoted(path), R"(,"file_text":)",
                            Quoted(text), "}"));
  }

  TempTree t_;
  BuiltinOptions options_;
};

TEST_F(TextEditorTest, DocumentedExampleViewsAndFixesPrimes) {
  t_.Write("primes.py", kPrimes);
  auto view = View("primes.py");
  ASSERT_TRUE(view.ok()) << view.status();
  const std::string out = Str(*view, "output");
  EXPECT_THAT(out, StartsWith("Here's the result of running `cat -n` on primes.py:\n"
                              "     1\tdef is_prime(n):\n"
                              "     2\t    \"\"\"Check if a number is prime.\"\"\"\n"));
  EXPECT_THAT(out, HasSubstr("    19\t    for num in range(2, limit + 1)\n"));
  EXPECT_THAT(out, HasSubstr("    33\t    main()\n"));

  auto fix = Replace("primes.py", "    for num in range(2, limit + 1)",
                     "    for num in range(2, limit + 1):");
  ASSERT_TRUE(fix.ok()) << fix.status();
  EXPECT_THAT(Str(*fix, "output"),
              StartsWith("Successfully replaced text at exactly one location.\n"
                         "Here's the result of running `cat -n` on a snippet of primes.py:\n"
                         "    15\t\n"));
  EXPECT_THAT(Str(*fix, "output"), HasSubstr("    19\t    for num in range(2, limit + 1):\n"));
  std::string fixed = kPrimes;
  fixed.replace(fixed.find("limit + 1)\n"), 11, "limit + 1):\n");
  EXPECT_EQ(t_.Read("primes.py"), fixed);
  EXPECT_EQ(Str(*fix, "sha256"), fs::Sha256Hex(fixed));
}

TEST_F(TextEditorTest, NoMatchIsTheDocumentedErrorAndChangesNothing) {
  t_.Write("primes.py", kPrimes);
  auto r = Replace("primes.py", "for num in range(2, limit - 1)", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(std::string(r.status().message()),
              StartsWith("No match found for replacement. Please check your text and try again."));
  EXPECT_THAT(r.status().message(), HasSubstr("The closest line is 19"));
  EXPECT_EQ(t_.Read("primes.py"), kPrimes);
}

TEST_F(TextEditorTest, SeveralMatchesAreTheDocumentedErrorWithTheirLines) {
  t_.Write("f.py", "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n");
  auto r = Replace("f.py", "x = 1", "x = 2");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()),
              StartsWith("Found 3 matches for replacement text. Please provide more context to "
                         "make a unique match."));
  EXPECT_THAT(r.status().message(), HasSubstr("at lines 1, 3 and 5"));
  EXPECT_EQ(t_.Read("f.py"), "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n");
  // More context makes it unique.
  auto ok = Replace("f.py", "x = 1\nz = 3", "x = 2\nz = 3");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(t_.Read("f.py"), "x = 1\ny = 2\nx = 2\nz = 3\nx = 1\n");
  // new_str may be left out: old_str is deleted.
  auto del = Run(R"({"command":"str_replace","path":"f.py","old_str":"y = 2\n"})");
  ASSERT_TRUE(del.ok()) << del.status();
  EXPECT_EQ(t_.Read("f.py"), "x = 1\nx = 2\nz = 3\nx = 1\n");
  EXPECT_FALSE(Replace("f.py", "", "a").ok());
}

TEST_F(TextEditorTest, InsertAtTheStartAtTheEndAndOutOfRange) {
  t_.Write("primes.py", kPrimes);
  // The documentation's example: a module docstring at line 0.
  const std::string doc =
      "\"\"\"Module for working with prime numbers.\n\nThis module provides functions to check "
      "if a number is prime\nand to generate a list of prime numbers up to a given limit.\n"
      "\"\"\"\n";
  auto start = Insert("primes.py", 0, doc);
  ASSERT_TRUE(start.ok()) << start.status();
  EXPECT_EQ(t_.Read("primes.py"), doc + kPrimes);
  EXPECT_THAT(Str(*start, "output"), StartsWith("The file primes.py has been edited. "));
  EXPECT_THAT(Str(*start, "output"), HasSubstr("     1\t\"\"\"Module for working"));

  t_.Write("f.txt", "a\nb\n");
  ASSERT_TRUE(Insert("f.txt", 2, "c").ok());  // the line count: at the end
  EXPECT_EQ(t_.Read("f.txt"), "a\nb\nc\n");
  ASSERT_TRUE(Insert("f.txt", 1, "between\n").ok());
  EXPECT_EQ(t_.Read("f.txt"), "a\nbetween\nb\nc\n");
  auto beyond = Insert("f.txt", 5, "x");
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(ErrorCodeOf(beyond.status()), ErrorCode::kInvalidArguments);
  EXPECT_THAT(beyond.status().message(),
              HasSubstr("Invalid `insert_line` parameter: 5. It should be within the range of "
                        "lines of the file: [0, 4]"));
  EXPECT_FALSE(Insert("f.txt", -1, "x").ok());
  EXPECT_EQ(t_.Read("f.txt"), "a\nbetween\nb\nc\n");

  // After a last line without a newline, the text starts a line of its own.
  t_.Write("g.txt", "a\nb");
  ASSERT_TRUE(Insert("g.txt", 2, "c").ok());
  EXPECT_EQ(t_.Read("g.txt"), "a\nb\nc");
  t_.Write("empty.txt", "");
  ASSERT_TRUE(Insert("empty.txt", 0, "first").ok());
  EXPECT_EQ(t_.Read("empty.txt"), "first\n");
}

// What Claude 4 models send for insert (text_editor_20250728): the text as
// insert_text, as in the call the model makes in anthropic-sdk-python issue
// 1155 ({"command":"insert","path":…,"insert_line":2,"insert_text":"HELLO\n"}).
TEST_F(TextEditorTest, InsertTakesInsertTextAsClaude4ModelsSendIt) {
  t_.Write("test.txt", "one\ntwo\nthree\n");
  auto r = Run(R"({"command":"insert","path":"test.txt","insert_line":2,"insert_text":"HELLO\n"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(t_.Read("test.txt"), "one\ntwo\nHELLO\nthree\n");
  EXPECT_THAT(Str(*r, "output"), HasSubstr("     3\tHELLO\n"));
  // new_str, what earlier versions send, still works; the same text in both too.
  ASSERT_TRUE(Run(R"({"command":"insert","path":"test.txt","insert_line":0,"new_str":"zero"})").ok());
  ASSERT_TRUE(Run(R"({"command":"insert","path":"test.txt","insert_line":0,"new_str":"a","insert_text":"a"})")
                  .ok());
  EXPECT_EQ(t_.Read("test.txt"), "a\nzero\none\ntwo\nHELLO\nthree\n");
  // Two different texts, or none: refused in the tool's own words.
  auto both = Run(R"({"command":"insert","path":"test.txt","insert_line":0,"new_str":"a","insert_text":"b"})");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(ErrorCodeOf(both.status()), ErrorCode::kInvalidArguments);
  auto none = Run(R"({"command":"insert","path":"test.txt","insert_line":0})");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "Parameter `insert_text` is required for command: insert");
  EXPECT_EQ(t_.Read("test.txt"), "a\nzero\none\ntwo\nHELLO\nthree\n");
}

// The number of the last numbered line of a `cat -n` text.
int64_t LastNumberedLine(const std::string& text) {
  int64_t last = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    size_t tab = line.find('\t');
    if (tab == absl::string_view::npos || tab != 6) continue;
    int64_t n = 0;
    if (absl::SimpleAtoi(absl::StripLeadingAsciiWhitespace(line.substr(0, tab)), &n)) last = n;
  }
  return last;
}

// max_characters (text_editor_20250728): whole lines within the limit, and a
// note that names exactly the lines shown and where to continue.
TEST_F(TextEditorTest, MaxCharactersShowsWholeLinesAndSaysWhichTruthfully) {
  std::string text;
  for (int i = 1; i <= 100; ++i) absl::StrAppend(&text, "line number ", i, "\n");
  t_.Write("f.txt", text);
  auto r = Run(R"({"command":"view","path":"f.txt","max_characters":300})");
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string out = Str(*r, "output");
  const int64_t last = LastNumberedLine(out);
  ASSERT_GT(last, 5);
  ASSERT_LT(last, 100);
  EXPECT_EQ(testing::Int(*r, "end_line"), last);
  EXPECT_THAT(out, HasSubstr(absl::StrCat("    ", last, "\tline number ", last, "\n<response clipped><NOTE>")));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("lines 1-", last, " of 100 (cut at max_characters 300)")));
  EXPECT_THAT(out, EndsWith(absl::StrCat("View the rest with view_range [", last + 1,
                                         ", -1], or search the file with `grep -n` for the "
                                         "lines you need.</NOTE>\n")));
  // The numbered lines themselves are within the limit.
  const size_t header = out.find('\n') + 1;
  EXPECT_LE(out.find("<response clipped>") - header, 300u);
  // Enough room: the whole file, no note.
  auto all = Run(R"({"command":"view","path":"f.txt","max_characters":100000})");
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(Str(*all, "output"), Not(HasSubstr("<response clipped>")));
  EXPECT_EQ(LastNumberedLine(Str(*all, "output")), 100);
}

// The editor's errors speak its own parameters, never view_file's.
TEST_F(TextEditorTest, ErrorsUseTheEditorsVocabulary) {
  t_.Write("f.txt", "one\ntwo\nthree\n");
  auto r = View("f.txt", "[5, -1]");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Invalid `view_range`: [5, -1]. Its first element `5` should be within the range of "
            "lines of the file: [1, 3].");
  for (const char* range : {"[5, -1]", "[0, 2]", "[2, 9]", "[3, 2]"}) {
    auto bad = View("f.txt", range);
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(bad.status().message(), Not(HasSubstr("start_line"))) << range;
    EXPECT_THAT(bad.status().message(), Not(HasSubstr("view_file"))) << range;
  }
  auto miss = Replace("f.txt", "four", "4");
  ASSERT_FALSE(miss.ok());
  EXPECT_THAT(miss.status().message(), Not(HasSubstr("view_file")));
}

// model_content is the reference tool's plain text, not the JSON payload; a
// view over the budget is cut by whole lines and its note tells the truth.
TEST_F(TextEditorTest, ModelContentIsThePlainTextWithinTheBudget) {
  std::string text;
  for (int i = 1; i <= 2000; ++i) absl::StrAppend(&text, "value_", i, " = \"", i * 7, "\"\n");
  t_.Write("big.py", text);
  t_.Write("small.py", "x = 1\n");
  ToolRegistry registry;
  ASSERT_TRUE(RegisterFileTools(registry, options_).ok());
  ToolRunner::Options ro;
  ro.default_workspace = testing::RootAt(t_.path());
  ToolRunner runner(&registry, ro);
  constexpr size_t kBudget = 4000;
  ToolCallResult view = testing::RunOneCall(
      runner, "str_replace_based_edit_tool", R"({"command":"view","path":"big.py"})", nullptr,
      std::nullopt, kBudget);
  ASSERT_TRUE(view.ok()) << view.error_message;
  EXPECT_EQ(view.model_content, Str(view.payload, "output"));
  EXPECT_LE(Utf8Chars(view.model_content), kBudget);
  EXPECT_THAT(view.model_content, StartsWith("Here's the result of running `cat -n` on big.py:\n"
                                             "     1\tvalue_1 = \"7\"\n"));
  EXPECT_THAT(view.model_content, Not(HasSubstr("bytes omitted")));  // not cut by the runner
  const int64_t last = LastNumberedLine(view.model_content);
  ASSERT_GT(last, 10);
  ASSERT_LT(last, 2000);
  EXPECT_THAT(view.model_content,
              HasSubstr(absl::StrCat(last, "\tvalue_", last, " = \"", last * 7, "\"\n<response "
                                     "clipped><NOTE>To save on context only part of this file "
                                     "has been shown to you: lines 1-", last, " of 2000")));
  EXPECT_THAT(view.model_content, HasSubstr(absl::StrCat("view_range [", last + 1, ", -1]")));

  ToolCallResult edit = testing::RunOneCall(
      runner, "str_replace_based_edit_tool",
      R"({"command":"str_replace","path":"small.py","old_str":"x = 1","new_str":"x = 2"})");
  ASSERT_TRUE(edit.ok()) << edit.error_message;
  EXPECT_EQ(edit.model_content,
            "Successfully replaced text at exactly one location.\n"
            "Here's the result of running `cat -n` on a snippet of small.py:\n     1\tx = 2\n");
  ToolCallResult made = testing::RunOneCall(
      runner, "str_replace_based_edit_tool",
      R"({"command":"create","path":"new.py","file_text":"print(1)\n"})");
  ASSERT_TRUE(made.ok()) << made.error_message;
  EXPECT_EQ(made.model_content, "File created successfully at: new.py");
}

TEST_F(TextEditorTest, ViewRange) {
  t_.Write("f.txt", "one\ntwo\nthree\nfour\n");
  auto mid = View("f.txt", "[2, 3]");
  ASSERT_TRUE(mid.ok()) << mid.status();
  EXPECT_EQ(Str(*mid, "output"),
            "Here's the result of running `cat -n` on f.txt:\n     2\ttwo\n     3\tthree\n");
  auto rest = View("f.txt", "[3, -1]");
  ASSERT_TRUE(rest.ok()) << rest.status();
  EXPECT_EQ(Str(*rest, "output"),
            "Here's the result of running `cat -n` on f.txt:\n     3\tthree\n     4\tfour\n");
  for (const char* bad : {"[0, 2]", "[3, 2]", "[2, 9]", "[9, -1]"}) {
    auto r = View("f.txt", bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(ErrorCodeOf(r.status()), ErrorCode::kInvalidArguments) << bad;
    EXPECT_THAT(std::string(r.status().message()), StartsWith("Invalid `view_range`")) << bad;
  }
  EXPECT_THAT(View("f.txt", "[2, 9]").status().message(),
              HasSubstr("should be smaller than the number of lines in the file: `4`"));
  EXPECT_FALSE(View("f.txt", "[1]").ok());  // the schema wants two integers
}

TEST_F(TextEditorTest, ViewOfADirectoryListsTwoLevelsWithoutHiddenEntries) {
  t_.Write("src/main.py", "x");
  t_.Write("src/pkg/mod.py", "x");
  t_.Write("src/pkg/deep/too_deep.py", "x");
  t_.Write("src/.hidden/secret.py", "x");
  t_.Write("README.md", "x");
  auto r = View("src");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Str(*r, "output"),
            "Here's the files and directories up to 2 levels deep in src, excluding hidden "
            "items:\nsrc\nsrc/main.py\nsrc/pkg/\nsrc/pkg/deep/\nsrc/pkg/mod.py\n");
  auto root = View(t_.path());  // an absolute path inside the workspace
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_THAT(Str(*root, "output"), HasSubstr(t_.path() + "/README.md\n"));
  auto range = View("src", "[1, 2]");
  ASSERT_FALSE(range.ok());
  EXPECT_THAT(range.status().message(), HasSubstr("not allowed when `path` points to a directory"));
  EXPECT_THAT(Replace("src", "a", "b").status().message(), HasSubstr("is a directory"));
}

// Anthropic's reference implementation refuses create over an existing file;
// so does toolexec, leaving the file as it was.
TEST_F(TextEditorTest, CreateMakesNewFilesAndRefusesExistingOnes) {
  auto made = Create("tests/test_primes.py", "import unittest\nimport primes\n");
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(Str(*made, "output"), "File created successfully at: tests/test_primes.py");
  EXPECT_EQ(t_.Read("tests/test_primes.py"), "import unittest\nimport primes\n");
  auto again = Create("tests/test_primes.py", "other");
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(ErrorCodeOf(again.status()), ErrorCode::kToolFailed);
  EXPECT_THAT(std::string(again.status().message()),
              StartsWith("File already exists at: tests/test_primes.py. Cannot overwrite files "
                         "using command `create`"));
  EXPECT_EQ(t_.Read("tests/test_primes.py"), "import unittest\nimport primes\n");
  EXPECT_FALSE(Run(R"({"command":"create","path":"x.txt"})").ok());  // no file_text
}

TEST_F(TextEditorTest, MissingFilesAndUnknownCommands) {
  auto view = View("nope.py");
  ASSERT_FALSE(view.ok());
  EXPECT_THAT(std::string(view.status().message()), StartsWith("File not found"));
  auto edit = Replace("nope.py", "a", "b");
  ASSERT_FALSE(edit.ok());
  EXPECT_THAT(std::string(edit.status().message()), StartsWith("File not found"));
  EXPECT_THAT(edit.status().message(), HasSubstr("`create`"));
  EXPECT_FALSE(Run(R"({"command":"undo_edit","path":"f.txt"})").ok());
}

TEST_F(TextEditorTest, PathsOutsideTheWorkspaceAreRefused) {
  TempTree outside;
  outside.Write("secret.txt", "s\n");
  t_.Symlink("link", outside.path());
  for (const std::string& path :
       {std::string("../secret.txt"), outside.Abs("secret.txt"), std::string("link/secret.txt")}) {
    EXPECT_EQ(ErrorCodeOf(View(path).status()), ErrorCode::kDenied) << path;
    EXPECT_EQ(ErrorCodeOf(Replace(path, "s", "t").status()), ErrorCode::kDenied) << path;
    EXPECT_EQ(ErrorCodeOf(Insert(path, 0, "t").status()), ErrorCode::kDenied) << path;
  }
  EXPECT_EQ(ErrorCodeOf(Create("../new.txt", "x").status()), ErrorCode::kDenied);
  EXPECT_EQ(ErrorCodeOf(Create(outside.Abs("new.txt"), "x").status()), ErrorCode::kDenied);
  EXPECT_EQ(outside.Read("secret.txt"), "s\n");
  EXPECT_FALSE(outside.Exists("new.txt"));
  // Absolute paths inside the workspace are fine.
  t_.Write("in.txt", "a\n");
  ASSERT_TRUE(Replace(t_.Abs("in.txt"), "a", "b").ok());
  EXPECT_EQ(t_.Read("in.txt"), "b\n");
}

TEST_F(TextEditorTest, CrlfBomAndModeAreKept) {
  t_.Write("win.txt", "\xEF\xBB\xBFone\r\ntwo\r\nthree\r\n", 0750);
  ASSERT_TRUE(Replace("win.txt", "one\ntwo", "ONE\nTWO").ok());
  EXPECT_EQ(t_.Read("win.txt"), "\xEF\xBB\xBFONE\r\nTWO\r\nthree\r\n");
  auto ins = Insert("win.txt", 3, "four");
  ASSERT_TRUE(ins.ok()) << ins.status();
  EXPECT_EQ(t_.Read("win.txt"), "\xEF\xBB\xBFONE\r\nTWO\r\nthree\r\nfour\r\n");
  EXPECT_EQ(Str(*ins, "line_endings"), "crlf");
  EXPECT_EQ(t_.Mode("win.txt"), 0750u);
  auto view = View("win.txt", "[1, 1]");
  ASSERT_TRUE(view.ok());
  EXPECT_THAT(Str(*view, "output"), HasSubstr("     1\tONE\r\n"));
}

TEST_F(TextEditorTest, DeclaredAsAnthropicsTextEditorWithItsPermissions) {
  builtin::StrReplaceBasedEditTool tool(options_);
  EXPECT_EQ(tool.name(), "str_replace_based_edit_tool");
  EXPECT_EQ(tool.spec().provider_config,
            R"({"type":"text_editor_20250728","name":"str_replace_based_edit_tool"})");
  EXPECT_EQ(tool.spec().type, ToolType::kTextEdit);
  EXPECT_FALSE(tool.spec().read_only);
  EXPECT_EQ(tool.spec().executor, ToolExecutor::kDaemon);
  auto view = ParseJson(R"({"command":"view","path":"src"})");
  auto edit = ParseJson(R"({"command":"str_replace","path":"a.py","old_str":"x"})");
  ASSERT_TRUE(view.ok() && edit.ok());
  auto v = tool.required_permissions(*view);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].level, PermissionLevel::kRead);
  EXPECT_EQ(v[0].value, "src");
  auto e = tool.required_permissions(*edit);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].level, PermissionLevel::kWrite);
  EXPECT_EQ(e[0].value, "a.py");
}

}  // namespace
}  // namespace toolexec

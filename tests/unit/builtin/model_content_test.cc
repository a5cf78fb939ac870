// model_content (tools/runtime/model_content.h) as a harness sees it: a coding
// session replayed through the ToolRunner with every built-in tool, checking
// what each result tells the model and that it stays within the budget.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing::Flag;
using testing::Int;
using testing::Quoted;

// --- the helpers themselves ------------------------------------------------

TEST(ModelContentText, CountsCodePointsAndCutsBetweenThem) {
  const std::string euro = "\xE2\x82\xAC";  // 3 bytes, 1 character
  EXPECT_EQ(Utf8Chars(euro + euro + "a"), 3u);
  EXPECT_EQ(Utf8PrefixBytes(euro + euro + "a", 1), 3u);
  EXPECT_EQ(Utf8PrefixBytes("ab", 5), 2u);
  std::string text;
  for (int i = 0; i < 1000; ++i) text += euro;
  bool cut = false;
  std::string out = CutMiddle(text, 200, "", &cut);
  EXPECT_TRUE(cut);
  EXPECT_LE(Utf8Chars(out), 200u);
  // Every byte still belongs to a whole character: no sequence was split.
  std::string without_marker = out;
  size_t m = without_marker.find("\n[...");
  ASSERT_NE(m, std::string::npos);
  without_marker.erase(m, without_marker.find("]\n", m) + 2 - m);
  EXPECT_EQ(without_marker.size() % 3, 0u);
  EXPECT_EQ(Utf8Chars(without_marker) * 3, without_marker.size());
  EXPECT_EQ(CutMiddle("short", 200), "short");
}

TEST(ModelContentText, GroupsDigits) {
  EXPECT_EQ(GroupDigits(0), "0");
  EXPECT_EQ(GroupDigits(999), "999");
  EXPECT_EQ(GroupDigits(1186), "1,186");
  EXPECT_EQ(GroupDigits(1157849), "1,157,849");
}

TEST(ModelContentText, KeepsWholeLinesAtBothEnds) {
  std::string text;
  for (int i = 1; i <= 5000; ++i) absl::StrAppend(&text, "line ", i, "\n");
  std::string out = CutMiddle(text, 500);
  EXPECT_THAT(out, StartsWith("line 1\nline 2\n"));
  EXPECT_THAT(out, EndsWith("line 5000\n"));
  EXPECT_THAT(out, HasSubstr(" bytes omitted ...]\nline "));
  // The marker sits on its own line, right after a whole line.
  EXPECT_THAT(out, HasSubstr("\n[... "));
  EXPECT_THAT(out, Not(HasSubstr("\n\n[... ")));
}

// --- a coding session replayed ---------------------------------------------

class ModelContentSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.command_kill_grace = absl::Milliseconds(200);
    ASSERT_TRUE(RegisterBuiltinTools(registry_, options_).ok());
    ToolRunner::Options ro;
    ro.default_workspace = testing::RootAt(tree_.path());
    runner_ = std::make_unique<ToolRunner>(&registry_, ro);
  }
  void TearDown() override {
    for (const std::string& name : registry_.names()) registry_.Find(name)->tool->shutdown();
    runner_.reset();
  }

  // One call in its own batch, with the daemon's default budget unless given.
  ToolCallResult Call(const std::string& tool, const std::string& args, size_t budget = 0) {
    ToolCallResult result =
        testing::RunOneCall(*runner_, tool, args, nullptr, std::nullopt, budget);
    model_chars_ += Utf8Chars(result.model_content);
    payload_chars_ += Utf8Chars(ToJsonString(result.payload));
    return result;
  }
  ToolCallResult Sh(const std::string& command, const std::string& extra = "") {
    return Call("run_command", absl::StrCat(R"({"command_line":)", Quoted(command),
                                            extra.empty() ? "" : ",", extra, "}"));
  }

  static constexpr size_t kBudget = kDefaultModelContentChars;
  testing::TempTree tree_;
  BuiltinOptions options_;
  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
  size_t model_chars_ = 0;
  size_t payload_chars_ = 0;
};

TEST_F(ModelContentSessionTest, ReplayedSessionStaysWithinBudgetAndKeepsWhatMatters) {
  // A small project: a 1,200-line lock file, some sources, a test script.
  std::string lock;
  for (int i = 1; i <= 1200; ++i) {
    absl::StrAppend(&lock, "package-", i, " = { version = \"1.", i,
                    ".0\", checksum = \"sha256:0123456789abcdef0123456789abcdef0123456789abcdef"
                    "0123456789abcdef\" }\n");
  }
  tree_.Write("poetry.lock", lock);
  for (int i = 0; i < 40; ++i) {
    tree_.Write(absl::StrCat("src/mod", i, ".py"),
                absl::StrCat("def handler_", i, "(x):\n    return x + ", i, "\n"));
  }
  // A pytest-like run: many lines of progress, the summary on the last line.
  tree_.Write("run_tests.sh",
              "for i in $(seq 1 20000); do echo \"tests/test_mod.py::test_case_$i PASSED\"; "
              "done\necho '============ 20000 passed in 3.21s ============'\n");

  // list_directory, grep_search
  ToolCallResult listed = Call("list_directory", R"({"directory_path":"."})");
  ASSERT_TRUE(listed.ok()) << listed.error_message;
  EXPECT_THAT(listed.model_content, HasSubstr("poetry.lock  ("));
  EXPECT_THAT(listed.model_content, HasSubstr("src/"));
  ToolCallResult grep =
      Call("grep_search", R"({"pattern":"def handler_1\\b","output_mode":"content"})");
  ASSERT_TRUE(grep.ok()) << grep.error_message;
  EXPECT_EQ(grep.model_content, "src/mod1.py:1:def handler_1(x):");

  // view_file of the 1,200-line file: cut to the budget, truthfully.
  ToolCallResult view = Call("view_file", R"({"file_path":"poetry.lock"})");
  ASSERT_TRUE(view.ok()) << view.error_message;
  EXPECT_TRUE(Flag(view.payload, "truncated"));
  const int64_t shown = Int(view.payload, "end_line");
  ASSERT_GT(shown, 10);
  ASSERT_LT(shown, 1200);
  EXPECT_EQ(Int(view.payload, "next_start_line"), shown + 1);
  EXPECT_LE(Utf8Chars(testing::Str(view.payload, "content")), kBudget);
  EXPECT_LE(Utf8Chars(view.model_content), kBudget);
  EXPECT_THAT(view.model_content, StartsWith("     1\tpackage-1 = "));
  EXPECT_THAT(view.model_content,
              EndsWith(absl::StrCat("\n[showing lines 1\u2013", shown, " of 1,200; continue with "
                                    "start_line=", shown + 1, "]")));
  ToolCallResult rest =
      Call("view_file", absl::StrCat(R"({"file_path":"poetry.lock","start_line":)", shown + 1,
                                     "}"));
  ASSERT_TRUE(rest.ok()) << rest.error_message;
  EXPECT_THAT(rest.model_content,
              StartsWith(absl::StrCat(std::string(6 - absl::StrCat(shown + 1).size(), ' '),
                                      shown + 1, "\tpackage-", shown + 1, " = ")));

  // seq 1 200000: one copy of the output, head and tail, an explicit marker.
  ToolCallResult seq = Sh("seq 1 200000");
  ASSERT_TRUE(seq.ok()) << seq.error_message;
  EXPECT_FALSE(seq.payload.HasMember("combined_output"));  // stdout only: no second copy
  EXPECT_TRUE(Flag(seq.payload, "truncated"));
  EXPECT_LE(Utf8Chars(testing::Str(seq.payload, "stdout")), kBudget);
  // JSON escapes each newline as two characters.
  EXPECT_LT(ToJsonString(seq.payload).size(), kBudget * 5 / 4);
  EXPECT_LE(Utf8Chars(seq.model_content), kBudget);
  EXPECT_THAT(seq.model_content, StartsWith("The command exited with exit code 0 after "));
  EXPECT_THAT(seq.model_content, HasSubstr("Output (stdout):\n1\n2\n3\n"));
  EXPECT_THAT(seq.model_content, EndsWith("\n199999\n200000\n"));
  EXPECT_THAT(seq.model_content,
              HasSubstr(" bytes omitted; rerun piped through | tail, | head or | grep, or "
                        "redirect the output to a file and read it with view_file ...]\n"));

  // The test run: its summary, on the last line, survives.
  ToolCallResult tests = Sh("bash run_tests.sh");
  ASSERT_TRUE(tests.ok()) << tests.error_message;
  EXPECT_LE(Utf8Chars(tests.model_content), kBudget);
  EXPECT_THAT(tests.model_content, HasSubstr("bytes omitted"));
  EXPECT_THAT(tests.model_content,
              EndsWith("test_case_20000 PASSED\n============ 20000 passed in 3.21s ============\n"));

  // A failing command: the exit code first, then what it printed.
  ToolCallResult failing = Sh("echo 'ImportError: no module named foo' >&2; exit 3");
  ASSERT_TRUE(failing.ok()) << failing.error_message;
  EXPECT_EQ(failing.model_content,
            absl::StrCat("The command exited with exit code 3 after ",
                         testing::Int(failing.payload, "duration_ms"),
                         "ms.\nOutput (stderr):\nImportError: no module named foo\n"));

  // Both streams: one interleaved copy for the model.
  ToolCallResult both = Sh("echo out; echo err >&2");
  ASSERT_TRUE(both.ok());
  EXPECT_THAT(both.model_content, HasSubstr("Output (stdout and stderr, interleaved):\n"));

  // An unknown tool and bad arguments: an instruction, not a stack of fields.
  ToolCallResult unknown = Call("edit_fil", R"({"file_path":"a"})");
  EXPECT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.model_content, StartsWith("Error from edit_fil (UNKNOWN_TOOL): unknown tool"));
  EXPECT_THAT(unknown.model_content,
              EndsWith("\nNo tool has that name. Call only the tools you were given, spelled "
                       "exactly as declared."));
  ToolCallResult bad = Call("view_file", R"({"start_line":"x"})");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.model_content, StartsWith("Error from view_file (INVALID_ARGUMENTS): "));
  EXPECT_THAT(bad.model_content, HasSubstr("Correct them as the error says"));
  ToolCallResult missing = Call("view_file", R"({"file_path":"nope.txt"})");
  EXPECT_FALSE(missing.ok());
  EXPECT_THAT(missing.model_content, StartsWith("Error from view_file (TOOL_FAILED): "));
  EXPECT_THAT(missing.model_content, HasSubstr("nope.txt"));

  // A timeout says which timer fired and what to do.
  ToolCallResult wall = Sh("echo started; sleep 5", R"("timeout_ms":300)");
  ASSERT_TRUE(wall.ok()) << wall.error_message;
  EXPECT_THAT(wall.model_content,
              StartsWith("The command timed out: it ran longer than timeout_ms (300 ms)"));
  EXPECT_THAT(wall.model_content, HasSubstr("larger timeout_ms, or with background:true"));
  EXPECT_THAT(wall.model_content, EndsWith("Output (stdout):\nstarted\n"));
  ToolCallResult idle = Sh("sleep 5", R"("idle_timeout_ms":300)");
  ASSERT_TRUE(idle.ok()) << idle.error_message;
  EXPECT_THAT(idle.model_content,
              StartsWith("The command hit its idle timeout: it printed nothing for "
                         "idle_timeout_ms (300 ms)"));
  EXPECT_THAT(idle.model_content, EndsWith("\n(no output)"));

  // The figures for this session (characters / 4 as tokens).
  std::cout << "replayed session: model_content " << model_chars_ << " chars (~"
            << model_chars_ / 4 << " tokens), payload JSON " << payload_chars_ << " chars (~"
            << payload_chars_ / 4 << " tokens)\n";
  RecordProperty("model_content_tokens", static_cast<int>(model_chars_ / 4));
  RecordProperty("payload_tokens", static_cast<int>(payload_chars_ / 4));
}

TEST_F(ModelContentSessionTest, RequestBudgetCutsListingsAndSaysHowMuchIsShown) {
  for (int i = 0; i < 300; ++i) tree_.Write(absl::StrCat("pkg/file_", 1000 + i, ".py"), "x = 1\n");
  ToolCallResult found = Call("find_file", R"({"pattern":"*.py"})", 1000);
  ASSERT_TRUE(found.ok()) << found.error_message;
  EXPECT_TRUE(Flag(found.payload, "truncated"));
  EXPECT_EQ(Int(found.payload, "count"), 300);
  const size_t kept = found.payload["paths"].Size();
  EXPECT_GT(kept, 5u);
  EXPECT_LT(kept, 300u);
  EXPECT_LE(Utf8Chars(found.model_content), 1000u);
  EXPECT_THAT(found.model_content,
              EndsWith(absl::StrCat("\n[showing the first ", kept,
                                    " of 300 paths; narrow the pattern or directory_path]")));

  ToolCallResult grep = Call("grep_search", R"({"pattern":"x = ","output_mode":"content"})", 1000);
  ASSERT_TRUE(grep.ok()) << grep.error_message;
  EXPECT_TRUE(Flag(grep.payload, "truncated"));
  EXPECT_LE(Utf8Chars(grep.model_content), 1000u);
  EXPECT_THAT(grep.model_content, HasSubstr("[showing the first "));
  EXPECT_THAT(grep.model_content, HasSubstr(" of 300 matching lines; "));

  ToolCallResult listed = Call("list_directory", R"({"directory_path":"pkg"})", 1000);
  ASSERT_TRUE(listed.ok()) << listed.error_message;
  EXPECT_TRUE(Flag(listed.payload, "truncated"));
  EXPECT_LE(Utf8Chars(listed.model_content), 1000u);
  EXPECT_THAT(listed.model_content, HasSubstr(" of 300 entries; "));

  // Below the floor, a request gets the floor; above the cap, the cap.
  std::string big(500000, 'y');
  tree_.Write("big.txt", big);
  ToolCallResult tiny = Call("view_file", R"({"file_path":"big.txt"})", 1);
  ASSERT_TRUE(tiny.ok()) << tiny.error_message;
  EXPECT_LE(Utf8Chars(tiny.model_content), kMinModelContentChars);
  EXPECT_TRUE(Flag(tiny.payload, "truncated"));  // its only line was cut
  EXPECT_FALSE(tiny.payload.HasMember("next_start_line"));
  EXPECT_THAT(tiny.model_content, EndsWith("line 1 was cut: it is too long to show; search it "
                                           "with grep_search]"));
  ToolCallResult huge = Call("run_command", R"({"command_line":"cat big.txt"})", 10000000);
  ASSERT_TRUE(huge.ok()) << huge.error_message;
  EXPECT_LE(Utf8Chars(huge.model_content), kDefaultModelContentMaxChars);
  EXPECT_GT(Utf8Chars(huge.model_content), kDefaultModelContentMaxChars / 2);
}

// A tool without a rendering of its own gets its payload as JSON, cut to the
// budget; a failure gets the runtime's.
TEST_F(ModelContentSessionTest, DefaultRenderingIsThePayloadJson) {
  ToolCallResult r = Call("exit_loop", "{}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.model_content, "{}");
}

}  // namespace
}  // namespace toolexec

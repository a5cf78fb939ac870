// grep_search through the runner: output modes, options, caps, errors,
// confinement, display and summary [Failures are results] [Arguments] [Display].
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/builtin/search_test_util.h"

namespace toolexec {
namespace {

using search_testing::MatchLines;
using search_testing::SearchToolsHarness;
using search_testing::Strings;
using search_testing::TempWorkspace;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class GrepSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_.Write(".gitignore", "gen/\n");
    ws_.Write("src/a.cc", "#include <memory>\nstd::unique_ptr<int> p;\nint main() {}\n");
    ws_.Write("src/b.h", "// TODO: fix\nstd::shared_ptr<T> q;\n");
    ws_.Write("src/c.py", "def main():\n    pass  # todo\n");
    ws_.Write("gen/x.cc", "std::unique_ptr<X> ignored;\n");
    ws_.Write(".secret.cc", "std::unique_ptr<H> hidden;\n");
    ws_.Write("data.bin", std::string("std::unique_ptr<B>\0", 19));
  }
  ToolCallResult Grep(const std::string& args) {
    auto r = h_.Run("grep_search", args);
    EXPECT_TRUE(r.ok()) << r.error_message;
    return r;
  }

  TempWorkspace ws_;
  SearchToolsHarness h_{ws_.path()};
};

TEST_F(GrepSearchTest, FilesWithMatchesIsTheDefault) {
  auto r = Grep(R"({"pattern": "std::\\w+_ptr<"})");
  EXPECT_STREQ(r.payload["output_mode"].GetString(), "files_with_matches");
  EXPECT_THAT(Strings(r.payload, "files"), ElementsAre("src/a.cc", "src/b.h"));
  EXPECT_EQ(r.payload["num_files"].GetUint64(), 2u);
  EXPECT_FALSE(r.payload["truncated"].GetBool());
  EXPECT_EQ(r.payload["binary_files_skipped"].GetUint64(), 1u);
  EXPECT_EQ(r.compact_summary, "[grep_search: 'std::\\w+_ptr<' in .: 2 files]");
  EXPECT_EQ(r.display.title, "'std::\\w+_ptr<' in .");
  EXPECT_EQ(r.display.content, "src/a.cc\nsrc/b.h\n");
}

TEST_F(GrepSearchTest, ContentMode) {
  auto r = Grep(R"({"pattern": "main", "output_mode": "content"})");
  EXPECT_THAT(MatchLines(r.payload),
              ElementsAre("src/a.cc:3:int main() {}", "src/c.py:1:def main():"));
  EXPECT_EQ(r.payload["num_matches"].GetUint64(), 2u);
  EXPECT_EQ(r.compact_summary, "[grep_search: 'main' in .: 2 matches in 2 files]");
  EXPECT_EQ(r.display.content, "src/a.cc:3:int main() {}\nsrc/c.py:1:def main():\n");
}

TEST_F(GrepSearchTest, ContextLines) {
  auto r = Grep(R"({"pattern": "unique", "output_mode": "content", "context_lines": 1})");
  EXPECT_THAT(MatchLines(r.payload),
              ElementsAre("src/a.cc-1-#include <memory>", "src/a.cc:2:std::unique_ptr<int> p;",
                          "src/a.cc-3-int main() {}"));
  EXPECT_TRUE(r.payload["matches"][0]["context"].GetBool());
  EXPECT_FALSE(r.payload["matches"][1].HasMember("context"));
}

TEST_F(GrepSearchTest, CountMode) {
  auto r = Grep(R"({"pattern": "_ptr|main", "output_mode": "count"})");
  ASSERT_EQ(r.payload["counts"].Size(), 3u);
  EXPECT_STREQ(r.payload["counts"][0]["file"].GetString(), "src/a.cc");
  EXPECT_EQ(r.payload["counts"][0]["count"].GetUint64(), 2u);
  EXPECT_EQ(r.payload["num_matches"].GetUint64(), 4u);
  EXPECT_EQ(r.display.content, "src/a.cc:2\nsrc/b.h:1\nsrc/c.py:1\n");
}

TEST_F(GrepSearchTest, CaseInsensitive) {
  EXPECT_THAT(Strings(Grep(R"({"pattern": "todo"})").payload, "files"), ElementsAre("src/c.py"));
  EXPECT_THAT(Strings(Grep(R"({"pattern": "todo", "case_insensitive": true})").payload, "files"),
              ElementsAre("src/b.h", "src/c.py"));
}

TEST_F(GrepSearchTest, GlobFilter) {
  EXPECT_THAT(Strings(Grep(R"({"pattern": "ptr", "glob": "*.h"})").payload, "files"),
              ElementsAre("src/b.h"));
  EXPECT_THAT(Strings(Grep(R"({"pattern": "main", "glob": "!*.py"})").payload, "files"),
              ElementsAre("src/a.cc"));
  EXPECT_THAT(Strings(Grep(R"({"pattern": "main", "glob": "src/*.{cc,py}"})").payload, "files"),
              ElementsAre("src/a.cc", "src/c.py"));
  EXPECT_EQ(Grep(R"({"pattern": "x", "glob": "*.h"})").display.title, "'x' in . (*.h)");
}

TEST_F(GrepSearchTest, PathIsADirectoryOrAFile) {
  EXPECT_THAT(Strings(Grep(R"({"pattern": "ptr", "path": "src/b.h"})").payload, "files"),
              ElementsAre("src/b.h"));
  // An ignored directory named explicitly is searched (as ripgrep does).
  EXPECT_THAT(Strings(Grep(R"({"pattern": "ptr", "path": "gen"})").payload, "files"),
              ElementsAre("gen/x.cc"));
  // An absolute path inside the workspace.
  EXPECT_THAT(
      Strings(Grep(R"({"pattern": "ptr", "path": ")" + ws_.path() + R"(/src"})").payload, "files"),
      ElementsAre("src/a.cc", "src/b.h"));
}

TEST_F(GrepSearchTest, MaxResultsCapsAndSaysTruncated) {
  auto r = Grep(R"({"pattern": ".", "output_mode": "content", "max_results": 2})");
  EXPECT_THAT(MatchLines(r.payload),
              ElementsAre("src/a.cc:1:#include <memory>", "src/a.cc:2:std::unique_ptr<int> p;"));
  EXPECT_TRUE(r.payload["truncated"].GetBool());
  EXPECT_EQ(r.payload["num_matches"].GetUint64(), 7u);
  EXPECT_THAT(r.payload["hint"].GetString(), HasSubstr("first 2 of 7 matching lines"));
  EXPECT_EQ(r.compact_summary, "[grep_search: '.' in .: 7 matches in 3 files, truncated]");
  auto files = Grep(R"({"pattern": ".", "max_results": "1"})");  // [Arguments]: "1" -> 1
  EXPECT_THAT(Strings(files.payload, "files"), ElementsAre("src/a.cc"));
  EXPECT_TRUE(files.payload["truncated"].GetBool());
}

TEST_F(GrepSearchTest, InvalidRegexIsInvalidArguments) {
  auto r = h_.Run("grep_search", R"({"pattern": "foo(bar"})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::kInvalidArguments);
  EXPECT_THAT(r.error_message, HasSubstr("missing )"));
  EXPECT_THAT(r.error_message, HasSubstr("foo(bar"));
  EXPECT_EQ(r.compact_summary, "[grep_search: 'foo(bar' in .: error]");
  EXPECT_EQ(h_.Run("grep_search", R"({"pattern": "x", "output_mode": "lines"})").error->code,
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(h_.Run("grep_search", R"({"pattern": "x", "glob": "!"})").error->code,
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(h_.Run("grep_search", "{}").error->code, ErrorCode::kInvalidArguments);
}

TEST_F(GrepSearchTest, RefusesPathsOutsideTheWorkspace) {
  TempWorkspace outside;
  outside.Write("secret.txt", "needle\n");
  ws_.Symlink(outside.path(), "out");
  ws_.Symlink(outside.Abs("secret.txt"), "out.txt");
  for (const std::string& path :
       {std::string(".."), std::string("../"), outside.path(), std::string("out"),
        std::string("out.txt"), std::string("out/secret.txt"), std::string("src/../../x"),
        std::string("/proc/self/root/etc")}) {
    auto r = h_.Run("grep_search", R"({"pattern": "needle", "path": ")" + path + "\"}");
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.error->code, ErrorCode::kDenied) << path << ": " << r.error_message;
  }
  // Walking the workspace never reaches the symlinked file or directory.
  EXPECT_THAT(Strings(Grep(R"({"pattern": "needle"})").payload, "files"), IsEmpty());
}

TEST_F(GrepSearchTest, DeterministicAcrossRuns) {
  for (int i = 0; i < 40; ++i)
    ws_.Write("many/f" + std::to_string(i % 7) + "/" + std::to_string(i), "hit\nhit\n");
  auto first = Grep(R"({"pattern": "hit", "output_mode": "content", "max_results": 25})");
  for (int run = 0; run < 5; ++run) {
    auto again = Grep(R"({"pattern": "hit", "output_mode": "content", "max_results": 25})");
    EXPECT_EQ(MatchLines(again.payload), MatchLines(first.payload));
  }
  EXPECT_EQ(MatchLines(first.payload).size(), 25u);
}

TEST_F(GrepSearchTest, ReadOnlyAndPermissions) {
  const Tool& tool = *h_.registry().Find("grep_search")->tool;
  EXPECT_TRUE(tool.spec().read_only);
  Json input = *ParseJson(R"({"pattern": "x", "path": "src"})");
  auto p = tool.required_permissions(input);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].value, "src");
  EXPECT_TRUE(p[0].recursive);
  EXPECT_EQ(p[0].level, PermissionLevel::kRead);
}

}  // namespace
}  // namespace toolexec

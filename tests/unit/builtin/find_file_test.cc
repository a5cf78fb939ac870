// find_file through the runner: globs, .gitignore, hidden, caps, confinement.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/builtin/search_test_util.h"

namespace toolexec {
namespace {

using search_testing::SearchToolsHarness;
using search_testing::Strings;
using search_testing::TempWorkspace;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class FindFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_.Write(".gitignore", "build/\n*.log\n!keep.log\n");
    ws_.Write("README.md", "");
    ws_.Write("docs/guide.md", "");
    ws_.Write("src/main.cc", "");
    ws_.Write("src/util.h", "");
    ws_.Write("src/lib/util.cc", "");
    ws_.Write("src/lib/util_test.cc", "");
    ws_.Write("build/gen.cc", "");
    ws_.Write("debug.log", "");
    ws_.Write("keep.log", "");
    ws_.Write(".github/ci.md", "");
    ws_.Write(".git/config.md", "");
  }
  std::vector<std::string> Find(const std::string& args) {
    auto r = h_.Run("find_file", args);
    EXPECT_TRUE(r.ok()) << r.error_message;
    return Strings(r.payload, "paths");
  }

  TempWorkspace ws_;
  SearchToolsHarness h_{ws_.path()};
};

TEST_F(FindFileTest, NameGlobMatchesAtAnyDepth) {
  // Byte order: upper case sorts first.
  EXPECT_THAT(Find(R"({"pattern": "*.md"})"), ElementsAre("README.md", "docs/guide.md"));
  EXPECT_THAT(Find(R"({"pattern": "util*"})"),
              ElementsAre("src/lib/util.cc", "src/lib/util_test.cc", "src/util.h"));
}

TEST_F(FindFileTest, DoubleStarAndAnchoredGlobs) {
  EXPECT_THAT(Find(R"({"pattern": "**/*.cc"})"),
              ElementsAre("src/lib/util.cc", "src/lib/util_test.cc", "src/main.cc"));
  EXPECT_THAT(Find(R"({"pattern": "src/*.h"})"), ElementsAre("src/util.h"));
  EXPECT_THAT(Find(R"({"pattern": "src/**/*_test.cc"})"), ElementsAre("src/lib/util_test.cc"));
  EXPECT_THAT(Find(R"({"pattern": "*.{h,md}", "directory_path": "src"})"),
              ElementsAre("src/util.h"));
}

TEST_F(FindFileTest, PathsAreRelativeToTheWorkspaceAndGlobsToTheDirectory) {
  EXPECT_THAT(Find(R"({"pattern": "lib/*.cc", "directory_path": "src"})"),
              ElementsAre("src/lib/util.cc", "src/lib/util_test.cc"));
}

TEST_F(FindFileTest, DirectoriesEndWithASlash) {
  EXPECT_THAT(Find(R"({"pattern": "lib"})"), ElementsAre("src/lib/"));
}

TEST_F(FindFileTest, HonoursGitignoreAndSkipsHidden) {
  EXPECT_THAT(Find(R"({"pattern": "*.log"})"), ElementsAre("keep.log"));
  EXPECT_THAT(Find(R"({"pattern": "gen.cc"})"), IsEmpty());
  // A hidden directory named explicitly is searched.
  EXPECT_THAT(Find(R"({"pattern": "*.md", "directory_path": ".github"})"),
              ElementsAre(".github/ci.md"));
}

TEST_F(FindFileTest, CapAndTruncated) {
  auto r = h_.Run("find_file", R"({"pattern": "*", "max_results": 2})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_THAT(Strings(r.payload, "paths"), ElementsAre("README.md", "docs/"));
  EXPECT_TRUE(r.payload["truncated"].GetBool());
  EXPECT_EQ(r.payload["count"].GetUint64(), 10u);
  EXPECT_THAT(r.compact_summary, HasSubstr("10 paths, truncated"));
  BuiltinOptions small;
  small.search_max_results = 3;
  SearchToolsHarness h(ws_.path(), small);
  auto clamped = h.Run("find_file", R"({"pattern": "*", "max_results": 100})");
  EXPECT_EQ(Strings(clamped.payload, "paths").size(), 3u);
}

TEST_F(FindFileTest, DisplayAndSummary) {
  auto r = h_.Run("find_file", R"({"pattern": "*.md"})");
  EXPECT_EQ(r.display.title, "'*.md' in .");
  EXPECT_EQ(r.display.content, "README.md\ndocs/guide.md\n");
  EXPECT_EQ(r.compact_summary, "[find_file: '*.md' in .: 2 paths]");
}

TEST_F(FindFileTest, HintForAPlainName) {
  auto r = h_.Run("find_file", R"({"pattern": "guid"})");
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r.payload["hint"].GetString(), HasSubstr("'*guid*'"));
}

TEST_F(FindFileTest, Errors) {
  EXPECT_EQ(h_.Run("find_file", "{}").error->code, ErrorCode::kInvalidArguments);
  EXPECT_EQ(h_.Run("find_file", R"({"pattern": "!"})").error->code, ErrorCode::kInvalidArguments);
  EXPECT_EQ(h_.Run("find_file", R"({"pattern": "*", "directory_path": "../"})").error->code,
            ErrorCode::kDenied);
  EXPECT_EQ(h_.Run("find_file", R"({"pattern": "*", "directory_path": "/"})").error->code,
            ErrorCode::kDenied);
}

TEST(FindFileGlobTest, PosixClassesAndInvalidGlobs) {
  TempWorkspace ws;
  ws.Write(".gitignore", "[[:digit:]].txt\n");
  for (const char* f : {"1.txt", "a.txt", "p].txt", "a2.c", "foo[", "x\\"}) ws.Write(f, "");
  SearchToolsHarness h(ws.path());
  auto find = [&h](const std::string& pattern) {
    auto r = h.Run("find_file", R"({"pattern": ")" + pattern + R"("})");
    EXPECT_TRUE(r.ok()) << r.error_message;
    return Strings(r.payload, "paths");
  };
  EXPECT_THAT(find("*.txt"), ElementsAre("a.txt", "p].txt"));  // as git: only 1.txt ignored
  EXPECT_THAT(find("*[[:digit:]]*"), ElementsAre("a2.c"));
  EXPECT_THAT(find("[[:alpha:]][!.]*"), ElementsAre("a2.c", "foo[", "p].txt", "x\\"));
  // A glob that can match nothing says why, rather than matching a name literally.
  for (const char* bad : {"foo[", "x\\\\", "a[/]b"}) {
    auto r = h.Run("find_file", std::string(R"({"pattern": ")") + bad + R"("})");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error->code, ErrorCode::kInvalidArguments) << bad;
    EXPECT_THAT(r.error_message, HasSubstr("can match nothing")) << bad;
  }
}

TEST(FindFileSymlinkTest, ListsSymlinksWithoutFollowingThem) {
  TempWorkspace outside;
  outside.Write("inner/secret.cc", "");
  TempWorkspace ws;
  ws.Write("a.cc", "");
  ws.Symlink(outside.path(), "out");
  ws.Symlink(outside.Abs("inner/secret.cc"), "link.cc");
  SearchToolsHarness h(ws.path());
  auto r = h.Run("find_file", R"({"pattern": "**/*.cc"})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_THAT(Strings(r.payload, "paths"), ElementsAre("a.cc", "link.cc"));
  EXPECT_THAT(Strings(h.Run("find_file", R"({"pattern": "secret*"})").payload, "paths"), IsEmpty());
}

}  // namespace
}  // namespace toolexec

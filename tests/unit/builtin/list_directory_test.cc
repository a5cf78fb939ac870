// list_directory through the runner ([Arguments] defaults, [Failures are results] errors, [Display] display).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/builtin/search_test_util.h"

namespace toolexec {
namespace {

using search_testing::SearchToolsHarness;
using search_testing::TempWorkspace;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Names(const ToolCallResult& r) {
  std::vector<std::string> out;
  for (const JsonValue& e : r.payload["entries"].GetArray()) {
    out.push_back(std::string(e["name"].GetString()) + ":" + e["type"].GetString());
  }
  return out;
}

TEST(ListDirectoryTest, RegisteredInOrderWithTruthfulMetadata) {
  TempWorkspace ws;
  SearchToolsHarness h(ws.path());
  EXPECT_THAT(h.registry().names(),
              ElementsAre("list_directory", "find_file", "search_directory", "grep_search"));
  for (const auto& t : h.registry().tools()) {
    EXPECT_EQ(t->source, "built-in");
    EXPECT_TRUE(t->tool->spec().read_only) << t->name;
    EXPECT_EQ(t->tool->spec().type, ToolType::kFileRead) << t->name;
  }
}

TEST(ListDirectoryTest, ListsSortedEntriesWithTypeAndSize) {
  TempWorkspace ws;
  ws.Write("b.txt", "12345");
  ws.Write("a/inner.txt", "x");
  ws.Write(".hidden", "");
  ws.Symlink("b.txt", "link");
  SearchToolsHarness h(ws.path());
  auto r = h.Run("list_directory", "{}");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_THAT(Names(r), ElementsAre("a:dir", "b.txt:file", "link:symlink"));
  EXPECT_EQ(r.payload["entries"][1]["size"].GetUint64(), 5u);
  EXPECT_FALSE(r.payload["entries"][0].HasMember("size"));
  EXPECT_STREQ(r.payload["entries"][2]["target"].GetString(), "b.txt");
  EXPECT_STREQ(r.payload["directory"].GetString(), ".");
  EXPECT_FALSE(r.payload["truncated"].GetBool());
  EXPECT_EQ(r.payload["count"].GetUint64(), 3u);
  EXPECT_EQ(r.compact_summary, "[list_directory: .: 3 entries]");
  EXPECT_EQ(r.display.title, ".");
  EXPECT_THAT(r.display.content, HasSubstr("a/\nb.txt  (5 bytes)\nlink -> b.txt\n"));
}

TEST(ListDirectoryTest, HiddenOnRequest) {
  TempWorkspace ws;
  ws.Write(".hidden", "");
  ws.Write("v", "");
  SearchToolsHarness h(ws.path());
  EXPECT_THAT(Names(h.Run("list_directory", R"({"include_hidden": true})")),
              ElementsAre(".hidden:file", "v:file"));
  EXPECT_THAT(Names(h.Run("list_directory", R"({"include_hidden": "true"})")),
              ElementsAre(".hidden:file", "v:file"));  // [Arguments] coercion
}

TEST(ListDirectoryTest, DepthIsBreadthFirstAndNamesAreRelative) {
  TempWorkspace ws;
  ws.Write("src/a/deep/x.cc", "");
  ws.Write("src/b.cc", "");
  ws.Write("src/a/y.cc", "");
  SearchToolsHarness h(ws.path());
  auto r = h.Run("list_directory", R"({"directory_path": "src", "depth": 2})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_STREQ(r.payload["directory"].GetString(), "src");
  EXPECT_THAT(Names(r), ElementsAre("a:dir", "a/deep:dir", "a/y.cc:file", "b.cc:file"));
  auto all = h.Run("list_directory", R"({"directory_path": "src", "depth": 5})");
  EXPECT_THAT(Names(all),
              ElementsAre("a:dir", "a/deep:dir", "a/deep/x.cc:file", "a/y.cc:file", "b.cc:file"));
}

TEST(ListDirectoryTest, CapKeepsShallowLevelsAndSaysTruncated) {
  TempWorkspace ws;
  for (int i = 0; i < 5; ++i) ws.Write("d" + std::to_string(i) + "/f", "");
  BuiltinOptions options;
  options.list_max_entries = 7;
  SearchToolsHarness h(ws.path(), options);
  auto r = h.Run("list_directory", R"({"depth": 2})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_THAT(Names(r), ElementsAre("d0:dir", "d0/f:file", "d1:dir", "d1/f:file", "d2:dir",
                                    "d3:dir", "d4:dir"));
  EXPECT_TRUE(r.payload["truncated"].GetBool());
  EXPECT_THAT(r.payload["hint"].GetString(), HasSubstr("7 entries"));
  EXPECT_EQ(r.compact_summary, "[list_directory: .: 7 entries, truncated]");
}

TEST(ListDirectoryTest, DoesNotDescendIntoSymlinks) {
  TempWorkspace outside;
  outside.Write("secret", "");
  TempWorkspace ws;
  ws.Symlink(outside.path(), "out");
  SearchToolsHarness h(ws.path());
  auto r = h.Run("list_directory", R"({"depth": 3})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_THAT(Names(r), ElementsAre("out:symlink"));
}

TEST(ListDirectoryTest, RefusesPathsOutsideTheWorkspace) {
  TempWorkspace outside;
  TempWorkspace ws;
  ws.Symlink(outside.path(), "out");
  ws.Mkdir("d");
  SearchToolsHarness h(ws.path());
  for (const char* path : {"..", "/etc", "out", "../", "d/../../x", "out/..", "/proc/self/root"}) {
    auto r = h.Run("list_directory", std::string(R"({"directory_path": ")") + path + "\"}");
    ASSERT_FALSE(r.ok()) << path;
    EXPECT_EQ(r.error->code, ErrorCode::kDenied) << path << ": " << r.error_message;
    EXPECT_EQ(r.compact_summary, std::string("[list_directory: ") + path + ": error]");
  }
}

TEST(ListDirectoryTest, ErrorsAreClear) {
  TempWorkspace ws;
  ws.Write("f.txt", "");
  SearchToolsHarness h(ws.path());
  auto file = h.Run("list_directory", R"({"directory_path": "f.txt"})");
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.error_message, HasSubstr("view_file"));
  auto missing = h.Run("list_directory", R"({"directory_path": "nope"})");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error->code, ErrorCode::kToolFailed);
  EXPECT_EQ(h.Run("list_directory", R"({"depth": 0})").error->code, ErrorCode::kInvalidArguments);
}

TEST(ListDirectoryTest, PermissionsAreARecursiveReadOnlyWhenDeep) {
  TempWorkspace ws;
  SearchToolsHarness h(ws.path());
  const Tool& tool = *h.registry().Find("list_directory")->tool;
  Json shallow = *ParseJson(R"({"directory_path": "src"})");
  auto p = tool.required_permissions(shallow);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].kind, PermissionRequirement::Kind::kPath);
  EXPECT_EQ(p[0].value, "src");
  EXPECT_EQ(p[0].level, PermissionLevel::kRead);
  EXPECT_FALSE(p[0].recursive);
  Json deep = *ParseJson(R"({"depth": 3})");
  EXPECT_TRUE(tool.required_permissions(deep)[0].recursive);
}

}  // namespace
}  // namespace toolexec

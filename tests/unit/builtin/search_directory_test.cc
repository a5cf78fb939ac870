// search_directory through the runner: a literal, case-insensitive by
// default, on grep_search's engine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/builtin/search_test_util.h"

namespace toolexec {
namespace {

using search_testing::MatchLines;
using search_testing::SearchToolsHarness;
using search_testing::TempWorkspace;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(SearchDirectoryTest, LiteralCaseInsensitiveByDefault) {
  TempWorkspace ws;
  ws.Write("a.txt", "call foo(x)\nFOO(Y)\nfoo.x\n");
  ws.Write("sub/b.txt", "nothing\nfoo(\n");
  SearchToolsHarness h(ws.path());
  auto r = h.Run("search_directory", R"({"query": "foo("})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_THAT(MatchLines(r.payload),
              ElementsAre("a.txt:1:call foo(x)", "a.txt:2:FOO(Y)", "sub/b.txt:2:foo("));
  EXPECT_EQ(r.payload["num_matches"].GetUint64(), 3u);
  EXPECT_EQ(r.payload["num_files"].GetUint64(), 2u);
  EXPECT_EQ(r.compact_summary, "[search_directory: 'foo(' in .: 3 matches in 2 files]");
  EXPECT_EQ(r.display.content, "a.txt:1:call foo(x)\na.txt:2:FOO(Y)\nsub/b.txt:2:foo(\n");

  auto exact = h.Run("search_directory", R"({"query": "foo(", "case_sensitive": true})");
  EXPECT_THAT(MatchLines(exact.payload), ElementsAre("a.txt:1:call foo(x)", "sub/b.txt:2:foo("));
  // Regex characters are literal.
  auto dot = h.Run("search_directory", R"({"query": "o.x"})");
  EXPECT_THAT(MatchLines(dot.payload), ElementsAre("a.txt:3:foo.x"));
}

TEST(SearchDirectoryTest, SkipsHiddenIgnoredAndBinary) {
  TempWorkspace ws;
  ws.Write(".gitignore", "*.gen\n");
  ws.Write("x.gen", "needle\n");
  ws.Write(".h", "needle\n");
  ws.Write("b.bin", std::string("needle\0", 7));
  ws.Write("ok.txt", "needle\n");
  SearchToolsHarness h(ws.path());
  auto r = h.Run("search_directory", R"({"query": "needle"})");
  EXPECT_THAT(MatchLines(r.payload), ElementsAre("ok.txt:1:needle"));
  EXPECT_EQ(r.payload["binary_files_skipped"].GetUint64(), 1u);
}

TEST(SearchDirectoryTest, NumResultsCaps) {
  TempWorkspace ws;
  std::string text;
  for (int i = 0; i < 50; ++i) text += "hit\n";
  ws.Write("f.txt", text);
  SearchToolsHarness h(ws.path());
  auto r = h.Run("search_directory", R"({"query": "hit", "num_results": 3})");
  EXPECT_THAT(MatchLines(r.payload), ElementsAre("f.txt:1:hit", "f.txt:2:hit", "f.txt:3:hit"));
  EXPECT_TRUE(r.payload["truncated"].GetBool());
  EXPECT_EQ(r.payload["num_matches"].GetUint64(), 50u);
  EXPECT_THAT(r.payload["hint"].GetString(), HasSubstr("first 3 of 50"));
}

TEST(SearchDirectoryTest, Errors) {
  TempWorkspace ws;
  SearchToolsHarness h(ws.path());
  EXPECT_EQ(h.Run("search_directory", "{}").error->code, ErrorCode::kInvalidArguments);
  EXPECT_EQ(h.Run("search_directory", R"({"query": ""})").error->code,
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(h.Run("search_directory", R"({"query": "x", "directory_path": "../.."})").error->code,
            ErrorCode::kDenied);
  auto missing = h.Run("search_directory", R"({"query": "x", "directory_path": "nope"})");
  EXPECT_EQ(missing.error->code, ErrorCode::kToolFailed);
  EXPECT_THAT(missing.error_message, HasSubstr("nope"));
}

TEST(SearchDirectoryTest, MultilineQueryMatchesNothing) {
  TempWorkspace ws;
  ws.Write("f.txt", "a\nb\n");
  SearchToolsHarness h(ws.path());
  auto r = h.Run("search_directory", "{\"query\": \"a\\nb\"}");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_THAT(MatchLines(r.payload), IsEmpty());
}

}  // namespace
}  // namespace toolexec

#include "tools/runtime/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace toolexec {
namespace {

using ::testing::HasSubstr;

TEST(ParseJsonTest, ParsesValues) {
  auto doc = ParseJson(R"( {"a": [1, 2.5, "x", true, null]} )");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(ToJsonString(*doc), R"({"a":[1,2.5,"x",true,null]})");
}

TEST(ParseJsonTest, ReportsOffsetOfError) {
  auto doc = ParseJson(R"({"a": })");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(doc.status().message(), HasSubstr("offset"));
}

TEST(ParseJsonTest, RejectsTrailingText) {
  EXPECT_FALSE(ParseJson("{} {}").ok());
  EXPECT_TRUE(ParseJson("{}  \n").ok());
}

TEST(ParseJsonTest, RejectsInvalidUtf8) { EXPECT_FALSE(ParseJson("\"\xff\"").ok()); }

TEST(ParseJsonTest, DepthLimit) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  auto doc = ParseJson(deep);
  ASSERT_FALSE(doc.ok());
  EXPECT_THAT(doc.status().message(), HasSubstr("deeper than 64"));
  std::string ok(64, '[');
  ok += std::string(64, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
}

TEST(ParseJsonTest, HostileDepthDoesNotOverflowTheStack) {
  std::string deep(1000000, '[');
  EXPECT_FALSE(ParseJson(deep, 2000000).ok());  // unterminated, but no crash
}

TEST(JsonDepthTest, CountsNesting) {
  EXPECT_EQ(JsonDepth(*ParseJson("1")), 0);
  EXPECT_EQ(JsonDepth(*ParseJson("{}")), 1);
  EXPECT_EQ(JsonDepth(*ParseJson(R"({"a":[[1]]})")), 3);
}

}  // namespace
}  // namespace toolexec

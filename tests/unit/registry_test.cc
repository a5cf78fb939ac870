// S1: unique names, registration order; S6 tool sets.
#include "tools/runtime/tool_registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/common/test_tools.h"
#include "tools/runtime/tool_sets.h"

namespace toolexec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeTool;

absl::StatusOr<Json> Nothing(const JsonValue&, ToolContext&) { return Json(); }

TEST(RegistryTest, KeepsRegistrationOrder) {
  ToolRegistry r;
  for (const char* n : {"zeta", "alpha", "mid"}) ASSERT_TRUE(r.Register(MakeTool(n, Nothing), "test").ok());
  EXPECT_THAT(r.names(), ElementsAre("zeta", "alpha", "mid"));
  EXPECT_EQ(r.Find("alpha")->position, 1u);
  EXPECT_EQ(r.Find("nope"), nullptr);
}

TEST(RegistryTest, DuplicateNameIsAnErrorNamingBothSources) {
  ToolRegistry r;
  ASSERT_TRUE(r.Register(MakeTool("get_weather", Nothing), "example").ok());
  absl::Status s = r.Register(MakeTool("get_weather", Nothing), "config");
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s.message(), HasSubstr("get_weather"));
  EXPECT_THAT(s.message(), HasSubstr("example"));
  EXPECT_THAT(s.message(), HasSubstr("config"));
  EXPECT_EQ(r.size(), 1u);  // never silently replaced
}

TEST(RegistryTest, InvalidSchemaIsAStartUpError) {
  ToolRegistry r;
  absl::Status s = r.Register(MakeTool("bad", Nothing, "{not json"), "test");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("bad"));
  EXPECT_EQ(r.size(), 0u);
}

TEST(RegistryTest, RejectsBadNames) {
  ToolRegistry r;
  EXPECT_FALSE(r.Register(MakeTool("", Nothing), "test").ok());
  EXPECT_FALSE(r.Register(MakeTool("has space", Nothing), "test").ok());
  EXPECT_FALSE(r.Register(MakeTool(std::string(65, 'a'), Nothing), "test").ok());
}

TEST(ToolSetsTest, SetsAreExactAndInRegistrationOrder) {
  ToolRegistry r;
  for (const char* n : {"run_command", "view_file", "finish", "create_file", "edit_file",
                        "str_replace_based_edit_tool", "apply_patch", "list_directory",
                        "grep_search", "find_file", "search_directory", "custom"}) {
    ASSERT_TRUE(r.Register(MakeTool(n, Nothing), "test").ok());
  }
  auto names = [&](const char* set) {
    std::vector<std::string> out;
    auto selected = SelectToolSet(r, set);
    EXPECT_TRUE(selected.ok());
    for (const auto* t : *selected) out.push_back(t->name);
    return out;
  };
  EXPECT_THAT(names("read_only"),
              ElementsAre("view_file", "finish", "list_directory", "find_file", "search_directory"));
  EXPECT_THAT(names("file_tools"), ElementsAre("view_file", "create_file", "edit_file",
                                               "str_replace_based_edit_tool", "apply_patch"));
  EXPECT_THAT(names("path_scoped"),
              ElementsAre("view_file", "create_file", "edit_file", "str_replace_based_edit_tool",
                          "apply_patch", "list_directory", "grep_search", "find_file",
                          "search_directory"));
  EXPECT_THAT(names("minimal"), ElementsAre("run_command", "view_file", "create_file", "edit_file",
                                            "list_directory", "search_directory"));
  EXPECT_EQ(names("nondestructive").size(), 11u);
  EXPECT_EQ(names("all").size(), 12u);
  EXPECT_EQ(names("").size(), 12u);
  auto bad = SelectToolSet(r, "everything");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("read_only"));
}

}  // namespace
}  // namespace toolexec

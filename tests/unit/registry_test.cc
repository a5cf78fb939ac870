// [Names and order]: unique names, registration order; [Tool sets] tool sets.
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

// [Tool sets]: a set is the tools with its tag, whoever registered them, in
// registration order; the names of the tools play no part.
TEST(ToolSetsTest, SetsComeFromTagsInRegistrationOrder) {
  ToolRegistry r;
  auto add = [&](const char* name, std::initializer_list<absl::string_view> tags) {
    ASSERT_TRUE(r.Register(std::make_unique<testing::FnTool>(
                               ToolSpec(name, "", testing::kAnyObject).Tags(tags), Nothing),
                           "test")
                    .ok());
  };
  add("shell", {kTagDestructive, kTagMinimal});
  add("reader", {kTagReadOnly, kTagFile, kTagPathScoped, kTagMinimal});
  add("plugin_lookup", {kTagReadOnly});
  add("writer", {kTagFile, kTagPathScoped});
  add("run_command", {});  // a name alone puts a tool in no set and out of none
  auto names = [&](const char* set) {
    std::vector<std::string> out;
    auto selected = SelectToolSet(r, set);
    EXPECT_TRUE(selected.ok());
    for (const auto* t : *selected) out.push_back(t->name);
    return out;
  };
  EXPECT_THAT(names("read_only"), ElementsAre("reader", "plugin_lookup"));
  EXPECT_THAT(names("file_tools"), ElementsAre("reader", "writer"));
  EXPECT_THAT(names("path_scoped"), ElementsAre("reader", "writer"));
  EXPECT_THAT(names("minimal"), ElementsAre("shell", "reader"));
  EXPECT_THAT(names("nondestructive"),
              ElementsAre("reader", "plugin_lookup", "writer", "run_command"));
  EXPECT_EQ(names("all").size(), 5u);
  EXPECT_EQ(names("").size(), 5u);
  // The read_only tag makes the declaration read-only too.
  EXPECT_TRUE(r.Find("plugin_lookup")->tool->spec().read_only);
  EXPECT_FALSE(r.Find("writer")->tool->spec().read_only);
  auto bad = SelectToolSet(r, "everything");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("read_only"));
}

TEST(ToolSpecTest, DefaultsAndServerName) {
  testing::FnTool plain(ToolSpec("plain", "d", testing::kAnyObject), Nothing);
  EXPECT_EQ(plain.spec().display_name, "plain");
  EXPECT_EQ(plain.display_title(Json()), "plain");
  ToolRegistry r;
  ASSERT_TRUE(
      r.Register(std::make_unique<testing::FnTool>(
                     ToolSpec("remote", "d", testing::kAnyObject).ServerName("srv"), Nothing),
                 "test")
          .ok());
  EXPECT_EQ(r.Find("remote")->server_name, "srv");
}

}  // namespace
}  // namespace toolexec

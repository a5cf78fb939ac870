// [Tool sets]: the named tool sets over the built-in tools, derived from their tags.
#include "tools/runtime/tool_sets.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/builtin.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {
namespace {

using ::testing::ElementsAre;

class BuiltinToolSetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BuiltinOptions options;
    options.declared_tools = {"ask_question", "web_search"};
    ASSERT_TRUE(RegisterFileTools(registry_, options).ok());
    ASSERT_TRUE(RegisterSearchTools(registry_, options).ok());
    ASSERT_TRUE(RegisterCommandTools(registry_, options).ok());
    ASSERT_TRUE(RegisterControlTools(registry_, options).ok());
    ASSERT_TRUE(RegisterDeclaredTools(registry_, options).ok());
  }

  std::vector<std::string> Names(const char* set) {
    std::vector<std::string> out;
    auto selected = SelectToolSet(registry_, set);
    EXPECT_TRUE(selected.ok()) << selected.status();
    if (selected.ok()) {
      for (const auto* t : *selected) out.push_back(t->name);
    }
    return out;
  }

  ToolRegistry registry_;
};

TEST_F(BuiltinToolSetsTest, SeedSetsAreExactlyDesignsInRegistrationOrder) {
  EXPECT_THAT(Names("read_only"), ElementsAre("view_file", "list_directory", "find_file",
                                              "search_directory", "finish"));
  // Exactly upstream's three: harnesses ported from the SDK rely on it.
  EXPECT_THAT(Names("file_tools"), ElementsAre("view_file", "create_file", "edit_file"));
  // The tools in the providers' own shapes are a set of their own.
  EXPECT_THAT(Names("provider_tools"),
              ElementsAre("str_replace_based_edit_tool", "apply_patch", "bash", "shell"));
  EXPECT_THAT(Names("path_scoped"),
              ElementsAre("view_file", "create_file", "edit_file", "str_replace_based_edit_tool",
                          "apply_patch", "list_directory", "find_file", "search_directory",
                          "grep_search"));
  EXPECT_THAT(Names("minimal"), ElementsAre("view_file", "create_file", "edit_file",
                                            "list_directory", "search_directory", "run_command"));
  std::vector<std::string> all = Names("all");
  EXPECT_EQ(all.size(), registry_.size());
  std::vector<std::string> nondestructive = Names("nondestructive");
  // Every tool that runs commands is destructive: run_command, and the
  // persistent shell's bash and shell.
  for (const char* shell : {"run_command", "bash", "shell"}) {
    all.erase(std::find(all.begin(), all.end(), shell));
  }
  EXPECT_EQ(nondestructive, all);
}

// A read-only declaration need not be in the read_only set: grep_search and
// load_artifacts write nothing but are not members ([Tool sets] is exact).
TEST_F(BuiltinToolSetsTest, ReadOnlyDeclarationIsNotSetMembership) {
  EXPECT_TRUE(registry_.Find("grep_search")->tool->spec().read_only);
  EXPECT_TRUE(registry_.Find("load_artifacts")->tool->spec().read_only);
  for (const std::string& name : Names("read_only")) {
    EXPECT_TRUE(registry_.Find(name)->tool->spec().read_only) << name;
  }
}

}  // namespace
}  // namespace toolexec

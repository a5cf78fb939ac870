// One rule for invalid UTF-8 on every path that turns bytes into result text:
// each maximal subpart of an ill-formed sequence becomes one U+FFFD
// (tools/runtime/utf8.h), whether the bytes come from a file read
// (view_file), a search (grep_search, search_directory) or a command's output
// (run_command).
#include <filesystem>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;

// A truncated 3-byte and a truncated 4-byte sequence, then a lone
// continuation byte: one U+FFFD each.
constexpr char kBytes[] = "x \xE2\x82 y \xF0\x9F\x98 z \x80 needle";
constexpr char kText[] = "x \xEF\xBF\xBD y \xEF\xBF\xBD z \xEF\xBF\xBD needle";

class Utf8RuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tree_.Write("f.txt", std::string(kBytes) + "\n");
    tree_.Write("n\xE2\x82|.txt", "");  // a name that is not UTF-8
    ASSERT_TRUE(RegisterFileTools(registry_, options_).ok());
    ASSERT_TRUE(RegisterSearchTools(registry_, options_).ok());
    ASSERT_TRUE(RegisterCommandTools(registry_, options_).ok());
    ToolRunner::Options ro;
    ro.default_workspace = testing::RootAt(tree_.path());
    runner_ = std::make_unique<ToolRunner>(&registry_, ro);
  }
  void TearDown() override {
    registry_.Find("run_command")->tool->shutdown();
    runner_.reset();
  }

  std::string Call(const std::string& tool, const std::string& args, const char* member) {
    ToolCallResult r = testing::RunOneCall(*runner_, tool, args);
    EXPECT_TRUE(r.ok()) << tool << ": " << r.error_message;
    return ToJsonString(r.payload[member]);
  }

  testing::TempTree tree_;
  BuiltinOptions options_;
  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(Utf8RuleTest, EveryToolReplacesEachMaximalSubpartOnce) {
  const std::string text = testing::Quoted(kText).substr(1);  // as JSON, without the quote
  const std::string want = text.substr(0, text.size() - 1);
  EXPECT_THAT(Call("view_file", R"({"file_path":"f.txt"})", "content"), HasSubstr(want));
  EXPECT_THAT(Call("grep_search", R"({"pattern":"needle","output_mode":"content"})", "matches"),
              HasSubstr(want));
  EXPECT_THAT(Call("search_directory", R"({"query":"needle"})", "matches"), HasSubstr(want));
  EXPECT_THAT(Call("run_command", R"({"command_line":"cat f.txt"})", "stdout"), HasSubstr(want));
  // Names too.
  const std::string name = "\"n\xEF\xBF\xBD|.txt\"";
  EXPECT_THAT(Call("list_directory", "{}", "entries"), HasSubstr(name));
  EXPECT_THAT(Call("find_file", R"({"pattern":"*.txt"})", "paths"), HasSubstr(name));
}

}  // namespace
}  // namespace toolexec

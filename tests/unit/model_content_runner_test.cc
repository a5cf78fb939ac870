// model_content through the ToolRunner and onto the wire: the budget a batch
// asks for (default, cap, floor), the tool's rendering held to it, failures
// rendered by the runtime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "server/convert.h"
#include "tests/common/test_tools.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::J;
using testing::MakeTool;

// Renders `text` whatever the budget; throws when `text` is "throw".
class RenderingTool final : public Tool {
 public:
  explicit RenderingTool(std::string text)
      : Tool(ToolSpec("render", "renders a fixed text", testing::kAnyObject)),
        text_(std::move(text)) {}
  absl::StatusOr<Json> Call(const JsonValue&, ToolContext&) const override {
    return J(R"({"a":1})");
  }
  std::string model_content(const JsonValue&, const JsonValue&,
                            const ModelContentBudget&) const override {
    if (text_ == "throw") throw std::runtime_error("no rendering");
    return text_;
  }

 private:
  std::string text_;
};

class ModelContentRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Reports the budget the call was given.
    ASSERT_TRUE(registry_
                    .Register(MakeTool("budget",
                                       [](const JsonValue&, ToolContext& ctx) -> absl::StatusOr<Json> {
                                         Json out = MakeObject();
                                         out.AddMember(
                                             "chars",
                                             static_cast<uint64_t>(ctx.info().model_content.max_chars),
                                             out.GetAllocator());
                                         return out;
                                       }),
                              "test")
                    .ok());
    ASSERT_TRUE(registry_.Register(MakeTool("fail", [](const JsonValue&, ToolContext&)
                                                        -> absl::StatusOr<Json> {
                                     return absl::NotFoundError("'x.txt' does not exist");
                                   }),
                                   "test")
                    .ok());
    ToolRunner::Options options;
    options.model_content_default_chars = 1000;
    options.model_content_max_chars = 5000;
    runner_ = std::make_unique<ToolRunner>(&registry_, options);
  }

  ToolCallResult Run(const std::string& name, size_t budget = 0) {
    return testing::RunOneCall(*runner_, name, "", nullptr, std::nullopt, budget);
  }

  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(ModelContentRunnerTest, BudgetIsTheDefaultTheRequestOrTheCap) {
  EXPECT_EQ(Run("budget").model_content, R"({"chars":1000})");
  EXPECT_EQ(Run("budget", 3000).model_content, R"({"chars":3000})");
  EXPECT_EQ(Run("budget", 999999).model_content, R"({"chars":5000})");
  EXPECT_EQ(Run("budget", 5).model_content,
            absl::StrCat(R"({"chars":)", kMinModelContentChars, "}"));
}

TEST_F(ModelContentRunnerTest, FailuresAreInstructions) {
  ToolCallResult r = Run("fail");
  EXPECT_EQ(r.model_content,
            "Error from fail (TOOL_FAILED): 'x.txt' does not exist\nThe tool ran and failed. Fix "
            "the cause the error names (a path, an argument, the file's current content) and "
            "call it again, or take another approach.");
  ToolCallResult unknown = Run("nope");
  EXPECT_THAT(unknown.model_content, StartsWith("Error from nope (UNKNOWN_TOOL): unknown tool"));
}

TEST_F(ModelContentRunnerTest, ARenderingOverBudgetIsCutAndAThrowingOneFallsBack) {
  std::string lines;
  for (int i = 0; i < 2000; ++i) absl::StrAppend(&lines, "row ", i, "\n");
  ASSERT_TRUE(registry_.Register(std::make_unique<RenderingTool>(lines), "test").ok());
  ToolCallResult r = Run("render");
  EXPECT_LE(Utf8Chars(r.model_content), 1000u);
  EXPECT_THAT(r.model_content, StartsWith("row 0\nrow 1\n"));
  EXPECT_THAT(r.model_content, EndsWith("row 1999\n"));
  EXPECT_THAT(r.model_content, HasSubstr(" bytes omitted; the result was cut to fit ...]"));

  ToolRegistry other;
  ASSERT_TRUE(other.Register(std::make_unique<RenderingTool>("throw"), "test").ok());
  ToolRunner runner(&other, {});
  ToolCallResult fallback = testing::RunOneCall(runner, "render", "");
  EXPECT_TRUE(fallback.ok());
  EXPECT_EQ(fallback.model_content, R"({"a":1})");
}

TEST(ModelContentConvertTest, CarriedOnTheWireAndForAResultTooLargeToSend) {
  ToolCallResult r;
  r.name = "t";
  r.payload = J(R"({"a":1})");
  r.model_content = "text for the model";
  v1::ToolResult out;
  ToProto(std::move(r), &out);
  EXPECT_EQ(out.model_content(), "text for the model");

  ToolCallResult big;
  big.name = "big";
  big.payload = J(absl::StrCat(R"({"a":")", std::string(5000, 'x'), R"("})"));
  big.model_content = "stale";
  v1::ToolResult cut;
  ToProto(std::move(big), &cut, 1000);
  EXPECT_EQ(cut.exception().code(), v1::ERROR_CODE_TOOL_FAILED);
  EXPECT_THAT(cut.model_content(), StartsWith("Error from big (TOOL_FAILED): tool 'big' returned "
                                              "a result of "));
}

}  // namespace
}  // namespace toolexec

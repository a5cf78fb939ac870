// finish's output schema (control_tools.finish_output_schema_json) is a
// document of its own: its references resolve against it, and a hostile
// pattern in it neither crashes the daemon nor reaches std::regex.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"
#include "tools/control/control_tools.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;

class FinishSchemaTest : public ::testing::Test {
 protected:
  // The start-up error, if any.
  absl::Status Start(const std::string& output_schema) {
    auto finish = MakeFinishTool(output_schema);
    if (!finish.ok()) return finish.status();
    runner_.reset();
    registry_ = std::make_unique<ToolRegistry>();
    if (absl::Status s = registry_->Register(std::move(*finish), "built-in"); !s.ok()) return s;
    runner_ = std::make_unique<ToolRunner>(registry_.get(), ToolRunner::Options{});
    return absl::OkStatus();
  }
  ToolCallResult Finish(const std::string& args) {
    return testing::RunOneCall(*runner_, "finish", args);
  }

  std::unique_ptr<ToolRegistry> registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(FinishSchemaTest, LocalReferencesResolveAgainstTheOutputSchema) {
  ASSERT_TRUE(Start(R"({"type":"array","items":{"$ref":"#/definitions/item"},
                        "definitions":{"item":{"type":"integer"}}})")
                  .ok());
  EXPECT_EQ(ToJsonString(Finish(R"({"output":[1,2]})").payload), R"({"result":[1,2]})");
  auto bad = Finish(R"({"output":[1,"x"]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error->code, ErrorCode::kInvalidArguments);
  EXPECT_THAT(bad.error_message, HasSubstr("invalid output: output[1]"));
}

TEST_F(FinishSchemaTest, ARootReferenceResolves) {
  ASSERT_TRUE(Start(R"({"$ref":"#/definitions/answer","definitions":{"answer":{
                          "type":"object","required":["score"],
                          "properties":{"score":{"type":"integer"}}}}})")
                  .ok());
  EXPECT_EQ(ToJsonString(Finish(R"({"output":{"score":3}})").payload), R"({"score":3})");
  auto missing = Finish(R"({"output":{}})");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.error_message, HasSubstr("score"));
  // A recursive schema: "#" is the output schema itself.
  ASSERT_TRUE(Start(R"({"type":"object","properties":{"next":{"$ref":"#"},
                                                      "v":{"type":"integer"}}})")
                  .ok());
  EXPECT_TRUE(Finish(R"({"output":{"v":1,"next":{"v":2,"next":{}}}})").ok());
  EXPECT_THAT(Finish(R"({"output":{"next":{"next":{"v":"x"}}}})").error_message,
              HasSubstr("output.next.next.v"));
}

TEST_F(FinishSchemaTest, AnyValueAndBooleanSchemas) {
  ASSERT_TRUE(Start(R"({"type":"string","pattern":"^[ab]*$"})").ok());
  EXPECT_TRUE(Finish(absl::StrCat(R"({"output_string":")", std::string(50000, 'a'), "\"}")).ok());
  EXPECT_THAT(Finish(R"({"output_string":"c"})").error_message, HasSubstr("invalid output: output"));
  ASSERT_TRUE(Start("false").ok());
  EXPECT_FALSE(Finish(R"({"output":1})").ok());
}

// The attack: a lookahead under an unknown keyword, reached through "$ref",
// with a 50,000-character output. Refused at start-up, with the reason.
TEST_F(FinishSchemaTest, AHostilePatternIsAStartUpErrorNotACrash) {
  absl::Status s = Start(R"({"type":"object","x-lib":{"p":{"type":"string","pattern":"^(?=a)[ab]*$"}},
                             "properties":{"s":{"$ref":"#/x-lib/p"}}})");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("finish output schema"));
  EXPECT_THAT(s.message(), HasSubstr("not RE2 syntax"));
  // The same shape in RE2 syntax registers and matches long output with RE2.
  ASSERT_TRUE(Start(R"({"type":"object","x-lib":{"p":{"type":"string","pattern":"^[ab]*$"}},
                        "properties":{"s":{"$ref":"#/x-lib/p"}}})")
                  .ok());
  EXPECT_TRUE(
      Finish(absl::StrCat(R"({"output":{"s":")", std::string(50000, 'a'), "\"}}")).ok());
  EXPECT_THAT(Finish(absl::StrCat(R"({"output":{"s":")", std::string(50000, 'a'), "c\"}}"))
                  .error_message,
              HasSubstr("output.s"));
}

}  // namespace
}  // namespace toolexec

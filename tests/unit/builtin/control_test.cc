// finish, exit_loop, load_artifacts [Actions] [Artifacts] and the tools declared here but
// run elsewhere [Tools run elsewhere], through the runner as the daemon runs them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "tests/common/test_tools.h"
#include "tools/builtin.h"
#include "tools/control/control_tools.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class ControlToolsTest : public ::testing::Test {
 protected:
  void Start(BuiltinOptions options = {}) {
    ASSERT_TRUE(RegisterControlTools(registry_, options).ok());
    ASSERT_TRUE(RegisterDeclaredTools(registry_, options).ok());
    ToolRunner::Options ro;
    ro.artifacts = artifacts_.get();
    runner_ = std::make_unique<ToolRunner>(&registry_, ro);
    sessions_ = std::make_unique<SessionManager>(&registry_, SessionManager::Options{},
                                                 artifacts_.get());
  }
  ToolCallResult RunOne(const std::string& name, const std::string& args,
                        std::shared_ptr<Session> session = nullptr) {
    return testing::RunOneCall(*runner_, name, args, std::move(session));
  }

  std::unique_ptr<ArtifactStore> artifacts_ = NewInMemoryArtifactStore();
  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
  std::unique_ptr<SessionManager> sessions_;
};

TEST_F(ControlToolsTest, FinishReturnsItsOutput) {
  Start();
  EXPECT_EQ(ToJsonString(RunOne("finish", R"({"output":{"answer":42}})").payload),
            R"({"answer":42})");
  EXPECT_EQ(ToJsonString(RunOne("finish", R"({"output":[1,2]})").payload), R"({"result":[1,2]})");
  EXPECT_EQ(ToJsonString(RunOne("finish", R"({"output_string":"done"})").payload),
            R"({"result":"done"})");
  EXPECT_EQ(RunOne("finish", "{}").error->code, ErrorCode::kInvalidArguments);
  EXPECT_EQ(RunOne("finish", R"({"output":1,"output_string":"x"})").error->code,
            ErrorCode::kInvalidArguments);
  EXPECT_TRUE(registry_.Find("finish")->tool->spec().read_only);
}

TEST_F(ControlToolsTest, FinishValidatesAgainstTheConfiguredSchema) {
  BuiltinOptions options;
  options.finish_output_schema =
      R"({"type":"object","required":["score"],"properties":{"score":{"type":"integer"}}})";
  Start(options);
  auto bad = RunOne("finish", R"({"output":{"score":"high"}})");
  EXPECT_EQ(bad.error->code, ErrorCode::kInvalidArguments);
  EXPECT_THAT(bad.error_message, HasSubstr("output.score"));
  // Same coercion as arguments [Arguments]: "7" -> 7, and JSON text -> object.
  EXPECT_EQ(ToJsonString(RunOne("finish", R"({"output":{"score":"7"}})").payload),
            R"({"score":7})");
  EXPECT_EQ(ToJsonString(RunOne("finish", R"({"output_string":"{\"score\":3}"})").payload),
            R"({"score":3})");
}

TEST_F(ControlToolsTest, InvalidFinishSchemaIsAStartUpError) {
  BuiltinOptions options;
  options.finish_output_schema = "{not json";
  EXPECT_EQ(RegisterControlTools(registry_, options).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(ControlToolsTest, ExitLoopEscalatesAndSkipsSummarization) {
  Start();
  auto r = RunOne("exit_loop", "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ToJsonString(r.payload), "{}");
  EXPECT_TRUE(r.actions.escalate);
  EXPECT_TRUE(r.actions.skip_summarization);
}

TEST_F(ControlToolsTest, LoadArtifactsMixInInputOrder) {
  Start();
  auto session = *sessions_->Open({.conversation_id = "conv", .user_id = "u"});
  ArtifactScope scope{"u", "conv"};
  ASSERT_TRUE(artifacts_->Save(scope, "notes.md", {true, "old", "", ""}).ok());
  ASSERT_TRUE(artifacts_->Save(scope, "notes.md", {true, "# Notes", "", "text/markdown"}).ok());
  std::string png("\x89PNG\r\n\x1a\n\0", 9);
  ASSERT_TRUE(artifacts_->Save(scope, "user:logo.png", {false, "", png, "image/png"}).ok());
  auto r = RunOne("load_artifacts",
                  R"({"artifact_names":["user:logo.png","missing.txt","notes.md","../etc"]})",
                  session);
  ASSERT_TRUE(r.ok()) << r.error_message;
  std::string expected = std::string(R"({"artifacts":[)") +
                         R"({"name":"user:logo.png","content":{"mime_type":"image/png","data":")" +
                         absl::Base64Escape(png) + R"(","size_bytes":9}},)" +
                         R"({"name":"missing.txt","error":"Artifact not found"},)" +
                         R"({"name":"notes.md","content":"# Notes"},)" +
                         R"({"name":"../etc","error":"Artifact not found"}]})";
  EXPECT_EQ(ToJsonString(r.payload), expected);
  EXPECT_EQ(RunOne("load_artifacts", R"({"artifact_names":[]})").error->code,
            ErrorCode::kNoContext);
}

TEST_F(ControlToolsTest, DeclaredToolsAreNotExecutableHere) {
  BuiltinOptions options;
  options.declared_tools = {"ask_question", "google_search", "web_search"};
  options.web_search_allowed_domains = {"example.com"};
  options.web_search_max_uses = 3;
  Start(options);
  auto ask = RunOne("ask_question", R"({"questions":[{"question":"ok?"}]})");
  EXPECT_EQ(ask.error->code, ErrorCode::kNotExecutableHere);
  EXPECT_EQ(ask.error_message, "ask_question is executed by the harness");
  EXPECT_EQ(ask.error->tool_name, "ask_question");
  EXPECT_EQ(ask.error->server_name, "");
  auto google = RunOne("google_search", "{}");
  EXPECT_EQ(google.error->code, ErrorCode::kNotExecutableHere);
  EXPECT_EQ(google.error_message, "GoogleSearch is handled internally by Gemini");
  const Tool& web = *registry_.Find("web_search")->tool;
  EXPECT_EQ(web.spec().executor, ToolExecutor::kProvider);
  EXPECT_EQ(
      web.spec().provider_config,
      R"({"type":"web_search_20250305","name":"web_search","allowed_domains":["example.com"],"max_uses":3})");
  EXPECT_EQ(registry_.Find("ask_question")->tool->spec().executor, ToolExecutor::kHarness);
  EXPECT_EQ(registry_.Find("google_search")->tool->spec().provider_config,
            R"({"google_search":{}})");
}

// The model can only pick a subagent it is told about: start_subagent lists
// the configured ones, names as an enum and each description in the text.
TEST(DeclaredToolsConfigTest, StartSubagentListsTheConfiguredSubagents) {
  BuiltinOptions options;
  options.declared_tools = {"start_subagent"};
  ToolRegistry plain;
  ASSERT_TRUE(RegisterDeclaredTools(plain, options).ok());
  const Tool& bare = *plain.Find("start_subagent")->tool;
  EXPECT_EQ(bare.spec().description, "Starts a named subagent on a task and returns its result.");
  EXPECT_THAT(bare.spec().parameters_schema, Not(HasSubstr("enum")));

  options.subagents = {{"researcher", "Reads the code and answers questions."},
                       {"tester", "Runs the tests \"fast\"."}};
  ToolRegistry registry;
  ASSERT_TRUE(RegisterDeclaredTools(registry, options).ok());
  const Tool& tool = *registry.Find("start_subagent")->tool;
  EXPECT_THAT(tool.spec().description,
              HasSubstr("- researcher: Reads the code and answers questions."));
  EXPECT_THAT(tool.spec().description, HasSubstr("- tester: Runs the tests \"fast\"."));
  auto schema = ParseJson(tool.spec().parameters_schema);
  ASSERT_TRUE(schema.ok()) << tool.spec().parameters_schema;
  const JsonValue& name = (*schema)["properties"]["name"];
  ASSERT_TRUE(name.HasMember("enum"));
  ASSERT_EQ(name["enum"].Size(), 2u);
  EXPECT_STREQ(name["enum"][0].GetString(), "researcher");
  EXPECT_STREQ(name["enum"][1].GetString(), "tester");
  EXPECT_STREQ((*schema)["required"][0].GetString(), "name");
}

TEST(DeclaredToolsConfigTest, UnknownOrConflictingOptionsAreErrors) {
  BuiltinOptions options;
  options.declared_tools = {"teleport"};
  ToolRegistry registry;
  absl::Status s = RegisterDeclaredTools(registry, options);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("ask_question"));
  options.declared_tools = {"web_search"};
  options.web_search_allowed_domains = {"a.com"};
  options.web_search_blocked_domains = {"b.com"};
  EXPECT_EQ(RegisterDeclaredTools(registry, options).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace toolexec

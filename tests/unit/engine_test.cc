// The Engine without a transport: request checks, sessions and the drain.
#include "core/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "absl/synchronization/notification.h"
#include "tests/common/sanitizers.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/engine_test_util.h"
#include "tools/runtime/provider_format.h"

namespace toolexec {
namespace {

using toolexec::testing::WithExampleTools;

using ::testing::HasSubstr;
using ::testing::Not;
using toolexec::testing::Call;
using toolexec::testing::Collector;

// A batch of `calls` (move-only, so not from an initializer list).
template <typename... Calls>
BatchSpec Batch(Calls... calls) {
  BatchSpec spec;
  (spec.calls.push_back(std::move(calls)), ...);
  return spec;
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions options;
    options.workspace = tree_.path();
    options.max_calls_per_batch = 2;
    auto engine = CreateEngine(options, WithExampleTools());
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  testing::TempTree tree_;
  std::unique_ptr<Engine> engine_;
  CallerIdentity caller_;
};

TEST(EngineCreateTest, RefusesAWorkspaceThatIsNotAnAbsoluteDirectory) {
  for (std::string workspace : {"", "relative/dir"}) {
    EngineOptions options;
    options.workspace = workspace;
    auto engine = CreateEngine(options, {});
    ASSERT_FALSE(engine.ok()) << "workspace '" << workspace << "'";
    EXPECT_EQ(engine.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(engine.status().message()), HasSubstr("not an absolute path"));
  }
}

TEST_F(EngineTest, RunsABatchInCallOrder) {
  BatchSpec spec = Batch(Call("1", "wait", R"({"ms":50,"value":1})"), Call("2", "get_weather"));
  Collector collector;
  auto batch = engine_->StartBatch(caller_, std::move(spec), &collector);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(engine_->in_flight_batches(), 1);
  collector.Wait();
  ASSERT_EQ(collector.results.size(), 2u);
  EXPECT_EQ(collector.results[0].id, "1");
  EXPECT_EQ(collector.results[1].id, "2");
  EXPECT_TRUE(collector.results[1].ok());
  batch->reset();  // delivered: no longer in flight
  EXPECT_EQ(engine_->in_flight_batches(), 0);
}

TEST_F(EngineTest, RefusesBadBatchesBeforeRunningAnything) {
  Collector collector;
  BatchSpec too_many =
      Batch(Call("1", "get_weather"), Call("2", "get_weather"), Call("3", "get_weather"));
  auto over = engine_->StartBatch(caller_, std::move(too_many), &collector);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(over.status().message(), HasSubstr("the limit is 2"));

  BatchSpec negative = Batch(Call("1", "get_weather"));
  negative.timeout = absl::Seconds(-1);
  EXPECT_EQ(engine_->StartBatch(caller_, std::move(negative), &collector).status().code(),
            absl::StatusCode::kInvalidArgument);

  BatchSpec unknown_session;
  unknown_session.session_id = "s-nope";
  EXPECT_EQ(engine_->StartBatch(caller_, std::move(unknown_session), &collector).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(engine_->in_flight_batches(), 0);
}

TEST_F(EngineTest, SessionWorkspaceMustBeADirectoryInside) {
  tree_.Write("a.txt", "x");
  tree_.Mkdir("proj");
  OpenSessionSpec file;
  file.workspaces = {"a.txt"};
  EXPECT_EQ(engine_->OpenSession(caller_, file).status().code(),
            absl::StatusCode::kInvalidArgument);
  OpenSessionSpec outside;
  outside.workspaces = {"../"};
  EXPECT_THAT(engine_->OpenSession(caller_, outside).status().message(),
              HasSubstr("outside the daemon's workspace"));
  OpenSessionSpec proj;
  proj.workspaces = {"proj"};
  proj.enabled_tools = {"get_weather"};
  auto session = engine_->OpenSession(caller_, proj);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_THAT(session->workspaces, ::testing::ElementsAre(tree_.Abs("proj")));
  EXPECT_THAT(session->tools, ::testing::ElementsAre("get_weather"));
  auto listed = engine_->ListTools(caller_, session->session_id, "");
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0]->name, "get_weather");
}

// A child session never gets a tool its parent may not call, even one its
// own enabled_tools names.
// Opens a parent that may call get_weather only, then its child with its
// own `enabled_tools`.
absl::StatusOr<SessionInfo> OpenChildOfAWeatherSession(Engine& engine, const CallerIdentity& caller,
                                                       std::vector<std::string> enabled_tools) {
  OpenSessionSpec parent;
  parent.enabled_tools = {"get_weather"};
  auto p = engine.OpenSession(caller, parent);
  if (!p.ok()) return p.status();
  OpenSessionSpec child;
  child.parent_session_id = p->session_id;
  child.enabled_tools = std::move(enabled_tools);
  return engine.OpenSession(caller, child);
}

TEST_F(EngineTest, AChildsOwnToolListCannotWidenItsParents) {
  auto c = OpenChildOfAWeatherSession(*engine_, caller_, {"get_weather", "calculate_sum"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->tools, ::testing::ElementsAre("get_weather"));
  BatchSpec spec = Batch(Call("1", "calculate_sum", R"({"numbers":[1,2]})"));
  spec.session_id = c->session_id;
  Collector collector;
  auto batch = engine_->StartBatch(caller_, std::move(spec), &collector);
  ASSERT_TRUE(batch.ok()) << batch.status();
  collector.Wait();
  ASSERT_EQ(collector.results.size(), 1u);
  ASSERT_TRUE(collector.results[0].error.has_value());
  EXPECT_EQ(collector.results[0].error->code, ErrorCode::kDenied);
  EXPECT_THAT(collector.results[0].error_message, HasSubstr("its tools are: get_weather"));
}

// A child whose own list and its parent's leave no tool in common is refused
// at open, as a session whose lists leave none is.
TEST_F(EngineTest, AChildWithNoToolInCommonWithItsParentIsRefused) {
  auto c = OpenChildOfAWeatherSession(*engine_, caller_, {"calculate_sum"});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("the session would have no tools"));
}

TEST_F(EngineTest, DrainWaitsForInFlightBatchesAndRefusesNewWork) {
  BatchSpec spec = Batch(Call("1", "wait", R"({"ms":200,"value":1})"));
  Collector collector;
  auto batch = engine_->StartBatch(caller_, std::move(spec), &collector);
  ASSERT_TRUE(batch.ok());
  // The transport lets go of the batch once it is delivered.
  std::thread deliverer([&] {
    collector.Wait();
    batch->reset();
  });
  EXPECT_TRUE(engine_->Drain(absl::Now() + absl::Seconds(30)));
  deliverer.join();
  ASSERT_EQ(collector.results.size(), 1u);
  EXPECT_TRUE(collector.results[0].ok());
  EXPECT_TRUE(engine_->draining());
  Collector refused;
  BatchSpec late = Batch(Call("1", "get_weather"));
  EXPECT_EQ(engine_->StartBatch(caller_, std::move(late), &refused).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(engine_->OpenSession(caller_, {}).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(engine_->Stop());
}

}  // namespace
}  // namespace toolexec

namespace toolexec {
namespace {

using toolexec::testing::WithExampleTools;

// A tool name the providers reject ("acme.echo": a dot) is declared as
// "acme_echo" (ProviderNames); a call by that name runs the tool under its
// real name, which the result then carries.
TEST(EngineProviderNamesTest, ACallByTheRewrittenNameRunsTheToolUnderItsRealName) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kSkipCommandsUnderTsan;
  testing::TempTree tree;
  EngineOptions options;
  options.workspace = tree.path();
  CommandToolOptions echo;
  echo.name = "acme.echo";
  echo.description = "Echoes its arguments.";
  echo.argv = {"/bin/cat"};
  ToolCatalogueOptions tools;
  tools.command_tools.push_back(echo);
  auto engine = CreateEngine(options, tools);
  ASSERT_TRUE(engine.ok()) << engine.status();
  Collector collector;
  auto batch = (*engine)->StartBatch(
      CallerIdentity(), Batch(Call("1", "acme_echo", R"({"x":1})"), Call("2", "acme_nope")),
      &collector);
  ASSERT_TRUE(batch.ok()) << batch.status();
  collector.Wait();
  ASSERT_EQ(collector.results.size(), 2u);
  EXPECT_TRUE(collector.results[0].ok()) << collector.results[0].error_message;
  EXPECT_EQ(collector.results[0].name, "acme.echo");
  EXPECT_EQ(collector.results[0].called_as, "acme_echo");  // what the transcript answers
  EXPECT_EQ(ToJsonString(collector.results[0].payload), R"({"x":1})");
  ASSERT_TRUE(collector.results[1].error.has_value());
  EXPECT_EQ(collector.results[1].error->code, ErrorCode::kUnknownTool);
  EXPECT_EQ(collector.results[1].called_as, "");
}

// A transcript names a call and its result as the model called the tool,
// which for a rewritten name is not the real one a provider would reject.
TEST(EngineProviderNamesTest, TranscriptsUseTheNameTheModelCalled) {
  Json call = testing::J(R"({"id":"1","name":"acme.echo","called_as":"acme_echo","args":{}})");
  Json result = testing::J(
      R"({"id":"1","name":"acme.echo","called_as":"acme_echo","status":"RESULT_STATUS_SUCCESS",)"
      R"("payload":{},"model_content":"ok"})");
  for (TranscriptFormat f : {TranscriptFormat::kOpenAi, TranscriptFormat::kOpenAiResponses,
                             TranscriptFormat::kAnthropic, TranscriptFormat::kGemini}) {
    Json out;
    out.SetArray();
    AppendToolCallTurn(f, {&call}, out, out.GetAllocator());
    AppendToolResultMessages(f, {&result}, out, out.GetAllocator());
    const std::string text = ToJsonString(out);
    EXPECT_THAT(text, HasSubstr("acme_echo")) << static_cast<int>(f);
    EXPECT_THAT(text, Not(HasSubstr("acme.echo"))) << static_cast<int>(f) << text;
  }
}

}  // namespace
}  // namespace toolexec

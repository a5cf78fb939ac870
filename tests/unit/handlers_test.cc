// The gRPC handlers against a mock Engine, without a server: each converts
// the request into the engine's call, converts the engine's answer into the
// response, and finishes once with the engine's status.
#include <gmock/gmock.h>
#include <grpcpp/test/default_reactor_test_peer.h>
#include <gtest/gtest.h>

#include <optional>

#include "server/artifact_store_service.h"
#include "server/convert.h"
#include "server/tool_executor_service.h"
#include "tests/common/log_lines.h"
#include "tests/common/mock_engine.h"
#include "tests/common/test_tools.h"

namespace toolexec {
namespace {

using ::testing::_;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::Invoke;
using ::testing::Return;
using testing::MockEngine;
using ::testing::HasSubstr;

// One unary call on a context of its own: what the handler finished with.
class UnaryCall {
 public:
  UnaryCall()
      : peer_(&context_, [this](grpc::Status s) {
          ++finishes_;
          status_ = s;
        }) {}
  grpc::CallbackServerContext* context() { return &context_; }
  int finishes() const { return finishes_; }
  const grpc::Status& status() const { return status_; }

 private:
  grpc::CallbackServerContext context_;
  grpc::testing::DefaultReactorTestPeer peer_;
  int finishes_ = 0;
  grpc::Status status_;
};

class HandlersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { spdlog::set_level(spdlog::level::warn); }
  void SetUp() override {
    for (const char* name : {"alpha", "beta", "gamma"}) {
      ASSERT_TRUE(engine_.mutable_registry()
                      .Register(testing::MakeTool(name,
                                                  [](const JsonValue&, ToolContext&)
                                                      -> absl::StatusOr<Json> { return Json(); }),
                                "test")
                      .ok());
    }
    tools_ = std::make_unique<ToolExecutorService>(&engine_, &declarations_, ServerOptions());
    artifacts_ = std::make_unique<ArtifactStoreService>(&engine_);
  }

  const RegisteredTool* Tool(const std::string& name) { return engine_.registry().Find(name); }

  // ListTools as gRPC calls it: the request and the response as bytes.
  v1::ListToolsResponse ListTools(UnaryCall& call, const v1::ListToolsRequest& request) {
    grpc::ByteBuffer in = DeterministicBytes(request), out;
    tools_->ListTools(call.context(), &in, &out);
    v1::ListToolsResponse response;
    if (out.Length() > 0) {
      EXPECT_TRUE((grpc::GenericDeserialize<grpc::ProtoBufferReader, v1::ListToolsResponse>(
                       &out, &response))
                      .ok());
    }
    return response;
  }

  MockEngine engine_;
  ToolDeclarations declarations_;
  std::unique_ptr<ToolExecutorService> tools_;
  std::unique_ptr<ArtifactStoreService> artifacts_;
};

TEST_F(HandlersTest, ListToolsSendsTheEnginesToolsInItsOrder) {
  EXPECT_CALL(engine_, ListTools(_, "s1", "read_only"))
      .WillOnce(Return(ToolList(UnownedSnapshot(&engine_.registry()),
                                {Tool("gamma"), Tool("alpha")})));
  v1::ListToolsRequest request;
  request.set_session_id("s1");
  request.set_tool_set("read_only");
  UnaryCall call;
  v1::ListToolsResponse response = ListTools(call, request);
  EXPECT_EQ(call.finishes(), 1);
  EXPECT_TRUE(call.status().ok());
  ASSERT_EQ(response.tools_size(), 2);
  EXPECT_EQ(response.tools(0).name(), "gamma");
  EXPECT_EQ(response.tools(1).name(), "alpha");
}

TEST_F(HandlersTest, ListToolsPassesTheEnginesErrorOnce) {
  EXPECT_CALL(engine_, ListTools(_, "gone", ""))
      .WillOnce(Return(absl::NotFoundError("session 'gone' not found")));
  v1::ListToolsRequest request;
  request.set_session_id("gone");
  UnaryCall call;
  v1::ListToolsResponse response = ListTools(call, request);
  EXPECT_EQ(call.finishes(), 1);
  EXPECT_EQ(call.status().error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(call.status().error_message(), "session 'gone' not found");
  EXPECT_EQ(response.tools_size(), 0);
}

// One line per RPC, its status message quoted apart from the other fields.
TEST_F(HandlersTest, UnaryLogLineQuotesTheStatusMessage) {
  EXPECT_CALL(engine_, ListTools(_, "gone", "all"))
      .WillOnce(Return(absl::NotFoundError("no session gone")));
  v1::ListToolsRequest request;
  request.set_session_id("gone");
  request.set_tool_set("all");
  UnaryCall call;
  std::vector<std::string> lines;
  {
    testing::CaptureLog log;
    ListTools(call, request);
    lines = log.sink().Lines();
  }
  EXPECT_THAT(lines,
              ElementsAre("ListTools peer= set=all tools=0 status=NOT_FOUND msg=\"no session gone\""));
}

TEST_F(HandlersTest, OpenSessionConvertsTheRequestAndTheSession) {
  v1::OpenSessionRequest request;
  request.set_conversation_id("conv");
  request.set_user_id("ada");
  request.set_parent_session_id("parent");
  request.add_state_keys("k1");
  request.add_enabled_tools("alpha");
  request.add_disabled_tools("beta");
  request.set_subagent("reader");
  request.add_workspaces("proj");
  std::optional<OpenSessionSpec> seen;
  SessionInfo info;
  info.session_id = "s9";
  info.warnings = {"w"};
  info.conversation_id = "conv";
  info.idle = true;
  info.user_id = "ada";
  info.parent_session_id = "parent";
  info.workspaces = {"/ws/proj"};
  info.tools = {"alpha", "gamma"};
  EXPECT_CALL(engine_, OpenSession(_, _)).WillOnce(Invoke([&](const CallerIdentity&,
                                                              OpenSessionSpec spec) {
    seen = std::move(spec);
    return info;
  }));
  v1::Session response;
  UnaryCall call;
  tools_->OpenSession(call.context(), &request, &response);
  EXPECT_TRUE(call.status().ok());
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->conversation_id, "conv");
  EXPECT_EQ(seen->user_id, "ada");
  EXPECT_EQ(seen->parent_session_id, "parent");
  EXPECT_THAT(seen->state_keys, ElementsAre("k1"));
  EXPECT_THAT(seen->enabled_tools, ElementsAre("alpha"));
  EXPECT_THAT(seen->disabled_tools, ElementsAre("beta"));
  EXPECT_EQ(seen->subagent, "reader");
  EXPECT_THAT(seen->workspaces, ElementsAre("proj"));
  EXPECT_EQ(response.session_id(), "s9");
  EXPECT_THAT(response.warnings(), ElementsAre("w"));
  EXPECT_EQ(response.conversation_id(), "conv");
  EXPECT_TRUE(response.idle());
  EXPECT_EQ(response.user_id(), "ada");
  EXPECT_EQ(response.parent_session_id(), "parent");
  EXPECT_THAT(response.workspaces(), ElementsAre("/ws/proj"));
  EXPECT_THAT(response.tools(), ElementsAre("alpha", "gamma"));
}

TEST_F(HandlersTest, OpenSessionWhileDrainingIsUnavailable) {
  EXPECT_CALL(engine_, OpenSession(_, _))
      .WillOnce(Return(absl::UnavailableError("toolexecd is shutting down")));
  v1::OpenSessionRequest request;
  v1::Session response;
  UnaryCall call;
  tools_->OpenSession(call.context(), &request, &response);
  EXPECT_EQ(call.finishes(), 1);
  EXPECT_EQ(call.status().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(response.session_id().empty());
}

TEST_F(HandlersTest, UpdateSessionPassesIdle) {
  SessionInfo info;
  info.session_id = "s1";
  info.idle = true;
  EXPECT_CALL(engine_, UpdateSession(_, "s1", true)).WillOnce(Return(info));
  v1::UpdateSessionRequest request;
  request.set_session_id("s1");
  request.set_idle(true);
  v1::Session response;
  UnaryCall call;
  tools_->UpdateSession(call.context(), &request, &response);
  EXPECT_TRUE(call.status().ok());
  EXPECT_TRUE(response.idle());
}

TEST_F(HandlersTest, CloseSessionConvertsTheMergeAndFinishesWhenTheEngineAnswers) {
  v1::CloseSessionRequest request;
  request.set_session_id("child");
  request.add_output_state_keys("out");
  request.set_merge_policy(v1::STATE_MERGE_POLICY_REJECT_CONFLICTS);
  request.add_merge_exempt_keys("free");
  request.add_artifact_prefixes("report/");
  request.set_discard(true);
  std::function<void(absl::StatusOr<MergeResult>)> answer;
  EXPECT_CALL(engine_, CloseSession(_, "child", _, _))
      .WillOnce(Invoke([&](const CallerIdentity&, const std::string&, MergeOptions merge,
                           std::function<void(absl::StatusOr<MergeResult>)> done) {
        EXPECT_THAT(merge.output_state_keys, ElementsAre("out"));
        EXPECT_TRUE(merge.reject_conflicts);
        EXPECT_THAT(merge.exempt_keys, ElementsAre("free"));
        EXPECT_THAT(merge.artifact_prefixes, ElementsAre("report/"));
        EXPECT_TRUE(merge.discard);
        answer = std::move(done);
      }));
  v1::CloseSessionResponse response;
  UnaryCall call;
  tools_->CloseSession(call.context(), &request, &response);
  // The engine answers later, on its own thread.
  EXPECT_EQ(call.finishes(), 0);
  ASSERT_TRUE(answer);
  MergeResult merged;
  merged.state_delta = testing::J(R"({"out": 3})");
  merged.artifact_delta["report/a"] = 2;
  answer(std::move(merged));
  EXPECT_EQ(call.finishes(), 1);
  EXPECT_TRUE(call.status().ok());
  EXPECT_EQ(response.merged().state_delta().fields().at("out").number_value(), 3);
  EXPECT_EQ(response.merged().artifact_delta().at("report/a"), 2);
}

TEST_F(HandlersTest, CloseSessionRefusedMergeIsFailedPrecondition) {
  EXPECT_CALL(engine_, CloseSession(_, "child", _, _))
      .WillOnce(Invoke([](const CallerIdentity&, const std::string&, MergeOptions,
                          std::function<void(absl::StatusOr<MergeResult>)> done) {
        done(absl::FailedPreconditionError("attempted unauthorized state write to 'x'"));
      }));
  v1::CloseSessionRequest request;
  request.set_session_id("child");
  v1::CloseSessionResponse response;
  UnaryCall call;
  tools_->CloseSession(call.context(), &request, &response);
  EXPECT_EQ(call.finishes(), 1);
  EXPECT_EQ(call.status().error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_FALSE(response.has_merged());
}

TEST_F(HandlersTest, GetStatePassesTheKeysAndConvertsTheState) {
  EXPECT_CALL(engine_, GetState(_, "s1", ElementsAre("a", "b")))
      .WillOnce(Return(testing::J(R"({"a": "x", "b": [1, 2]})")));
  v1::GetStateRequest request;
  request.set_session_id("s1");
  request.add_keys("a");
  request.add_keys("b");
  v1::GetStateResponse response;
  UnaryCall call;
  tools_->GetState(call.context(), &request, &response);
  EXPECT_TRUE(call.status().ok());
  EXPECT_EQ(response.state().fields().at("a").string_value(), "x");
  EXPECT_EQ(response.state().fields().at("b").list_value().values_size(), 2);
}

TEST_F(HandlersTest, RespondPermissionNeedsAnIdAndADecision) {
  v1::RespondPermissionRequest request;
  v1::RespondPermissionResponse response;
  UnaryCall no_id;
  request.set_decision(v1::PERMISSION_DECISION_ALLOW_ONCE);
  tools_->RespondPermission(no_id.context(), &request, &response);
  EXPECT_EQ(no_id.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(no_id.status().error_message(), HasSubstr("request_id is required"));
  UnaryCall no_decision;
  request.set_request_id("perm-1");
  request.set_decision(v1::PERMISSION_DECISION_UNSPECIFIED);
  tools_->RespondPermission(no_decision.context(), &request, &response);
  EXPECT_EQ(no_decision.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(no_decision.status().error_message(), HasSubstr("decision is required"));
}

TEST_F(HandlersTest, SaveArtifactWithoutContentNeverReachesTheEngine) {
  EXPECT_CALL(engine_, SaveArtifact(_, _, _, _, _)).Times(0);
  v1::SaveArtifactRequest request;
  request.set_session_id("s1");
  request.set_name("a");
  v1::SaveArtifactResponse response;
  UnaryCall call;
  artifacts_->SaveArtifact(call.context(), &request, &response);
  EXPECT_EQ(call.status().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(HandlersTest, SaveArtifactConvertsTheArtifactAndFinishesWhenTheEngineAnswers) {
  std::function<void(absl::StatusOr<int64_t>)> answer;
  EXPECT_CALL(engine_, SaveArtifact(_, "s1", "pic",
                                    ::testing::AllOf(Field(&Artifact::is_text, false),
                                                     Field(&Artifact::data, "\x89PNG"),
                                                     Field(&Artifact::mime_type, "image/png")),
                                    _))
      .WillOnce(Invoke([&](const CallerIdentity&, const std::string&, const std::string&,
                           Artifact, std::function<void(absl::StatusOr<int64_t>)> done) {
        answer = std::move(done);
      }));
  v1::SaveArtifactRequest request;
  request.set_session_id("s1");
  request.set_name("pic");
  request.mutable_artifact()->set_data("\x89PNG");
  request.mutable_artifact()->set_mime_type("image/png");
  v1::SaveArtifactResponse response;
  UnaryCall call;
  artifacts_->SaveArtifact(call.context(), &request, &response);
  // The engine answers later, on its own thread.
  EXPECT_EQ(call.finishes(), 0);
  ASSERT_TRUE(answer);
  answer(4);
  EXPECT_EQ(call.finishes(), 1);
  EXPECT_TRUE(call.status().ok());
  EXPECT_EQ(response.version(), 4);
}

TEST_F(HandlersTest, LoadArtifactConvertsTextAndBinary) {
  Artifact text{true, "hello", "", "text/plain"};
  Artifact binary{false, "", "\x01\x02", "application/octet-stream"};
  EXPECT_CALL(engine_, LoadArtifact(_, "s1", "t", 0))
      .WillOnce(Return(std::make_pair(text, int64_t{3})));
  EXPECT_CALL(engine_, LoadArtifact(_, "s1", "b", 2))
      .WillOnce(Return(std::make_pair(binary, int64_t{2})));
  v1::LoadArtifactRequest request;
  request.set_session_id("s1");
  request.set_name("t");
  v1::LoadArtifactResponse response;
  UnaryCall call;
  artifacts_->LoadArtifact(call.context(), &request, &response);
  EXPECT_TRUE(call.status().ok());
  EXPECT_EQ(response.artifact().text(), "hello");
  EXPECT_EQ(response.artifact().mime_type(), "text/plain");
  EXPECT_EQ(response.version(), 3);

  request.set_name("b");
  request.set_version(2);
  v1::LoadArtifactResponse binary_response;
  UnaryCall binary_call;
  artifacts_->LoadArtifact(binary_call.context(), &request, &binary_response);
  EXPECT_EQ(binary_response.artifact().content_case(), v1::Artifact::kData);
  EXPECT_EQ(binary_response.artifact().data(), "\x01\x02");
}

TEST_F(HandlersTest, ArtifactListsAndDeletePassTheEnginesAnswers) {
  EXPECT_CALL(engine_, ListArtifacts(_, "s1"))
      .WillOnce(Return(std::vector<std::string>{"a", "user:b"}));
  EXPECT_CALL(engine_, ListVersions(_, "s1", "a")).WillOnce(Return(std::vector<int64_t>{3, 1}));
  EXPECT_CALL(engine_, DeleteArtifact(_, "s1", "a", 0))
      .WillOnce(Return(absl::NotFoundError("artifact 'a' not found")));
  {
    v1::ListArtifactsRequest request;
    request.set_session_id("s1");
    v1::ListArtifactsResponse response;
    UnaryCall call;
    artifacts_->ListArtifacts(call.context(), &request, &response);
    EXPECT_THAT(response.names(), ElementsAre("a", "user:b"));
  }
  {
    v1::ListVersionsRequest request;
    request.set_session_id("s1");
    request.set_name("a");
    v1::ListVersionsResponse response;
    UnaryCall call;
    artifacts_->ListVersions(call.context(), &request, &response);
    EXPECT_THAT(response.versions(), ElementsAre(3, 1));
  }
  {
    v1::DeleteArtifactRequest request;
    request.set_session_id("s1");
    request.set_name("a");
    v1::DeleteArtifactResponse response;
    UnaryCall call;
    artifacts_->DeleteArtifact(call.context(), &request, &response);
    EXPECT_EQ(call.finishes(), 1);
    EXPECT_EQ(call.status().error_code(), grpc::StatusCode::NOT_FOUND);
  }
}

}  // namespace
}  // namespace toolexec

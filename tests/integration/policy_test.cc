// S12 over gRPC: a policy from the config denies by rule, and an ask rule
// puts a PermissionRequest on the ExecuteBatch stream that RespondPermission
// answers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "absl/synchronization/mutex.h"

#include "google/protobuf/text_format.h"
#include "server/config.h"
#include "server/daemon.h"
#include "spdlog/spdlog.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;

constexpr const char* kPolicy = R"pb(
  policy {
    rules { name: "no shell" tool: "run_command" decision: DECISION_DENY }
    rules { name: "weather needs a yes" tool: "get_weather" decision: DECISION_ASK }
  }
)pb";

class PolicyGrpcTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { spdlog::set_level(spdlog::level::warn); }
  void SetUp() override {
    v1::DaemonConfig config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kPolicy, &config));
    DaemonOptions options;
    std::string log_level;
    ASSERT_TRUE(ApplyConfig(config, &options, &log_level).ok());
    options.server.listen = "127.0.0.1:0";
    options.engine.workspace = std::filesystem::temp_directory_path().string();
    options.engine.example_tools = true;
    auto d = Daemon::Create(options);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
    ASSERT_TRUE(daemon_->Start().ok());
    stub_ = v1::ToolExecutor::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (daemon_) daemon_->Shutdown();
  }

  static v1::ExecuteBatchRequest Batch(const std::string& tool, const std::string& field,
                                       const std::string& value) {
    v1::ExecuteBatchRequest req;
    v1::ToolCall* call = req.add_calls();
    call->set_id("1");
    call->set_name(tool);
    (*call->mutable_args()->mutable_fields())[field].set_string_value(value);
    return req;
  }

  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<v1::ToolExecutor::Stub> stub_;
};

TEST_F(PolicyGrpcTest, DenyRuleFromTheConfigNamesTheRule) {
  grpc::ClientContext ctx;
  auto reader = stub_->ExecuteBatch(&ctx, Batch("run_command", "command_line", "echo hi"));
  v1::ExecuteBatchResponse event;
  ASSERT_TRUE(reader->Read(&event));
  ASSERT_TRUE(event.has_result());
  EXPECT_EQ(event.result().status(), v1::RESULT_STATUS_DENIED);
  EXPECT_EQ(event.result().exception().code(), v1::ERROR_CODE_DENIED);
  EXPECT_THAT(event.result().error_message(), HasSubstr("rule 'no shell'"));
  EXPECT_FALSE(reader->Read(&event));
  EXPECT_TRUE(reader->Finish().ok());
}

TEST_F(PolicyGrpcTest, AskOnTheStreamAnsweredByRespondPermission) {
  for (auto [answer, want] :
       {std::pair{v1::PERMISSION_DECISION_ALLOW_ONCE, v1::RESULT_STATUS_SUCCESS},
        std::pair{v1::PERMISSION_DECISION_DENY, v1::RESULT_STATUS_DENIED}}) {
    grpc::ClientContext ctx;
    auto reader = stub_->ExecuteBatch(&ctx, Batch("get_weather", "city", "Paris"));
    v1::ExecuteBatchResponse event;
    ASSERT_TRUE(reader->Read(&event));
    ASSERT_TRUE(event.has_permission_request()) << event.DebugString();
    const v1::PermissionRequest& asked = event.permission_request();
    EXPECT_EQ(asked.tool_name(), "get_weather");
    EXPECT_EQ(asked.target().kind(), v1::PermissionTarget::KIND_TOOL);
    EXPECT_EQ(asked.target().value(), "get_weather");
    EXPECT_THAT(asked.reason(), HasSubstr("weather needs a yes"));

    grpc::ClientContext respond_ctx;
    v1::RespondPermissionRequest respond;
    respond.set_request_id(asked.request_id());
    respond.set_decision(answer);
    v1::RespondPermissionResponse response;
    ASSERT_TRUE(stub_->RespondPermission(&respond_ctx, respond, &response).ok());

    ASSERT_TRUE(reader->Read(&event));
    ASSERT_TRUE(event.has_result());
    EXPECT_EQ(event.result().status(), want) << event.result().error_message();
    if (want == v1::RESULT_STATUS_DENIED) {
      EXPECT_EQ(event.result().error_message(), "Permission denied by user");
    }
    EXPECT_FALSE(reader->Read(&event));
    EXPECT_TRUE(reader->Finish().ok());
  }
  // An id that is not pending is NOT_FOUND.
  grpc::ClientContext ctx;
  v1::RespondPermissionRequest respond;
  respond.set_request_id("perm-nope");
  respond.set_decision(v1::PERMISSION_DECISION_ALLOW_ONCE);
  v1::RespondPermissionResponse response;
  EXPECT_EQ(stub_->RespondPermission(&ctx, respond, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

TEST_F(PolicyGrpcTest, WatchSessionSeesTheSessionsQuestions) {
  grpc::ClientContext open_ctx;
  v1::OpenSessionRequest open;
  v1::Session session;
  ASSERT_TRUE(stub_->OpenSession(&open_ctx, open, &session).ok());
  grpc::ClientContext watch_ctx;
  v1::WatchSessionRequest watch;
  watch.set_session_id(session.session_id());
  auto watcher = stub_->WatchSession(&watch_ctx, watch);

  // The watch registers asynchronously: ask until a question reaches it.
  absl::Mutex mu;
  std::vector<std::string> seen;
  std::thread watch_reader([&] {
    v1::SessionEvent e;
    while (watcher->Read(&e)) {
      absl::MutexLock lock(&mu);
      if (e.has_permission_request()) seen.push_back(e.permission_request().request_id());
    }
  });
  bool matched = false;
  for (int attempt = 0; attempt < 50 && !matched; ++attempt) {
    v1::ExecuteBatchRequest req = Batch("get_weather", "city", "Oslo");
    req.set_session_id(session.session_id());
    grpc::ClientContext ctx;
    auto reader = stub_->ExecuteBatch(&ctx, req);
    v1::ExecuteBatchResponse event;
    if (!reader->Read(&event) || !event.has_permission_request()) {
      ADD_FAILURE() << "no permission request: " << event.DebugString();
      break;
    }
    const std::string id = event.permission_request().request_id();
    auto arrived = [&] {
      mu.AssertHeld();
      return std::find(seen.begin(), seen.end(), id) != seen.end();
    };
    {
      absl::MutexLock lock(&mu);
      matched = mu.AwaitWithTimeout(absl::Condition(&arrived), absl::Milliseconds(100));
    }
    ctx.TryCancel();  // a cancelled stream cancels the question
    while (reader->Read(&event)) {
      if (event.has_result()) {
        EXPECT_EQ(event.result().status(), v1::RESULT_STATUS_CANCELLED);
      }
    }
    reader->Finish();
  }
  EXPECT_TRUE(matched);
  watch_ctx.TryCancel();
  watch_reader.join();
  watcher->Finish();
}

}  // namespace
}  // namespace toolexec

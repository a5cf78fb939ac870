// [Deciding what runs] over gRPC: a policy from the config denies by rule, and an ask rule
// puts a PermissionRequest on the ExecuteBatch stream that RespondPermission
// answers; the example config's profiles do what it says of them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

#include "google/protobuf/text_format.h"
#include "server/config/config.h"
#include "server/daemon.h"
#include "spdlog/spdlog.h"
#include "tests/unit/builtin/file_test_util.h"
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
  void SetUp() override { StartDaemon(kPolicy, std::filesystem::temp_directory_path().string()); }

  void StartDaemon(const char* text, const std::string& workspace) {
    v1::DaemonConfig config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &config));
    DaemonOptions options;
    std::string log_level;
    ASSERT_TRUE(ApplyConfig(config, &options, &log_level).ok());
    options.server.listen = "127.0.0.1:0";
    options.engine.workspace = workspace;
    options.tools.example_tools = true;
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

// The README's "no secrets" rule holds for searches and through links.
constexpr const char* kNoSecrets = R"pb(
  policy { rules { name: "no secrets" tool: "*" path_glob: "*.env" decision: DECISION_DENY } }
)pb";

class PathPolicyGrpcTest : public PolicyGrpcTest {
 protected:
  void SetUp() override {
    std::string templ = std::filesystem::temp_directory_path().string() + "/toolexec-paths-XXXXXX";
    ASSERT_NE(mkdtemp(templ.data()), nullptr);
    workspace_ = std::filesystem::canonical(templ);
    std::filesystem::create_directories(workspace_ / "app");
    std::ofstream(workspace_ / "app/prod.env") << "API_KEY=sk-secret\n";
    std::ofstream(workspace_ / "app/main.cc") << "// API_KEY is read at start-up\n";
    std::filesystem::create_symlink("app/prod.env", workspace_ / "notes.txt");
    StartDaemon(kNoSecrets, workspace_.string());
  }
  void TearDown() override {
    PolicyGrpcTest::TearDown();
    std::error_code ec;
    std::filesystem::remove_all(workspace_, ec);
  }

  // The one result of a one-call batch.
  v1::ToolResult Run(const v1::ExecuteBatchRequest& req) {
    grpc::ClientContext ctx;
    auto reader = stub_->ExecuteBatch(&ctx, req);
    v1::ExecuteBatchResponse event;
    v1::ToolResult result;
    while (reader->Read(&event)) {
      if (event.has_result()) result = event.result();
    }
    EXPECT_TRUE(reader->Finish().ok());
    return result;
  }

  std::filesystem::path workspace_;
};

TEST_F(PathPolicyGrpcTest, ASearchLeavesOutDeniedFilesAndALinkToOneIsDenied) {
  v1::ExecuteBatchRequest grep = Batch("grep_search", "pattern", "API_KEY");
  (*grep.mutable_calls(0)->mutable_args()->mutable_fields())["output_mode"].set_string_value(
      "content");
  v1::ToolResult found = Run(grep);
  EXPECT_EQ(found.status(), v1::RESULT_STATUS_SUCCESS) << found.error_message();
  EXPECT_THAT(found.model_content(), HasSubstr("app/main.cc:1:"));
  EXPECT_THAT(found.model_content(), ::testing::Not(HasSubstr("sk-secret")));
  EXPECT_THAT(found.model_content(), HasSubstr("[1 file left out by policy]"));

  v1::ToolResult link = Run(Batch("view_file", "file_path", "notes.txt"));
  EXPECT_EQ(link.status(), v1::RESULT_STATUS_DENIED);
  EXPECT_THAT(link.error_message(), HasSubstr("rule 'no secrets'"));
  EXPECT_THAT(link.model_content(), ::testing::Not(HasSubstr("sk-secret")));
}

// The example config (deploy/config/), as the daemon loads it: a session with
// its "supervised" profile is asked before every command and file write, and
// the config's own rules hold there without being repeated.
TEST(ExampleConfigPolicyTest, TheSupervisedProfileAsksBeforeEveryCommandAndWrite) {
  spdlog::set_level(spdlog::level::warn);
  const std::pair<const char*, const char*> calls[] = {
      {"run_command", R"({"command_line":"touch ran"})"},
      {"create_file", R"({"file_path":"new.txt","contents":"x"})"},
      {"edit_file", R"({"file_path":"notes.txt","edits":[{"old_string":"one","new_string":"2"}]})"},
      {"str_replace_based_edit_tool",
       R"({"command":"str_replace","path":"notes.txt","old_str":"one","new_str":"2"})"},
      {"str_replace_based_edit_tool", R"({"command":"create","path":"new.txt","file_text":"x"})"},
      {"str_replace_based_edit_tool",
       R"({"command":"insert","path":"notes.txt","insert_line":0,"new_str":"zero"})"},
      {"apply_patch", R"({"input":"*** Begin Patch\n*** Add File: new.txt\n+x\n*** End Patch\n"})"},
      {"apply_patch",
       R"({"input":"*** Begin Patch\n*** Update File: notes.txt\n@@\n-one\n+2\n*** End Patch\n"})"},
  };
  for (const char* file : {"toolexecd.textproto", "toolexecd.json"}) {
    SCOPED_TRACE(file);
    testing::TempTree tree;
    tree.Write("notes.txt", "one\n");
    tree.Write("secrets.env", "KEY=1\n");
    auto config = LoadConfigFile(absl::StrCat(TOOLEXEC_SOURCE_DIR, "/deploy/config/", file));
    ASSERT_TRUE(config.ok()) << config.status();
    DaemonOptions options;
    std::string log_level;
    ASSERT_TRUE(ApplyConfig(*config, &options, &log_level).ok());
    options.server.listen = "127.0.0.1:0";
    options.engine.workspace = tree.path();
    options.engine.hooks.audit_log = tree.path() + "/audit.jsonl";
    auto daemon = Daemon::Create(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    ASSERT_TRUE((*daemon)->Start().ok());
    auto stub = v1::ToolExecutor::NewStub(
        grpc::CreateChannel((*daemon)->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext open_ctx;
    v1::OpenSessionRequest open;
    open.set_policy_profile("supervised");
    v1::Session session;
    ASSERT_TRUE(stub->OpenSession(&open_ctx, open, &session).ok());
    // The first event of a batch of one call: a question, or its result.
    auto first_event = [&](const std::string& tool, const std::string& args) {
      v1::ExecuteBatchRequest req;
      req.set_session_id(session.session_id());
      v1::ToolCall* call = req.add_calls();
      call->set_id("1");
      call->set_name(tool);
      call->set_args_json(args);
      grpc::ClientContext ctx;
      auto reader = stub->ExecuteBatch(&ctx, req);
      v1::ExecuteBatchResponse event, rest;
      EXPECT_TRUE(reader->Read(&event));
      ctx.TryCancel();  // a cancelled stream cancels the question
      while (reader->Read(&rest)) {
      }
      reader->Finish();
      return event;
    };
    for (const auto& [tool, args] : calls) {
      v1::ExecuteBatchResponse event = first_event(tool, args);
      EXPECT_TRUE(event.has_permission_request()) << tool << " " << args << ": "
                                                  << event.DebugString();
    }
    v1::ExecuteBatchResponse secret = first_event("view_file", R"({"file_path":"secrets.env"})");
    EXPECT_EQ(secret.result().status(), v1::RESULT_STATUS_DENIED) << secret.DebugString();
    EXPECT_THAT(secret.result().error_message(), HasSubstr("rule 'no secrets' of policy 'default'"));
    (*daemon)->Shutdown();
    EXPECT_EQ(tree.Read("notes.txt"), "one\n");
    EXPECT_FALSE(tree.Exists("new.txt"));
    EXPECT_FALSE(tree.Exists("ran"));
  }
}

}  // namespace
}  // namespace toolexec

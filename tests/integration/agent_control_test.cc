// The agent-control tools through a real daemon: artifacts [Artifacts], finish/exit_loop [Actions],
// declared tools [Tools run elsewhere], subagents [Subagents] and child sessions [Delegation].
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "server/daemon.h"
#include "spdlog/spdlog.h"

namespace toolexec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class AgentControlTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { spdlog::set_level(spdlog::level::warn); }
  void TearDown() override {
    if (daemon_) daemon_->Shutdown();
  }

  void Start(DaemonOptions options = {}) {
    if (daemon_) daemon_->Shutdown();
    options.server.listen = "127.0.0.1:0";
    options.engine.workspace = std::filesystem::temp_directory_path().string();
    options.tools.example_tools = true;
    auto d = Daemon::Create(options);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
    ASSERT_TRUE(daemon_->Start().ok());
    client_ = Client::Create(daemon_->address());
    channel_ = grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials());
    artifacts_ = v1::ArtifactStore::NewStub(channel_);
  }

  std::string OpenSession(const std::string& conversation = "", const std::string& user = "",
                          const std::string& parent = "", std::vector<std::string> keys = {}) {
    v1::OpenSessionRequest req;
    req.set_conversation_id(conversation);
    req.set_user_id(user);
    req.set_parent_session_id(parent);
    for (auto& k : keys) req.add_state_keys(k);
    auto s = client_->OpenSession(req);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? s->session_id() : "";
  }

  v1::ToolResult Call(const std::string& name, const std::string& args,
                      const std::string& session = "") {
    v1::ExecuteBatchRequest req;
    req.set_session_id(session);
    *req.add_calls() = *MakeCall("1", name, args);
    auto r = client_->ExecuteBatchCollect(req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() && !r->empty() ? r->at(0) : v1::ToolResult();
  }

  grpc::Status Save(const std::string& session, const std::string& name, const std::string& text,
                    int64_t* version = nullptr, bool binary = false) {
    grpc::ClientContext ctx;
    v1::SaveArtifactRequest req;
    req.set_session_id(session);
    req.set_name(name);
    if (binary) {
      req.mutable_artifact()->set_data(text);
      req.mutable_artifact()->set_mime_type("application/octet-stream");
    } else {
      req.mutable_artifact()->set_text(text);
    }
    v1::SaveArtifactResponse resp;
    grpc::Status s = artifacts_->SaveArtifact(&ctx, req, &resp);
    if (version) *version = resp.version();
    return s;
  }

  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> client_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ArtifactStore::Stub> artifacts_;
};

TEST_F(AgentControlTest, ArtifactRpcs) {
  Start();
  std::string s = OpenSession("conv-a", "alice");
  int64_t v = 0;
  ASSERT_TRUE(Save(s, "notes.md", "one", &v).ok());
  EXPECT_EQ(v, 1);
  ASSERT_TRUE(Save(s, "notes.md", "two", &v).ok());
  EXPECT_EQ(v, 2);
  EXPECT_EQ(Save(s, "../bad", "x").error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Save("s-missing", "a", "x").error_code(), grpc::StatusCode::NOT_FOUND);
  {
    grpc::ClientContext ctx;
    v1::LoadArtifactRequest req;
    req.set_session_id(s);
    req.set_name("notes.md");
    req.set_version(1);
    v1::LoadArtifactResponse resp;
    ASSERT_TRUE(artifacts_->LoadArtifact(&ctx, req, &resp).ok());
    EXPECT_EQ(resp.artifact().text(), "one");
    EXPECT_EQ(resp.version(), 1);
  }
  {
    grpc::ClientContext ctx;
    v1::ListVersionsRequest req;
    req.set_session_id(s);
    req.set_name("notes.md");
    v1::ListVersionsResponse resp;
    ASSERT_TRUE(artifacts_->ListVersions(&ctx, req, &resp).ok());
    EXPECT_THAT(resp.versions(), ElementsAre(2, 1));
  }
  {
    grpc::ClientContext ctx;
    v1::LoadArtifactRequest req;
    req.set_session_id(s);
    req.set_name("nope");
    v1::LoadArtifactResponse resp;
    EXPECT_EQ(artifacts_->LoadArtifact(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  // A tool sees them, in the [Artifacts] shapes, and a "user:" artifact in another session.
  ASSERT_TRUE(Save(s, "user:avatar", std::string("\0\1\2", 3), nullptr, true).ok());
  std::string other = OpenSession("conv-b", "alice");
  auto r = Call("load_artifacts", R"({"artifact_names":["user:avatar","notes.md"]})", other);
  ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  const auto& list = r.payload().struct_value().fields().at("artifacts").list_value();
  EXPECT_EQ(list.values(0).struct_value().fields().at("content").struct_value().fields().at("data")
                .string_value(),
            "AAEC");
  EXPECT_EQ(list.values(1).struct_value().fields().at("error").string_value(), "Artifact not found");
  {
    grpc::ClientContext ctx;
    v1::ListArtifactsRequest req;
    req.set_session_id(s);
    v1::ListArtifactsResponse resp;
    ASSERT_TRUE(artifacts_->ListArtifacts(&ctx, req, &resp).ok());
    EXPECT_THAT(resp.names(), ElementsAre("notes.md", "user:avatar"));
  }
  {
    grpc::ClientContext ctx;
    v1::DeleteArtifactRequest req;
    req.set_session_id(s);
    req.set_name("notes.md");
    v1::DeleteArtifactResponse resp;
    ASSERT_TRUE(artifacts_->DeleteArtifact(&ctx, req, &resp).ok());
  }
}

TEST_F(AgentControlTest, DiskArtifactsSurviveARestart) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/toolexec-it-art-" +
                    std::to_string(getpid());
  DaemonOptions options;
  options.engine.artifact_dir = dir;
  Start(options);
  ASSERT_TRUE(Save(OpenSession("conv-r"), "plan.md", "v1").ok());
  ASSERT_TRUE(Save(OpenSession("conv-r"), "plan.md", "v2").ok());
  Start(options);  // a new daemon on the same directory
  std::string s = OpenSession("conv-r");
  int64_t v = 0;
  ASSERT_TRUE(Save(s, "plan.md", "v3", &v).ok());
  EXPECT_EQ(v, 3);
  {
    // A MIME type with a newline would split the stored header: refused.
    grpc::ClientContext ctx;
    v1::SaveArtifactRequest req;
    req.set_session_id(s);
    req.set_name("plan.md");
    req.mutable_artifact()->set_text("v4");
    req.mutable_artifact()->set_mime_type("text/markdown\ndata x");
    v1::SaveArtifactResponse resp;
    grpc::Status bad = artifacts_->SaveArtifact(&ctx, req, &resp);
    EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(bad.error_message(), HasSubstr("mime_type"));
  }
  auto r = Call("load_artifacts", R"({"artifact_names":["plan.md"]})", s);
  EXPECT_EQ(r.payload().struct_value().fields().at("artifacts").list_value().values(0)
                .struct_value().fields().at("content").string_value(),
            "v3");
  daemon_->Shutdown();
  daemon_.reset();
  std::filesystem::remove_all(dir);
}

TEST_F(AgentControlTest, ExitLoopAndDeclaredTools) {
  DaemonOptions options;
  options.tools.builtin.declared_tools = {"ask_question", "google_search"};
  Start(options);
  auto exit = Call("exit_loop", "");
  EXPECT_EQ(exit.status(), v1::RESULT_STATUS_SUCCESS);
  EXPECT_TRUE(exit.actions().escalate());
  EXPECT_TRUE(exit.actions().skip_summarization());
  auto google = Call("google_search", "{}");
  EXPECT_EQ(google.exception().code(), v1::ERROR_CODE_NOT_EXECUTABLE_HERE);
  EXPECT_EQ(google.exception().tool_name(), "google_search");
  EXPECT_EQ(google.exception().server_name(), "");
  EXPECT_EQ(google.error_message(), "GoogleSearch is handled internally by Gemini");
  auto tools = client_->ListTools({});
  ASSERT_TRUE(tools.ok());
  bool found = false;
  for (const auto& t : tools->tools()) {
    if (t.name() == "google_search") {
      found = true;
      EXPECT_EQ(t.executor(), v1::EXECUTOR_PROVIDER);
      EXPECT_TRUE(t.provider_config().fields().contains("google_search"));
    }
    if (t.name() == "ask_question") {
      EXPECT_EQ(t.executor(), v1::EXECUTOR_HARNESS);
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(AgentControlTest, Subagents) {
  DaemonOptions options;
  options.tools.builtin.declared_tools = {"start_subagent"};
  options.engine.subagents = {{"reader", "reads", {}, {}},
                       {"helper", "helps", {"get_weather", "start_subagent"}, {}}};
  Start(options);
  v1::OpenSessionRequest req;
  req.set_subagent("helper");
  auto helper = client_->OpenSession(req);
  ASSERT_TRUE(helper.ok()) << helper.status();
  EXPECT_THAT(helper->tools(), ElementsAre("get_weather"));
  ASSERT_EQ(helper->warnings_size(), 1);
  EXPECT_THAT(helper->warnings(0), HasSubstr("start_subagent dropped"));
  auto denied = Call("wait", R"({"ms":1})", helper->session_id());
  EXPECT_EQ(denied.status(), v1::RESULT_STATUS_DENIED);
  EXPECT_THAT(denied.error_message(), HasSubstr("get_weather"));

  req.set_subagent("reader");  // default: the read_only set
  auto reader = client_->OpenSession(req);
  ASSERT_TRUE(reader.ok());
  for (const auto& t : reader->tools()) {
    EXPECT_THAT(t, ::testing::AnyOf("list_directory", "search_directory", "find_file",
                                    "view_file", "finish"));
  }
  req.set_subagent("nobody");
  EXPECT_EQ(client_->OpenSession(req).status().code(), absl::StatusCode::kInvalidArgument);

  // The model sees which subagents it can start.
  auto tools = client_->ListTools({});
  ASSERT_TRUE(tools.ok());
  const v1::ToolDeclaration* start = nullptr;
  for (const auto& t : tools->tools()) {
    if (t.name() == "start_subagent") start = &t;
  }
  ASSERT_NE(start, nullptr);
  EXPECT_THAT(start->description(), HasSubstr("\n- reader: reads"));
  EXPECT_THAT(start->description(), HasSubstr("\n- helper: helps"));
  const auto& names = start->parameters().fields().at("properties").struct_value().fields()
                          .at("name").struct_value().fields().at("enum").list_value().values();
  ASSERT_EQ(names.size(), 2);
  EXPECT_EQ(names[0].string_value(), "reader");
  EXPECT_EQ(names[1].string_value(), "helper");
  req.set_subagent("reader");
  req.add_enabled_tools("wait");
  EXPECT_EQ(client_->OpenSession(req).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(AgentControlTest, BadSubagentConfigStopsTheDaemon) {
  DaemonOptions options;
  options.server.listen = "127.0.0.1:0";
  options.engine.workspace = "/tmp";
  options.engine.subagents = {{"both", "", {"get_weather"}, {"wait"}}};
  options.tools.example_tools = true;
  auto d = Daemon::Create(options);
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("subagent 'both'"));
  options.engine.subagents = {{"ghost", "", {"no_such_tool"}, {}}};
  d = Daemon::Create(options);
  EXPECT_THAT(d.status().message(), HasSubstr("no_such_tool"));
}

TEST_F(AgentControlTest, ChildSessionMergesThroughRpcs) {
  Start();
  std::string parent = OpenSession("conv-p");
  ASSERT_EQ(Call("counter", "", parent).status(), v1::RESULT_STATUS_SUCCESS);  // count=1
  std::string child = OpenSession("", "", parent, {"count"});
  auto c = Call("counter", "", child);  // child sees the snapshot: count=2
  EXPECT_EQ(c.payload().struct_value().fields().at("count").number_value(), 2);
  ASSERT_EQ(Call("counter", "", parent).status(), v1::RESULT_STATUS_SUCCESS);  // parent: 2

  v1::CloseSessionRequest close;
  close.set_session_id(child);
  close.add_output_state_keys("count");
  close.set_merge_policy(v1::STATE_MERGE_POLICY_REJECT_CONFLICTS);
  auto conflict = client_->CloseSession(close);
  EXPECT_EQ(conflict.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(conflict.status().message(), HasSubstr("conflicts with a concurrent parent update"));
  v1::GetStateRequest get;
  get.set_session_id(parent);
  EXPECT_EQ(client_->GetState(get)->state().fields().at("count").number_value(), 2);

  close.add_merge_exempt_keys("count");
  auto merged = client_->CloseSession(close);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->merged().state_delta().fields().at("count").number_value(), 2);

  // Unauthorized key.
  std::string child2 = OpenSession("", "", parent);
  ASSERT_EQ(Call("counter", "", child2).status(), v1::RESULT_STATUS_SUCCESS);
  v1::CloseSessionRequest close2;
  close2.set_session_id(child2);
  auto refused = client_->CloseSession(close2);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("attempted unauthorized state write to 'count'"));
}

// A child's "user:" saves through the ArtifactStore RPCs are staged like its
// other writes: the user sees them only once a close merges them.
TEST_F(AgentControlTest, AChildsUserArtifactsReachTheUserOnlyThroughAMerge) {
  Start();
  std::string parent = OpenSession("conv-p", "alice");
  std::string sibling = OpenSession("conv-q", "alice");
  std::string child = OpenSession("", "", parent);
  ASSERT_TRUE(Save(child, "user:leak", "from the child").ok());
  auto load = [&](const std::string& session, v1::LoadArtifactResponse* resp) {
    grpc::ClientContext ctx;
    v1::LoadArtifactRequest req;
    req.set_session_id(session);
    req.set_name("user:leak");
    return artifacts_->LoadArtifact(&ctx, req, resp).error_code();
  };
  v1::LoadArtifactResponse resp;
  EXPECT_EQ(load(child, &resp), grpc::StatusCode::OK);
  EXPECT_EQ(load(parent, &resp), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(load(sibling, &resp), grpc::StatusCode::NOT_FOUND);

  v1::CloseSessionRequest close;
  close.set_session_id(child);
  auto refused = client_->CloseSession(close);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("unauthorized artifact write to 'user:leak'"));
  EXPECT_EQ(load(parent, &resp), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(load(sibling, &resp), grpc::StatusCode::NOT_FOUND);

  close.add_artifact_prefixes("user:");
  auto merged = client_->CloseSession(close);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->merged().artifact_delta().at("user:leak"), 1);
  ASSERT_EQ(load(sibling, &resp), grpc::StatusCode::OK);
  EXPECT_EQ(resp.artifact().text(), "from the child");
}

// A child whose writes may not merge can still be ended: with discard.
TEST_F(AgentControlTest, DiscardClosesAChildThatCannotMerge) {
  Start();
  std::string parent = OpenSession("conv-p", "alice");
  std::string child = OpenSession("", "", parent);
  ASSERT_EQ(Call("counter", "", child).status(), v1::RESULT_STATUS_SUCCESS);
  ASSERT_TRUE(Save(child, "scratch.txt", "x").ok());
  v1::CloseSessionRequest close;
  close.set_session_id(child);
  auto refused = client_->CloseSession(close);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("output_state_keys (count)"));
  EXPECT_THAT(refused.status().message(), HasSubstr("artifact_prefixes"));
  EXPECT_THAT(refused.status().message(), HasSubstr("discard"));

  close.set_discard(true);
  auto discarded = client_->CloseSession(close);
  ASSERT_TRUE(discarded.ok()) << discarded.status();
  EXPECT_TRUE(discarded->merged().state_delta().fields().empty());
  EXPECT_TRUE(discarded->merged().artifact_delta().empty());
  v1::GetStateRequest get;
  get.set_session_id(parent);
  EXPECT_FALSE(client_->GetState(get)->state().fields().contains("count"));
  get.set_session_id(child);
  EXPECT_EQ(client_->GetState(get).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(AgentControlTest, AChildCannotOpenAsAnotherUser) {
  Start();
  std::string parent = OpenSession("conv-p", "alice");
  v1::OpenSessionRequest req;
  req.set_parent_session_id(parent);
  req.set_user_id("bob");
  auto r = client_->OpenSession(req);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  req.set_user_id("");
  auto child = client_->OpenSession(req);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(child->user_id(), "alice");
}

// Three CloseSession RPCs of one child at once (artifacts on disk, so each
// merge takes a while): one merges, the others get NOT_FOUND.
TEST_F(AgentControlTest, ConcurrentClosesOfOneChildMergeOnce) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/toolexec-it-close-" +
                    std::to_string(getpid());
  DaemonOptions options;
  options.engine.artifact_dir = dir;
  Start(options);
  for (int round = 0; round < 5; ++round) {
    std::string conversation = "conv-close-" + std::to_string(round);
    std::string parent = OpenSession(conversation);
    std::string child = OpenSession("", "", parent);
    ASSERT_TRUE(Save(child, "out.txt", "result").ok());
    v1::CloseSessionRequest close;
    close.set_session_id(child);
    close.add_artifact_prefixes("out");
    std::atomic<int> ok{0}, not_found{0};
    std::vector<std::thread> closers;
    for (int i = 0; i < 3; ++i) {
      closers.emplace_back([&] {
        auto r = client_->CloseSession(close);
        if (r.ok()) ++ok;
        if (r.status().code() == absl::StatusCode::kNotFound) ++not_found;
      });
    }
    for (auto& t : closers) t.join();
    EXPECT_EQ(ok.load(), 1) << "round " << round;
    EXPECT_EQ(not_found.load(), 2) << "round " << round;
    grpc::ClientContext ctx;
    v1::ListVersionsRequest req;
    req.set_session_id(parent);
    req.set_name("out.txt");
    v1::ListVersionsResponse resp;
    ASSERT_TRUE(artifacts_->ListVersions(&ctx, req, &resp).ok());
    EXPECT_THAT(resp.versions(), ElementsAre(1)) << "round " << round;
  }
  daemon_->Shutdown();
  daemon_.reset();
  std::filesystem::remove_all(dir);
}

TEST_F(AgentControlTest, SessionDepthLimit) {
  DaemonOptions options;
  options.engine.session_max_depth = 1;
  Start(options);
  std::string root = OpenSession();
  std::string child = OpenSession("", "", root);
  v1::OpenSessionRequest req;
  req.set_parent_session_id(child);
  auto r = client_->OpenSession(req);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("depth 2"));
}

TEST_F(AgentControlTest, IdleSessionsCloseAfterTheTtl) {
  DaemonOptions options;
  options.engine.session_idle_ttl = absl::Milliseconds(200);
  Start(options);
  std::string s = OpenSession();
  v1::WatchSessionRequest watch_req;
  watch_req.set_session_id(s);
  auto watch = client_->WatchSession(watch_req);
  v1::SessionEvent e;
  absl::Time start = absl::Now();
  EXPECT_FALSE(watch->Next(&e));  // ends when the sweeper closes the session
  EXPECT_TRUE(watch->Finish().ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  v1::GetStateRequest get;
  get.set_session_id(s);
  EXPECT_EQ(client_->GetState(get).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(AgentControlTest, ASessionInUseOutlivesTheTtl) {
  DaemonOptions options;
  options.engine.session_idle_ttl = absl::Milliseconds(150);
  Start(options);
  std::string s = OpenSession();
  // One call longer than the TTL: the session is busy, not idle.
  auto r = Call("wait", R"({"ms":600})", s);
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS);
  v1::GetStateRequest get;
  get.set_session_id(s);
  EXPECT_TRUE(client_->GetState(get).ok());
}

// Closing a session waits for its background commands to die (SIGTERM, the
// kill grace, SIGKILL); that wait must not hold up the daemon's other RPCs.
TEST_F(AgentControlTest, ASlowSessionCloseDoesNotStallOtherCalls) {
  DaemonOptions options;
  options.tools.builtin.command_kill_grace = absl::Seconds(3);
  Start(options);
  std::vector<std::string> sessions;
  for (int i = 0; i < 4; ++i) {
    sessions.push_back(OpenSession());
    v1::ToolResult started = Call(
        "run_command", R"({"command_line":"trap '' TERM; sleep 60","background":true})",
        sessions.back());
    ASSERT_TRUE(started.error_message().empty()) << started.error_message();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the traps install
  std::vector<std::thread> closers;
  for (const auto& s : sessions) {
    closers.emplace_back([this, s] {
      v1::CloseSessionRequest req;
      req.set_session_id(s);
      EXPECT_TRUE(client_->CloseSession(req).ok());
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // Four closes are now waiting out the grace; other work goes on meanwhile.
  absl::Time start = absl::Now();
  v1::ToolResult r = Call("get_weather", R"({"city":"Oslo"})");
  absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(r.error_message().empty());
  EXPECT_LT(took, absl::Seconds(2)) << "a call waited for other sessions' closes";
  for (auto& t : closers) t.join();
  EXPECT_GE(absl::Now() - start, absl::Seconds(2));  // the closes did wait out the grace
}

// Shutdown ends every session's background commands together: the kill grace
// is waited out once, not once per session.
TEST_F(AgentControlTest, ShutdownEndsAllSessionsCommandsTogether) {
  DaemonOptions options;
  options.tools.builtin.command_kill_grace = absl::Seconds(2);
  Start(options);
  // Each command touches a file once its trap is in place.
  std::filesystem::path ready =
      std::filesystem::temp_directory_path() / absl::StrCat("toolexec-traps-", getpid());
  std::filesystem::create_directories(ready);
  for (int i = 0; i < 4; ++i) {
    std::string args = absl::StrCat(R"({"command_line":"trap '' TERM; touch )",
                                    (ready / std::to_string(i)).string(),
                                    R"(; sleep 60","background":true})");
    v1::ToolResult started = Call("run_command", args, OpenSession());
    ASSERT_TRUE(started.error_message().empty()) << started.error_message();
  }
  for (absl::Time until = absl::Now() + absl::Seconds(30);
       std::distance(std::filesystem::directory_iterator(ready),
                     std::filesystem::directory_iterator()) < 4;) {
    ASSERT_LT(absl::Now(), until) << "the commands did not start";
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::filesystem::remove_all(ready);
  absl::Time start = absl::Now();
  daemon_->Shutdown();
  absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(1500));  // the grace was honoured
  EXPECT_LT(took, absl::Seconds(6)) << "the grace was waited out session by session";
}

// Background commands belong to one daemon: stopping it does not stop a later
// daemon of the same process (an embedding harness, these tests) from
// starting them.
TEST_F(AgentControlTest, ADaemonStartedAfterAnotherStoppedRunsBackgroundCommands) {
  Start();
  daemon_->Shutdown();
  Start();
  v1::ToolResult started =
      Call("run_command", R"({"command_line":"sleep 5","background":true})", OpenSession());
  EXPECT_TRUE(started.error_message().empty()) << started.error_message();
}

}  // namespace
}  // namespace toolexec

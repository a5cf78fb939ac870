// [Context]: sessions, state, the weak session handle, send.
#include "tools/runtime/session.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;

class RecordingListener final : public SessionListener {
 public:
  void OnMessage(const ContextMessage& m) override {
    absl::MutexLock lock(&mu);
    messages.push_back(m.tool_name + ":" + m.text);
  }
  void OnSessionClosed() override {
    absl::MutexLock lock(&mu);
    closed = true;
  }
  absl::Mutex mu;
  std::vector<std::string> messages;
  bool closed = false;
};

class SessionTest : public ::testing::Test {
 protected:
  ToolRegistry registry_;
  SessionManager sessions_{&registry_, {}};
  CancellationToken token_;

  ToolContext ContextFor(const std::shared_ptr<Session>& s) {
    CallInfo info;
    info.tool_name = "t";
    info.session_id = s ? s->id() : "";
    return ToolContext(info, s, &token_, nullptr);
  }
};

TEST_F(SessionTest, ContextSeesConversationAndIdle) {
  auto s = *sessions_.Open({.conversation_id = "conv-1"});
  auto ctx = ContextFor(s);
  EXPECT_EQ(ctx.conversation_id(), "conv-1");
  EXPECT_EQ(ctx.is_idle(), false);
  s->set_idle(true);
  EXPECT_EQ(ctx.is_idle(), true);
}

TEST_F(SessionTest, StateAfterCloseFailsAndOptionalsAreEmpty) {
  auto s = *sessions_.Open({.conversation_id = "c"});
  auto ctx = ContextFor(s);
  ASSERT_TRUE(ctx.set_state("k", testing::J("1")).ok());
  ASSERT_TRUE(sessions_.Close(s->id()).ok());
  EXPECT_EQ(ctx.conversation_id(), std::nullopt);
  EXPECT_EQ(ctx.is_idle(), std::nullopt);
  EXPECT_EQ(ctx.get_state("k").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ctx.set_state("k", testing::J("2")).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ctx.send("hi").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(sessions_.Get(s->id()).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SessionTest, WeakHandleDoesNotKeepSessionAlive) {
  std::weak_ptr<Session> weak;
  {
    auto s = *sessions_.Open({});
    weak = s;
    ASSERT_TRUE(sessions_.Close(s->id()).ok());
  }
  EXPECT_TRUE(weak.expired());
}

TEST_F(SessionTest, EightThreadsTimesHundredUpdatesIsEightHundred) {
  auto s = *sessions_.Open({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      auto ctx = ContextFor(s);
      for (int i = 0; i < 100; ++i) {
        auto r = ctx.update_state("count", [](const JsonValue* cur) {
          Json next;
          next.SetInt64(cur ? cur->GetInt64() + 1 : 1);
          return next;
        });
        ASSERT_TRUE(r.ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  auto v = s->tool_state().Get("count");
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->GetInt64(), 800);
}

TEST_F(SessionTest, WritesAreReportedAsStateDelta) {
  auto s = *sessions_.Open({});
  auto ctx = ContextFor(s);
  ASSERT_TRUE(ctx.set_state("a", testing::J(R"("x")")).ok());
  ASSERT_TRUE(ctx.set_state("a", testing::J(R"("y")")).ok());
  ASSERT_TRUE(ctx.set_state("b", testing::J("2")).ok());
  EventActions actions = ctx.TakeActions();
  EXPECT_EQ(ToJsonString(actions.state_delta), R"({"a":"y","b":2})");
}

TEST_F(SessionTest, ToolStateAndHookStateAreSeparate) {
  auto s = *sessions_.Open({});
  s->tool_state().Set("k", testing::J("1"));
  EXPECT_FALSE(s->hook_state().Get("k").has_value());
}

TEST_F(SessionTest, StateKeysAreValidated) {
  auto s = *sessions_.Open({});
  auto ctx = ContextFor(s);
  for (const std::string& bad : {std::string(""), std::string("a/b"), std::string("a\\b"),
                                std::string(".."), std::string("x\0y", 3), std::string(257, 'k')}) {
    EXPECT_EQ(ctx.set_state(bad, testing::J("1")).code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  EXPECT_TRUE(ctx.set_state(std::string(256, 'k'), testing::J("1")).ok());
}

TEST_F(SessionTest, SendReachesListenersAndCloseEndsThem) {
  auto s = *sessions_.Open({});
  auto listener = std::make_shared<RecordingListener>();
  s->AddListener(listener);
  auto ctx = ContextFor(s);
  ASSERT_TRUE(ctx.send("hello").ok());
  ASSERT_TRUE(sessions_.Close(s->id()).ok());
  absl::MutexLock lock(&listener->mu);
  EXPECT_THAT(listener->messages, ::testing::ElementsAre("t:hello"));
  EXPECT_TRUE(listener->closed);
}

TEST_F(SessionTest, ContextWithoutSessionFailsClearly) {
  auto ctx = ContextFor(nullptr);
  EXPECT_EQ(ctx.conversation_id(), std::nullopt);
  auto st = ctx.get_state("k");
  EXPECT_EQ(st.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.status().message(), HasSubstr("no session"));
}

TEST_F(SessionTest, OpenRejectsUnknownToolsAndEnforcesLimit) {
  auto bad = sessions_.Open({.tools = {"nope"}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  SessionManager small(&registry_, {.max_sessions = 1, .idle_ttl = absl::Minutes(30)});
  ASSERT_TRUE(small.Open({}).ok());
  auto full = small.Open({});
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  // The refusal says what to do: close sessions, or wait for the idle TTL.
  EXPECT_THAT(full.status().message(), HasSubstr("CloseSession"));
  EXPECT_THAT(full.status().message(), HasSubstr("unused for 30m"));
}

TEST_F(SessionTest, CloseCallsCleanupSessionOnEveryTool) {
  class Cleaner final : public Tool {
   public:
    explicit Cleaner(std::vector<std::string>* seen)
        : Tool(ToolSpec("cleaner", "", testing::kAnyObject)), seen_(seen) {}
    absl::StatusOr<Json> Call(const JsonValue&, ToolContext&) const override { return Json(); }
    void cleanup_session(absl::string_view id) const override { seen_->emplace_back(id); }

   private:
    std::vector<std::string>* seen_;
  };
  std::vector<std::string> seen;
  ToolRegistry registry;
  ASSERT_TRUE(registry.Register(std::make_unique<Cleaner>(&seen), "test").ok());
  SessionManager sessions(&registry, {});
  auto s = *sessions.Open({});
  ASSERT_TRUE(sessions.Close(s->id()).ok());
  EXPECT_THAT(seen, ::testing::ElementsAre(s->id()));
  EXPECT_EQ(sessions.Close(s->id()).status().code(), absl::StatusCode::kNotFound);
}

// A child given no workspace shares its parent's root handles: the very
// directories the parent holds, not their path names opened again.
TEST_F(SessionTest, ChildSharesItsParentsWorkspaceHandles) {
  auto root = fs::ConfinedRoot::Open("/");
  ASSERT_TRUE(root.ok()) << root.status();
  auto parent = sessions_.Open({.workspaces = {*root}});
  ASSERT_TRUE(parent.ok()) << parent.status();
  auto child = sessions_.Open({.parent_session_id = (*parent)->id()});
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_EQ((*child)->workspaces().size(), 1u);
  EXPECT_EQ((*child)->workspaces()[0].get(), root->get());
  auto grandchild = sessions_.Open({.parent_session_id = (*child)->id()});
  ASSERT_TRUE(grandchild.ok()) << grandchild.status();
  EXPECT_EQ((*grandchild)->workspaces()[0].get(), root->get());
}

// Sessions belong to their owner: to anyone else, one does not exist.
TEST_F(SessionTest, AnotherOwnerGetsTheSameNotFoundAsForNoSession) {
  auto s = *sessions_.Open({.conversation_id = "c", .owner = "alice"});
  EXPECT_TRUE(sessions_.Get(s->id(), "alice").ok());
  auto other = sessions_.Get(s->id(), "bob");
  auto none = sessions_.Get("s-nosuch", "bob");
  ASSERT_TRUE(absl::IsNotFound(other.status()));
  EXPECT_EQ(other.status().message(),
            absl::StrCat("no open session '", s->id(), "'"));  // as for an unknown id:
  EXPECT_EQ(none.status().message(), "no open session 's-nosuch'");
  EXPECT_FALSE(sessions_.Get(s->id(), "").ok());
  // A child is its parent's owner's, and only the owner may open one.
  EXPECT_TRUE(absl::IsNotFound(
      sessions_.Open({.parent_session_id = s->id(), .owner = "bob"}).status()));
  auto child = sessions_.Open({.parent_session_id = s->id(), .owner = "alice"});
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ((*child)->owner(), "alice");
}

TEST_F(SessionTest, EachOwnerHasAQuotaAndClosingGivesItBack) {
  SessionManager sessions(&registry_, {.max_sessions = 100, .max_sessions_per_owner = 2});
  auto a1 = sessions.Open({.owner = "alice"});
  ASSERT_TRUE(a1.ok());
  ASSERT_TRUE(sessions.Open({.parent_session_id = (*a1)->id(), .owner = "alice"}).ok());
  auto over = sessions.Open({.owner = "alice"});
  EXPECT_TRUE(absl::IsResourceExhausted(over.status()));
  EXPECT_THAT(over.status().message(), HasSubstr("limits.max_sessions_per_caller"));
  EXPECT_TRUE(sessions.Open({.owner = "bob"}).ok());
  // Unauthenticated callers ("") share max_sessions only.
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(sessions.Open({}).ok());
  // Closing the parent closes its child: both places come back.
  ASSERT_TRUE(sessions.Close((*a1)->id(), {.discard = true}).ok());
  EXPECT_TRUE(sessions.Open({.owner = "alice"}).ok());
  EXPECT_TRUE(sessions.Open({.owner = "alice"}).ok());
  EXPECT_FALSE(sessions.Open({.owner = "alice"}).ok());
}

// Naming another caller's conversation_id or user_id reaches none of its
// artifacts; the same caller's sessions share them as before.
TEST_F(SessionTest, ConversationsAndUsersAreTheirOwnersAlone) {
  std::unique_ptr<ArtifactStore> store = NewInMemoryArtifactStore();
  auto a1 = *sessions_.Open({.conversation_id = "c", .user_id = "u", .owner = "alice"});
  auto a2 = *sessions_.Open({.conversation_id = "c", .user_id = "u", .owner = "alice"});
  auto b = *sessions_.Open({.conversation_id = "c", .user_id = "u", .owner = "bob"});
  auto anonymous = *sessions_.Open({.conversation_id = "c", .user_id = "u"});
  Artifact text;
  text.text = "alice's";
  ASSERT_TRUE(a1->SaveArtifact(*store, "notes.txt", text).ok());
  ASSERT_TRUE(a1->SaveArtifact(*store, "user:profile", text).ok());
  for (const char* name : {"notes.txt", "user:profile"}) {
    EXPECT_TRUE(store->Load(a2->artifact_scope(), name, 0).ok()) << name;
    EXPECT_TRUE(absl::IsNotFound(store->Load(b->artifact_scope(), name, 0).status())) << name;
    EXPECT_TRUE(absl::IsNotFound(store->Load(anonymous->artifact_scope(), name, 0).status()))
        << name;
  }
}

}  // namespace
}  // namespace toolexec

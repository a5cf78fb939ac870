// [Delegation]: child sessions, their snapshot, the merge back into the parent, depth,
// and the idle TTL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "tests/common/test_tools.h"
#include "tools/runtime/artifacts.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::J;

// Saves as a tool in `s` would, so the save is tracked for the merge.
void SaveThroughTool(ArtifactStore* store, const std::shared_ptr<Session>& s,
                     const std::string& name, CancellationToken* token) {
  CallInfo info;
  info.session_id = s->id();
  info.artifacts = store;
  ToolContext ctx(info, s, token, nullptr);
  auto saved = ctx.save_artifact(name, Artifact{true, "body of " + name, "", ""});
  ASSERT_TRUE(saved.ok()) << saved.status();
}

class MergeTest : public ::testing::Test {
 protected:
  std::shared_ptr<Session> Open(SessionOptions o = {}) {
    auto s = sessions_.Open(std::move(o));
    EXPECT_TRUE(s.ok()) << s.status();
    return *s;
  }
  std::shared_ptr<Session> Child(const std::shared_ptr<Session>& parent,
                                 std::vector<std::string> keys = {}) {
    SessionOptions o;
    o.parent_session_id = parent->id();
    o.state_keys = std::move(keys);
    return Open(std::move(o));
  }
  // Writes as a tool in `s` would, so the write is tracked for the merge.
  void Write(const std::shared_ptr<Session>& s, const std::string& key, const std::string& json) {
    CallInfo info;
    info.session_id = s->id();
    info.artifacts = artifacts_.get();
    ToolContext ctx(info, s, &token_, nullptr);
    ASSERT_TRUE(ctx.set_state(key, J(json)).ok());
  }
  void SaveArtifact(const std::shared_ptr<Session>& s, const std::string& name) {
    SaveThroughTool(artifacts_.get(), s, name, &token_);
  }
  // What a tool in `s` loads as the latest `name`: its text, or the error.
  std::string LoadText(const std::shared_ptr<Session>& s, const std::string& name) {
    CallInfo info;
    info.session_id = s->id();
    info.artifacts = artifacts_.get();
    ToolContext ctx(info, s, &token_, nullptr);
    auto loaded = ctx.load_artifact(name);
    return loaded.ok() ? loaded->first.text : loaded.status().ToString();
  }

  ToolRegistry registry_;
  std::unique_ptr<ArtifactStore> artifacts_ = NewInMemoryArtifactStore();
  SessionManager sessions_{&registry_, {.max_sessions = 100, .max_depth = 2}, artifacts_.get()};
  CancellationToken token_;
};

TEST_F(MergeTest, ChildStartsWithOnlyTheNamedParentKeys) {
  auto parent = Open({.conversation_id = "c"});
  Write(parent, "shared", R"("s")");
  Write(parent, "private", R"("p")");
  auto child = Child(parent, {"shared"});
  EXPECT_EQ(ToJsonString(child->tool_state().Snapshot()), R"({"shared":"s"})");
  EXPECT_EQ(child->conversation_id(), "c");
  EXPECT_EQ(child->depth(), 1);
}

TEST_F(MergeTest, AuthorizedWritesMergeAndAreReported) {
  auto parent = Open();
  auto child = Child(parent);
  Write(child, "result", R"({"ok":true})");
  auto merged = sessions_.Close(child->id(), {.output_state_keys = {"result"}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(ToJsonString(merged->state_delta), R"({"result":{"ok":true}})");
  EXPECT_EQ(ToJsonString(*parent->tool_state().Get("result")), R"({"ok":true})");
  EXPECT_EQ(sessions_.Get(child->id()).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(MergeTest, UnauthorizedKeyMergesNothing) {
  auto parent = Open();
  auto child = Child(parent);
  Write(child, "result", "1");
  Write(child, "secret", "2");
  auto merged = sessions_.Close(child->id(), {.output_state_keys = {"result"}});
  EXPECT_EQ(merged.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(merged.status().message(), HasSubstr("attempted unauthorized state write to 'secret'"));
  EXPECT_FALSE(parent->tool_state().Get("result").has_value());  // nothing merged
  EXPECT_TRUE(sessions_.Get(child->id()).ok());                   // still open
}

TEST_F(MergeTest, RejectConflictsUnlessExempt) {
  auto parent = Open();
  Write(parent, "x", "0");
  Write(parent, "y", "0");
  auto child = Child(parent, {"x", "y"});
  Write(child, "x", "1");
  Write(child, "y", "1");
  Write(parent, "x", "99");  // concurrent parent update
  Write(parent, "y", "99");
  MergeOptions strict{.output_state_keys = {"x", "y"}, .reject_conflicts = true};
  auto merged = sessions_.Close(child->id(), strict);
  EXPECT_EQ(merged.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(merged.status().message(), HasSubstr("conflicts with a concurrent parent update"));
  EXPECT_EQ(ToJsonString(*parent->tool_state().Get("x")), "99");

  strict.exempt_keys = {"x", "y"};
  auto ok = sessions_.Close(child->id(), strict);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ToJsonString(*parent->tool_state().Get("x")), "1");
}

TEST_F(MergeTest, ArtifactsMergeOnlyUnderAllowedPrefixes) {
  auto parent = Open({.conversation_id = "conv"});
  auto child = Child(parent);
  SaveArtifact(child, "out-report.md");
  SaveArtifact(child, "scratch.txt");
  auto refused = sessions_.Close(child->id(), {.artifact_prefixes = {"out-"}});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("unauthorized artifact write to 'scratch.txt'"));
  ArtifactScope parent_scope = parent->artifact_scope();
  EXPECT_EQ(artifacts_->Load(parent_scope, "out-report.md", 0).status().code(),
            absl::StatusCode::kNotFound);

  auto merged = sessions_.Close(child->id(), {.artifact_prefixes = {"out-", "scratch"}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->artifact_delta.at("out-report.md"), 1);
  EXPECT_EQ(artifacts_->Load(parent_scope, "out-report.md", 0)->first.text, "body of out-report.md");
}

TEST_F(MergeTest, AChildsUserArtifactsAreStagedUntilTheMergeAllowsThem) {
  auto parent = Open({.conversation_id = "conv", .user_id = "alice"});
  SaveArtifact(parent, "user:theme");
  auto child = Child(parent);
  SaveArtifact(child, "user:prefs");
  // The child reads its own staged version and still sees the user's others.
  EXPECT_EQ(LoadText(child, "user:prefs"), "body of user:prefs");
  EXPECT_EQ(LoadText(child, "user:theme"), "body of user:theme");
  // Nobody else sees it before a close merges it.
  ArtifactScope alice{"alice", "another-conversation"};
  EXPECT_EQ(artifacts_->Load(alice, "user:prefs", 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(LoadText(parent, "user:prefs"), HasSubstr("NOT_FOUND"));

  auto refused = sessions_.Close(child->id());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(refused.status().message(), HasSubstr("unauthorized artifact write to 'user:prefs'"));
  EXPECT_EQ(artifacts_->Load(alice, "user:prefs", 0).status().code(), absl::StatusCode::kNotFound);

  auto merged = sessions_.Close(child->id(), {.artifact_prefixes = {"user:"}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->artifact_delta["user:prefs"], 1);
  EXPECT_EQ(LoadText(parent, "user:prefs"), "body of user:prefs");
}

TEST_F(MergeTest, AChildBelongsToItsParentsUser) {
  auto parent = Open({.user_id = "alice"});
  auto other = sessions_.Open({.user_id = "mallory", .parent_session_id = parent->id()});
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(other.status().message(), HasSubstr("'alice'"));
  EXPECT_EQ(sessions_.size(), 1u);
  auto same = sessions_.Open({.user_id = "alice", .parent_session_id = parent->id()});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(Child(parent)->user_id(), "alice");
}

TEST_F(MergeTest, DiscardEndsAChildMergingNothing) {
  auto parent = Open({.conversation_id = "conv", .user_id = "alice"});
  auto child = Child(parent);
  Write(child, "secret", "1");
  SaveArtifact(child, "scratch.txt");
  SaveArtifact(child, "user:prefs");
  auto refused = sessions_.Close(child->id());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  // The refusal names each write, how to allow it, and the way out.
  EXPECT_THAT(refused.status().message(), HasSubstr("output_state_keys (secret)"));
  EXPECT_THAT(refused.status().message(), HasSubstr("artifact_prefixes"));
  EXPECT_THAT(refused.status().message(), HasSubstr("scratch.txt, user:prefs"));
  EXPECT_THAT(refused.status().message(), HasSubstr("discard"));

  EXPECT_EQ(sessions_.Close(child->id(), {.output_state_keys = {"secret"}, .discard = true})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  auto discarded = sessions_.Close(child->id(), {.discard = true});
  ASSERT_TRUE(discarded.ok()) << discarded.status();
  EXPECT_EQ(ToJsonString(discarded->state_delta), "{}");
  EXPECT_TRUE(discarded->artifact_delta.empty());
  EXPECT_TRUE(child->closed());
  EXPECT_FALSE(parent->tool_state().Get("secret").has_value());
  EXPECT_THAT(LoadText(parent, "scratch.txt"), HasSubstr("NOT_FOUND"));
  EXPECT_THAT(LoadText(parent, "user:prefs"), HasSubstr("NOT_FOUND"));
  // A top-level session may be discarded too: it is simply closed.
  ASSERT_TRUE(sessions_.Close(parent->id(), {.discard = true}).ok());
  // Nothing the child saved is left behind in the store.
  EXPECT_EQ(artifacts_->Usage().versions, 0);
}

// A session's own artifact space (no conversation_id, or a child) is freed
// when it closes; a conversation's artifacts stay for its next session.
TEST_F(MergeTest, ClosingFreesTheArtifactsNothingCanReachAgain) {
  const std::string big(1 << 20, 'x');
  auto save = [&](const std::shared_ptr<Session>& s, const std::string& name) {
    ASSERT_TRUE(s->SaveArtifact(*artifacts_, name, Artifact{true, big, "", ""}).ok());
  };
  for (int i = 0; i < 10; ++i) {
    auto s = Open();
    save(s, "a.bin");
    save(s, "b.bin");
    EXPECT_GE(artifacts_->Usage().bytes, 2 << 20);
    ASSERT_TRUE(sessions_.Close(s->id()).ok());
    EXPECT_EQ(artifacts_->Usage().versions, 0) << "cycle " << i;
    EXPECT_EQ(artifacts_->Usage().bytes, 0) << "cycle " << i;
  }
  auto kept = Open({.conversation_id = "conv-kept"});
  save(kept, "keep.bin");
  ASSERT_TRUE(sessions_.Close(kept->id()).ok());
  EXPECT_EQ(artifacts_->Usage().versions, 1);
  auto next = Open({.conversation_id = "conv-kept"});
  EXPECT_EQ(LoadText(next, "keep.bin"), big);
  // A child's space goes with it, merged or not; what it merged stays.
  auto child = Child(next);
  save(child, "out.bin");
  save(child, "scratch.bin");
  ASSERT_TRUE(sessions_.Close(child->id(), {.artifact_prefixes = {"out", "scratch"}}).ok());
  EXPECT_EQ(artifacts_->Usage().versions, 3);  // keep.bin, and the merged out.bin, scratch.bin
}

TEST_F(MergeTest, ASaveThatLandsAfterTheCloseIsNotKept) {
  auto s = Open();
  std::shared_ptr<Session> held = s;
  ASSERT_TRUE(sessions_.Close(s->id()).ok());
  auto late = held->SaveArtifact(*artifacts_, "late.txt", Artifact{true, "x", "", ""});
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(artifacts_->Usage().versions, 0);
}

TEST_F(MergeTest, DepthIsLimited) {
  auto root = Open();
  auto c1 = Child(root);
  auto c2 = Child(c1);
  SessionOptions o;
  o.parent_session_id = c2->id();
  auto too_deep = sessions_.Open(o);
  EXPECT_EQ(too_deep.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(too_deep.status().message(), HasSubstr("depth 3"));
  EXPECT_THAT(too_deep.status().message(), HasSubstr("maximum depth is 2"));
}

TEST_F(MergeTest, ClosingAParentClosesItsChildrenFirst) {
  auto parent = Open();
  auto c1 = Child(parent);
  auto c2 = Child(c1);
  ASSERT_TRUE(sessions_.Close(parent->id()).ok());
  EXPECT_TRUE(c1->closed());
  EXPECT_TRUE(c2->closed());
  EXPECT_EQ(sessions_.size(), 0u);
}

TEST_F(MergeTest, MergeOptionsOnATopLevelSessionAreRejected) {
  auto s = Open();
  auto r = sessions_.Close(s->id(), {.output_state_keys = {"x"}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

// Several closes of one child at once: exactly one merges, the others find
// the session gone. On disk a merge takes long enough for them all to overlap.
TEST(ConcurrentCloseTest, ExactlyOneOfThreeClosesMerges) {
  std::string dir = std::filesystem::temp_directory_path().string() + "/toolexec-close-" +
                    std::to_string(getpid());
  for (bool on_disk : {false, true}) {
    std::unique_ptr<ArtifactStore> store;
    if (on_disk) {
      store = *NewDirectoryArtifactStore(dir);
    } else {
      store = NewInMemoryArtifactStore();
    }
    ToolRegistry registry;
    SessionManager sessions(&registry, {}, store.get());
    CancellationToken token;
    for (int round = 0; round < 8; ++round) {
      std::string conversation = absl::StrCat("conv-", on_disk, "-", round);
      auto parent = *sessions.Open({.conversation_id = conversation});
      auto child = *sessions.Open({.parent_session_id = parent->id()});
      SaveThroughTool(store.get(), child, "out.txt", &token);
      absl::Notification go;
      std::atomic<int> ok{0}, not_found{0}, other{0};
      std::vector<std::thread> closers;
      for (int i = 0; i < 3; ++i) {
        closers.emplace_back([&] {
          go.WaitForNotification();
          auto r = sessions.Close(child->id(), {.artifact_prefixes = {"out"}});
          if (r.ok()) {
            ++ok;
          } else if (r.status().code() == absl::StatusCode::kNotFound) {
            ++not_found;
          } else {
            ++other;
          }
        });
      }
      go.Notify();
      for (auto& t : closers) t.join();
      EXPECT_EQ(ok.load(), 1) << "round " << round << (on_disk ? " on disk" : " in memory");
      EXPECT_EQ(not_found.load(), 2);
      EXPECT_EQ(other.load(), 0);
      auto versions = store->Versions({"", conversation}, "out.txt");
      ASSERT_TRUE(versions.ok()) << versions.status();
      EXPECT_THAT(*versions, ElementsAre(1));
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(IdleTtlTest, SessionsUnusedForAnHourCloseByDefault) {
  ToolRegistry registry;
  SessionManager sessions(&registry, {});
  auto s = *sessions.Open({});
  EXPECT_EQ(sessions.SweepIdle(absl::Now() + absl::Minutes(59)), 0u);
  EXPECT_EQ(sessions.SweepIdle(absl::Now() + absl::Minutes(61)), 1u);
  EXPECT_TRUE(s->closed());
}

TEST(IdleTtlTest, SweepClosesIdleSessions) {
  ToolRegistry registry;
  SessionManager sessions(&registry, {.idle_ttl = absl::Milliseconds(50)});
  auto idle = *sessions.Open({});
  auto busy = *sessions.Open({});
  absl::SleepFor(absl::Milliseconds(80));
  busy->Touch();
  EXPECT_EQ(sessions.SweepIdle(absl::Now()), 1u);
  EXPECT_TRUE(idle->closed());
  EXPECT_FALSE(busy->closed());
}

TEST(IdleTtlTest, ASessionWithABatchRunningIsNeverIdle) {
  ToolRegistry registry;
  SessionManager sessions(&registry, {.idle_ttl = absl::Milliseconds(20)});
  auto s = *sessions.Open({});
  s->BeginBatch();
  absl::SleepFor(absl::Milliseconds(60));
  EXPECT_EQ(sessions.SweepIdle(absl::Now()), 0u);
  s->EndBatch();
  EXPECT_EQ(sessions.SweepIdle(absl::Now() + absl::Milliseconds(40)), 1u);
}

}  // namespace
}  // namespace toolexec

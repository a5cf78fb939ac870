// S11: child sessions, their snapshot, the merge back into the parent, depth,
// and the idle TTL.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/common/test_tools.h"
#include "tools/runtime/artifacts.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_context.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::J;

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
    CallInfo info;
    info.session_id = s->id();
    info.artifacts = artifacts_.get();
    ToolContext ctx(info, s, &token_, nullptr);
    ASSERT_TRUE(ctx.save_artifact(name, Artifact{true, "body of " + name, "", ""}).ok());
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
  ArtifactScope parent_scope{"", parent->artifact_conversation()};
  EXPECT_EQ(artifacts_->Load(parent_scope, "out-report.md", 0).status().code(),
            absl::StatusCode::kNotFound);

  auto merged = sessions_.Close(child->id(), {.artifact_prefixes = {"out-", "scratch"}});
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->artifact_delta.at("out-report.md"), 1);
  EXPECT_EQ(artifacts_->Load(parent_scope, "out-report.md", 0)->first.text, "body of out-report.md");
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

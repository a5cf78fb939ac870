// Checkpoints through the Engine, no transport: a batch that can write takes
// one first and the observer hears of it before any result; a read-only batch
// takes none; a restore puts back what a command changed, refuses while a
// batch of the session (or of a child sharing its workspace) runs, and is
// judged by the policy as a write of every path it changes; a child's
// checkpoints are its own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/engine.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/engine_test_util.h"

namespace toolexec {
namespace {


using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Call;

// A batch's calls (CallRequest moves only).
template <typename... C>
std::vector<CallRequest> Calls(C... calls) {
  std::vector<CallRequest> out;
  (out.push_back(std::move(calls)), ...);
  return out;
}

// Records the order of a batch's events.
class Recorder final : public BatchObserver {
 public:
  void OnProgress(ProgressEvent) override {}
  void OnCheckpoint(const CheckpointEvent& e) override {
    absl::MutexLock lock(&mu_);
    events_.push_back("checkpoint");
    checkpoints_.push_back(e);
  }
  void OnResult(ToolCallResult result) override {
    absl::MutexLock lock(&mu_);
    events_.push_back(absl::StrCat("result ", result.id, result.ok() ? "" : " failed: ",
                                   result.error_message));
  }
  void OnBatchDone() override { done_.Notify(); }
  bool Wait() { return done_.WaitForNotificationWithTimeout(absl::Seconds(30)); }
  std::vector<std::string> events() {
    absl::MutexLock lock(&mu_);
    return events_;
  }
  std::vector<CheckpointEvent> checkpoints() {
    absl::MutexLock lock(&mu_);
    return checkpoints_;
  }

 private:
  absl::Mutex mu_;
  std::vector<std::string> events_ ABSL_GUARDED_BY(mu_);
  std::vector<CheckpointEvent> checkpoints_ ABSL_GUARDED_BY(mu_);
  absl::Notification done_;
};

class EngineCheckpointTest : public ::testing::Test {
 protected:
  void Start(PolicyOptions policy = {}) {
    tree_.Mkdir("ws");
    StartEngine(std::move(policy));
    auto session = engine_->OpenSession(caller_, OpenSessionSpec());
    ASSERT_TRUE(session.ok()) << session.status();
    session_ = session->session_id;
  }

  // An engine with checkpoints on, over ws/ and the store/ beside it (one
  // a daemon restarted with the same store_dir would have).
  void StartEngine(PolicyOptions policy = {}) {
    EngineOptions options;
    options.workspace = tree_.Abs("ws");
    options.policy = std::move(policy);
    options.checkpoints_enabled = true;
    options.checkpoints.store_dir = tree_.Abs("store");
    auto engine = CreateEngine(options, {});
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  // Runs one batch to its end; its events in order.
  std::vector<std::string> Run(std::vector<CallRequest> calls, Recorder* r = nullptr,
                               const std::string& session = "") {
    Recorder local;
    Recorder& rec = r != nullptr ? *r : local;
    BatchSpec spec;
    spec.session_id = session.empty() ? session_ : session;
    spec.calls = std::move(calls);
    auto batch = engine_->StartBatch(caller_, std::move(spec), &rec);
    if (!batch.ok()) return {batch.status().ToString()};
    EXPECT_TRUE(rec.Wait());
    return rec.events();
  }

  testing::TempTree tree_;
  std::unique_ptr<Engine> engine_;
  CallerIdentity caller_;
  std::string session_;
};

TEST_F(EngineCheckpointTest, AWritingBatchIsCheckpointedFirstAndACommandsChangesCanBeUndone) {
  Start();
  tree_.Write("ws/notes.txt", "original\n");
  Recorder r;
  EXPECT_THAT(Run(Calls(Call("1", "run_command",
                             R"({"command_line":"echo changed > notes.txt && mkdir made && rm -f x"})"),
                        Call("2", "view_file", R"({"file_path":"notes.txt"})")),
                  &r),
              ElementsAre("checkpoint", "result 1", "result 2"));
  ASSERT_EQ(r.checkpoints().size(), 1u);
  const CheckpointEvent cp = r.checkpoints()[0];
  EXPECT_EQ(cp.session_id, session_);
  EXPECT_THAT(cp.tools, ElementsAre("run_command"));
  EXPECT_FALSE(cp.batch_id.empty());
  EXPECT_EQ(tree_.Read("ws/notes.txt"), "changed\n");

  auto listed = engine_->ListCheckpoints(caller_, session_);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].id, cp.id);

  auto diff = engine_->DiffCheckpoint(caller_, session_, cp.id, "", {});
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_THAT(diff->unified_diff, HasSubstr("-original\n+changed\n"));

  auto restored = engine_->RestoreCheckpoint(caller_, session_, cp.id, {}, false);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(tree_.Read("ws/notes.txt"), "original\n");
  EXPECT_FALSE(tree_.Exists("ws/made"));
  EXPECT_FALSE(restored->undo_checkpoint_id.empty());
  EXPECT_EQ(engine_->ListCheckpoints(caller_, session_)->size(), 2u);
  // Another caller's session is not found, as for every other call.
  CallerIdentity other{"someone-else", ""};
  EXPECT_EQ(engine_->ListCheckpoints(other, session_).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(EngineCheckpointTest, ReadOnlyBatchesTakeNone) {
  Start();
  tree_.Write("ws/a.txt", "a\n");
  EXPECT_THAT(Run(Calls(Call("1", "view_file", R"({"file_path":"a.txt"})"),
                        Call("2", "grep_search", R"({"pattern":"a"})"), Call("3", "exit_loop", "{}"))),
              ElementsAre("result 1", "result 2", "result 3"));
  EXPECT_TRUE(engine_->ListCheckpoints(caller_, session_)->empty());
  // A write without a session has no session to keep a checkpoint for.
  Recorder r;
  BatchSpec spec;
  spec.calls.push_back(Call("1", "create_file", R"({"file_path":"b.txt","contents":"b"})"));
  auto batch = engine_->StartBatch(caller_, std::move(spec), &r);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(r.Wait());
  EXPECT_THAT(r.events(), ElementsAre("result 1"));
}

TEST_F(EngineCheckpointTest, RestoreRefusesWhileABatchOfTheSessionOrItsChildRuns) {
  Start();
  tree_.Write("ws/a.txt", "a\n");
  Run(Calls(Call("1", "create_file", R"({"file_path":"b.txt","contents":"b"})")));
  const std::string id = (*engine_->ListCheckpoints(caller_, session_))[0].id;

  OpenSessionSpec child_spec;
  child_spec.parent_session_id = session_;
  child_spec.enabled_tools = {"run_command"};
  auto child = engine_->OpenSession(caller_, child_spec);
  ASSERT_TRUE(child.ok()) << child.status();
  for (const std::string& busy : {session_, child->session_id}) {
    Recorder r;
    BatchSpec spec;
    spec.session_id = busy;
    spec.calls.push_back(Call("1", "run_command", R"({"command_line":"sleep 30"})"));
    auto batch = engine_->StartBatch(caller_, std::move(spec), &r);
    ASSERT_TRUE(batch.ok()) << batch.status();
    auto refused = engine_->RestoreCheckpoint(caller_, session_, id, {}, false);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << busy;
    EXPECT_THAT(refused.status().message(), HasSubstr("is running"));
    (*batch)->Cancel();
    ASSERT_TRUE(r.Wait());
    batch->reset();  // delivered: the batch no longer counts
  }
  EXPECT_TRUE(tree_.Exists("ws/b.txt"));
  // The child's checkpoint is its own.
  EXPECT_EQ(engine_->ListCheckpoints(caller_, child->session_id)->size(), 1u);
  EXPECT_EQ(engine_->ListCheckpoints(caller_, session_)->size(), 2u);  // create_file, sleep
  auto restored = engine_->RestoreCheckpoint(caller_, session_, id, {}, false);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_FALSE(tree_.Exists("ws/b.txt"));
}

TEST_F(EngineCheckpointTest, ThePolicyJudgesARestoreAsAWriteOfEveryPathItChanges) {
  PolicyOptions policy;
  policy.rules.push_back(testing::PathRule("keep secrets", "*", PolicyDecision::kDeny, "secret/**"));
  Start(std::move(policy));
  tree_.Write("ws/secret/key", "k1\n");
  tree_.Write("ws/open.txt", "o1\n");
  Run(Calls(Call("1", "create_file", R"({"file_path":"new.txt","contents":"n"})")));
  const std::string id = (*engine_->ListCheckpoints(caller_, session_))[0].id;
  tree_.Write("ws/secret/key", "k2\n");  // changed outside the daemon
  tree_.Write("ws/open.txt", "o2\n");
  auto refused = engine_->RestoreCheckpoint(caller_, session_, id, {}, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(refused.status().message(), HasSubstr("keep secrets"));
  EXPECT_EQ(tree_.Read("ws/open.txt"), "o2\n");  // nothing was changed
  // A restore of other paths is allowed.
  auto some = engine_->RestoreCheckpoint(caller_, session_, id, {"open.txt", "new.txt"}, false);
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ(tree_.Read("ws/open.txt"), "o1\n");
  EXPECT_FALSE(tree_.Exists("ws/new.txt"));
  EXPECT_EQ(tree_.Read("ws/secret/key"), "k2\n");
}

TEST_F(EngineCheckpointTest, ACheckpointOutlivesItsSessionAndTheDaemonForTheCallerThatTookIt) {
  caller_ = CallerIdentity{"alice", ""};
  Start();
  tree_.Write("ws/src/a.txt", "one\n");
  Recorder r;
  Run(Calls(Call("1", "create_file", R"({"file_path":"b.txt","contents":"b"})")), &r);
  ASSERT_EQ(r.checkpoints().size(), 1u);
  const std::string id = r.checkpoints()[0].id;
  testing::CloseSessionAndWait(*engine_, caller_, session_);
  tree_.Write("ws/src/a.txt", "two\n");

  // Closed: its checkpoints are still the caller's to list, diff and restore.
  auto listed = engine_->ListCheckpoints(caller_, session_);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].owner, "alice");
  auto diff = engine_->DiffCheckpoint(caller_, session_, id, "", {});
  ASSERT_TRUE(diff.ok()) << diff.status();
  EXPECT_THAT(diff->unified_diff, HasSubstr("-one\n+two\n"));
  // To another caller the closed session does not exist, as an open one would not.
  const CallerIdentity other{"mallory", ""};
  EXPECT_EQ(engine_->ListCheckpoints(other, session_).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(engine_->RestoreCheckpoint(other, session_, id, {}, false).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(tree_.Read("ws/src/a.txt"), "two\n");
  auto restored = engine_->RestoreCheckpoint(caller_, session_, id, {}, false);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_EQ(tree_.Read("ws/src/a.txt"), "one\n");
  EXPECT_FALSE(tree_.Exists("ws/b.txt"));
  EXPECT_FALSE(restored->undo_checkpoint_id.empty());

  // A daemon restarted with the same store finds them for the same caller.
  engine_.reset();
  tree_.Write("ws/src/a.txt", "three\n");
  StartEngine();
  auto after = engine_->ListCheckpoints(caller_, session_);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 2u);  // the batch's and the restore's undo
  EXPECT_EQ((*after)[1].id, restored->undo_checkpoint_id);
  EXPECT_EQ(engine_->ListCheckpoints(other, session_).status().code(), absl::StatusCode::kNotFound);
  auto again = engine_->RestoreCheckpoint(caller_, session_, id, {}, false);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(tree_.Read("ws/src/a.txt"), "one\n");
}

TEST_F(EngineCheckpointTest, AClosedSessionsWorkspaceSwappedForALinkOutsideIsNotRestoredInto) {
  Start();
  tree_.Write("ws/sub/a.txt", "one\n");
  OpenSessionSpec spec;
  spec.workspaces = {"sub"};
  auto session = engine_->OpenSession(caller_, spec);
  ASSERT_TRUE(session.ok()) << session.status();
  Run(Calls(Call("1", "create_file", R"({"file_path":"b.txt","contents":"b"})")), nullptr,
      session->session_id);
  const std::string id = (*engine_->ListCheckpoints(caller_, session->session_id))[0].id;
  testing::CloseSessionAndWait(*engine_, caller_, session->session_id);
  // The closed session's workspace is replaced by a link to a directory
  // outside the daemon's workspace.
  tree_.Write("outside/a.txt", "theirs\n");
  std::filesystem::rename(tree_.Abs("ws/sub"), tree_.Abs("ws/old-sub"));
  tree_.Symlink("ws/sub", tree_.Abs("outside"));
  auto restored = engine_->RestoreCheckpoint(caller_, session->session_id, id, {}, false);
  EXPECT_EQ(restored.status().code(), absl::StatusCode::kFailedPrecondition) << restored.status();
  EXPECT_EQ(tree_.Read("outside/a.txt"), "theirs\n");
  EXPECT_FALSE(tree_.Exists("outside/b.txt"));
}

TEST_F(EngineCheckpointTest, AClosedSessionsRestoreIsStillJudgedByThePolicy) {
  PolicyOptions policy;
  policy.rules.push_back(testing::PathRule("keep secrets", "*", PolicyDecision::kDeny, "secret/**"));
  Start(std::move(policy));
  tree_.Write("ws/secret/key", "k1\n");
  Run(Calls(Call("1", "create_file", R"({"file_path":"new.txt","contents":"n"})")));
  const std::string id = (*engine_->ListCheckpoints(caller_, session_))[0].id;
  testing::CloseSessionAndWait(*engine_, caller_, session_);
  tree_.Write("ws/secret/key", "k2\n");
  auto refused = engine_->RestoreCheckpoint(caller_, session_, id, {}, false);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(tree_.Read("ws/secret/key"), "k2\n");
  EXPECT_TRUE(tree_.Exists("ws/new.txt"));
}

TEST(EngineCheckpointOffTest, CheckpointCallsSayHowToTurnThemOn) {
  testing::TempTree tree;
  EngineOptions options;
  options.workspace = tree.path();
  auto engine = CreateEngine(options, {});
  ASSERT_TRUE(engine.ok());
  auto session = (*engine)->OpenSession(CallerIdentity(), OpenSessionSpec());
  ASSERT_TRUE(session.ok());
  auto listed = (*engine)->ListCheckpoints(CallerIdentity(), session->session_id);
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(listed.status().message(), HasSubstr("checkpoints are off"));
}

}  // namespace
}  // namespace toolexec

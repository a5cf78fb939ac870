// [Deciding what runs] through the Engine, no transport: DENY rules, asking (allow once, for
// the session, deny, timeout, cancel, drain), profiles and inheritance (each
// only narrowing the config's policy), the caller's profile as it is now, and
// waiting batches under max_pending_calls.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/engine.h"
#include "tools/runtime/json.h"
#include "tools/runtime/metrics.h"
#include "tests/common/sanitizers.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/engine_test_util.h"

namespace toolexec {
namespace {

using toolexec::testing::WithExampleTools;

using ::testing::HasSubstr;

// Records a batch's questions and results; waits for either.
class Recorder final : public BatchObserver {
 public:
  void OnProgress(ProgressEvent) override {}
  void OnPermissionRequest(const PermissionRequestEvent& e) override {
    absl::MutexLock lock(&mu_);
    requests_.push_back(e);
  }
  void OnResult(ToolCallResult result) override {
    absl::MutexLock lock(&mu_);
    results_.push_back(std::move(result));
  }
  void OnBatchDone() override { done_.Notify(); }

  bool Wait(absl::Duration d = absl::Seconds(30)) {
    return done_.WaitForNotificationWithTimeout(d);
  }
  std::vector<PermissionRequestEvent> requests() {
    absl::MutexLock lock(&mu_);
    return requests_;
  }
  // Once Wait() has returned (nothing writes them after that).
  std::vector<ToolCallResult>& results() ABSL_NO_THREAD_SAFETY_ANALYSIS { return results_; }
  size_t result_count() {
    absl::MutexLock lock(&mu_);
    return results_.size();
  }

 private:
  absl::Mutex mu_;
  std::vector<PermissionRequestEvent> requests_ ABSL_GUARDED_BY(mu_);
  std::vector<ToolCallResult> results_ ABSL_GUARDED_BY(mu_);
  absl::Notification done_;
};

class Listener final : public SessionListener {
 public:
  void OnMessage(const ContextMessage&) override {}
  void OnSessionClosed() override {}
  void OnPermissionRequest(const PermissionRequestEvent& e) override {
    absl::MutexLock lock(&mu_);
    ids.push_back(e.request_id);
  }
  absl::Mutex mu_;
  std::vector<std::string> ids;
};

using testing::Call;
using testing::PathRule;
using testing::Rule;

// Counts the permission decisions the engine reports.
class DecisionSink final : public MetricsSink {
 public:
  void AddTools(const ToolRegistry&) override {}
  void CallCompleted(const RegisteredTool*, ResultStatus, ErrorCode, absl::Duration) override {}
  void BatchStarted(size_t) override {}
  void BatchFinished(absl::Duration) override {}
  void RpcFinished(absl::string_view, absl::StatusCode) override {}
  void PermissionDecided(PolicyDecision d, PermissionDecidedBy by) override {
    absl::MutexLock lock(&mu_);
    ++counts_[{d, by}];
  }
  int count(PolicyDecision d, PermissionDecidedBy by) {
    absl::MutexLock lock(&mu_);
    auto it = counts_.find({d, by});
    return it == counts_.end() ? 0 : it->second;
  }
  int total() {
    absl::MutexLock lock(&mu_);
    int n = 0;
    for (const auto& [key, c] : counts_) n += c;
    return n;
  }

 private:
  absl::Mutex mu_;
  std::map<std::pair<PolicyDecision, PermissionDecidedBy>, int> counts_ ABSL_GUARDED_BY(mu_);
};

class EnginePolicyTest : public ::testing::Test {
 protected:
  // With an audit log in the tree and the decisions counted in sink_.
  void StartAudited(PolicyOptions policy) {
    audit_path_ = tree_.path() + "/audit.jsonl";
    Start(std::move(policy), [this](EngineOptions& o) {
      o.hooks.audit_log = audit_path_;
      o.metrics = sink_;
    });
  }

  // The audit log's lines by call id, once it has `n` lines (bounded wait: a
  // line may be written just after its result is delivered).
  std::map<std::string, Json> AuditLines(size_t n) {
    std::vector<std::string> lines;
    for (int i = 0; i < 3000; ++i) {
      lines = absl::StrSplit(tree_.Read("audit.jsonl"), '\n', absl::SkipEmpty());
      if (lines.size() >= n) break;
      absl::SleepFor(absl::Milliseconds(1));
    }
    EXPECT_EQ(lines.size(), n);
    std::map<std::string, Json> out;
    for (const auto& line : lines) {
      auto parsed = ParseJson(line);
      EXPECT_TRUE(parsed.ok()) << line;
      if (parsed.ok()) out[(*parsed)["call_id"].GetString()] = *std::move(parsed);
    }
    return out;
  }

  static std::string DecidedBy(const Json& line) {
    return line.HasMember("decided_by") ? line["decided_by"].GetString() : "(none)";
  }

  void Start(PolicyOptions policy, const std::function<void(EngineOptions&)>& more = nullptr) {
    EngineOptions options;
    options.workspace = tree_.path();
    options.policy = std::move(policy);
    if (more) more(options);
    auto engine = CreateEngine(options, WithExampleTools());
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  // A policy that asks before create_file and run_command, denies rm, and
  // lets everything else run.
  static PolicyOptions AskingPolicy() {
    PolicyOptions p;
    p.rules.push_back(Rule("writes need a yes", "create_file", PolicyDecision::kAsk));
    p.rules.push_back(Rule("commands need a yes", "run_command", PolicyDecision::kAsk));
    PolicyRuleOptions rm = Rule("never rm", "run_command", PolicyDecision::kDeny);
    rm.command_pattern = "rm *";
    p.rules.push_back(rm);
    return p;
  }

  BatchSpec Writes(std::string session_id = "") {
    BatchSpec spec;
    spec.session_id = std::move(session_id);
    spec.calls.push_back(Call("w1", "create_file", R"({"file_path":"out/a.txt","contents":"A"})"));
    spec.calls.push_back(Call("w2", "create_file", R"({"file_path":"out/b.txt","contents":"B"})"));
    spec.calls.push_back(Call("g", "get_weather", R"({"city":"Paris"})"));
    return spec;
  }

  // What becomes of one call: "asked" (the batch is then cancelled), or its
  // result's status and message ("denied: denied by rule ...").
  std::string Outcome(const CallerIdentity& caller, const std::string& session_id,
                      const std::string& tool, const std::string& args) {
    BatchSpec spec;
    spec.session_id = session_id;
    spec.calls.push_back(Call("1", tool, args));
    Recorder r;
    auto batch = engine_->StartBatch(caller, std::move(spec), &r);
    if (!batch.ok()) return batch.status().ToString();
    for (int i = 0; i < 3000 && r.result_count() == 0 && r.requests().empty(); ++i) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    const bool asked = !r.requests().empty();
    if (asked) (*batch)->Cancel();
    if (!r.Wait()) return "no result";
    if (asked) return "asked";
    if (r.results().empty()) return "no result";
    const ToolCallResult& result = r.results()[0];
    return absl::StrCat(ResultStatusName(result.status), ": ", result.error_message);
  }

  // Waits (bounded) until `r` has seen `n` requests.
  static std::vector<PermissionRequestEvent> AwaitRequests(Recorder& r, size_t n) {
    for (int i = 0; i < 3000 && r.requests().size() < n; ++i) absl::SleepFor(absl::Milliseconds(1));
    return r.requests();
  }

  testing::TempTree tree_;
  std::unique_ptr<Engine> engine_;
  CallerIdentity caller_;
  std::string audit_path_;
  std::shared_ptr<DecisionSink> sink_ = std::make_shared<DecisionSink>();
};

TEST_F(EnginePolicyTest, DenyRuleFailsOnlyItsCallNamingTheRule) {
  Start(AskingPolicy());
  BatchSpec spec;
  spec.calls.push_back(Call("1", "run_command", R"({"command_line":"rm -rf out"})"));
  spec.calls.push_back(Call("2", "get_weather", R"({"city":"Paris"})"));
  Recorder r;
  auto batch = engine_->StartBatch(caller_, std::move(spec), &r);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_TRUE(r.Wait());
  auto& results = r.results();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, ResultStatus::kDenied);
  ASSERT_TRUE(results[0].error.has_value());
  EXPECT_EQ(results[0].error->code, ErrorCode::kDenied);
  EXPECT_THAT(results[0].error_message, HasSubstr("rule 'never rm' of policy 'default'"));
  EXPECT_TRUE(results[1].ok()) << results[1].error_message;
  EXPECT_TRUE(r.requests().empty());  // a denial asks nothing
}

TEST_F(EnginePolicyTest, AskAllowOnceRunsTheBatchAndAsksAgainNextTime) {
  Start(AskingPolicy());
  Recorder r;
  auto batch = engine_->StartBatch(caller_, Writes(), &r);
  ASSERT_TRUE(batch.ok()) << batch.status();
  auto requests = AwaitRequests(r, 1);
  // Both writes share a directory: one suggested grant on it.
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target.kind, PermissionRequirement::Kind::kPath);
  EXPECT_EQ(requests[0].target.value, tree_.Abs("out"));
  EXPECT_EQ(requests[0].target.level, PermissionLevel::kWrite);
  EXPECT_EQ(requests[0].tool_name, "create_file");
  EXPECT_THAT(requests[0].reason, HasSubstr("writes need a yes"));
  // Nothing runs while the question is open.
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(r.result_count(), 0u);
  EXPECT_FALSE(tree_.Exists("out/a.txt"));
  EXPECT_EQ(engine_->in_flight_batches(), 1);

  // Only the caller whose batch asked can answer: to another it is unknown.
  EXPECT_EQ(engine_->RespondPermission(CallerIdentity{"someone else", ""},
                                       requests[0].request_id, PermissionAnswer::kAllowOnce, "")
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(r.result_count(), 0u);
  ASSERT_TRUE(engine_
                  ->RespondPermission(caller_, requests[0].request_id,
                                      PermissionAnswer::kAllowOnce, "")
                  .ok());
  ASSERT_TRUE(r.Wait());
  auto& results = r.results();
  ASSERT_EQ(results.size(), 3u);
  for (const auto& res : results) EXPECT_TRUE(res.ok()) << res.error_message;
  EXPECT_EQ(tree_.Read("out/a.txt"), "A");
  // Answered: a second answer finds nothing.
  EXPECT_EQ(engine_->RespondPermission(caller_, requests[0].request_id,
                                       PermissionAnswer::kAllowOnce, "")
                .code(),
            absl::StatusCode::kNotFound);

  Recorder again;
  auto second = engine_->StartBatch(caller_, Writes(), &again);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(AwaitRequests(again, 1).size(), 1u);  // once means once
  (*second)->Cancel();
  ASSERT_TRUE(again.Wait());
}

TEST_F(EnginePolicyTest, AllowForTheSessionDoesNotAskAgain) {
  Start(AskingPolicy());
  auto session = engine_->OpenSession(caller_, {});
  ASSERT_TRUE(session.ok()) << session.status();
  auto listener = std::make_shared<Listener>();
  auto watch = engine_->Watch(caller_, session->session_id, listener);
  ASSERT_TRUE(watch.ok());

  Recorder r;
  auto batch = engine_->StartBatch(caller_, Writes(session->session_id), &r);
  ASSERT_TRUE(batch.ok());
  auto requests = AwaitRequests(r, 1);
  ASSERT_EQ(requests.size(), 1u);
  {
    absl::MutexLock lock(&listener->mu_);  // WatchSession sees it too
    EXPECT_THAT(listener->ids, ::testing::ElementsAre(requests[0].request_id));
  }
  ASSERT_TRUE(engine_
                  ->RespondPermission(caller_, requests[0].request_id,
                                      PermissionAnswer::kAllowSession, "")
                  .ok());
  ASSERT_TRUE(r.Wait());
  for (const auto& res : r.results()) EXPECT_TRUE(res.ok()) << res.error_message;

  // Same directory, same session: covered, so no question.
  BatchSpec more;
  more.session_id = session->session_id;
  more.calls.push_back(Call("w3", "create_file", R"({"file_path":"out/c.txt","contents":"C"})"));
  Recorder r2;
  auto second = engine_->StartBatch(caller_, std::move(more), &r2);
  ASSERT_TRUE(second.ok());
  ASSERT_TRUE(r2.Wait());
  EXPECT_TRUE(r2.requests().empty());
  ASSERT_EQ(r2.results().size(), 1u);
  EXPECT_TRUE(r2.results()[0].ok());
  // Another directory is not covered.
  BatchSpec elsewhere;
  elsewhere.session_id = session->session_id;
  elsewhere.calls.push_back(Call("w4", "create_file", R"({"file_path":"x/d.txt","contents":"D"})"));
  Recorder r3;
  auto third = engine_->StartBatch(caller_, std::move(elsewhere), &r3);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(AwaitRequests(r3, 1).size(), 1u);
  (*third)->Cancel();
  ASSERT_TRUE(r3.Wait());
}

TEST_F(EnginePolicyTest, DenyFailsEveryCallOfTheBatch) {
  Start(AskingPolicy());
  BatchSpec spec = Writes();
  spec.calls.push_back(Call("c", "run_command", R"({"command_line":"git status"})"));
  Recorder r;
  auto batch = engine_->StartBatch(caller_, std::move(spec), &r);
  ASSERT_TRUE(batch.ok());
  auto requests = AwaitRequests(r, 2);
  ASSERT_EQ(requests.size(), 2u);  // the directory, and "git *"
  EXPECT_EQ(requests[1].target.value, "git *");
  ASSERT_TRUE(engine_->RespondPermission(caller_, requests[0].request_id,
                                         PermissionAnswer::kAllowOnce, "")
                  .ok());
  EXPECT_FALSE(r.Wait(absl::Milliseconds(50)));  // still waiting for the other
  ASSERT_TRUE(
      engine_->RespondPermission(caller_, requests[1].request_id, PermissionAnswer::kDeny, "")
          .ok());
  ASSERT_TRUE(r.Wait());
  auto& results = r.results();
  ASSERT_EQ(results.size(), 4u);
  for (const auto& res : results) {
    EXPECT_EQ(res.status, ResultStatus::kDenied) << res.id;
    EXPECT_EQ(res.error_message, "Permission denied by user");
  }
  EXPECT_FALSE(tree_.Exists("out/a.txt"));
}

TEST_F(EnginePolicyTest, UnansweredRequestTimesOutAsDenied) {
  PolicyOptions p = AskingPolicy();
  p.ask_timeout = absl::Milliseconds(100);
  Start(std::move(p));
  Recorder r;
  auto batch = engine_->StartBatch(caller_, Writes(), &r);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(r.Wait());
  auto& results = r.results();
  ASSERT_EQ(results.size(), 3u);
  for (const auto& res : results) {
    EXPECT_EQ(res.status, ResultStatus::kDenied);
    EXPECT_THAT(res.error_message, HasSubstr("not answered within 100 ms"));
  }
  EXPECT_FALSE(tree_.Exists("out/a.txt"));
  auto requests = r.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(engine_->RespondPermission(caller_, requests[0].request_id,
                                       PermissionAnswer::kAllowOnce, "")
                .code(),
            absl::StatusCode::kNotFound);
}

TEST_F(EnginePolicyTest, CancelEndsTheQuestionAndTheBatch) {
  Start(AskingPolicy());
  Recorder r;
  auto batch = engine_->StartBatch(caller_, Writes(), &r);
  ASSERT_TRUE(batch.ok());
  auto requests = AwaitRequests(r, 1);
  ASSERT_EQ(requests.size(), 1u);
  (*batch)->Cancel();
  ASSERT_TRUE(r.Wait());
  for (const auto& res : r.results()) EXPECT_EQ(res.status, ResultStatus::kCancelled);
  EXPECT_EQ(engine_->RespondPermission(caller_, requests[0].request_id,
                                       PermissionAnswer::kAllowOnce, "")
                .code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(tree_.Exists("out/a.txt"));
}

TEST_F(EnginePolicyTest, ClosingTheSessionCancelsItsQuestions) {
  Start(AskingPolicy());
  auto session = engine_->OpenSession(caller_, {});
  ASSERT_TRUE(session.ok());
  Recorder r;
  auto batch = engine_->StartBatch(caller_, Writes(session->session_id), &r);
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(AwaitRequests(r, 1).size(), 1u);
  absl::Notification closed;
  engine_->CloseSession(caller_, session->session_id, {},
                        [&](absl::StatusOr<MergeResult>) { closed.Notify(); });
  closed.WaitForNotification();
  ASSERT_TRUE(r.Wait(absl::Seconds(10)));  // long before the 60 s ask timeout
  for (const auto& res : r.results()) EXPECT_EQ(res.status, ResultStatus::kCancelled);
  EXPECT_FALSE(tree_.Exists("out/a.txt"));
}

TEST_F(EnginePolicyTest, DrainCancelsAPendingQuestionAfterItsGrace) {
  Start(AskingPolicy());
  Recorder r;
  auto batch = engine_->StartBatch(caller_, Writes(), &r);
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(AwaitRequests(r, 1).size(), 1u);
  std::thread deliverer([&] {
    r.Wait();
    batch->reset();
  });
  EXPECT_FALSE(engine_->Drain(absl::Now() + absl::Milliseconds(100)));
  deliverer.join();
  for (const auto& res : r.results()) EXPECT_EQ(res.status, ResultStatus::kCancelled);
  EXPECT_EQ(engine_->in_flight_batches(), 0);
  EXPECT_TRUE(engine_->Stop());
}

TEST_F(EnginePolicyTest, ProfilesSelectNarrowAndAreInherited) {
  PolicyOptions p;  // the default policy allows everything
  PolicyProfileOptions no_weather{"no_weather", std::nullopt,
                                  {Rule("no weather", "get_weather", PolicyDecision::kDeny)}};
  p.profiles.push_back(no_weather);
  Start(std::move(p));
  auto run = [&](const std::string& session_id, const std::string& tool,
                 const std::string& args, const CallerIdentity* caller = nullptr) {
    BatchSpec spec;
    spec.session_id = session_id;
    spec.calls.push_back(Call("1", tool, args));
    Recorder r;
    auto batch = engine_->StartBatch(caller ? *caller : caller_, std::move(spec), &r);
    EXPECT_TRUE(batch.ok()) << batch.status();
    EXPECT_TRUE(r.Wait());
    return std::move(r.results().at(0));
  };
  const std::string weather = R"({"city":"Paris"})";
  EXPECT_TRUE(run("", "get_weather", weather).ok());

  OpenSessionSpec unknown;
  unknown.policy_profile = "nope";
  auto bad = engine_->OpenSession(caller_, unknown);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("unknown policy profile 'nope'"));

  OpenSessionSpec narrow;
  narrow.policy_profile = "no_weather";
  auto parent = engine_->OpenSession(caller_, narrow);
  ASSERT_TRUE(parent.ok()) << parent.status();
  auto denied = run(parent->session_id, "get_weather", weather);
  EXPECT_EQ(denied.status, ResultStatus::kDenied);
  EXPECT_THAT(denied.error_message, HasSubstr("rule 'no weather' of policy 'no_weather'"));

  // A child inherits its parent's profile and cannot loosen it.
  OpenSessionSpec child;
  child.parent_session_id = parent->session_id;
  child.policy_profile = "allow_all";
  auto kid = engine_->OpenSession(caller_, child);
  ASSERT_TRUE(kid.ok()) << kid.status();
  EXPECT_EQ(run(kid->session_id, "get_weather", weather).status, ResultStatus::kDenied);

  // read_only: only tools declared read-only run.
  OpenSessionSpec ro;
  ro.policy_profile = "read_only";
  auto reader = engine_->OpenSession(caller_, ro);
  ASSERT_TRUE(reader.ok());
  tree_.Write("a.txt", "hello\n");
  EXPECT_TRUE(run(reader->session_id, "view_file", R"({"file_path":"a.txt"})").ok());
  auto write = run(reader->session_id, "create_file", R"({"file_path":"b.txt","contents":"x"})");
  EXPECT_EQ(write.status, ResultStatus::kDenied);
  EXPECT_THAT(write.error_message, HasSubstr("policy 'read_only'"));
  EXPECT_FALSE(tree_.Exists("b.txt"));

  // A credential's profile applies when the session names none.
  CallerIdentity bound{"ci", "read_only"};
  auto by_caller = engine_->OpenSession(bound, {});
  ASSERT_TRUE(by_caller.ok());
  // (the session is the credential's own: another caller would not find it)
  EXPECT_EQ(run(by_caller->session_id, "create_file", R"({"file_path":"c.txt","contents":"x"})",
                &bound)
                .status,
            ResultStatus::kDenied);
}

TEST_F(EnginePolicyTest, TheAuditLogAndTheMetricsNameWhatDecided) {
  StartAudited(AskingPolicy());
  using D = PolicyDecision;
  using B = PermissionDecidedBy;
  auto run = [&](BatchSpec spec, std::optional<PermissionAnswer> answer) {
    Recorder r;
    auto batch = engine_->StartBatch(caller_, std::move(spec), &r);
    ASSERT_TRUE(batch.ok()) << batch.status();
    if (answer.has_value()) {
      auto requests = AwaitRequests(r, 1);
      ASSERT_EQ(requests.size(), 1u);
      ASSERT_TRUE(engine_->RespondPermission(caller_, requests[0].request_id, *answer, "").ok());
    }
    ASSERT_TRUE(r.Wait());
  };
  // A rule denies one call; the default decision lets the other run.
  BatchSpec first;
  first.calls.push_back(Call("rm", "run_command", R"({"command_line":"rm -rf out"})"));
  first.calls.push_back(Call("weather", "get_weather", R"({"city":"Paris"})"));
  run(std::move(first), std::nullopt);
  // Asked, and the user allows for the session; then the grant covers.
  auto session = engine_->OpenSession(caller_, {});
  ASSERT_TRUE(session.ok());
  run(Writes(session->session_id), PermissionAnswer::kAllowSession);
  BatchSpec covered;
  covered.session_id = session->session_id;
  covered.calls.push_back(Call("w3", "create_file", R"({"file_path":"out/c.txt","contents":"C"})"));
  run(std::move(covered), std::nullopt);
  // Asked, and the user denies: every call of the batch names the user.
  BatchSpec refused;
  refused.calls.push_back(Call("git", "run_command", R"({"command_line":"git status"})"));
  refused.calls.push_back(Call("weather2", "get_weather", R"({"city":"Rome"})"));
  run(std::move(refused), PermissionAnswer::kDeny);

  auto lines = AuditLines(8);
  const std::tuple<const char*, const char*, const char*> expected[] = {
      {"rm", "denied", "policy default: rule never rm"},
      {"weather", "allowed", "policy default: default decision"},
      {"w1", "allowed", "user"},
      {"w2", "allowed", "user"},
      {"g", "allowed", "policy default: default decision"},
      {"w3", "allowed", "grant"},
      {"git", "denied", "user"},
      {"weather2", "denied", "user"},
  };
  for (const auto& [id, decision, by] : expected) {
    ASSERT_EQ(lines.count(id), 1u) << id;
    EXPECT_STREQ(lines[id]["decision"].GetString(), decision) << id;
    EXPECT_EQ(DecidedBy(lines[id]), by) << id;
  }
  // Once per call when decided, once per asked call when answered.
  EXPECT_EQ(sink_->count(D::kDeny, B::kRule), 1);
  EXPECT_EQ(sink_->count(D::kAllow, B::kDefault), 3);  // weather, g, weather2
  EXPECT_EQ(sink_->count(D::kAsk, B::kRule), 3);       // w1, w2, git
  EXPECT_EQ(sink_->count(D::kAllow, B::kUser), 2);     // w1, w2
  EXPECT_EQ(sink_->count(D::kAllow, B::kGrant), 1);    // w3
  EXPECT_EQ(sink_->count(D::kDeny, B::kUser), 1);      // git
  EXPECT_EQ(sink_->total(), 11);
}

TEST_F(EnginePolicyTest, AnUnansweredAskIsAuditedAndCountedAsTheTimeouts) {
  PolicyOptions p = AskingPolicy();
  p.ask_timeout = absl::Milliseconds(100);
  StartAudited(std::move(p));
  Recorder r;
  auto batch = engine_->StartBatch(caller_, Writes(), &r);
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(r.Wait());
  auto lines = AuditLines(3);
  for (const char* id : {"w1", "w2", "g"}) {
    ASSERT_EQ(lines.count(id), 1u) << id;
    EXPECT_STREQ(lines[id]["decision"].GetString(), "denied") << id;
    EXPECT_EQ(DecidedBy(lines[id]), "timeout") << id;
  }
  EXPECT_EQ(sink_->count(PolicyDecision::kAsk, PermissionDecidedBy::kRule), 2);
  EXPECT_EQ(sink_->count(PolicyDecision::kDeny, PermissionDecidedBy::kTimeout), 2);
  EXPECT_EQ(sink_->count(PolicyDecision::kAllow, PermissionDecidedBy::kDefault), 1);  // g
  EXPECT_EQ(sink_->total(), 5);
}

TEST_F(EnginePolicyTest, WorkspaceOnlyDeniesPathsOutsideTheWorkspace) {
  PolicyOptions p;
  p.default_decision = PolicyDecision::kAllow;
  Start(std::move(p));
  OpenSessionSpec spec;
  spec.policy_profile = "workspace_only";
  auto session = engine_->OpenSession(caller_, spec);
  ASSERT_TRUE(session.ok());
  BatchSpec batch;
  batch.session_id = session->session_id;
  batch.calls.push_back(Call("1", "view_file", R"({"file_path":"/etc/hostname"})"));
  Recorder r;
  auto started = engine_->StartBatch(caller_, std::move(batch), &r);
  ASSERT_TRUE(started.ok());
  ASSERT_TRUE(r.Wait());
  ASSERT_EQ(r.results().size(), 1u);
  EXPECT_EQ(r.results()[0].status, ResultStatus::kDenied);
  EXPECT_THAT(r.results()[0].error_message, HasSubstr("policy 'workspace_only'"));
}

// --- profiles narrow the config's policy; limits count waiting batches ---

TEST_F(EnginePolicyTest, AProfileNarrowsTheConfigsPolicyAndNeverReplacesIt) {
  PolicyOptions p;
  p.rules.push_back(Rule("no shell", "run_command", PolicyDecision::kDeny));
  p.rules.push_back(Rule("writes need a yes", "create_file", PolicyDecision::kAsk));
  Start(std::move(p));
  const std::string shell = R"({"command_line":"touch ran"})";
  const std::string write = R"({"file_path":"out/a.txt","contents":"A"})";

  // A token bound to workspace_only: the config's rules hold, with or
  // without a session.
  const CallerIdentity workspace_only{"ws", "workspace_only"};
  EXPECT_THAT(Outcome(workspace_only, "", "run_command", shell),
              HasSubstr("denied by rule 'no shell' of policy 'default'"));
  auto ws = engine_->OpenSession(workspace_only, {});
  ASSERT_TRUE(ws.ok()) << ws.status();
  EXPECT_THAT(Outcome(workspace_only, ws->session_id, "run_command", shell),
              HasSubstr("rule 'no shell' of policy 'default'"));
  EXPECT_EQ(Outcome(workspace_only, ws->session_id, "create_file", write), "asked");
  // ... and its own narrowing still holds beside them.
  EXPECT_THAT(Outcome(workspace_only, ws->session_id, "view_file",
                      R"({"file_path":"/etc/hostname"})"),
              HasSubstr("policy 'workspace_only'"));

  // A caller without a profile asks for allow_all: the config still decides.
  OpenSessionSpec wide;
  wide.policy_profile = "allow_all";
  auto all = engine_->OpenSession(caller_, wide);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Outcome(caller_, all->session_id, "run_command", shell),
              HasSubstr("rule 'no shell' of policy 'default'"));
  EXPECT_EQ(Outcome(caller_, all->session_id, "create_file", write), "asked");
  // So does a token bound to allow_all.
  const CallerIdentity allow_all{"everything", "allow_all"};
  EXPECT_THAT(Outcome(allow_all, "", "run_command", shell), HasSubstr("rule 'no shell'"));
  EXPECT_EQ(Outcome(allow_all, "", "create_file", write), "asked");
  EXPECT_FALSE(tree_.Exists("ran"));
  EXPECT_FALSE(tree_.Exists("out/a.txt"));
}

TEST_F(EnginePolicyTest, ACallersProfileAsItIsNowAppliesInSessionsOpenedBefore) {
  Start(PolicyOptions{});  // the config's policy lets everything run
  const CallerIdentity before{"alice", "allow_all"};
  auto session = engine_->OpenSession(before, {});
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(Outcome(before, session->session_id, "create_file",
                    R"({"file_path":"a.txt","contents":"A"})"),
            "success: ");
  // Her token file is reloaded and binds her token to read_only: the
  // session she opened before is judged by it from the next call on, and so
  // are its children.
  const CallerIdentity after{"alice", "read_only"};
  EXPECT_THAT(Outcome(after, session->session_id, "create_file",
                      R"({"file_path":"b.txt","contents":"B"})"),
              HasSubstr("denied by the default decision of policy 'read_only'"));
  OpenSessionSpec child;
  child.parent_session_id = session->session_id;
  auto kid = engine_->OpenSession(after, child);
  ASSERT_TRUE(kid.ok()) << kid.status();
  EXPECT_THAT(
      Outcome(after, kid->session_id, "create_file", R"({"file_path":"c.txt","contents":"C"})"),
      HasSubstr("policy 'read_only'"));
  EXPECT_EQ(Outcome(after, session->session_id, "view_file", R"({"file_path":"a.txt"})"),
            "success: ");
  EXPECT_FALSE(tree_.Exists("b.txt"));
  EXPECT_FALSE(tree_.Exists("c.txt"));
}

TEST_F(EnginePolicyTest, BatchesWaitingForAnAnswerCountTowardTheLimitOfPendingCalls) {
  Start(AskingPolicy(), [](EngineOptions& o) { o.max_pending_calls = 4; });
  auto write = [](const std::string& id) {
    BatchSpec spec;
    spec.calls.push_back(
        Call(id, "create_file", absl::StrCat(R"({"file_path":"out/)", id, R"(","contents":"x"})")));
    return spec;
  };
  Recorder first, second;
  auto a = engine_->StartBatch(caller_, Writes(), &first);  // 3 calls
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = engine_->StartBatch(caller_, write("b"), &second);  // 1 more: the limit
  ASSERT_TRUE(b.ok()) << b.status();
  auto asked = AwaitRequests(first, 1);
  ASSERT_EQ(asked.size(), 1u);
  ASSERT_EQ(AwaitRequests(second, 1).size(), 1u);
  EXPECT_EQ(engine_->stats().calls_queued, 4u);  // waiting, as queued calls do

  // Full: the next batch is refused as any batch past the limit is.
  Recorder refused;
  auto c = engine_->StartBatch(caller_, write("c"), &refused);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted) << c.status();
  EXPECT_THAT(c.status().message(), HasSubstr("limit of 4"));
  EXPECT_EQ(engine_->in_flight_batches(), 2);

  // An answer frees the room of its batch once its calls have ended.
  ASSERT_TRUE(
      engine_->RespondPermission(caller_, asked[0].request_id, PermissionAnswer::kDeny, "").ok());
  ASSERT_TRUE(first.Wait());
  for (int i = 0; i < 3000 && engine_->stats().calls_queued + engine_->stats().calls_running > 1;
       ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  Recorder third;
  auto d = engine_->StartBatch(caller_, write("d"), &third);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(AwaitRequests(third, 1).size(), 1u);
  (*b)->Cancel();
  (*d)->Cancel();
  ASSERT_TRUE(second.Wait());
  ASSERT_TRUE(third.Wait());
  EXPECT_FALSE(tree_.Exists("out"));
}

// --- command lines: what runs, not how it is spelled ---

// A batch of run_command calls, one per line.
BatchSpec Commands(const std::vector<std::string>& lines, std::string session_id = "") {
  BatchSpec spec;
  spec.session_id = std::move(session_id);
  for (size_t i = 0; i < lines.size(); ++i) {
    Json args = MakeObject();
    args.AddMember("command_line", JsonValue(lines[i], args.GetAllocator()), args.GetAllocator());
    spec.calls.push_back(Call(std::to_string(i), "run_command", ToJsonString(args)));
  }
  return spec;
}

// A policy of one run_command rule with a command pattern.
PolicyOptions OneCommandRule(std::string name, PolicyDecision decision, std::string pattern,
                             std::optional<PolicyDecision> default_decision = std::nullopt) {
  PolicyOptions p;
  p.default_decision = default_decision;
  PolicyRuleOptions rule = Rule(std::move(name), "run_command", decision);
  rule.command_pattern = std::move(pattern);
  p.rules.push_back(std::move(rule));
  return p;
}

TEST_F(EnginePolicyTest, ASessionGrantOnACommandDoesNotCoverTheOtherCommandsOfALine) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kSkipCommandsUnderTsan;
  Start(AskingPolicy());
  auto session = engine_->OpenSession(caller_, {});
  ASSERT_TRUE(session.ok()) << session.status();
  Recorder r;
  ASSERT_TRUE(engine_->StartBatch(caller_, Commands({"git --version"}, session->session_id), &r)
                  .ok());
  auto requests = AwaitRequests(r, 1);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target.value, "git *");
  ASSERT_TRUE(engine_
                  ->RespondPermission(caller_, requests[0].request_id,
                                      PermissionAnswer::kAllowSession, "")
                  .ok());
  ASSERT_TRUE(r.Wait());

  // "git *" is granted; the line runs touch too, and every spelling of a
  // second command is asked about.
  for (const char* line : {"git --version; touch X", "git --version && touch X",
                           "git --version | touch X", "git --version\ntouch X",
                           "git $(touch X)", "git --version > \"$(touch X)\"",
                           "git --version & sh -c 'touch X'", "git log | xargs touch"}) {
    Recorder again;
    auto batch = engine_->StartBatch(caller_, Commands({line}, session->session_id), &again);
    ASSERT_TRUE(batch.ok());
    auto asked = AwaitRequests(again, 1);
    ASSERT_FALSE(asked.empty()) << line;
    EXPECT_THAT(asked.back().description, HasSubstr(line)) << line;
    (*batch)->Cancel();
    ASSERT_TRUE(again.Wait());
    EXPECT_FALSE(tree_.Exists("X")) << line;
  }
  // What the grant covers still runs without a question.
  Recorder covered;
  ASSERT_TRUE(engine_
                  ->StartBatch(caller_, Commands({"git --version | git hash-object --stdin"},
                                                 session->session_id),
                               &covered)
                  .ok());
  ASSERT_TRUE(covered.Wait());
  EXPECT_TRUE(covered.requests().empty());
}

TEST_F(EnginePolicyTest, AnAllowRuleCoversALineOnlyWhenItCoversEveryCommandOfIt) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kSkipCommandsUnderTsan;
  Start(OneCommandRule("git is fine", PolicyDecision::kAllow, "git *", PolicyDecision::kDeny));
  Recorder r;
  ASSERT_TRUE(engine_
                  ->StartBatch(caller_,
                               Commands({"git --version", "git --version; touch X",
                                         "git --version `touch X`", "$(echo git) --version",
                                         "'git' --version"}),
                               &r)
                  .ok());
  ASSERT_TRUE(r.Wait());
  auto& results = r.results();
  ASSERT_EQ(results.size(), 5u);
  EXPECT_TRUE(results[0].ok()) << results[0].error_message;
  for (size_t i : {1, 2, 3}) {
    EXPECT_EQ(results[i].status, ResultStatus::kDenied) << i;
    EXPECT_THAT(results[i].error_message, HasSubstr("default decision")) << i;
  }
  EXPECT_TRUE(results[4].ok()) << results[4].error_message;  // quotes change nothing
  EXPECT_FALSE(tree_.Exists("X"));
}

TEST_F(EnginePolicyTest, ADenyRuleOnACommandMatchesItHoweverItIsSpelledOrHidden) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kSkipCommandsUnderTsan;
  Start(OneCommandRule("no rm", PolicyDecision::kDeny, "rm *"));
  tree_.Write("keep", "k");
  const std::vector<std::string> lines = {
      "true; rm keep",         "\\rm keep",         "r''m keep",       "/bin/rm keep",
      "env rm keep",           "sudo -n rm keep",   "command rm keep", "echo keep | xargs rm",
      "find . -name keep -exec rm {} +", "bash -c 'rm keep'", "eval rm keep",
      "$(echo rm) keep",       "x=rm; $x keep",     "echo ok"};
  Recorder r;
  ASSERT_TRUE(engine_->StartBatch(caller_, Commands(lines), &r).ok());
  ASSERT_TRUE(r.Wait());
  auto& results = r.results();
  ASSERT_EQ(results.size(), lines.size());
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_EQ(results[i].status, ResultStatus::kDenied) << lines[i];
  }
  // A line it cannot see through is denied saying so.
  EXPECT_THAT(results[11].error_message, HasSubstr("cannot tell what this line runs"));
  EXPECT_TRUE(results.back().ok()) << results.back().error_message;
  EXPECT_TRUE(tree_.Exists("keep"));
}

TEST_F(EnginePolicyTest, EveryCommandOfABatchIsInTheQuestion) {
  Start(AskingPolicy());
  std::vector<std::string> lines;
  for (int i = 0; i < 6; ++i) lines.push_back("git log -" + std::to_string(i + 1));
  lines.back() += "; touch X";
  Recorder r;
  auto batch = engine_->StartBatch(caller_, Commands(lines), &r);
  ASSERT_TRUE(batch.ok());
  auto requests = AwaitRequests(r, 2);
  ASSERT_EQ(requests.size(), 2u);  // git *, touch *
  EXPECT_EQ(requests[0].target.value, "git *");
  EXPECT_EQ(requests[1].target.value, "touch *");
  for (const std::string& line : lines) {
    EXPECT_THAT(requests[0].description, HasSubstr(line));
  }
  EXPECT_THAT(requests[0].description, ::testing::Not(HasSubstr("more")));
  EXPECT_THAT(requests[1].description, HasSubstr(lines.back()));
  (*batch)->Cancel();
  ASSERT_TRUE(r.Wait());
  EXPECT_FALSE(tree_.Exists("X"));
}

TEST_F(EnginePolicyTest, AVariableThatMakesBashRunCodeIsJudgedAndShown) {
  if (testing::kThreadSanitizer) GTEST_SKIP() << testing::kSkipCommandsUnderTsan;
  Start(OneCommandRule("git version", PolicyDecision::kAllow, "git --version",
                       PolicyDecision::kAsk));
  auto session = engine_->OpenSession(caller_, {});
  ASSERT_TRUE(session.ok()) << session.status();
  BatchSpec spec;
  spec.session_id = session->session_id;
  spec.calls.push_back(Call("env", "run_command",
                            R"j({"command_line":"git --version","env":{"BASH_ENV":"$(touch X)"}})j"));
  spec.calls.push_back(
      Call("list", "run_command", R"j({"command_line":"git --version","env":["LD_PRELOAD=x.so"]})j"));
  spec.calls.push_back(
      Call("line", "run_command", R"j({"command_line":"BASH_ENV='$(touch X)' git --version"})j"));
  spec.calls.push_back(
      Call("plain", "run_command", R"j({"command_line":"git --version","env":{"DEBUG":"1"}})j"));
  Recorder r;
  auto batch = engine_->StartBatch(caller_, std::move(spec), &r);
  ASSERT_TRUE(batch.ok());
  auto requests = AwaitRequests(r, 1);
  ASSERT_EQ(requests.size(), 1u);  // "git *", for the three that set code
  const std::string& d = requests[0].description;
  EXPECT_THAT(d, HasSubstr("git --version (with environment BASH_ENV='$(touch X)')"));
  EXPECT_THAT(d, HasSubstr("LD_PRELOAD=x.so"));
  EXPECT_THAT(d, HasSubstr("BASH_ENV='$(touch X)' git --version"));
  EXPECT_THAT(d, HasSubstr("it sets BASH_ENV"));
  EXPECT_THAT(d, ::testing::Not(HasSubstr("DEBUG")));  // covered by the rule: not asked
  // Allowed for the session, yet the next such call is asked again.
  ASSERT_TRUE(engine_
                  ->RespondPermission(caller_, requests[0].request_id,
                                      PermissionAnswer::kAllowSession, "")
                  .ok());
  ASSERT_TRUE(r.Wait());
  std::remove(tree_.Abs("X").c_str());
  Recorder again;
  BatchSpec more;
  more.session_id = session->session_id;
  more.calls.push_back(Call("env", "run_command",
                            R"j({"command_line":"git --version","env":{"BASH_ENV":"$(touch X)"}})j"));
  auto second = engine_->StartBatch(caller_, std::move(more), &again);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(AwaitRequests(again, 1).size(), 1u);
  (*second)->Cancel();
  ASSERT_TRUE(again.Wait());
  EXPECT_FALSE(tree_.Exists("X"));
}

// --- paths: what a call reads or writes, not how it names it ---

// The README's "no secrets" rule.
PolicyOptions NoSecrets() {
  PolicyOptions p;
  p.rules.push_back(PathRule("no secrets", "*", PolicyDecision::kDeny, "*.env"));
  return p;
}

// Runs a batch that asks nothing and returns its results.
std::vector<ToolCallResult> RunBatch(Engine& engine, const CallerIdentity& caller,
                                     BatchSpec spec) {
  Recorder r;
  auto started = engine.StartBatch(caller, std::move(spec), &r);
  EXPECT_TRUE(started.ok()) << started.status();
  if (!started.ok()) return {};
  EXPECT_TRUE(r.Wait());
  EXPECT_TRUE(r.requests().empty());
  return std::move(r.results());
}

TEST_F(EnginePolicyTest, ADenyOnReadingAFileHoldsThroughASymlinkToIt) {
  tree_.Write("config/prod.env", "API_KEY=sk-secret\n");
  tree_.Mkdir("docs");
  ASSERT_EQ(symlink("../config/prod.env", tree_.Abs("docs/notes.txt").c_str()), 0);
  ASSERT_EQ(symlink("config", tree_.Abs("cfg").c_str()), 0);
  Start(NoSecrets());
  BatchSpec spec;
  spec.calls.push_back(Call("link", "view_file", R"({"file_path":"docs/notes.txt"})"));
  spec.calls.push_back(Call("dir", "view_file", R"({"file_path":"cfg/prod.env"})"));
  spec.calls.push_back(Call("dotdot", "view_file", R"({"file_path":"cfg/../config/prod.env"})"));
  auto results = RunBatch(*engine_, caller_, std::move(spec));
  ASSERT_EQ(results.size(), 3u);
  for (const ToolCallResult& res : results) {
    EXPECT_EQ(res.status, ResultStatus::kDenied) << res.id << ": " << res.model_content;
    EXPECT_THAT(res.error_message, HasSubstr("rule 'no secrets'")) << res.id;
    EXPECT_THAT(res.model_content, ::testing::Not(HasSubstr("sk-secret"))) << res.id;
  }
}

TEST_F(EnginePolicyTest, SearchesLeaveOutTheFilesAPathRuleDeniesAndSaySo) {
  tree_.Write("app/prod.env", "API_KEY=sk-secret\n");
  tree_.Write("app/dev.env", "API_KEY=sk-other\n");
  tree_.Write("app/main.cc", "// API_KEY is read at start-up\n");
  Start(NoSecrets());
  BatchSpec spec;
  spec.calls.push_back(
      Call("grep", "grep_search", R"({"pattern":"API_KEY","output_mode":"content"})"));
  spec.calls.push_back(Call("search", "search_directory", R"({"query":"API_KEY"})"));
  spec.calls.push_back(Call("find", "find_file", R"({"pattern":"*"})"));
  auto results = RunBatch(*engine_, caller_, std::move(spec));
  ASSERT_EQ(results.size(), 3u);
  for (const ToolCallResult& res : results) {
    ASSERT_TRUE(res.ok()) << res.id << ": " << res.error_message;
    EXPECT_THAT(res.model_content, ::testing::Not(HasSubstr("sk-"))) << res.id;
    EXPECT_THAT(res.model_content, ::testing::Not(HasSubstr("prod.env"))) << res.id;
    EXPECT_THAT(res.model_content, HasSubstr("[2 files left out by policy]")) << res.id;
    EXPECT_EQ(res.payload["left_out_by_policy"].GetUint64(), 2u) << res.id;
  }
  EXPECT_THAT(results[0].model_content, HasSubstr("app/main.cc:1:"));
  EXPECT_THAT(results[2].model_content, HasSubstr("app/main.cc"));
  // Without a path rule nothing is left out.
  Start(PolicyOptions{});
  BatchSpec plain;
  plain.calls.push_back(Call("grep", "grep_search", R"({"pattern":"API_KEY"})"));
  results = RunBatch(*engine_, caller_, std::move(plain));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_FALSE(results[0].payload.HasMember("left_out_by_policy"));
  EXPECT_THAT(results[0].model_content, HasSubstr("app/prod.env"));
}

TEST_F(EnginePolicyTest, ASessionGrantCoversAPathThroughASymlinkOnlyWhereItLeads) {
  tree_.Write("public/a.txt", "a\n");
  tree_.Write("private/secret.txt", "s\n");
  ASSERT_EQ(symlink("../private/secret.txt", tree_.Abs("public/link.txt").c_str()), 0);
  PolicyOptions p;
  p.rules.push_back(Rule("reads need a yes", "view_file", PolicyDecision::kAsk));
  Start(std::move(p));
  auto session = engine_->OpenSession(caller_, {});
  ASSERT_TRUE(session.ok()) << session.status();
  BatchSpec first;
  first.session_id = session->session_id;
  first.calls.push_back(Call("a", "view_file", R"({"file_path":"public/a.txt"})"));
  Recorder r;
  ASSERT_TRUE(engine_->StartBatch(caller_, std::move(first), &r).ok());
  auto requests = AwaitRequests(r, 1);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target.value, tree_.Abs("public"));
  ASSERT_TRUE(engine_
                  ->RespondPermission(caller_, requests[0].request_id,
                                      PermissionAnswer::kAllowSession, "")
                  .ok());
  ASSERT_TRUE(r.Wait());
  // The link is in public/, but what it reads is private/secret.txt: asked.
  BatchSpec second;
  second.session_id = session->session_id;
  second.calls.push_back(Call("link", "view_file", R"({"file_path":"public/link.txt"})"));
  Recorder r2;
  auto started = engine_->StartBatch(caller_, std::move(second), &r2);
  ASSERT_TRUE(started.ok());
  requests = AwaitRequests(r2, 1);
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].target.value, tree_.Abs("private"));
  EXPECT_THAT(requests[0].description, HasSubstr(tree_.Abs("private/secret.txt")));
  (*started)->Cancel();
  ASSERT_TRUE(r2.Wait());
}

TEST_F(EnginePolicyTest, AnAllowPathRuleAllowsAPatchOnlyWhenItCoversEveryFile) {
  tree_.Write("src/ok.txt", "old\n");
  PolicyOptions p;
  p.default_decision = PolicyDecision::kDeny;
  p.rules.push_back(PathRule("sources", "apply_patch", PolicyDecision::kAllow, "src/**"));
  Start(std::move(p));
  const std::string both =
      "*** Begin Patch\n*** Update File: src/ok.txt\n@@\n-old\n+new\n"
      "*** Add File: .github/workflows/evil.yml\n+on: push\n*** End Patch\n";
  Json args = MakeObject();
  args.AddMember("input", JsonValue(both, args.GetAllocator()), args.GetAllocator());
  BatchSpec spec;
  spec.calls.push_back(Call("both", "apply_patch", ToJsonString(args)));
  auto results = RunBatch(*engine_, caller_, std::move(spec));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, ResultStatus::kDenied) << results[0].model_content;
  EXPECT_FALSE(tree_.Exists(".github/workflows/evil.yml"));
  EXPECT_EQ(tree_.Read("src/ok.txt"), "old\n");
  // Inside src/ only: allowed.
  Json inside = MakeObject();
  inside.AddMember("input",
                   JsonValue("*** Begin Patch\n*** Update File: src/ok.txt\n@@\n-old\n+new\n"
                             "*** End Patch\n",
                             inside.GetAllocator()),
                   inside.GetAllocator());
  BatchSpec ok;
  ok.calls.push_back(Call("src", "apply_patch", ToJsonString(inside)));
  results = RunBatch(*engine_, caller_, std::move(ok));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok()) << results[0].error_message;
  EXPECT_EQ(tree_.Read("src/ok.txt"), "new\n");
}

TEST_F(EnginePolicyTest, ASessionRootedInADeniedDirectoryCannotReadPastTheDeny) {
  tree_.Write("private/secret.txt", "s3cret\n");
  PolicyOptions p;
  p.rules.push_back(PathRule("private", "*", PolicyDecision::kDeny, "private/**"));
  Start(std::move(p));
  OpenSessionSpec spec;
  spec.workspaces = {"private"};
  auto session = engine_->OpenSession(caller_, spec);
  ASSERT_TRUE(session.ok()) << session.status();
  BatchSpec batch;
  batch.session_id = session->session_id;
  batch.calls.push_back(Call("view", "view_file", R"({"file_path":"secret.txt"})"));
  batch.calls.push_back(Call("grep", "grep_search", R"({"pattern":"s3cret","path":"."})"));
  auto results = RunBatch(*engine_, caller_, std::move(batch));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, ResultStatus::kDenied) << results[0].model_content;
  EXPECT_THAT(results[0].error_message, HasSubstr("rule 'private'"));
  EXPECT_THAT(results[1].model_content, ::testing::Not(HasSubstr("secret.txt")));
}

}  // namespace
}  // namespace toolexec

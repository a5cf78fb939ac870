// S2 (concurrent batches, call order, streaming prefix), S3 (failures as
// results), S5 (needs_context), S13 (display), timeouts and cancellation.
#include "tools/runtime/tool_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "tests/common/test_tools.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::J;
using testing::MakeTool;

CallRequest Call(std::string name, std::string args_json = "", std::string id = "") {
  CallRequest c;
  c.id = id.empty() ? name : id;
  c.name = std::move(name);
  c.args_json = std::move(args_json);
  return c;
}

// A vector of calls (CallRequest is move-only).
template <typename... C>
std::vector<CallRequest> Calls(C... c) {
  std::vector<CallRequest> v;
  (v.push_back(std::move(c)), ...);
  return v;
}

// Sleeps `ms` (cancellably) and returns {"ms": ms}.
absl::StatusOr<Json> Sleep(const JsonValue& args, ToolContext& ctx) {
  int ms = args.HasMember("ms") ? args["ms"].GetInt() : 0;
  if (ctx.cancellation().WaitFor(absl::Milliseconds(ms))) return absl::CancelledError("woken");
  Json out = MakeObject();
  out.AddMember("ms", ms, out.GetAllocator());
  return out;
}

// Collects a started batch's results.
class Collector final : public BatchObserver {
 public:
  void OnProgress(ProgressEvent) override {}
  void OnResult(ToolCallResult r) override { results.push_back(std::move(r)); }
  void OnBatchDone() override { done.Notify(); }
  std::vector<ToolCallResult> results;
  absl::Notification done;
};

constexpr const char* kSleepSchema =
    R"({"type":"object","properties":{"ms":{"type":"integer","minimum":0}}})";

class RunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Add(MakeTool("sleep", Sleep, kSleepSchema));
    Add(MakeTool("echo", [](const JsonValue& a, ToolContext&) -> absl::StatusOr<Json> {
      return CopyJson(a);
    }));
    Add(MakeTool("number", [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
      return J("42");
    }));
    Add(MakeTool("nothing", [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
      return Json();
    }));
    Add(MakeTool("fails", [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
      return absl::NotFoundError("no such thing");
    }));
    Add(MakeTool("throws", [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
      throw std::runtime_error("boom");
    }));
    Add(MakeTool("throws_int", [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
      throw 7;
    }));
    Add(MakeTool("stubborn", [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
      absl::SleepFor(absl::Milliseconds(300));  // ignores cancellation
      return J(R"({"late":true})");
    }));
    Add(MakeTool(
        "ctx",
        [](const JsonValue&, ToolContext& ctx) -> absl::StatusOr<Json> {
          Json out = MakeObject();
          out.AddMember("conversation", JsonValue(ctx.conversation_id().value_or("?"), out.GetAllocator()),
                        out.GetAllocator());
          return out;
        },
        testing::kAnyObject, /*needs_context=*/true));
    Add(MakeTool(
        "typed",
        [](const JsonValue& a, ToolContext&) -> absl::StatusOr<Json> { return CopyJson(a); },
        R"({"type":"object","properties":{"n":{"type":"integer"},"flag":{"type":"boolean","default":true}},
            "required":["n"]})"));
    ToolRunner::Options options;
    runner_ = std::make_unique<ToolRunner>(&registry_, options);
  }

  void Add(std::unique_ptr<Tool> t) { ASSERT_TRUE(registry_.Register(std::move(t), "test").ok()); }

  std::vector<ToolCallResult> Run(std::vector<CallRequest> calls,
                                  std::optional<absl::Duration> timeout = std::nullopt,
                                  std::shared_ptr<Session> session = nullptr) {
    BatchRequest req;
    req.calls = std::move(calls);
    req.timeout = timeout;
    req.session = std::move(session);
    auto results = runner_->Run(std::move(req));
    EXPECT_TRUE(results.ok()) << results.status();
    return std::move(*results);
  }

  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(RunnerTest, MixedBatchKeepsCallOrder) {
  auto results = Run(Calls(Call("sleep", R"({"ms":150})", "a"), Call("echo", R"({"x":1})", "b"),
                           Call("nosuch", "", "c"), Call("fails", "", "d"),
                           Call("sleep", R"({"ms":10})", "e"), Call("echo", "{bad", "f")));
  ASSERT_EQ(results.size(), 6u);
  for (uint32_t i = 0; i < results.size(); ++i) EXPECT_EQ(results[i].index, i);
  EXPECT_EQ(results[0].id, "a");
  EXPECT_TRUE(results[0].ok());
  EXPECT_EQ(ToJsonString(results[1].payload), R"({"x":1})");
  EXPECT_EQ(results[2].error->code, ErrorCode::kUnknownTool);
  EXPECT_EQ(results[3].error->code, ErrorCode::kToolFailed);
  EXPECT_EQ(results[3].error_message, "no such thing");
  EXPECT_TRUE(results[4].ok());
  EXPECT_EQ(results[5].error->code, ErrorCode::kInvalidArguments);
}

TEST_F(RunnerTest, BatchRunsConcurrently) {
  std::vector<CallRequest> calls;
  for (int i = 0; i < 16; ++i) calls.push_back(Call("sleep", R"({"ms":200})"));
  absl::Time start = absl::Now();
  auto results = Run(std::move(calls));
  absl::Duration took = absl::Now() - start;
  for (const auto& r : results) EXPECT_TRUE(r.ok());
  // Sixteen 200 ms sleeps in sequence would take 3.2 s; a generous bound.
  EXPECT_LT(took, absl::Milliseconds(1500));
}

// Results stream as soon as the ordered prefix is complete: the fast call 0
// arrives while the slow call 1 is still running.
TEST_F(RunnerTest, StreamsTheCompletedPrefix) {
  class Observer final : public BatchObserver {
   public:
    void OnProgress(ProgressEvent) override {}
    void OnResult(ToolCallResult r) override {
      absl::MutexLock lock(&mu);
      order.push_back(r.index);
      if (r.index == 0) first.Notify();
    }
    void OnBatchDone() override { done.Notify(); }
    absl::Mutex mu;
    std::vector<uint32_t> order;
    absl::Notification first, done;
  } observer;
  BatchRequest req;
  req.calls = Calls(Call("echo"), Call("sleep", R"({"ms":400})"), Call("echo"));
  auto handle = runner_->Start(std::move(req), &observer);
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(observer.first.WaitForNotificationWithTimeout(absl::Milliseconds(300)));
  {
    absl::MutexLock lock(&observer.mu);
    EXPECT_EQ(observer.order, std::vector<uint32_t>{0});  // 2 waits behind 1
  }
  observer.done.WaitForNotification();
  EXPECT_EQ(observer.order, (std::vector<uint32_t>{0, 1, 2}));
}

TEST_F(RunnerTest, PayloadShapes) {
  auto results = Run(Calls(Call("echo", R"({"k":"v"})"), Call("number"), Call("nothing")));
  EXPECT_EQ(ToJsonString(results[0].payload), R"({"k":"v"})");
  EXPECT_EQ(ToJsonString(results[1].payload), R"({"result":42})");
  EXPECT_EQ(ToJsonString(results[2].payload), "{}");
  for (const auto& r : results) {
    EXPECT_TRUE(r.error_message.empty());
    EXPECT_FALSE(r.error.has_value());
  }
}

TEST_F(RunnerTest, FailureCarriesPayloadMessageAndStructuredError) {
  auto results = Run(Calls(Call("fails", "", "id-1")));
  const auto& r = results[0];
  EXPECT_EQ(r.status, ResultStatus::kError);
  EXPECT_EQ(ToJsonString(r.payload), R"({"error":"no such thing"})");
  EXPECT_EQ(r.error_message, "no such thing");
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->tool_name, "fails");
  EXPECT_EQ(r.error->server_name, "");
  EXPECT_EQ(r.id, "id-1");
  EXPECT_EQ(r.compact_summary, "[fails: error]");
}

TEST_F(RunnerTest, ThrowingToolIsAnErrorResult) {
  auto results = Run(Calls(Call("throws"), Call("throws_int"), Call("echo")));
  EXPECT_EQ(results[0].error->code, ErrorCode::kToolFailed);
  EXPECT_THAT(results[0].error_message, HasSubstr("boom"));
  EXPECT_EQ(results[1].error->code, ErrorCode::kToolFailed);
  EXPECT_TRUE(results[2].ok());
}

TEST_F(RunnerTest, TimeoutReachesTheToolAndKeepsTheBatchBounded) {
  absl::Time start = absl::Now();
  auto results = Run(Calls(Call("sleep", R"({"ms":5000})"), Call("stubborn"), Call("echo")),
                     absl::Milliseconds(100));
  absl::Duration took = absl::Now() - start;
  EXPECT_EQ(results[0].status, ResultStatus::kTimeout);
  EXPECT_EQ(results[0].error->code, ErrorCode::kTimeout);
  EXPECT_THAT(results[0].error_message, HasSubstr("timed out after 100ms"));
  // A tool that ignores cancellation still gets its TIMEOUT result on time.
  EXPECT_EQ(results[1].status, ResultStatus::kTimeout);
  EXPECT_TRUE(results[2].ok());
  EXPECT_LT(took, absl::Milliseconds(280));
}

TEST_F(RunnerTest, CancelCompletesEveryCallAndWakesTools) {
  Collector observer;
  std::atomic<bool> woke{false};
  ToolRegistry registry;
  ASSERT_TRUE(registry
                  .Register(MakeTool("block",
                                     [&](const JsonValue&, ToolContext& ctx) -> absl::StatusOr<Json> {
                                       if (ctx.cancellation().WaitFor(absl::Seconds(30))) woke = true;
                                       return absl::CancelledError("stopped");
                                     }),
                            "test")
                  .ok());
  ToolRunner runner(&registry, {});
  BatchRequest req;
  req.calls = Calls(Call("block"), Call("block"));
  auto handle = runner.Start(std::move(req), &observer);
  ASSERT_TRUE(handle.ok());
  absl::SleepFor(absl::Milliseconds(50));
  (*handle)->Cancel();
  ASSERT_TRUE(observer.done.WaitForNotificationWithTimeout(absl::Seconds(5)));
  ASSERT_EQ(observer.results.size(), 2u);
  for (const auto& r : observer.results) {
    EXPECT_EQ(r.status, ResultStatus::kCancelled);
    EXPECT_EQ(r.error->code, ErrorCode::kCancelled);
  }
  runner.Shutdown();  // joins the tool threads
  EXPECT_TRUE(woke);
}

TEST_F(RunnerTest, NeedsContextWithoutSessionIsNoContext) {
  auto results = Run(Calls(Call("ctx")));
  EXPECT_EQ(results[0].error->code, ErrorCode::kNoContext);
  EXPECT_THAT(results[0].error_message, HasSubstr("OpenSession"));
}

TEST_F(RunnerTest, NeedsContextWithSessionGetsIt) {
  SessionManager sessions(&registry_, {});
  auto s = *sessions.Open({.conversation_id = "conv-9"});
  auto results = Run(Calls(Call("ctx")), std::nullopt, s);
  ASSERT_TRUE(results[0].ok()) << results[0].error_message;
  EXPECT_EQ(ToJsonString(results[0].payload), R"({"conversation":"conv-9"})");
}

TEST_F(RunnerTest, SessionToolSubsetIsEnforced) {
  SessionManager sessions(&registry_, {});
  auto s = *sessions.Open({.tools = {"echo"}});
  auto results = Run(Calls(Call("echo"), Call("number")), std::nullopt, s);
  EXPECT_TRUE(results[0].ok());
  EXPECT_EQ(results[1].status, ResultStatus::kDenied);
  EXPECT_EQ(results[1].error->code, ErrorCode::kDenied);
  EXPECT_THAT(results[1].error_message, HasSubstr("not enabled"));
}

TEST_F(RunnerTest, ArgumentsAreCoercedValidatedAndDefaulted) {
  auto results = Run(Calls(Call("typed", R"({"n":"3"})"), Call("typed", R"({"n":"3.5"})"),
                           Call("typed", "{}"), Call("typed", "   ")));
  ASSERT_TRUE(results[0].ok());
  EXPECT_EQ(ToJsonString(results[0].payload), R"({"n":3,"flag":true})");
  EXPECT_EQ(results[1].error->code, ErrorCode::kInvalidArguments);
  EXPECT_THAT(results[1].error_message, HasSubstr("args.n"));
  EXPECT_EQ(results[2].error->code, ErrorCode::kInvalidArguments);  // required n missing
  EXPECT_EQ(results[3].error->code, ErrorCode::kInvalidArguments);  // blank means {}
}

TEST_F(RunnerTest, ArgsAndArgsJsonTogetherAreRejected) {
  CallRequest c = Call("echo", R"({"a":1})");
  c.args = J(R"({"b":2})");
  auto results = Run(Calls(std::move(c)));
  EXPECT_EQ(results[0].error->code, ErrorCode::kInvalidArguments);
  EXPECT_THAT(results[0].error_message, HasSubstr("not both"));
}

TEST_F(RunnerTest, DeepArgsJsonIsInvalidArguments) {
  std::string deep = std::string(100, '[') + std::string(100, ']');
  auto results = Run(Calls(Call("echo", R"({"x":)" + deep + "}")));
  EXPECT_EQ(results[0].error->code, ErrorCode::kInvalidArguments);
  EXPECT_THAT(results[0].error_message, HasSubstr("deeper"));
}

TEST_F(RunnerTest, DisplayAndCompactSummaryAreFilled) {
  auto results = Run(Calls(Call("echo", R"({"k":"v"})")));
  EXPECT_EQ(results[0].display.title, "echo");
  EXPECT_EQ(results[0].display.content, R"({"k":"v"})");
  EXPECT_EQ(results[0].display.content_type, ContentType::kJson);
  EXPECT_EQ(results[0].compact_summary, "[echo: completed]");
}

TEST_F(RunnerTest, EmptyBatchFinishes) { EXPECT_TRUE(Run({}).empty()); }

TEST_F(RunnerTest, PendingLimitRefusesWithResourceExhausted) {
  ToolRunner::Options options;
  options.max_pending_calls = 2;
  ToolRunner small(&registry_, options);
  BatchRequest req;
  req.calls = Calls(Call("echo"), Call("echo"), Call("echo"));
  auto r = small.Run(std::move(req));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(RunnerTest, ProgressPrecedesItsResult) {
  ToolRegistry registry;
  ASSERT_TRUE(registry
                  .Register(MakeTool("chatty",
                                     [](const JsonValue&, ToolContext& ctx) -> absl::StatusOr<Json> {
                                       for (int i = 0; i < 5; ++i) ctx.progress("stdout", "x");
                                       return Json();
                                     }),
                            "test")
                  .ok());
  ToolRunner runner(&registry, {});
  class Observer final : public BatchObserver {
   public:
    void OnProgress(ProgressEvent e) override {
      absl::MutexLock lock(&mu);
      events.push_back("p" + std::to_string(e.index) + ":" + std::to_string(e.seq));
    }
    void OnResult(ToolCallResult r) override {
      absl::MutexLock lock(&mu);
      events.push_back("r" + std::to_string(r.index));
    }
    void OnBatchDone() override { done.Notify(); }
    absl::Mutex mu;
    std::vector<std::string> events;
    absl::Notification done;
  } observer;
  BatchRequest req;
  req.calls = Calls(Call("chatty"));
  ASSERT_TRUE(runner.Start(std::move(req), &observer).ok());
  observer.done.WaitForNotification();
  EXPECT_EQ(observer.events,
            (std::vector<std::string>{"p0:1", "p0:2", "p0:3", "p0:4", "p0:5", "r0"}));
}

// Progress a tool emits from several helper threads still reaches the observer
// in seq order (one call's progress is serialized).
TEST_F(RunnerTest, ProgressFromHelperThreadsArrivesInSeqOrder) {
  ToolRegistry registry;
  ASSERT_TRUE(registry
                  .Register(MakeTool("fanout",
                                     [](const JsonValue&, ToolContext& ctx) -> absl::StatusOr<Json> {
                                       std::vector<std::thread> helpers;
                                       for (int t = 0; t < 4; ++t) {
                                         helpers.emplace_back([&ctx] {
                                           for (int i = 0; i < 500; ++i) ctx.progress("out", "x");
                                         });
                                       }
                                       for (auto& h : helpers) h.join();
                                       return Json();
                                     }),
                            "test")
                  .ok());
  ToolRunner runner(&registry, {});
  class Observer final : public BatchObserver {
   public:
    void OnProgress(ProgressEvent e) override {
      absl::MutexLock lock(&mu);
      seqs.push_back(e.seq);
    }
    void OnResult(ToolCallResult) override {}
    void OnBatchDone() override { done.Notify(); }
    absl::Mutex mu;
    std::vector<uint64_t> seqs;
    absl::Notification done;
  } observer;
  BatchRequest req;
  req.calls = Calls(Call("fanout"));
  ASSERT_TRUE(runner.Start(std::move(req), &observer).ok());
  observer.done.WaitForNotification();
  ASSERT_EQ(observer.seqs.size(), 2000u);
  for (size_t i = 0; i < observer.seqs.size(); ++i) ASSERT_EQ(observer.seqs[i], i + 1);
}

// A timed-out call's tool sees kTimeout as the reason, never another.
TEST_F(RunnerTest, CancellationReasonMatchesTheResult) {
  std::atomic<int> reason{-1};
  ToolRegistry registry;
  ASSERT_TRUE(registry
                  .Register(MakeTool("slow",
                                     [&](const JsonValue&, ToolContext& ctx) -> absl::StatusOr<Json> {
                                       ctx.cancellation().WaitFor(absl::Seconds(10));
                                       reason = static_cast<int>(ctx.cancellation().reason());
                                       return Json();
                                     }),
                            "test")
                  .ok());
  ToolRunner runner(&registry, {});
  BatchRequest req;
  req.calls = Calls(Call("slow"));
  req.timeout = absl::Milliseconds(30);
  auto results = runner.Run(std::move(req));
  EXPECT_EQ(results->at(0).status, ResultStatus::kTimeout);
  runner.CancelRunning();  // too late to change anything
  runner.Shutdown();
  EXPECT_EQ(reason.load(), static_cast<int>(CancelReason::kTimeout));
}

// A tool on the resource "test:<key>": records when call `n` starts and ends,
// sleeping `ms` (cancellably) in between.
class KeyedTool final : public Tool {
 public:
  struct Event {
    int n;
    bool start;
  };
  std::string name() const override { return "keyed"; }
  std::string description() const override { return "a call on one named resource"; }
  std::string parameters_schema() const override { return testing::kAnyObject; }
  std::vector<std::string> resources(const JsonValue& input) const override {
    if (!input.HasMember("key") || !input["key"].IsString()) return {};
    return {std::string("test:") + input["key"].GetString(), ""};
  }
  absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const override {
    int n = args["n"].GetInt();
    Record(n, true);
    bool cancelled = ctx.cancellation().WaitFor(absl::Milliseconds(args["ms"].GetInt()));
    Record(n, false);
    if (cancelled) return absl::CancelledError("woken");
    if (args.HasMember("fail")) return absl::InternalError("failed as asked");
    return Json();
  }
  std::vector<Event> events() const {
    absl::MutexLock lock(&mu_);
    return events_;
  }

 private:
  void Record(int n, bool start) const {
    absl::MutexLock lock(&mu_);
    events_.push_back({n, start});
  }
  mutable absl::Mutex mu_;
  mutable std::vector<Event> events_;
};

CallRequest Keyed(const std::string& key, int n, int ms) {
  return Call("keyed", absl::StrCat(R"({"key":")", key, R"(","n":)", n, R"(,"ms":)", ms, "}"),
              absl::StrCat(n));
}

// The events of the calls in `ns`, in the order they happened.
std::vector<std::string> EventsOf(const std::vector<KeyedTool::Event>& events,
                                  std::vector<int> ns) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    if (std::find(ns.begin(), ns.end(), e.n) != ns.end()) {
      out.push_back(absl::StrCat(e.start ? "start " : "end ", e.n));
    }
  }
  return out;
}

class RunnerResourcesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tool = std::make_unique<KeyedTool>();
    keyed_ = tool.get();
    ASSERT_TRUE(registry_.Register(std::move(tool), "test").ok());
    runner_ = std::make_unique<ToolRunner>(&registry_, ToolRunner::Options());
  }
  ToolRegistry registry_;
  KeyedTool* keyed_ = nullptr;
  std::unique_ptr<ToolRunner> runner_;
};

// Calls on one resource run one after another in call order, whatever their
// durations; calls on another resource run beside them.
TEST_F(RunnerResourcesTest, CallsOnOneResourceRunInCallOrderOthersConcurrently) {
  BatchRequest req;
  req.calls = Calls(Keyed("a", 0, 150), Keyed("b", 1, 150), Keyed("a", 2, 1), Keyed("a", 3, 40),
                    Keyed("b", 4, 1));
  auto results = runner_->Run(std::move(req));
  ASSERT_TRUE(results.ok());
  for (const auto& r : *results) EXPECT_TRUE(r.ok()) << r.error_message;
  auto events = keyed_->events();
  EXPECT_THAT(EventsOf(events, {0, 2, 3}),
              ::testing::ElementsAre("start 0", "end 0", "start 2", "end 2", "start 3", "end 3"));
  EXPECT_THAT(EventsOf(events, {1, 4}),
              ::testing::ElementsAre("start 1", "end 1", "start 4", "end 4"));
  // a and b overlapped: both first calls started before either ended.
  EXPECT_THAT(EventsOf(events, {0, 1}),
              ::testing::ElementsAre(::testing::StartsWith("start"),
                                     ::testing::StartsWith("start"), ::testing::_, ::testing::_));
  EXPECT_TRUE(runner_->WaitIdle(absl::Now() + absl::Seconds(10)));
}

// Cancelling a batch completes the calls waiting for a resource at once; a
// call that fails releases its resource like any other.
TEST_F(RunnerResourcesTest, CancelEndsWaitingCallsAndFailuresRelease) {
  Collector observer;
  BatchRequest req;
  req.calls = Calls(Keyed("a", 0, 10000), Keyed("a", 1, 1), Keyed("a", 2, 1));
  auto handle = runner_->Start(std::move(req), &observer);
  ASSERT_TRUE(handle.ok());
  while (keyed_->events().empty()) absl::SleepFor(absl::Milliseconds(1));
  (*handle)->Cancel();
  ASSERT_TRUE(observer.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_EQ(observer.results.size(), 3u);
  for (const auto& r : observer.results) EXPECT_EQ(r.status, ResultStatus::kCancelled);
  EXPECT_TRUE(runner_->WaitIdle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(keyed_->events().size(), 2u);  // only call 0 ran

  BatchRequest failing;
  failing.calls = Calls(Call("keyed", R"({"key":"a"} trailing)", "unparsed"),
                        Call("keyed", R"({"key":"a","n":4,"ms":1,"fail":true})", "fails"),
                        Keyed("a", 5, 1));
  auto results = runner_->Run(std::move(failing));
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(results->at(0).error->code, ErrorCode::kInvalidArguments);
  EXPECT_EQ(results->at(1).error->code, ErrorCode::kToolFailed);
  EXPECT_TRUE(results->at(2).ok());
}

TEST(PathResourceTest, OneKeyPerSpelling) {
  EXPECT_EQ(PathResource("a/b"), "path:a/b");
  EXPECT_EQ(PathResource("a/./b"), "path:a/b");
  EXPECT_EQ(PathResource("./a//b/"), "path:a/b");
  EXPECT_EQ(PathResource("a/c/../b"), "path:a/b");
  EXPECT_EQ(PathResource("../x"), "path:../x");
  EXPECT_EQ(PathResource("."), "path:.");
  EXPECT_EQ(PathResource("/w/./a/../b"), "path:/w/b");
  EXPECT_EQ(PathResource("/../b"), "path:/b");
  EXPECT_EQ(PathResource(""), "");
  EXPECT_EQ(CommandResource("7"), "command:7");
}

}  // namespace
}  // namespace toolexec

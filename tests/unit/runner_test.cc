// [Batches] (concurrent batches, call order, streaming prefix), [Failures are results] (failures as
// results), [Context] (needs_context), [Display] (display), timeouts and cancellation.
#include "tools/runtime/tool_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "tests/common/sanitizers.h"
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

// The model cannot list the tools: an unknown name is answered with the
// close ones, or all of them.
TEST_F(RunnerTest, UnknownToolSuggestsTheClosestNames) {
  auto results = Run(Calls(Call("typd", "", "a"), Call("ECHO_", "", "b"), Call("zzzzzzzz", "", "c")));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].error->code, ErrorCode::kUnknownTool);
  EXPECT_EQ(results[0].error_message, "unknown tool 'typd'; did you mean typed?");
  EXPECT_EQ(results[1].error_message, "unknown tool 'ECHO_'; did you mean echo?");
  EXPECT_THAT(results[2].error_message,
              ::testing::StartsWith("unknown tool 'zzzzzzzz'; the tools you can call are: "));
  EXPECT_THAT(results[2].error_message, ::testing::HasSubstr("typed"));
  EXPECT_THAT(results[2].error_message, ::testing::Not(::testing::HasSubstr("ListTools")));
}

// OpenAI strict mode sends null for an optional argument it leaves out.
TEST_F(RunnerTest, NullOptionalArgumentIsAbsentAndDefaulted) {
  auto results = Run(Calls(Call("typed", R"({"n":1,"flag":null})", "a"),
                           Call("typed", R"({"n":null,"flag":null})", "b")));
  EXPECT_EQ(ToJsonString(results[0].payload), R"({"n":1,"flag":true})");
  EXPECT_EQ(results[1].error->code, ErrorCode::kInvalidArguments);
  EXPECT_THAT(results[1].error_message, ::testing::HasSubstr("args.n: expected type integer, got null"));
}

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

TEST_F(RunnerTest, ADuplicateKeyIsNamed) {
  CallRequest parsed = Call("echo");
  parsed.args = J(R"({"a":{"k":1,"k":2}})");
  auto results = Run(Calls(Call("typed", R"({"n":3,"flag":true,"n":4})"),
                           Call("echo", R"({"a":[0,{"x":1,"y":2,"x":3}]})"), std::move(parsed)));
  for (const auto& r : results) EXPECT_EQ(r.error->code, ErrorCode::kInvalidArguments);
  EXPECT_EQ(results[0].error_message, "args_json: duplicate key 'n' in args");
  EXPECT_EQ(results[1].error_message, "args_json: duplicate key 'x' in args.a[1]");
  EXPECT_EQ(results[2].error_message, "duplicate key 'k' in args.a");
}

// A tool name that names no tool is echoed cut: a 4 MB name is not a 4 MB
// result (nor several).
TEST_F(RunnerTest, AHugeUnknownToolNameIsEchoedCut) {
  auto results = Run(Calls(Call(std::string(4 << 20, 'x'), "", "a")));
  const ToolCallResult& r = results[0];
  EXPECT_EQ(r.error->code, ErrorCode::kUnknownTool);
  EXPECT_THAT(r.error_message, ::testing::StartsWith("unknown tool 'xxxx"));
  EXPECT_THAT(r.error_message, HasSubstr("more bytes]'; the tools you can call are: "));
  const size_t echoed = r.error_message.size() + r.error->message.size() +
                        r.error->tool_name.size() + r.display.title.size() +
                        r.display.content.size() + r.compact_summary.size() +
                        r.model_content.size() + ToJsonString(r.payload).size();
  EXPECT_LT(echoed, 20000u);
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

TEST_F(RunnerTest, ReservedRoomCountsTowardThePendingLimitUntilItsBatchEndsOrItIsDropped) {
  ToolRunner::Options options;
  options.max_pending_calls = 2;
  ToolRunner small(&registry_, options);
  auto room = small.Reserve(2);
  ASSERT_TRUE(room.ok()) << room.status();
  EXPECT_EQ(small.pending_calls(), 2u);
  EXPECT_EQ(small.Reserve(1).status().code(), absl::StatusCode::kResourceExhausted);
  BatchRequest other;
  other.calls = Calls(Call("echo"));
  Collector refused;
  EXPECT_EQ(small.Start(std::move(other), &refused).status().code(),
            absl::StatusCode::kResourceExhausted);
  // The batch the room was for starts in it, and gives it back as it ends.
  BatchRequest req;
  req.calls = Calls(Call("echo"), Call("echo"));
  Collector observer;
  ASSERT_TRUE(small.Start(std::move(req), &observer, *std::move(room)).ok());
  observer.done.WaitForNotification();
  EXPECT_EQ(observer.results.size(), 2u);
  EXPECT_TRUE(small.WaitIdle(absl::Now() + absl::Seconds(30)));
  // Room dropped unused, or offered to a batch it was not taken for, is
  // given back.
  { ASSERT_TRUE(small.Reserve(2).ok()); }
  EXPECT_EQ(small.pending_calls(), 0u);
  auto one = small.Reserve(1);
  ASSERT_TRUE(one.ok());
  BatchRequest two;
  two.calls = Calls(Call("echo"), Call("echo"));
  Collector wrong;
  EXPECT_EQ(small.Start(std::move(two), &wrong, *std::move(one)).status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(small.pending_calls(), 0u);
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
  KeyedTool() : Tool(ToolSpec("keyed", "a call on one named resource", testing::kAnyObject)) {}
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

namespace toolexec {
namespace {

// Holds every result (as a stream queues results for a client that does not
// read) until the test releases them.
class HoldingObserver final : public BatchObserver {
 public:
  bool HoldsResults() const override { return true; }
  void OnProgress(ProgressEvent) override {}
  void OnResult(ToolCallResult r) override {
    absl::MutexLock lock(&mu);
    results.push_back(std::move(r));
  }
  void OnBatchDone() override { done.Notify(); }
  size_t count() {
    absl::MutexLock lock(&mu);
    return results.size();
  }
  absl::Mutex mu;
  std::vector<ToolCallResult> results;
  absl::Notification done;
};

// "big": returns 1 MiB, counting its calls in `started` (may be null).
void RegisterBigTool(ToolRegistry& registry, std::atomic<int>* started) {
  ASSERT_TRUE(registry
                  .Register(MakeTool("big",
                                     [started](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
                                       if (started != nullptr) ++*started;
                                       Json out = MakeObject();
                                       out.AddMember("data",
                                                     JsonValue(std::string(size_t{1} << 20, 'x'),
                                                               out.GetAllocator()),
                                                     out.GetAllocator());
                                       return out;
                                     }),
                            "test")
                  .ok());
}

// A batch whose results nobody releases stops starting calls once it holds
// the cap; released results let it go on, and every call completes.
TEST(RunnerBackpressureTest, UnreleasedResultsHoldBackFurtherCalls) {
  constexpr size_t kMiB = size_t{1} << 20;
  std::atomic<int> started{0};
  ToolRegistry registry;
  RegisterBigTool(registry, &started);
  ToolRunner::Options options;
  options.executor.max_threads = 4;
  options.max_held_result_bytes_per_batch = 4 * kMiB;
  ToolRunner runner(&registry, options);
  HoldingObserver observer;
  BatchRequest req;
  for (int i = 0; i < 40; ++i) req.calls.push_back(Call("big", "", absl::StrCat(i)));
  auto handle = runner.Start(std::move(req), &observer);
  ASSERT_TRUE(handle.ok());
  while (observer.count() < 4) absl::SleepFor(absl::Milliseconds(1));
  absl::SleepFor(absl::Milliseconds(200));  // time for calls that should not start
  // At most the cap's worth of results plus what was in flight (4 threads).
  EXPECT_LE(started.load(), 8);
  EXPECT_GE(runner.held_result_bytes(), 4 * kMiB);
  EXPECT_FALSE(observer.done.HasBeenNotified());
  // A client that reads: release results as they come; all 40 arrive.
  size_t released = 0;
  while (!observer.done.WaitForNotificationWithTimeout(absl::Milliseconds(1))) {
    size_t n = observer.count();
    if (n > released) {
      (*handle)->ResultsReleased(n - released);
      released = n;
    }
  }
  ASSERT_EQ(observer.results.size(), 40u);
  for (const auto& r : observer.results) EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(started.load(), 40);
  handle->reset();
  EXPECT_TRUE(runner.WaitIdle(absl::Now() + absl::Seconds(10)));
}

// The cap on all batches together: a second batch waits while the first holds
// it, and starts when the first's results are released.
TEST(RunnerBackpressureTest, TotalCapHoldsOtherBatchesUntilRelease) {
  constexpr size_t kMiB = size_t{1} << 20;
  ToolRegistry registry;
  RegisterBigTool(registry, nullptr);
  ToolRunner::Options options;
  options.executor.max_threads = 2;
  options.max_held_result_bytes_per_batch = 64 * kMiB;
  options.max_held_result_bytes = 4 * kMiB;
  ToolRunner runner(&registry, options);
  HoldingObserver first, second;
  BatchRequest a, b;
  for (int i = 0; i < 10; ++i) a.calls.push_back(Call("big", "", absl::StrCat(i)));
  for (int i = 0; i < 10; ++i) b.calls.push_back(Call("big", "", absl::StrCat(i)));
  auto ha = runner.Start(std::move(a), &first);
  ASSERT_TRUE(ha.ok());
  while (runner.held_result_bytes() < 4 * kMiB) absl::SleepFor(absl::Milliseconds(1));
  auto hb = runner.Start(std::move(b), &second);
  ASSERT_TRUE(hb.ok());
  absl::SleepFor(absl::Milliseconds(200));
  // The second batch may start one call at a time (it holds nothing), but
  // neither finishes while the first batch's results stay unread.
  EXPECT_LT(first.count(), 10u);
  EXPECT_LE(second.count(), 1u);
  // Both clients read now: every result is released as soon as it arrives.
  while (!first.done.HasBeenNotified() || !second.done.HasBeenNotified()) {
    (*ha)->ResultsReleased(first.count());
    (*hb)->ResultsReleased(second.count());
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(first.results.size(), 10u);
  EXPECT_EQ(second.results.size(), 10u);
}

}  // namespace
}  // namespace toolexec

namespace toolexec {
namespace {

// Results that timeouts complete are delivered off the timer thread: an
// observer that takes long over a timed-out result does not hold back the
// timeouts of other batches, which still reach their tools.
TEST(RunnerTimerTest, SlowDeliveryOfATimeoutDoesNotDelayOtherTimeouts) {
  absl::Notification b_woken, release_a;
  ToolRegistry registry;
  ASSERT_TRUE(registry
                  .Register(MakeTool("wait",
                                     [&](const JsonValue& args, ToolContext& ctx) -> absl::StatusOr<Json> {
                                       ctx.cancellation().WaitFor(absl::Seconds(30));
                                       if (args.HasMember("b")) b_woken.Notify();
                                       return Json();
                                     }),
                            "test")
                  .ok());
  ToolRunner runner(&registry, {});
  class BlockingObserver final : public BatchObserver {
   public:
    explicit BlockingObserver(absl::Notification* release) : release_(release) {}
    void OnProgress(ProgressEvent) override {}
    void OnResult(ToolCallResult) override { release_->WaitForNotification(); }
    void OnBatchDone() override { done.Notify(); }
    absl::Notification done;

   private:
    absl::Notification* release_;
  } a_observer(&release_a);
  Collector b_observer;
  BatchRequest a, b;
  a.calls = Calls(Call("wait", "{}", "a"));
  a.timeout = absl::Milliseconds(20);
  b.calls = Calls(Call("wait", R"({"b":true})", "b"));
  b.timeout = absl::Milliseconds(200);
  auto ha = runner.Start(std::move(a), &a_observer);
  auto hb = runner.Start(std::move(b), &b_observer);
  ASSERT_TRUE(ha.ok() && hb.ok());
  // A's timeout result is being delivered (and blocks there); B's timer fires
  // all the same and wakes B's tool.
  EXPECT_TRUE(b_woken.WaitForNotificationWithTimeout(absl::Seconds(10)));
  release_a.Notify();
  a_observer.done.WaitForNotification();
  b_observer.done.WaitForNotification();
  EXPECT_EQ(b_observer.results.at(0).status, ResultStatus::kTimeout);
}

// WaitIdle returns as soon as the last call ends (a condition, not a poll).
TEST(RunnerTimerTest, WaitIdleWakesWhenTheLastCallEnds) {
  ToolRegistry registry;
  ASSERT_TRUE(registry
                  .Register(MakeTool("wait",
                                     [&](const JsonValue&, ToolContext& ctx) -> absl::StatusOr<Json> {
                                       ctx.cancellation().WaitFor(absl::Milliseconds(50));
                                       return Json();
                                     }),
                            "test")
                  .ok());
  ToolRunner runner(&registry, {});
  Collector observer;
  BatchRequest req;
  req.calls = Calls(Call("wait"), Call("wait"));
  auto handle = runner.Start(std::move(req), &observer);
  ASSERT_TRUE(handle.ok());
  EXPECT_FALSE(runner.WaitIdle(absl::Now()));
  EXPECT_TRUE(runner.WaitIdle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(runner.pending_calls(), 0u);
}

// Resident bytes of this process (/proc/self/statm).
size_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

// A call that allocated 128 MiB in small pieces and kept one piece in 64
// leaves glibc's freed pages between the kept ones resident; an idle runner
// gives them back.
TEST(RunnerHeapTest, HeapFreedByCallsIsReturnedOnceTheRunnerIsIdle) {
  if (testing::kSanitizerAllocator) GTEST_SKIP() << "resident memory is not bounded under a sanitizer";
  static std::vector<std::string>* kept = new std::vector<std::string>();
  ToolRegistry registry;
  auto fragment = [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
    std::vector<std::string> all;
    for (int i = 0; i < 32768; ++i) all.emplace_back(4000, static_cast<char>('a' + i % 26));
    for (size_t i = 0; i < all.size(); i += 64) kept->push_back(std::move(all[i]));
    return MakeObject();
  };
  ASSERT_TRUE(registry.Register(MakeTool("fragment", fragment), "test").ok());
  ToolRunner runner(&registry, {});
  size_t before = ResidentBytes();
  ToolCallResult r = testing::RunOneCall(runner, "fragment", "{}");
  ASSERT_TRUE(r.ok()) << r.error_message;
  ASSERT_TRUE(runner.WaitIdle(absl::Now() + absl::Seconds(10)));
  size_t after = ResidentBytes();
  for (absl::Time until = absl::Now() + absl::Seconds(10);
       after > before + (48u << 20) && absl::Now() < until; after = ResidentBytes()) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_LE(after, before + (48u << 20))
      << "resident before " << (before >> 20) << " MiB, after " << (after >> 20) << " MiB";
  kept->clear();
  kept->shrink_to_fit();
}

}  // namespace
}  // namespace toolexec

namespace toolexec {
namespace {

// The thread a call ran on, as a number a result can carry.
uint64_t ThisThread() { return std::hash<std::thread::id>{}(std::this_thread::get_id()); }

// "where" (quick unless `quick` is false): returns the thread it ran on.
std::unique_ptr<Tool> WhereTool(std::string name, bool quick) {
  ToolSpec spec(std::move(name), "returns the thread it ran on", testing::kAnyObject);
  spec.quick = quick;
  return std::make_unique<testing::FnTool>(
      std::move(spec), [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
        Json out = MakeObject();
        out.AddMember("thread", ThisThread(), out.GetAllocator());
        return out;
      });
}

uint64_t ThreadOf(const ToolCallResult& r) {
  return r.payload.IsObject() && r.payload.HasMember("thread") ? r.payload["thread"].GetUint64()
                                                               : 0;
}

// Records the thread of every AfterCall and whether it was told it runs on
// the call's thread.
class RecordingInterceptor final : public CallInterceptor {
 public:
  explicit RecordingInterceptor(bool any_thread) : any_thread_(any_thread) {}
  absl::Status BeforeCall(uint32_t, const RegisteredTool&, const CallRequest&, Json&,
                          const CancellationToken&) override {
    return absl::OkStatus();
  }
  std::optional<std::string> OnError(uint32_t, const CallRequest&, const JsonValue*,
                                     const ToolCallResult&, bool,
                                     const CancellationToken&) override {
    return std::nullopt;
  }
  void AfterCall(uint32_t index, const CallRequest&, const JsonValue*, const ToolCallResult&,
                 bool on_call_thread, const CancellationToken&) override {
    absl::MutexLock lock(&mu);
    seen[index] = {ThisThread(), on_call_thread};
  }
  bool MayRunOnAnyThread() const override { return any_thread_; }

  absl::Mutex mu;
  std::map<uint32_t, std::pair<uint64_t, bool>> seen;

 private:
  const bool any_thread_;
};

class RunnerQuickTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry_.Register(WhereTool("quick", true), "test").ok());
    ASSERT_TRUE(registry_.Register(WhereTool("slow", false), "test").ok());
    runner_ = std::make_unique<ToolRunner>(&registry_, ToolRunner::Options{});
  }

  // Starts `req` on this thread and waits for its results.
  std::vector<ToolCallResult> StartHere(BatchRequest req) {
    testing::Collector collector;
    auto handle = runner_->Start(std::move(req), &collector);
    EXPECT_TRUE(handle.ok()) << handle.status();
    if (!handle.ok()) return {};
    collector.Wait();
    return std::move(collector.results);
  }

  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
};

// A quick tool's call runs on the thread that starts the batch; any other
// call is handed to a worker.
TEST_F(RunnerQuickTest, QuickCallsRunWhereTheBatchStartsOthersOnWorkers) {
  BatchRequest req;
  req.calls = Calls(Call("quick", "", "q1"), Call("slow", "", "s"), Call("quick", "", "q2"));
  auto results = StartHere(std::move(req));
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(results[0].id, "q1");
  EXPECT_EQ(ThreadOf(results[0]), ThisThread());
  EXPECT_NE(ThreadOf(results[1]), ThisThread());
  EXPECT_EQ(ThreadOf(results[2]), ThisThread());
}

// The calls handed to workers start before the quick calls run here: a
// quick call (ill-behaved: it waits) sees the slow call after it start.
TEST_F(RunnerQuickTest, SlowCallsStartBeforeQuickCallsRunHere) {
  auto slow_started = std::make_shared<absl::Notification>();
  ToolSpec waits("waits_for_slow", "quick, but waits for the slow call", testing::kAnyObject);
  waits.quick = true;
  ASSERT_TRUE(registry_
                  .Register(std::make_unique<testing::FnTool>(
                                std::move(waits),
                                [slow_started](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
                                  if (!slow_started->WaitForNotificationWithTimeout(absl::Seconds(10))) {
                                    return absl::DeadlineExceededError("the slow call never started");
                                  }
                                  return MakeObject();
                                }),
                            "test")
                  .ok());
  ASSERT_TRUE(registry_
                  .Register(testing::MakeTool("starts_slow",
                                              [slow_started](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
                                                slow_started->Notify();
                                                return MakeObject();
                                              }),
                            "test")
                  .ok());
  BatchRequest req;
  req.calls = Calls(Call("waits_for_slow", "", "q"), Call("starts_slow", "", "s"));
  auto results = StartHere(std::move(req));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(results[0].ok()) << results[0].error_message;
  EXPECT_TRUE(results[1].ok()) << results[1].error_message;
}

// One thread runs at most kMaxQuickCallsHere of a long batch of quick calls;
// the rest run as tasks, and every result still arrives, in call order.
TEST_F(RunnerQuickTest, ALongBatchOfQuickCallsIsNotRunByOneThreadAlone) {
  constexpr int kCalls = 1000;
  BatchRequest req;
  for (int i = 0; i < kCalls; ++i) req.calls.push_back(Call("quick", "", absl::StrCat(i)));
  auto results = StartHere(std::move(req));
  ASSERT_EQ(results.size(), static_cast<size_t>(kCalls));
  size_t here = 0;
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error_message;
    EXPECT_EQ(results[i].id, absl::StrCat(i));
    if (ThreadOf(results[i]) == ThisThread()) ++here;
  }
  EXPECT_GE(here, 1u);
  EXPECT_LE(here, ToolRunner::kMaxQuickCallsHere);
}

// Set while ReleasingObserver::OnResult runs on this thread.
thread_local bool in_on_result = false;

// Releases each result as it is handed it, as a stream whose client is gone
// drops results, once the test has given it the batch's handle.
class ReleasingObserver final : public BatchObserver {
 public:
  bool HoldsResults() const override { return true; }
  void OnProgress(ProgressEvent) override {}
  void OnResult(ToolCallResult r) override {
    in_on_result = true;
    {
      absl::MutexLock lock(&mu);
      results.push_back(std::move(r));
    }
    if (BatchHandle* h = handle.load()) {
      h->ResultsReleased(1);
    } else {
      // Before the test has the handle (a loaded machine may finish calls
      // before Start returns): owed, released by SetHandle or just below.
      owed.fetch_add(1);
      if (BatchHandle* now = handle.load()) ReleaseOwed(now);
    }
    in_on_result = false;
  }
  void OnBatchDone() override { done.Notify(); }
  void SetHandle(BatchHandle* h) {
    handle.store(h);
    ReleaseOwed(h);
  }
  void ReleaseOwed(BatchHandle* h) {
    if (size_t n = owed.exchange(0); n > 0) h->ResultsReleased(n);
  }
  std::atomic<BatchHandle*> handle{nullptr};
  std::atomic<size_t> owed{0};
  absl::Mutex mu;
  std::vector<ToolCallResult> results;
  absl::Notification done;
};

// A release made while the batch's results are being handed out (the stream
// dropping them) starts no call on that thread: each would start a fresh
// dispatch per result, and the whole batch would run inside the delivery.
TEST(RunnerQuickDeliveryTest, ReleasesDuringDeliveryRunNoCallThere) {
  ToolRegistry registry;
  ToolSpec probe("probe", "quick; says whether it ran inside OnResult", testing::kAnyObject);
  probe.quick = true;
  ASSERT_TRUE(registry
                  .Register(std::make_unique<testing::FnTool>(
                                std::move(probe),
                                [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
                                  Json out = MakeObject();
                                  out.AddMember("nested", in_on_result, out.GetAllocator());
                                  out.AddMember("pad", JsonValue(std::string(2048, 'x'), out.GetAllocator()),
                                                out.GetAllocator());
                                  return out;
                                }),
                            "test")
                  .ok());
  ASSERT_TRUE(registry.Register(MakeTool("sleep", Sleep, kSleepSchema), "test").ok());
  ToolRunner::Options options;
  options.max_held_result_bytes_per_batch = 32 << 10;  // admission waits for releases
  ToolRunner runner(&registry, options);
  ReleasingObserver observer;
  BatchRequest req;
  req.calls.push_back(Call("sleep", R"({"ms":300})", "slow"));
  for (int i = 0; i < 300; ++i) req.calls.push_back(Call("probe", "", absl::StrCat(i)));
  auto handle = runner.Start(std::move(req), &observer);
  ASSERT_TRUE(handle.ok());
  observer.SetHandle(handle->get());
  ASSERT_TRUE(observer.done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::MutexLock lock(&observer.mu);
  ASSERT_EQ(observer.results.size(), 301u);
  int nested = 0;
  for (const auto& r : observer.results) {
    ASSERT_TRUE(r.ok()) << r.error_message;
    if (r.payload.HasMember("nested") && r.payload["nested"].GetBool()) ++nested;
  }
  EXPECT_EQ(nested, 0);
}

// Hooks that may block never run on the starting thread (a gRPC thread in
// the daemon): with such an interceptor every call is a task, and its hooks
// are told they run on the call's thread.
TEST_F(RunnerQuickTest, AnInterceptorThatMayBlockKeepsCallsOffTheStartingThread) {
  auto interceptor = std::make_shared<RecordingInterceptor>(/*any_thread=*/false);
  BatchRequest req;
  req.calls = Calls(Call("quick", "", "q"), Call("no_such_tool", "", "u"));
  req.interceptor = interceptor;
  auto results = StartHere(std::move(req));
  ASSERT_EQ(results.size(), 2u);
  EXPECT_NE(ThreadOf(results[0]), ThisThread());
  absl::MutexLock lock(&interceptor->mu);
  ASSERT_EQ(interceptor->seen.size(), 2u);
  for (const auto& [index, seen] : interceptor->seen) {
    EXPECT_NE(seen.first, ThisThread()) << index;
    EXPECT_TRUE(seen.second) << index;
  }
}

// An interceptor that may run anywhere lets quick calls, and calls that fail
// before reaching a tool, run on the starting thread, which is their call's
// thread for the hooks.
TEST_F(RunnerQuickTest, QuickCallsRunHereWhenTheInterceptorAllowsIt) {
  auto interceptor = std::make_shared<RecordingInterceptor>(/*any_thread=*/true);
  BatchRequest req;
  req.calls = Calls(Call("quick", "", "q"), Call("no_such_tool", "", "u"), Call("slow", "", "s"));
  req.interceptor = interceptor;
  auto results = StartHere(std::move(req));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(ThreadOf(results[0]), ThisThread());
  EXPECT_EQ(results[1].error->code, ErrorCode::kUnknownTool);
  EXPECT_NE(ThreadOf(results[2]), ThisThread());
  absl::MutexLock lock(&interceptor->mu);
  ASSERT_EQ(interceptor->seen.size(), 3u);
  EXPECT_EQ(interceptor->seen[0], std::make_pair(ThisThread(), true));
  EXPECT_EQ(interceptor->seen[1], std::make_pair(ThisThread(), true));
  EXPECT_NE(interceptor->seen[2].first, ThisThread());
  EXPECT_TRUE(interceptor->seen[2].second);
}

}  // namespace
}  // namespace toolexec

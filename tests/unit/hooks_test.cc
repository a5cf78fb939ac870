// Hooks and the audit log through the Engine (core/hooks.h): pre-call order,
// first deny wins, argument rewrites validated again, on-error never turns a
// failure into a success, post-call sees every result; command hooks in shell
// and Python; the audit log under concurrency.
#include "core/hooks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <google/protobuf/text_format.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "core/audit_log.h"
#include "core/engine.h"
#include "server/config/config.h"
#include "tests/unit/engine_test_util.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"

namespace toolexec {
namespace {


using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using toolexec::testing::J;
using toolexec::testing::Call;
using toolexec::testing::Collector;
using toolexec::testing::MakeTool;

// An in-process hook whose behaviour is given by lambdas; it records what it saw.
class FnHook final : public Hook {
 public:
  using Pre = std::function<PreCallDecision(const HookCall&, const JsonValue&)>;
  explicit FnHook(std::string name, std::vector<std::string>* log = nullptr, Pre pre = nullptr)
      : name_(std::move(name)), log_(log), pre_(std::move(pre)) {}

  std::string name() const override { return name_; }
  PreCallDecision PreCall(const HookCall& call, const JsonValue& args,
                          const CancellationToken&) override {
    if (log_ != nullptr) {
      absl::MutexLock lock(&mu_);
      log_->push_back(absl::StrCat(name_, " pre ", call.tool, " ", ToJsonString(args)));
    }
    return pre_ ? pre_(call, args) : PreCallDecision::Allow();
  }
  std::optional<std::string> OnError(const HookCall&, const JsonValue*,
                                     const ToolCallResult& result) override {
    if (!on_error) return std::nullopt;
    return on_error(result);
  }
  void PostCall(const HookCall& call, const JsonValue*, const ToolCallResult& result) override {
    absl::MutexLock lock(&mu_);
    post.push_back(absl::StrCat(call.call_id, ":", static_cast<int>(result.status), ":",
                                result.error_message));
  }

  std::function<std::optional<std::string>(const ToolCallResult&)> on_error;
  absl::Mutex mu_;
  std::vector<std::string> post;

 private:
  std::string name_;
  std::vector<std::string>* log_;
  Pre pre_;
};

constexpr const char* kCountSchema =
    R"({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],)"
    R"("additionalProperties":false})";

class HooksTest : public ::testing::Test {
 protected:
  // An engine with the tools "echo" (returns its arguments), "count" (takes
  // an integer n) and "fail" (always fails), and `hooks`.
  void Start(HookOptions hooks, uint32_t max_calls = 8) {
    EngineOptions options;
    options.workspace = tree_.path();
    options.max_calls_per_batch = max_calls;
    options.hooks = std::move(hooks);
    auto engine = CreateEngine(options, {}, [this](ToolRegistry& r) -> absl::Status {
      auto echo = [this](const JsonValue& args, ToolContext&) -> absl::StatusOr<Json> {
        ran_.fetch_add(1);
        return CopyJson(args);
      };
      if (auto s = r.Register(MakeTool("echo", echo), "test"); !s.ok()) return s;
      if (auto s = r.Register(MakeTool("count", echo, kCountSchema), "test"); !s.ok()) return s;
      auto fail = [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
        return absl::InternalError("disk on fire");
      };
      return r.Register(MakeTool("fail", fail), "test");
    });
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }

  std::vector<ToolCallResult> Run(std::vector<CallRequest> calls,
                                  std::optional<absl::Duration> timeout = std::nullopt) {
    BatchSpec spec;
    spec.calls = std::move(calls);
    spec.timeout = timeout;
    Collector collector;
    auto batch = engine_->StartBatch(caller_, std::move(spec), &collector);
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok()) return {};
    collector.Wait();
    return std::move(collector.results);
  }

  ToolCallResult RunOne(CallRequest call) {
    std::vector<CallRequest> calls;
    calls.push_back(std::move(call));
    auto results = Run(std::move(calls));
    if (results.empty()) return ToolCallResult{};
    return std::move(results[0]);
  }

  // An executable script in the temp tree.
  std::string Script(const std::string& name, const std::string& text) {
    std::string path = tree_.path() + "/" + name;
    std::ofstream(path) << text;
    chmod(path.c_str(), 0755);
    return path;
  }

  CommandHookOptions CommandHookOf(std::string name, HookEvent event,
                                   std::vector<std::string> argv,
                                   absl::Duration timeout = absl::Seconds(10)) {
    CommandHookOptions o;
    o.name = std::move(name);
    o.event = event;
    o.argv = std::move(argv);
    o.timeout = timeout;
    return o;
  }

  testing::TempTree tree_;
  std::unique_ptr<Engine> engine_;
  CallerIdentity caller_{"alice", ""};
  std::atomic<int> ran_{0};
};

TEST_F(HooksTest, PreCallHooksRunInOrderAndTheFirstDenyWins) {
  std::vector<std::string> log;
  HookOptions hooks;
  hooks.in_process.push_back(std::make_shared<FnHook>("first", &log));
  hooks.in_process.push_back(std::make_shared<FnHook>(
      "guard", &log, [](const HookCall&, const JsonValue&) {
        return PreCallDecision::Deny("no echoing today");
      }));
  hooks.in_process.push_back(std::make_shared<FnHook>("never", &log));
  Start(std::move(hooks));

  ToolCallResult r = RunOne(Call("1", "echo", R"({"a":1})"));
  EXPECT_EQ(r.status, ResultStatus::kDenied);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->code, ErrorCode::kDenied);
  EXPECT_EQ(r.error_message, "denied by hook 'guard': no echoing today");
  EXPECT_THAT(log, ElementsAre(R"(first pre echo {"a":1})", R"(guard pre echo {"a":1})"));
  EXPECT_EQ(ran_.load(), 0);
}

TEST_F(HooksTest, EachHookSeesTheArgumentsTheOneBeforeLeft) {
  std::vector<std::string> log;
  HookOptions hooks;
  hooks.in_process.push_back(std::make_shared<FnHook>(
      "rewrite", &log,
      [](const HookCall&, const JsonValue&) { return PreCallDecision::Rewrite(J(R"({"n":"5"})")); }));
  hooks.in_process.push_back(std::make_shared<FnHook>("after", &log));
  Start(std::move(hooks));

  ToolCallResult r = RunOne(Call("1", "count", R"({"n":1})"));
  ASSERT_EQ(r.status, ResultStatus::kSuccess) << r.error_message;
  // "5" was coerced to 5 against count's schema before the next hook saw it.
  EXPECT_EQ(ToJsonString(r.payload), R"({"n":5})");
  EXPECT_THAT(log, ElementsAre(R"(rewrite pre count {"n":1})", R"(after pre count {"n":5})"));
}

TEST_F(HooksTest, ARewriteTheSchemaRefusesFailsTheCallNamingTheHook) {
  HookOptions hooks;
  hooks.in_process.push_back(std::make_shared<FnHook>(
      "sloppy", nullptr,
      [](const HookCall&, const JsonValue&) { return PreCallDecision::Rewrite(J(R"({"m":1})")); }));
  Start(std::move(hooks));

  ToolCallResult r = RunOne(Call("1", "count", R"({"n":1})"));
  EXPECT_EQ(r.status, ResultStatus::kError);
  EXPECT_THAT(r.error_message, HasSubstr("hook 'sloppy' changed the arguments of 'count'"));
  EXPECT_THAT(r.error_message, HasSubstr("'m'"));
  EXPECT_EQ(ran_.load(), 0);
}

TEST_F(HooksTest, OnErrorRewordsAFailureButNeverMakesItASuccess) {
  auto hook = std::make_shared<FnHook>("friendly");
  int calls = 0;
  hook->on_error = [&calls](const ToolCallResult& r) -> std::optional<std::string> {
    ++calls;
    return absl::StrCat("the tool could not finish (", r.error_message, ")");
  };
  HookOptions hooks;
  hooks.in_process.push_back(hook);
  Start(std::move(hooks));

  ToolCallResult failed = RunOne(Call("1", "fail"));
  EXPECT_EQ(failed.status, ResultStatus::kError);
  EXPECT_EQ(failed.error_message, "the tool could not finish (disk on fire)");
  ASSERT_TRUE(failed.error.has_value());
  EXPECT_EQ(failed.error->message, failed.error_message);
  EXPECT_EQ(failed.error->code, ErrorCode::kToolFailed);
  EXPECT_EQ(ToJsonString(failed.payload),
            R"j({"error":"the tool could not finish (disk on fire)"})j");
  EXPECT_THAT(failed.model_content, HasSubstr("the tool could not finish"));

  ToolCallResult ok = RunOne(Call("2", "echo", R"({"a":1})"));
  EXPECT_EQ(ok.status, ResultStatus::kSuccess);
  EXPECT_EQ(calls, 1);  // not asked about a success
}

TEST_F(HooksTest, PostCallSeesEveryResultFailuresIncluded) {
  auto hook = std::make_shared<FnHook>("watcher");
  HookOptions hooks;
  hooks.in_process.push_back(hook);
  Start(std::move(hooks));
  std::vector<CallRequest> calls;
  calls.push_back(Call("ok", "echo"));
  calls.push_back(Call("unknown", "nosuch"));
  calls.push_back(Call("invalid", "count", R"({"n":"x"})"));
  calls.push_back(Call("failed", "fail"));
  auto results = Run(std::move(calls));
  ASSERT_EQ(results.size(), 4u);
  absl::MutexLock lock(&hook->mu_);
  ASSERT_EQ(hook->post.size(), 4u);
  std::sort(hook->post.begin(), hook->post.end());
  EXPECT_THAT(hook->post[0], HasSubstr("failed:1:disk on fire"));
  EXPECT_THAT(hook->post[1], HasSubstr("invalid:1:"));
  EXPECT_EQ(hook->post[2], "ok:0:");
  EXPECT_THAT(hook->post[3], HasSubstr("unknown:1:unknown tool 'nosuch'"));
}

TEST_F(HooksTest, PostCallSeesATimeoutOnceAndNotTheResultThatLostTheRace) {
  auto hook = std::make_shared<FnHook>("watcher");
  HookOptions hooks;
  hooks.in_process.push_back(hook);
  // The pre-call hook holds the call past its deadline.
  hooks.in_process.push_back(std::make_shared<FnHook>(
      "slow", nullptr, [](const HookCall&, const JsonValue&) {
        absl::SleepFor(absl::Milliseconds(300));
        return PreCallDecision::Allow();
      }));
  Start(std::move(hooks));
  std::vector<CallRequest> calls;
  calls.push_back(Call("1", "echo"));
  auto results = Run(std::move(calls), absl::Milliseconds(50));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, ResultStatus::kTimeout);
  engine_.reset();  // waits for the slow hook's thread
  absl::MutexLock lock(&hook->mu_);
  EXPECT_THAT(hook->post, ElementsAre(HasSubstr("1:2:")));
}

// --- command hooks ---

TEST_F(HooksTest, ShellHookAllowsAndDenies) {
  std::string allow = Script("allow.sh", "#!/bin/sh\ncat >/dev/null\necho '{\"decision\":\"allow\"}'\n");
  // Denies run of anything whose arguments mention "rm".
  std::string deny = Script("deny.sh",
                            "#!/bin/sh\nif grep -q rm; then\n"
                            "  echo '{\"decision\":\"deny\",\"reason\":\"no rm\"}'\n"
                            "else\n  echo '{\"decision\":\"allow\"}'\nfi\n");
  HookOptions hooks;
  hooks.command_hooks.push_back(CommandHookOf("allow", HookEvent::kPreCall, {allow}));
  hooks.command_hooks.push_back(CommandHookOf("no-rm", HookEvent::kPreCall, {deny}));
  Start(std::move(hooks));

  EXPECT_EQ(RunOne(Call("1", "echo", R"({"cmd":"ls"})")).status, ResultStatus::kSuccess);
  ToolCallResult denied = RunOne(Call("2", "echo", R"({"cmd":"rm -rf /"})"));
  EXPECT_EQ(denied.status, ResultStatus::kDenied);
  EXPECT_EQ(denied.error_message, "denied by hook 'no-rm': no rm");
  EXPECT_EQ(ran_.load(), 1);
}

TEST_F(HooksTest, PythonHookSeesTheEventAndRewritesTheArguments) {
  std::string py = Script("rewrite.py",
                          "#!/usr/bin/python3\nimport json, sys\n"
                          "e = json.load(sys.stdin)\n"
                          "assert e['event'] == 'pre_call' and e['tool'] == 'count'\n"
                          "print(json.dumps({'decision': 'allow', 'args': {'n': e['args']['n'] * 10},"
                          " 'reason': e['identity']}))\n");
  HookOptions hooks;
  hooks.command_hooks.push_back(CommandHookOf("times-ten", HookEvent::kPreCall, {py}));
  Start(std::move(hooks));
  ToolCallResult r = RunOne(Call("1", "count", R"({"n":4})"));
  ASSERT_EQ(r.status, ResultStatus::kSuccess) << r.error_message;
  EXPECT_EQ(ToJsonString(r.payload), R"({"n":40})");
}

TEST_F(HooksTest, ACommandHookThatFailsDenies) {
  // Each hook looks at one tool only.
  struct Case {
    std::string name, tool, script;
  } cases[] = {
      {"garbage", "echo", "#!/bin/sh\necho 'sure, go ahead'\n"},
      {"exit", "count", "#!/bin/sh\necho '{\"decision\":\"allow\"}'\necho broken >&2\nexit 3\n"},
      {"no-decision", "fail", "#!/bin/sh\necho '{\"args\":{}}'\n"},
  };
  HookOptions hooks;
  for (const Case& c : cases) {
    auto o = CommandHookOf(c.name, HookEvent::kPreCall, {Script(c.name + ".sh", c.script)});
    o.tools = {c.tool};
    hooks.command_hooks.push_back(std::move(o));
  }
  Start(std::move(hooks));
  ToolCallResult r = RunOne(Call("1", "echo"));
  EXPECT_EQ(r.status, ResultStatus::kDenied);
  EXPECT_THAT(r.error_message, HasSubstr("hook 'garbage' printed something that is not a JSON"));
  r = RunOne(Call("2", "count", R"({"n":1})"));
  EXPECT_EQ(r.status, ResultStatus::kDenied);
  EXPECT_THAT(r.error_message, HasSubstr("hook 'exit' exited with code 3: broken"));
  r = RunOne(Call("3", "fail"));
  EXPECT_EQ(r.status, ResultStatus::kDenied);
  EXPECT_THAT(r.error_message, HasSubstr("hook 'no-decision' answered without \"decision\""));
  EXPECT_EQ(ran_.load(), 0);
}

bool ProcessGone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

pid_t ReadPid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = 0;
  in >> pid;
  return pid;
}

TEST_F(HooksTest, AHookThatTimesOutDeniesAndIsGone) {
  std::string pidfile = tree_.path() + "/hook.pid";
  std::string slow = Script("slow.sh", absl::StrCat("#!/bin/bash\necho $$ > ", pidfile,
                                                    "\nsleep 60\necho '{\"decision\":\"allow\"}'\n"));
  HookOptions hooks;
  hooks.command_hooks.push_back(
      CommandHookOf("slow", HookEvent::kPreCall, {slow}, absl::Milliseconds(300)));
  Start(std::move(hooks));
  ToolCallResult r = RunOne(Call("1", "echo"));
  EXPECT_EQ(r.status, ResultStatus::kDenied);
  EXPECT_THAT(r.error_message, HasSubstr("hook 'slow' timed out after 300ms"));
  pid_t pid = ReadPid(pidfile);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(ProcessGone(pid)) << "hook process " << pid << " outlived its timeout";
  EXPECT_EQ(ran_.load(), 0);
}

TEST_F(HooksTest, CancellingTheBatchStopsARunningHook) {
  std::string pidfile = tree_.path() + "/hook.pid";
  std::string slow = Script("slow.sh", absl::StrCat("#!/bin/bash\necho $$ > ", pidfile,
                                                    "\nsleep 60\necho '{\"decision\":\"allow\"}'\n"));
  HookOptions hooks;
  hooks.command_hooks.push_back(CommandHookOf("slow", HookEvent::kPreCall, {slow}));
  Start(std::move(hooks));
  BatchSpec spec;
  spec.calls.push_back(Call("1", "echo"));
  Collector collector;
  auto batch = engine_->StartBatch(caller_, std::move(spec), &collector);
  ASSERT_TRUE(batch.ok());
  for (int i = 0; i < 500 && ReadPid(pidfile) == 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  pid_t pid = ReadPid(pidfile);
  ASSERT_GT(pid, 0);
  (*batch)->Cancel();
  collector.Wait();
  EXPECT_EQ(collector.results[0].status, ResultStatus::kCancelled);
  // The hook's process ends within its kill grace, well before its sleep.
  for (int i = 0; i < 500 && !ProcessGone(pid); ++i) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_TRUE(ProcessGone(pid));
}

TEST_F(HooksTest, OnErrorAndPostCallCommandHooks) {
  std::string seen = tree_.path() + "/seen.jsonl";
  std::string on_error = Script("on_error.py",
                                "#!/usr/bin/python3\nimport json, sys\n"
                                "e = json.load(sys.stdin)\n"
                                "print(json.dumps({'message': 'sorry: ' + e['result']['error_message']}))\n");
  std::string post = Script("post.sh", absl::StrCat("#!/bin/sh\ncat >> ", seen, "\necho >> ", seen, "\n"));
  HookOptions hooks;
  hooks.command_hooks.push_back(CommandHookOf("sorry", HookEvent::kOnError, {on_error}));
  hooks.command_hooks.push_back(CommandHookOf("record", HookEvent::kPostCall, {post}));
  Start(std::move(hooks));
  ToolCallResult r = RunOne(Call("1", "fail"));
  EXPECT_EQ(r.status, ResultStatus::kError);
  EXPECT_EQ(r.error_message, "sorry: disk on fire");
  EXPECT_EQ(RunOne(Call("2", "echo")).status, ResultStatus::kSuccess);
  std::ifstream in(seen);
  std::string line;
  std::vector<std::string> statuses;
  while (std::getline(in, line)) {
    Json e = J(line);
    EXPECT_STREQ(e["event"].GetString(), "post_call");
    EXPECT_STREQ(e["identity"].GetString(), "alice");
    statuses.push_back(e["result"]["status"].GetString());
  }
  EXPECT_THAT(statuses, ElementsAre("error", "success"));
}

TEST_F(HooksTest, CommandHookConfigErrorsNameTheHook) {
  HookOptions hooks;
  hooks.command_hooks.push_back(CommandHookOf("h", HookEvent::kPreCall, {"no-such-program-xyz"}));
  EngineOptions options;
  options.workspace = tree_.path();
  options.hooks = std::move(hooks);
  auto engine = CreateEngine(options, {});
  ASSERT_FALSE(engine.ok());
  EXPECT_THAT(std::string(engine.status().message()), HasSubstr("hook 'h': no-such-program-xyz"));

  options.hooks.command_hooks = {CommandHookOf("h", HookEvent::kPreCall, {"/bin/true"})};
  options.hooks.command_hooks[0].tools = {"nosuch"};
  engine = CreateEngine(options, {});
  ASSERT_FALSE(engine.ok());
  EXPECT_THAT(std::string(engine.status().message()), HasSubstr("hook 'h' names tool 'nosuch'"));
}

// --- the audit log ---

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return absl::StrSplit(text.str(), '\n', absl::SkipEmpty());
}

// The log's lines once it has `n` (a line is written by the log's writer
// moments after its result is delivered; bounded wait).
std::vector<std::string> LinesOnceThereAre(const std::string& path, size_t n) {
  std::vector<std::string> lines;
  for (int i = 0; i < 5000 && lines.size() < n; ++i) {
    if (i > 0) absl::SleepFor(absl::Milliseconds(1));
    lines = Lines(path);
  }
  return lines;
}

TEST_F(HooksTest, AuditLogHasOneCompleteRedactedLinePerCallUnderConcurrency) {
  std::string path = tree_.path() + "/audit.jsonl";
  HookOptions hooks;
  hooks.audit_log = path;
  hooks.in_process.push_back(std::make_shared<FnHook>(
      "guard", nullptr, [](const HookCall&, const JsonValue& args) {
        return args.HasMember("deny") ? PreCallDecision::Deny("asked to") : PreCallDecision::Allow();
      }));
  Start(std::move(hooks), /*max_calls=*/20);
  const std::string long_text(5000, 'x');
  const std::string args = absl::StrCat(
      R"({"api_key":"sekrit-1","nested":{"GITHUB_TOKEN":"sekrit-2"},"env":["HOME=/h","DB_PASSWORD=sekrit-3"],)",
      R"("url":"postgres://u:sekrit-4@db/app","text":")", long_text, R"("})");
  std::vector<std::thread> threads;
  for (int t = 0; t < 5; ++t) {
    threads.emplace_back([&, t] {
      std::vector<CallRequest> calls;
      for (int i = 0; i < 20; ++i) {
        std::string id = absl::StrCat(t, "-", i);
        calls.push_back(i == 7 ? Call(id, "echo", R"({"deny":1})") : Call(id, "echo", args));
      }
      Run(std::move(calls));
    });
  }
  for (auto& t : threads) t.join();

  std::vector<std::string> lines = LinesOnceThereAre(path, 100);
  ASSERT_EQ(lines.size(), 100u);
  int denied = 0;
  for (const auto& line : lines) {
    auto parsed = ParseJson(line);
    ASSERT_TRUE(parsed.ok()) << "not one JSON object: " << line.substr(0, 200);
    const Json& e = *parsed;
    EXPECT_THAT(line, Not(HasSubstr("sekrit")));
    EXPECT_STREQ(e["tool"].GetString(), "echo");
    EXPECT_STREQ(e["identity"].GetString(), "alice");
    EXPECT_TRUE(e["duration_ms"].IsInt64());
    if (std::string(e["decision"].GetString()) == "denied") {
      ++denied;
      EXPECT_STREQ(e["decided_by"].GetString(), "hook guard");
      EXPECT_STREQ(e["status"].GetString(), "denied");
      EXPECT_EQ(ToJsonString(e["args"]), R"({"deny":1})");  // what was refused
      continue;
    }
    EXPECT_STREQ(e["decision"].GetString(), "allowed");
    EXPECT_STREQ(e["status"].GetString(), "success");
    const JsonValue& a = e["args"];
    EXPECT_STREQ(a["api_key"].GetString(), "[redacted]");
    EXPECT_STREQ(a["nested"]["GITHUB_TOKEN"].GetString(), "[redacted]");
    EXPECT_STREQ(a["env"][0].GetString(), "HOME=/h");
    EXPECT_STREQ(a["env"][1].GetString(), "DB_PASSWORD=[redacted]");
    EXPECT_STREQ(a["url"].GetString(), "postgres://u:[redacted]@db/app");
    EXPECT_LT(a["text"].GetStringLength(), 300u);
  }
  EXPECT_EQ(denied, 5);
}

// Only the secret is masked: the command around it stays readable.
TEST(AuditLogRedactTest, MasksSecretValuesAndKeepsTheCommand) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"X_TOKEN=1 touch f", "X_TOKEN=[redacted] touch f"},
      {"X_TOKEN='a b' GITHUB_PAT=\"c d\" make; echo ok",
       "X_TOKEN=[redacted] GITHUB_PAT=[redacted] make; echo ok"},
      {"env DB_PASSWORD=hunter2 ./migrate", "env DB_PASSWORD=[redacted] ./migrate"},
      {"export API_KEY=sk-1234&&run", "export API_KEY=[redacted]&&run"},
      {"curl -H 'Authorization: Bearer sk-abc123' https://api.example.com/v1",
       "curl -H 'Authorization: Bearer [redacted]' https://api.example.com/v1"},
      {"Authorization: Bearer sk-abc123", "Authorization: Bearer [redacted]"},
      {"authorization: basic dXNlcjpwYXNz", "authorization: basic [redacted]"},
      {"curl -H \"X-Api-Key: k-999\" http://h/", "curl -H \"X-Api-Key: [redacted]\" http://h/"},
      {"wget --header='Cookie: sid=s3cr3t; theme=dark' http://h/",
       "wget --header='Cookie: [redacted]' http://h/"},
      {"Bearer eyJhbGciOi.x.y", "Bearer [redacted]"},
      {"mysql -u root -pPASS app -e 'select 1'", "mysql -u root -p[redacted] app -e 'select 1'"},
      {"/usr/bin/mysqldump -p'my pass' db > d.sql", "/usr/bin/mysqldump -p[redacted] db > d.sql"},
      {"mkdir -p build && cd build", "mkdir -p build && cd build"},  // -p is not a password
      {"mysql --password=PASS app", "mysql --password=[redacted] app"},
      {"psql --password PASS", "psql --password [redacted]"},
      {"tool --api-key=k1 --verbose", "tool --api-key=[redacted] --verbose"},
      {"curl -u alice:wonder https://h/", "curl -u alice:[redacted] https://h/"},
      {"curl -ualice:wonder https://h/", "curl -ualice:[redacted] https://h/"},
      {"curl --user=alice:wonder https://h/", "curl --user=alice:[redacted] https://h/"},
      {"sort -u a:b", "sort -u a:b"},  // not curl
      {"git clone https://user:pass@github.com/o/r.git",
       "git clone https://user:[redacted]@github.com/o/r.git"},
      {"redis://:pw@cache:6379/0 and postgres://u:p2@db/app",
       "redis://:[redacted]@cache:6379/0 and postgres://u:[redacted]@db/app"},
      {"https://user@host/path?token_hint=no", "https://user@host/path?token_hint=no"},
      {"PATH=/bin ls -la", "PATH=/bin ls -la"},
      {"plain text, nothing secret", "plain text, nothing secret"},
  };
  for (const auto& [in, out] : cases) EXPECT_EQ(AuditLog::RedactString(in), out) << in;
}

// The masking keeps a string unscanned when it holds none of what any form
// needs. Checked against the scan of every form itself, on strings built of
// secret words, fragments that join into them, and the punctuation each form
// uses: whatever the check lets through, the scan would have kept too.
TEST(AuditLogRedactTest, StringsLeftUnscannedHaveNothingTheScanWouldMask) {
  static constexpr absl::string_view kPieces[] = {
      "API_KEY", "apiKey", "x-Api-Key", "GITHUB_PAT", "ToKeN", "secret", "Passwd", "--password",
      "DB_PWD", "creds", "AUTHORIZATION", "Bearer", "jwt", "PrivateKey", "Cookie", "DSN",
      "CONNECTION_STRING", "curl", "mysql", "-u", "-p", "--user", "://", "@", ":", ": ", "=",
      "\"", "'", " ", "\n", "{", "}", ",", "/", "-", "_", ".", "alice", "wonder", "https", "db",
      "ke", "y", "K", "to", "ken", "pa", "ss", "wd", "be", "arer", "co", "okie", "cu", "rl", "au",
      "th", "x", "Name", "value", "é"};
  std::mt19937 random(20261207);
  int unscanned = 0, scanned_and_masked = 0;
  for (int n = 0; n < 200000; ++n) {
    std::string s;
    const int pieces = 1 + static_cast<int>(random() % 10);
    for (int i = 0; i < pieces; ++i) {
      absl::StrAppend(&s, kPieces[random() % (sizeof(kPieces) / sizeof(kPieces[0]))]);
    }
    const std::string masked = audit_internal::MaskEveryForm(s);
    if (!audit_internal::MayHoldSecret(s)) {
      ++unscanned;
      ASSERT_EQ(masked, s) << "left unscanned, yet the scan masks it";
    } else if (masked != s) {
      ++scanned_and_masked;
    }
  }
  // Both ways were taken often: the check above compared something.
  EXPECT_GT(unscanned, 10000);
  EXPECT_GT(scanned_and_masked, 2000);
}

// A key is judged whole: a NUL inside it does not hide the secret-looking
// part after it, in the audit log or in a recording's masked JSON.
TEST(AuditLogRedactTest, AKeyWithANulInsideIsJudgedWhole) {
  auto args = ParseJson(R"({"a\u0000_token":"s3cret","path":"/x"})");
  ASSERT_TRUE(args.ok());
  const std::string redacted = ToJsonString(AuditLog::Redact(*args));
  EXPECT_THAT(redacted, Not(HasSubstr("s3cret")));
  EXPECT_THAT(redacted, HasSubstr("/x"));
  rapidjson::StringBuffer text;
  AuditLog::TextWriter writer(text);
  AuditLog::WriteMasked(*args, writer);
  const std::string masked(text.GetString(), text.GetSize());
  EXPECT_THAT(masked, Not(HasSubstr("s3cret")));
  EXPECT_THAT(masked, HasSubstr(R"("a\u0000_token":"[redacted]")"));
}

// Keys, the tool name and the call id are cut like values: a 4 MB request
// makes a bounded line.
TEST(AuditLogRedactTest, KeysAndNamesAreCutLikeValues) {
  const std::string huge(4 << 20, 'k');
  HookCall call;
  call.call_id = huge;
  call.tool = huge;
  auto args = ParseJson(absl::StrCat(R"({")", huge, R"(":")", huge, R"(","ok":{")", huge,
                                     R"(":1}})"));
  ASSERT_TRUE(args.ok());
  ToolCallResult result;
  result.status = ResultStatus::kError;
  result.error_message = huge;
  const std::string line = AuditLog::Line(call, &*args, result, {});
  EXPECT_LT(line.size(), 4000u);
  auto parsed = ParseJson(line);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_THAT((*parsed)["tool"].GetString(), HasSubstr("more bytes]"));
}

TEST_F(HooksTest, AuditLogThatCannotBeOpenedIsAStartUpError) {
  HookOptions hooks;
  hooks.audit_log = tree_.path() + "/no/such/dir/audit.jsonl";
  EngineOptions options;
  options.workspace = tree_.path();
  options.hooks = std::move(hooks);
  auto engine = CreateEngine(options, {});
  ASSERT_FALSE(engine.ok());
  EXPECT_THAT(std::string(engine.status().message()), HasSubstr("audit_log"));
}

TEST(AuditLogWriteTest, AFailedWriteIsLoggedNotFatal) {
  // /dev/full fails every write with ENOSPC.
  auto log = AuditLog::Open("/dev/full");
  ASSERT_TRUE(log.ok()) << log.status();
  (*log)->Write("{\"a\":1}\n");
  (*log)->Flush();  // returns: a failed line counts as done
  (*log)->Write("{\"a\":2}\n");
}

// Lines queued by many threads are written whole, each thread's in its order,
// every one of them by the time Flush returns, and what is queued at the end
// is written before the log goes.
TEST(AuditLogWriteTest, QueuedLinesAreAllWrittenWholeAndInOrder) {
  testing::TempTree tree;
  const std::string path = tree.path() + "/audit.jsonl";
  auto log = AuditLog::Open(path);
  ASSERT_TRUE(log.ok()) << log.status();
  constexpr int kThreads = 4, kLines = 5000;
  auto write = [&](int t) {
    for (int i = 0; i < kLines; ++i) (*log)->Write(absl::StrCat(t, " ", i, "\n"));
  };
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) threads.emplace_back(write, t);
    for (auto& th : threads) th.join();
  }
  (*log)->Flush();
  std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), size_t{kThreads * kLines});
  std::vector<int> next(kThreads, 0);
  for (const std::string& line : lines) {
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    ASSERT_EQ(parts.size(), 2u) << line;
    const int t = std::stoi(parts[0]);
    ASSERT_EQ(std::stoi(parts[1]), next[t]++) << "thread " << t << "'s lines out of order";
  }
  write(kThreads);  // queued, not flushed
  log->reset();
  EXPECT_EQ(Lines(path).size(), size_t{(kThreads + 1) * kLines});
}

// A writer stuck on a file nobody drains (a pipe here, a stalled disk in
// life) makes Write wait once kMaxQueuedBytes are queued: nothing is dropped,
// and everything arrives once the file takes bytes again.
TEST(AuditLogWriteTest, AStalledFileMakesWriteWaitAndLosesNothing) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  UniqueFd read_end(fds[0]), write_end(fds[1]);
  auto log = AuditLog::Open(absl::StrCat("/proc/self/fd/", write_end.get()));
  ASSERT_TRUE(log.ok()) << log.status();
  const std::string line = std::string(1023, 'x') + "\n";
  // More than the queue, the batch the writer is blocked writing (up to the
  // queue's size) and the pipe can hold together.
  const size_t count = 3 * AuditLog::kMaxQueuedBytes / line.size();
  std::atomic<bool> all_queued{false};
  std::thread writer([&] {
    for (size_t i = 0; i < count; ++i) (*log)->Write(line);
    all_queued = true;
  });
  // Nothing reads the pipe: the queue fills and Write waits, however long.
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(all_queued.load()) << "Write did not wait for a stalled file";
  size_t got = 0;
  char buf[65536];
  while (got < count * line.size()) {
    const ssize_t n = read(read_end.get(), buf, sizeof(buf));
    ASSERT_GT(n, 0);
    for (ssize_t k = 0; k < n; ++k) {
      const char want = (got + k) % line.size() == line.size() - 1 ? '\n' : 'x';
      ASSERT_EQ(buf[k], want) << "at byte " << got + k;
    }
    got += static_cast<size_t>(n);
  }
  writer.join();
  EXPECT_TRUE(all_queued.load());
  log->reset();
  EXPECT_EQ(got, count * line.size());
}

// --- the config file ---

TEST(HookConfigTest, MapsHooksAndTheAuditLog) {
  v1::DaemonConfig config;
  auto* h = config.add_hooks();
  h->set_name("guard");
  h->set_event(v1::HOOK_EVENT_PRE_CALL);
  h->add_argv("/usr/local/bin/guard");
  h->add_argv("--strict");
  h->set_timeout_ms(2500);
  h->add_tools("run_command");
  config.set_audit_log("/var/log/toolexec/audit.jsonl");
  DaemonOptions options;
  std::string level;
  ASSERT_TRUE(ApplyConfig(config, &options, &level).ok());
  const HookOptions& hooks = options.engine.hooks;
  EXPECT_EQ(hooks.audit_log, "/var/log/toolexec/audit.jsonl");
  ASSERT_EQ(hooks.command_hooks.size(), 1u);
  EXPECT_EQ(hooks.command_hooks[0].name, "guard");
  EXPECT_EQ(hooks.command_hooks[0].event, HookEvent::kPreCall);
  EXPECT_THAT(hooks.command_hooks[0].argv, ElementsAre("/usr/local/bin/guard", "--strict"));
  EXPECT_EQ(hooks.command_hooks[0].timeout, absl::Milliseconds(2500));
  EXPECT_THAT(hooks.command_hooks[0].tools, ElementsAre("run_command"));
}

TEST(HookConfigTest, RefusesIncompleteHooks) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {R"(hooks { event: HOOK_EVENT_PRE_CALL argv: "/bin/true" })", "hooks[0] has no name"},
      {R"(hooks { name: "a" argv: "/bin/true" })", "hook 'a': event is required"},
      {R"(hooks { name: "a" event: HOOK_EVENT_POST_CALL })", "hook 'a': argv is required"},
      {R"(hooks { name: "a" event: HOOK_EVENT_POST_CALL argv: "/bin/true" timeout_ms: 700000 })",
       "hook 'a': timeout_ms is 700000"},
  };
  for (const Case& c : cases) {
    v1::DaemonConfig config;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(c.text, &config)) << c.text;
    DaemonOptions options;
    std::string level;
    absl::Status s = ApplyConfig(config, &options, &level);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message)) << c.text;
  }
}

}  // namespace
}  // namespace toolexec

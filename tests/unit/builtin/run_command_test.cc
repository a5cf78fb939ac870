// run_command, command_status, kill_command through the ToolRunner, as the
// daemon runs them. Process leaks are checked by scanning /proc for
// a marker each test puts in its commands' environment.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "tests/common/sanitizers.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/builtin/process_test_util.h"
#include "tools/builtin.h"
#include "tools/command/background.h"
#include "tools/command/command.h"
#include "tools/process/reaper.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using testing::Flag;
using testing::Int;
using testing::Quoted;
using testing::Str;

// --- /proc helpers: tests/unit/builtin/process_test_util.h ----------------

using testing::Eventually;
using testing::ProcessesWith;
using testing::ZombieChildren;

std::string UniqueMarker(const char* what) {
  static std::atomic<int> n{0};
  return absl::StrCat("rct-", what, "-", getpid(), "-", ++n, "-", absl::ToUnixNanos(absl::Now()));
}

// A batch observer that keeps every event in arrival order.
class Recorder final : public BatchObserver {
 public:
  struct Event {
    bool is_result;
    uint32_t index;
    std::string stream;
    std::string text;
    uint64_t seq;
  };
  void OnProgress(ProgressEvent e) override {
    absl::MutexLock lock(&mu);
    events.push_back({false, e.index, e.stream, e.text, e.seq});
  }
  void OnResult(ToolCallResult r) override {
    absl::MutexLock lock(&mu);
    events.push_back({true, r.index, "", "", 0});
    results.push_back(std::move(r));
  }
  void OnBatchDone() override { done.Notify(); }

  absl::Mutex mu;
  std::vector<Event> events;
  std::vector<ToolCallResult> results;
  absl::Notification done;
};


class RunCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/run_command_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    ws_ = tmpl;
    options_.command_kill_grace = absl::Milliseconds(300);
    Build();
  }

  void TearDown() override {
    if (registry_) registry_->Find("run_command")->tool->shutdown();
    runner_.reset();
    std::filesystem::remove_all(ws_);
  }

  void Build() {
    runner_.reset();
    registry_ = std::make_unique<ToolRegistry>();
    ASSERT_TRUE(RegisterCommandTools(*registry_, options_).ok());
    ToolRunner::Options ro;
    ro.default_workspace = testing::RootAt(ws_);
    runner_ = std::make_unique<ToolRunner>(registry_.get(), ro);
  }

  ToolCallResult Call(const std::string& tool, const std::string& args,
                      std::optional<absl::Duration> timeout = std::nullopt,
                      std::shared_ptr<Session> session = nullptr) {
    return testing::RunOneCall(*runner_, tool, args, std::move(session), timeout);
  }

  ToolCallResult Run(const std::string& args,
                     std::optional<absl::Duration> timeout = std::nullopt) {
    return Call("run_command", args, timeout);
  }

  // run_command with just a command line (and optional extra JSON members).
  ToolCallResult Sh(const std::string& command, const std::string& extra = "") {
    return Run(absl::StrCat(R"({"command_line":)", Quoted(command), extra.empty() ? "" : ",",
                            extra, "}"));
  }

  std::string ws_;
  BuiltinOptions options_;
  std::unique_ptr<ToolRegistry> registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(RunCommandTest, RegistersTheCommandToolsInOrder) {
  EXPECT_THAT(registry_->names(), ElementsAre("run_command", "command_status", "kill_command",
                                              "bash", "shell"));
  const Tool& t = *registry_->Find("run_command")->tool;
  EXPECT_EQ(t.spec().type, ToolType::kBashCmd);
  EXPECT_FALSE(t.spec().read_only);
  EXPECT_EQ(registry_->Find("run_command")->source, "built-in");
}

TEST_F(RunCommandTest, UnknownSandboxIsAStartupError) {
  BuiltinOptions o;
  o.sandbox = "docker";
  ToolRegistry r;
  absl::Status s = RegisterCommandTools(r, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("unknown value \"docker\""));
}

TEST_F(RunCommandTest, MissingBwrapIsAStartupError) {
  std::string old_path = getenv("PATH") ? getenv("PATH") : "";
  setenv("PATH", "/nonexistent-dir", 1);
  BuiltinOptions o;
  o.sandbox = "bwrap";
  ToolRegistry r;
  absl::Status s = RegisterCommandTools(r, o);
  setenv("PATH", old_path.c_str(), 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("bwrap is not installed"));
  EXPECT_EQ(r.size(), 0u);
}

TEST_F(RunCommandTest, ExitCodes) {
  auto ok = Sh("true");
  ASSERT_TRUE(ok.ok()) << ok.error_message;
  EXPECT_EQ(Int(ok.payload, "exit_code"), 0);
  EXPECT_EQ(Str(ok.payload, "timed_out"), "");

  // A non-zero exit is a successful call carrying the code.
  auto three = Sh("echo partial; exit 3");
  ASSERT_TRUE(three.ok()) << three.error_message;
  EXPECT_EQ(Int(three.payload, "exit_code"), 3);
  EXPECT_EQ(Str(three.payload, "stdout"), "partial\n");
  EXPECT_THAT(three.compact_summary, StartsWith("[run_command: `echo partial; exit 3` exit 3 in "));
  EXPECT_EQ(three.display.title, "echo partial; exit 3");

  auto killed = Sh("kill -KILL $$");
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(Int(killed.payload, "exit_code"), 137);
  EXPECT_EQ(Str(killed.payload, "signal"), "SIGKILL");
  EXPECT_THAT(killed.compact_summary, HasSubstr("killed by SIGKILL"));
}

TEST_F(RunCommandTest, WorkingDirIsConfinedToTheWorkspace) {
  std::filesystem::create_directories(ws_ + "/sub/dir");
  auto r = Sh("pwd", R"("working_dir":"sub/dir")");
  ASSERT_TRUE(r.ok()) << r.error_message;
  char real[PATH_MAX];
  ASSERT_NE(realpath((ws_ + "/sub/dir").c_str(), real), nullptr);
  EXPECT_EQ(Str(r.payload, "stdout"), std::string(real) + "\n");

  auto root = Sh("pwd");
  ASSERT_TRUE(root.ok());
  ASSERT_NE(realpath(ws_.c_str(), real), nullptr);
  EXPECT_EQ(Str(root.payload, "stdout"), std::string(real) + "\n");

  auto up = Sh("pwd", R"("working_dir":"..")");
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.error->code, ErrorCode::kDenied) << up.error_message;

  std::filesystem::create_directory_symlink("/etc", ws_ + "/out");
  auto link = Sh("pwd", R"("working_dir":"out")");
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.error->code, ErrorCode::kDenied) << link.error_message;

  // Failing to start is a failed call, not an exit code.
  auto missing = Sh("pwd", R"("working_dir":"nope")");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error->code, ErrorCode::kToolFailed);
  EXPECT_THAT(missing.compact_summary, HasSubstr("error"));
}

TEST_F(RunCommandTest, InvalidArguments) {
  EXPECT_EQ(Run("{}").error->code, ErrorCode::kInvalidArguments);
  EXPECT_EQ(Run(R"({"command_line":"true","cmd":"x"})").error->code, ErrorCode::kInvalidArguments);
  EXPECT_EQ(Run(R"({"command_line":"true","timeout_ms":0})").error->code,
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(Run(R"({"command_line":"true","env":{"A=B":"x"}})").error->code,
            ErrorCode::kInvalidArguments);
  EXPECT_EQ(Run(R"({"command_line":"   "})").error->code, ErrorCode::kInvalidArguments);
}

// env as ["NAME=value"]: the form every model provider's schema can express
// (a string map has none in OpenAI strict mode or Gemini).
TEST_F(RunCommandTest, EnvAsNameValueStrings) {
  auto r = Sh(R"(echo "[$RCT_A][$RCT_B]")", R"("env":["RCT_A=1","RCT_B=x=y"])");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "stdout"), "[1][x=y]\n");
  auto bad = Run(R"({"command_line":"true","env":["RCT_A"]})");
  EXPECT_EQ(bad.error->code, ErrorCode::kInvalidArguments);
  EXPECT_EQ(bad.error_message, "env: 'RCT_A' is not of the form NAME=value");
  EXPECT_EQ(Run(R"({"command_line":"true","env":["=x"]})").error->code,
            ErrorCode::kInvalidArguments);
}

// [Deciding what runs]: the need is the line and the variables the call sets, which the
// policy judges (BASH_ENV makes bash run code). The tool itself refuses none:
// without a policy everything runs, and the command line could run the same
// code directly.
TEST_F(RunCommandTest, TheEnvIsPartOfTheNeedAndThePolicyNotTheToolJudgesIt) {
  const Tool& tool = *registry_->Find("run_command")->tool;
  for (const char* env : {R"j({"BASH_ENV":"$(touch ran)","A":"1"})j",
                          R"j(["BASH_ENV=$(touch ran)","A=1"])j"}) {
    auto perms = tool.required_permissions(
        testing::J(absl::StrCat(R"({"command_line":"true","env":)", env, "}")));
    ASSERT_EQ(perms.size(), 1u);
    EXPECT_EQ(perms[0].kind, PermissionRequirement::Kind::kCommand);
    EXPECT_EQ(perms[0].value, "true");
    EXPECT_THAT(perms[0].env, ElementsAre("BASH_ENV=$(touch ran)", "A=1"));
  }
  auto r = Run(R"j({"command_line":"true","env":{"BASH_ENV":"$(touch ran)"}})j");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_TRUE(std::filesystem::exists(ws_ + "/ran"));
}

TEST_F(RunCommandTest, TimeoutsBeyondThirtyDaysAreInvalidNotImmediate) {
  // 10^13 ms overflowed the clock and ended a 1 s command at once as idle.
  for (const char* arg : {"timeout_ms", "idle_timeout_ms"}) {
    auto r = Run(absl::StrCat(R"({"command_line":"sleep 0.2; echo ok",")", arg,
                              R"(":10000000000000})"));
    ASSERT_TRUE(r.error.has_value()) << arg;
    EXPECT_EQ(r.error->code, ErrorCode::kInvalidArguments) << arg;
    EXPECT_THAT(r.error_message, HasSubstr(arg));
  }
  // The largest allowed value runs the command normally.
  auto ok = Sh("sleep 0.2; echo ok", R"("idle_timeout_ms":2592000000,"timeout_ms":2592000000)");
  ASSERT_TRUE(ok.ok()) << ok.error_message;
  EXPECT_EQ(Str(ok.payload, "timed_out"), "");
  EXPECT_EQ(Str(ok.payload, "stdout"), "ok\n");
}

TEST_F(RunCommandTest, StdoutAndStderrSeparateAndInterleaved) {
  auto r =
      Sh("echo out1; sleep 0.05; echo err1 >&2; sleep 0.05; echo out2; sleep 0.05; "
         "echo err2 >&2");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "stdout"), "out1\nout2\n");
  EXPECT_EQ(Str(r.payload, "stderr"), "err1\nerr2\n");
  EXPECT_EQ(Str(r.payload, "combined_output"), "out1\nerr1\nout2\nerr2\n");
  EXPECT_FALSE(Flag(r.payload, "truncated"));
  EXPECT_EQ(Int(r.payload, "stdout_bytes"), 10);
}

TEST_F(RunCommandTest, Stdin) {
  auto r = Sh("cat; echo .", R"("stdin":"hello\nworld")");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "stdout"), "hello\nworld.\n");

  // More than a pipe holds: written as the command reads it.
  std::string big(1 << 20, 'z');
  auto wc = Sh("wc -c", absl::StrCat(R"("stdin":")", big, "\""));
  ASSERT_TRUE(wc.ok());
  EXPECT_EQ(Str(wc.payload, "stdout"), "1048576\n");

  // A command that never reads its stdin: no SIGPIPE in the daemon.
  auto ignore = Sh("exit 0", absl::StrCat(R"("stdin":")", big, "\""));
  ASSERT_TRUE(ignore.ok());
  EXPECT_EQ(Int(ignore.payload, "exit_code"), 0);

  // No stdin: /dev/null, so cat ends at once.
  auto none = Sh("cat; echo end");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(Str(none.payload, "stdout"), "end\n");
}

TEST_F(RunCommandTest, EnvironmentIsScrubbed) {
  setenv("RCT_FOO_TOKEN", "s3cret", 1);
  setenv("rct_api_key", "k3y", 1);
  setenv("RCT_PLAIN", "visible", 1);
  Build();  // the base environment is snapshot at registration
  const std::string cmd = R"(echo "[$RCT_FOO_TOKEN][$rct_api_key][$RCT_PLAIN][$EXTRA]")";
  auto r = Sh(cmd, R"("env":{"EXTRA":"x y"})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "stdout"), "[][][visible][x y]\n");

  // The call's env may set a secret-looking name explicitly.
  auto explicit_env = Sh("echo $MY_TOKEN", R"("env":{"MY_TOKEN":"given"})");
  EXPECT_EQ(Str(explicit_env.payload, "stdout"), "given\n");

  options_.allow_env = {"RCT_FOO_TOKEN"};
  Build();
  auto allowed = Sh(cmd);
  EXPECT_EQ(Str(allowed.payload, "stdout"), "[s3cret][][visible][]\n");
  unsetenv("RCT_FOO_TOKEN");
  unsetenv("rct_api_key");
  unsetenv("RCT_PLAIN");
}

TEST_F(RunCommandTest, SignalDispositionsAreReset) {
  // A daemon that ignores SIGPIPE must not pass that on: `yes` must die of it.
  struct sigaction old;
  signal(SIGPIPE, SIG_IGN);
  auto r = Sh("yes | head -1; echo ${PIPESTATUS[0]}");
  sigaction(SIGPIPE, nullptr, &old);
  signal(SIGPIPE, SIG_DFL);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Str(r.payload, "stdout"), "y\n141\n");
}

TEST_F(RunCommandTest, ResourceLimits) {
  options_.rlimit_open_files = 64;
  options_.rlimit_cpu_seconds = 30;
  Build();
  auto r = Sh("ulimit -n; ulimit -t");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "stdout"), "64\n30\n");
}

TEST_F(RunCommandTest, WallTimeoutKeepsPartialOutput) {
  auto start = absl::Now();
  auto r = Sh("echo before; echo oops >&2; sleep 30; echo after", R"("timeout_ms":300)");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(Str(r.payload, "timed_out"), "wall");
  EXPECT_EQ(Str(r.payload, "stdout"), "before\n");
  EXPECT_EQ(Str(r.payload, "stderr"), "oops\n");
  EXPECT_EQ(Str(r.payload, "signal"), "SIGTERM");
  EXPECT_EQ(Int(r.payload, "timeout_ms"), 300);
  EXPECT_THAT(r.compact_summary, HasSubstr("timed out (wall)"));
}

TEST_F(RunCommandTest, TimeoutIsCappedByConfig) {
  options_.command_max_timeout = absl::Milliseconds(200);
  Build();
  auto r = Sh("sleep 30", R"("timeout_ms":100000)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Str(r.payload, "timed_out"), "wall");
  EXPECT_EQ(Int(r.payload, "timeout_ms"), 200);
  EXPECT_THAT(Str(r.payload, "timeout_note"), HasSubstr("capped"));
}

TEST_F(RunCommandTest, IgnoredSigtermEndsInSigkillAfterTheGrace) {
  auto start = absl::Now();
  auto r = Sh("trap '' TERM; echo x; sleep 30", R"("timeout_ms":200)");
  ASSERT_TRUE(r.ok());
  absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(450));  // 200 ms + 300 ms grace
  EXPECT_LT(took, absl::Seconds(5));
  EXPECT_EQ(Str(r.payload, "timed_out"), "wall");
  EXPECT_EQ(Str(r.payload, "signal"), "SIGKILL");
  EXPECT_EQ(Str(r.payload, "stdout"), "x\n");
}

TEST_F(RunCommandTest, IdleTimeout) {
  auto r = Sh("echo a; sleep 0.1; echo b; sleep 30", R"("idle_timeout_ms":400)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Str(r.payload, "timed_out"), "idle");
  EXPECT_EQ(Str(r.payload, "stdout"), "a\nb\n");

  // Output keeps the idle timer from firing.
  auto busy = Sh("for i in 1 2 3 4 5 6; do echo $i; sleep 0.1; done", R"("idle_timeout_ms":400)");
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ(Str(busy.payload, "timed_out"), "");
  EXPECT_EQ(Int(busy.payload, "exit_code"), 0);
}

TEST_F(RunCommandTest, BackgroundJobDoesNotHoldTheCall) {
  const std::string marker = UniqueMarker("bg");
  auto start = absl::Now();
  auto r = Sh("sleep 1000 & echo done", absl::StrCat(R"("env":{"RCT_MARKER":")", marker, R"("})"));
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(Str(r.payload, "stdout"), "done\n");
  EXPECT_EQ(Int(r.payload, "exit_code"), 0);
  // The group was killed when the leader exited, and the daemon reaped it.
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }));
  EXPECT_TRUE(Eventually([] { return ZombieChildren() == 0; }));
}

// What a finished foreground command leaves behind dies with it, also what
// left its process group: setsid'd children, double-forked setsid orphans the
// daemon adopted, and their own children.
TEST_F(RunCommandTest, EscapeesDieWhenTheCommandEnds) {
  const std::string marker = UniqueMarker("escape");
  const std::string cmd =
      "(setsid sleep 1000 &) ; setsid sleep 1000 & setsid bash -c 'sleep 1000; true' & "
      "sleep 0.2; echo done";
  auto r = Sh(cmd, absl::StrCat(R"("env":{"RCT_MARKER":")", marker, R"("})"));
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "stdout"), "done\n");
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }))
      << "left behind: " << ProcessesWith(marker).size();
  EXPECT_TRUE(Eventually([] { return ZombieChildren() == 0; }));
}

TEST_F(RunCommandTest, CancellationKillsTheWholeTree) {
  const std::string marker = UniqueMarker("cancel");
  // A plain child, a double-forked orphan (adopted by the daemon) and a
  // setsid'd escapee, besides the foreground sleep.
  const std::string cmd =
      "sleep 1000 & (sleep 1000 &) ; (setsid sleep 1000 &) ; setsid sleep 1000 & echo up; sleep "
      "1000";
  Recorder rec;
  BatchRequest req;
  req.calls.push_back(
      CallRequest{.id = "c",
                  .name = "run_command",
                  .args_json = absl::StrCat(R"({"command_line":)", Quoted(cmd),
                                            R"(,"env":{"RCT_MARKER":")", marker, R"("}})")});
  auto handle = runner_->Start(std::move(req), &rec);
  ASSERT_TRUE(handle.ok());
  // bash execs its last command, so: 5 sleeps.
  ASSERT_TRUE(Eventually([&] { return ProcessesWith(marker).size() >= 5; }))
      << ProcessesWith(marker).size();
  (*handle)->Cancel();
  rec.done.WaitForNotification();
  ASSERT_EQ(rec.results.size(), 1u);
  EXPECT_EQ(rec.results[0].status, ResultStatus::kCancelled);
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }))
      << "left behind: " << ProcessesWith(marker).size();
  EXPECT_TRUE(Eventually([] { return ZombieChildren() == 0; }));
}

// A setsid'd grandchild that keeps the command's environment, whose parent is
// still alive when the shell exits and dies only from the kill that follows:
// it is re-parented while the command is being ended, and must end with it,
// every time.
TEST_F(RunCommandTest, SetsidGrandchildEndsWithItsCommandEveryTime) {
  const std::string marker = UniqueMarker("setsid-grandchild");
  const std::string cmd = "bash -c 'setsid sleep 1000 & wait' & sleep 0.05; echo done";
  int survived = 0;
  for (int i = 0; i < 20; ++i) {
    auto r = Sh(cmd, absl::StrCat(R"("env":{"RCT_MARKER":")", marker, R"("})"));
    ASSERT_TRUE(r.ok()) << r.error_message;
    EXPECT_EQ(Str(r.payload, "stdout"), "done\n");
    // When the call has returned, nothing of the command is left.
    std::vector<int> left = ProcessesWith(marker);
    if (!left.empty()) ++survived;
    for (int pid : left) kill(pid, SIGKILL);
  }
  EXPECT_EQ(survived, 0) << "runs out of 20 that left a process behind";
  EXPECT_TRUE(Eventually([] { return ZombieChildren() == 0; }));
}

// Clients that keep cancelling commands which start children (plain, setsid'd,
// double-forked): every process is reaped as it ends, nothing piles up.
TEST_F(RunCommandTest, SustainedCancellationLeavesNoZombies) {
  const std::string marker = UniqueMarker("churn");
  const std::string args = absl::StrCat(
      R"({"command_line":"sleep 1000 & (setsid sleep 1000 &); bash -c 'sleep 1000 & wait' & )",
      R"(echo up; wait","env":{"RCT_MARKER":")", marker, R"("}})");
  constexpr int kClients = 8;
  const absl::Time end = absl::Now() + absl::Seconds(3);
  std::atomic<int> cancelled{0};
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&] {
      while (absl::Now() < end) {
        Recorder rec;
        BatchRequest req;
        req.calls.push_back(CallRequest{.id = "c", .name = "run_command", .args_json = args});
        auto handle = runner_->Start(std::move(req), &rec);
        if (!handle.ok()) {
          ++failures;
          return;
        }
        // Cancel once the command has started its children (or soon after).
        Eventually(
            [&] {
              absl::MutexLock lock(&rec.mu);
              return !rec.events.empty();
            },
            absl::Milliseconds(500));
        (*handle)->Cancel();
        rec.done.WaitForNotification();
        if (rec.results.size() != 1) ++failures;
        ++cancelled;
      }
    });
  }
  // Zombies of this process, sampled while the clients run. Each client has
  // at most a call or two ending at any time, so only as many supervisors
  // can be waiting to be reaped; nothing of a command's tree ever is.
  std::atomic<int> most_zombies{0};
  std::thread sampler([&] {
    while (absl::Now() < end) {
      most_zombies = std::max(most_zombies.load(), ZombieChildren());
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  for (auto& t : clients) t.join();
  sampler.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(cancelled.load(), kClients);
  EXPECT_LE(most_zombies.load(), 2 * kClients);
  // A cancelled call's result comes at once; its command ends within the kill grace.
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }, absl::Seconds(10)))
      << ProcessesWith(marker).size() << " left";
  EXPECT_TRUE(Eventually([] { return ZombieChildren() == 0; }));
  EXPECT_EQ(ZombieChildren(), 0);
  for (int pid : ProcessesWith(marker)) kill(pid, SIGKILL);
}

TEST_F(RunCommandTest, BatchTimeoutKillsTheTreeAndKeepsOutput) {
  const std::string marker = UniqueMarker("batch-timeout");
  auto start = absl::Now();
  auto r = Run(absl::StrCat(R"({"command_line":"echo started; sleep 1000 & sleep 1000",)",
                            R"("env":{"RCT_MARKER":")", marker, R"("}})"),
               absl::Seconds(1));
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  // The command's own (shortened) timeout fired before the call's deadline,
  // so the partial output still comes back.
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "timed_out"), "wall");
  EXPECT_EQ(Str(r.payload, "stdout"), "started\n");
  EXPECT_THAT(Str(r.payload, "timeout_note"), HasSubstr("deadline"));
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }));
}

TEST_F(RunCommandTest, LargeOutputKeepsHeadAndTailInBoundedMemory) {
  if (testing::kSanitizerAllocator) GTEST_SKIP() << "resident memory is not bounded under a sanitizer";
  auto rss_kb = [] {
    std::string status = testing::ReadProcFile("/proc/self/status");
    size_t p = status.find("VmHWM:");
    return p == std::string::npos ? 0L : atol(status.c_str() + p + 6);
  };
  long before = rss_kb();
  auto r =
      Sh("printf HEAD; head -c 50000000 /dev/zero | tr '\\0' x; printf TAIL; "
         "echo err >&2");
  ASSERT_TRUE(r.ok()) << r.error_message;
  long after = rss_kb();
  const std::string out = Str(r.payload, "stdout");
  EXPECT_EQ(Int(r.payload, "stdout_bytes"), 50000008);
  EXPECT_TRUE(Flag(r.payload, "truncated"));
  EXPECT_THAT(out, StartsWith("HEADxxxx"));
  EXPECT_THAT(out, EndsWith("xxxxTAIL"));
  const uint64_t limit = options_.command_capture_bytes;
  // Cut once more to the call's model_content budget: one marker counts all
  // that is left out.
  const size_t budget = kDefaultModelContentChars;
  const size_t from = out.find("\n[... ");
  ASSERT_NE(from, std::string::npos) << out.substr(0, 200);
  std::string omitted = out.substr(from + 6, out.find(' ', from + 6) - from - 6);
  omitted.erase(std::remove(omitted.begin(), omitted.end(), ','), omitted.end());
  EXPECT_THAT(out, HasSubstr(" bytes omitted; rerun piped through"));
  const size_t marker_bytes = out.find(" ...]\n", from) + 6 - from;
  EXPECT_EQ(std::stoull(omitted) + out.size() - marker_bytes, 50000008u);
  EXPECT_LE(out.size(), budget);
  EXPECT_LT(out.size(), 2 * limit + 100);
  EXPECT_LT(Str(r.payload, "combined_output").size(), 2 * limit + 100);
  EXPECT_EQ(Str(r.payload, "stderr"), "err\n");
  EXPECT_LT(after - before, 20 * 1024) << "peak RSS grew by " << (after - before) << " KiB";
}

TEST_F(RunCommandTest, Utf8SplitAcrossReadsSurvives) {
  Recorder rec;
  BatchRequest req;
  req.calls.push_back(CallRequest{
      .id = "c",
      .name = "run_command",
      .args_json = R"({"command_line":"printf 'a\\xe2'; sleep 0.2; printf '\\x82\\xac b\\n'"})"});
  ASSERT_TRUE(runner_->Start(std::move(req), &rec).ok());
  rec.done.WaitForNotification();
  ASSERT_EQ(rec.results.size(), 1u);
  const auto& r = rec.results[0];
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "stdout"), "a\xE2\x82\xAC b\n");
  EXPECT_FALSE(Flag(r.payload, "invalid_utf8"));
  // Each progress chunk is whole UTF-8: the euro sign arrives in one piece.
  std::vector<std::string> chunks;
  for (const auto& e : rec.events) {
    if (!e.is_result) chunks.push_back(e.text);
  }
  EXPECT_THAT(chunks, ElementsAre("a", "\xE2\x82\xAC b\n"));
}

TEST_F(RunCommandTest, InvalidUtf8IsReplacedAndReported) {
  auto r = Sh("printf 'a\\xffb\\n'; printf 'x\\xe2\\x82' >&2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Str(r.payload, "stdout"),
            "a\xEF\xBF\xBD"
            "b\n");
  EXPECT_EQ(Str(r.payload, "stderr"), "x\xEF\xBF\xBD");
  EXPECT_TRUE(Flag(r.payload, "invalid_utf8"));
  EXPECT_EQ(Int(r.payload, "invalid_utf8_bytes"), 3);
}

// stdout_bytes and stderr_bytes count what the command wrote, not the text
// after each invalid byte became a 3-byte U+FFFD.
TEST_F(RunCommandTest, ByteCountsAreOfTheBytesWritten) {
  auto r = Sh("printf '\\xff\\xfe\\xfd'; printf 'x\\xe2\\x82' >&2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Str(r.payload, "stdout"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(Int(r.payload, "stdout_bytes"), 3);
  EXPECT_EQ(Int(r.payload, "stderr_bytes"), 3);
}

TEST_F(RunCommandTest, ProgressArrivesBeforeTheResultInSeqOrder) {
  Recorder rec;
  BatchRequest req;
  req.calls.push_back(CallRequest{
      .id = "a",
      .name = "run_command",
      .args_json =
          R"({"command_line":"for i in 1 2 3; do echo $i; sleep 0.05; done; echo e >&2"})"});
  req.calls.push_back(CallRequest{
      .id = "b", .name = "run_command", .args_json = R"({"command_line":"echo fast"})"});
  ASSERT_TRUE(runner_->Start(std::move(req), &rec).ok());
  rec.done.WaitForNotification();
  ASSERT_EQ(rec.results.size(), 2u);
  for (uint32_t call = 0; call < 2; ++call) {
    uint64_t last_seq = 0;
    bool result_seen = false;
    std::string out, err;
    for (const auto& e : rec.events) {
      if (e.index != call) continue;
      if (e.is_result) {
        result_seen = true;
        continue;
      }
      EXPECT_FALSE(result_seen) << "progress after the result of call " << call;
      EXPECT_EQ(e.seq, last_seq + 1);
      last_seq = e.seq;
      (e.stream == "stdout" ? out : err) += e.text;
    }
    EXPECT_TRUE(result_seen);
    EXPECT_EQ(out, Str(rec.results[call].payload, "stdout"));
    EXPECT_EQ(err, Str(rec.results[call].payload, "stderr"));
  }
  EXPECT_EQ(Str(rec.results[0].payload, "stdout"), "1\n2\n3\n");
}

TEST_F(RunCommandTest, ThirtyTwoSleepsRunSideBySide) {
  BatchRequest req;
  for (int i = 0; i < 32; ++i) {
    req.calls.push_back(CallRequest{.id = absl::StrCat(i),
                                    .name = "run_command",
                                    .args_json = R"({"command_line":"sleep 1"})"});
  }
  auto start = absl::Now();
  auto results = runner_->Run(std::move(req));
  absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(results.ok());
  for (const auto& r : *results) {
    ASSERT_TRUE(r.ok()) << r.error_message;
    EXPECT_EQ(Int(r.payload, "exit_code"), 0);
  }
  EXPECT_LT(took, absl::Seconds(5));
}

// --- background commands ----------------------------------------------------

TEST_F(RunCommandTest, BackgroundStartStatusKill) {
  const std::string marker = UniqueMarker("background");
  auto start = absl::Now();
  auto started = Sh("echo start; sleep 0.3; echo mid >&2; sleep 1000",
                    absl::StrCat(R"("background":true,"env":{"RCT_MARKER":")", marker, R"("})"));
  ASSERT_TRUE(started.ok()) << started.error_message;
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  const std::string id = Str(started.payload, "process_id");
  EXPECT_THAT(id, StartsWith("bg-"));
  EXPECT_THAT(started.compact_summary, HasSubstr("started in the background as " + id));

  // Output so far, by sequence number; each read returns only what is new.
  std::string seen;
  ASSERT_TRUE(Eventually([&] {
    auto s = Call("command_status", absl::StrCat(R"({"process_id":")", id, R"("})"));
    EXPECT_TRUE(s.ok()) << s.error_message;
    EXPECT_TRUE(Flag(s.payload, "running"));
    // combined_output only when both streams wrote since the last report.
    seen += s.payload.HasMember("combined_output")
                ? Str(s.payload, "combined_output")
                : Str(s.payload, "stdout") + Str(s.payload, "stderr");
    return seen == "start\nmid\n";
  }));
  auto quiet =
      Call("command_status", absl::StrCat(R"({"process_id":")", id, R"(","wait_ms":100})"));
  ASSERT_TRUE(quiet.ok());
  EXPECT_FALSE(quiet.payload.HasMember("combined_output"));
  EXPECT_EQ(Str(quiet.payload, "stdout"), "");
  EXPECT_EQ(Str(quiet.payload, "stderr"), "");
  EXPECT_THAT(quiet.model_content, StartsWith("Background command " + id + " is still running"));
  EXPECT_EQ(Int(quiet.payload, "first_seq"), 0);
  EXPECT_EQ(Int(quiet.payload, "last_seq"), 2);

  auto killed = Call("kill_command", absl::StrCat(R"({"process_id":")", id, R"("})"));
  ASSERT_TRUE(killed.ok()) << killed.error_message;
  EXPECT_FALSE(Flag(killed.payload, "running"));
  EXPECT_TRUE(Flag(killed.payload, "killed"));
  EXPECT_EQ(Str(killed.payload, "signal"), "SIGTERM");
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }));

  // Still reportable after it ended; killing again says so.
  auto again = Call("kill_command", absl::StrCat(R"({"process_id":")", id, R"("})"));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(Flag(again.payload, "already_exited"));

  auto unknown = Call("command_status", R"({"process_id":"bg-999999"})");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error->code, ErrorCode::kInvalidArguments);
}

TEST_F(RunCommandTest, BackgroundExitIsReported) {
  auto started = Sh("echo hi; exit 4", R"("background":true)");
  ASSERT_TRUE(started.ok());
  const std::string id = Str(started.payload, "process_id");
  auto s = Call("command_status", absl::StrCat(R"({"process_id":")", id, R"(","wait_ms":5000})"));
  ASSERT_TRUE(s.ok()) << s.error_message;
  EXPECT_FALSE(Flag(s.payload, "running"));
  EXPECT_EQ(Int(s.payload, "exit_code"), 4);
  EXPECT_EQ(Str(s.payload, "stdout"), "hi\n");
  EXPECT_EQ(Str(s.payload, "timed_out"), "");
}

// Dropping the tools (an embedder that never calls shutdown()) ends every
// background command together: the kill grace is waited out once.
TEST_F(RunCommandTest, DroppingTheToolsEndsBackgroundCommandsTogether) {
  options_.command_kill_grace = absl::Milliseconds(1000);
  Build();
  const std::string marker = UniqueMarker("drop");
  for (int i = 0; i < 3; ++i) {
    auto started = Run(absl::StrCat(R"({"command_line":"trap '' TERM; sleep 1000",)",
                                    R"("background":true,"env":{"RCT_MARKER":")", marker,
                                    R"("}})"));
    ASSERT_TRUE(started.ok()) << started.error_message;
  }
  ASSERT_TRUE(Eventually([&] { return ProcessesWith(marker).size() >= 3; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // let the traps install
  absl::Time start = absl::Now();
  runner_.reset();
  registry_.reset();  // the last owner of the table
  absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(ProcessesWith(marker).empty());
  EXPECT_GE(took, absl::Milliseconds(900));  // the grace was honoured
  EXPECT_LT(took, absl::Milliseconds(2500)) << "the grace was waited out command by command";
}

TEST_F(RunCommandTest, BackgroundBelongsToItsSessionAndDiesWithIt) {
  SessionManager sessions(registry_.get(), {});
  auto a = sessions.Open(SessionOptions{.workspaces = testing::Roots({ws_})});
  auto b = sessions.Open(SessionOptions{.workspaces = testing::Roots({ws_})});
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string marker = UniqueMarker("session");
  auto started = Call("run_command",
                      absl::StrCat(R"({"command_line":"sleep 1000","background":true,)",
                                   R"("env":{"RCT_MARKER":")", marker, R"("}})"),
                      std::nullopt, *a);
  ASSERT_TRUE(started.ok()) << started.error_message;
  const std::string id = Str(started.payload, "process_id");
  ASSERT_TRUE(Eventually([&] { return ProcessesWith(marker).size() == 1; }));

  // Another session (or no session) cannot see it.
  auto other =
      Call("command_status", absl::StrCat(R"({"process_id":")", id, R"("})"), std::nullopt, *b);
  EXPECT_FALSE(other.ok());
  auto none = Call("kill_command", absl::StrCat(R"({"process_id":")", id, R"("})"));
  EXPECT_FALSE(none.ok());
  auto mine =
      Call("command_status", absl::StrCat(R"({"process_id":")", id, R"("})"), std::nullopt, *a);
  EXPECT_TRUE(mine.ok()) << mine.error_message;

  ASSERT_TRUE(sessions.Close((*a)->id()).ok());
  EXPECT_TRUE(ProcessesWith(marker).empty());  // cleanup_session waits for the kill
  auto gone =
      Call("command_status", absl::StrCat(R"({"process_id":")", id, R"("})"), std::nullopt, *a);
  EXPECT_FALSE(gone.ok());
}

TEST_F(RunCommandTest, BackgroundCommandsAreLimitedPerSession) {
  for (size_t i = 0; i < command::kMaxRunningBackgroundPerSession; ++i) {
    ASSERT_TRUE(Sh("sleep 1000", R"("background":true)").ok());
  }
  auto refused = Sh("sleep 1000", R"("background":true)");
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.error_message, HasSubstr("end some with kill_command"));
  registry_->Find("run_command")->tool->cleanup_session("");  // frees the session's slots
  EXPECT_TRUE(Sh("true", R"("background":true)").ok());
}

TEST_F(RunCommandTest, BackgroundWallTimeout) {
  auto started = Sh("echo tick; sleep 1000", R"("background":true,"timeout_ms":200)");
  ASSERT_TRUE(started.ok());
  auto s =
      Call("command_status", absl::StrCat(R"({"process_id":")", Str(started.payload, "process_id"),
                                          R"(","wait_ms":5000})"));
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(Flag(s.payload, "running"));
  EXPECT_EQ(Str(s.payload, "timed_out"), "wall");
  EXPECT_EQ(Str(s.payload, "stdout"), "tick\n");
}

// --- bwrap ------------------------------------------------------------------

bool BwrapWorksHere() {
  if (access("/usr/bin/bwrap", X_OK) != 0) return false;
  return system(
             "/usr/bin/bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --unshare-pid "
             "--unshare-net --die-with-parent --new-session /bin/true >/dev/null 2>&1") == 0;
}

TEST_F(RunCommandTest, BwrapSandbox) {
  if (!BwrapWorksHere()) GTEST_SKIP() << "bwrap cannot create namespaces here";
  options_.sandbox = "bwrap";
  Build();

  // The workspace is writable (also in a subdirectory, which is the cwd).
  std::filesystem::create_directories(ws_ + "/sub");
  auto w = Sh("echo hi > inside.txt && cat inside.txt && pwd", R"("working_dir":"sub")");
  ASSERT_TRUE(w.ok()) << w.error_message;
  EXPECT_EQ(Int(w.payload, "exit_code"), 0) << Str(w.payload, "stderr");
  char real[PATH_MAX];
  ASSERT_NE(realpath((ws_ + "/sub").c_str(), real), nullptr);
  EXPECT_EQ(Str(w.payload, "stdout"), absl::StrCat("hi\n", real, "\n"));
  EXPECT_TRUE(std::filesystem::exists(ws_ + "/sub/inside.txt"));

  // Nothing outside it is: not /etc, not the daemon's /tmp.
  const std::string outside = "/var/tmp/" + UniqueMarker("outside");
  auto o = Sh(absl::StrCat("echo x > ", outside, "; echo x > /etc/", UniqueMarker("etc"),
                           "; echo x > /tmp/private-tmp-file && ls /tmp"));
  ASSERT_TRUE(o.ok());
  EXPECT_THAT(Str(o.payload, "stderr"), HasSubstr("Read-only file system"));
  EXPECT_FALSE(std::filesystem::exists(outside));
  EXPECT_FALSE(std::filesystem::exists("/tmp/private-tmp-file"));

  // No network: not even the host's loopback.
  int srv = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(srv, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(srv, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(srv, 4), 0);
  socklen_t len = sizeof(addr);
  getsockname(srv, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  const std::string probe =
      absl::StrCat("(exec 3<>/dev/tcp/127.0.0.1/", port, ") && echo connected || echo refused");
  auto n = Sh(probe);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(Str(n.payload, "stdout"), "refused\n");
  // Sanity: outside the sandbox the same probe connects.
  options_.sandbox = "";
  Build();
  EXPECT_EQ(Str(Sh(probe).payload, "stdout"), "connected\n");
  close(srv);
}

TEST_F(RunCommandTest, BwrapTimeoutAndCancelLeaveNothing) {
  if (!BwrapWorksHere()) GTEST_SKIP() << "bwrap cannot create namespaces here";
  options_.sandbox = "bwrap";
  Build();
  const std::string marker = UniqueMarker("bwrap");
  auto r = Sh("echo in; sleep 1000 & sleep 1000",
              absl::StrCat(R"("timeout_ms":300,"env":{"RCT_MARKER":")", marker, R"("})"));
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(Str(r.payload, "timed_out"), "wall");
  EXPECT_EQ(Str(r.payload, "stdout"), "in\n");
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }));

  const std::string marker2 = UniqueMarker("bwrap-cancel");
  Recorder rec;
  BatchRequest req;
  req.calls.push_back(CallRequest{
      .id = "c",
      .name = "run_command",
      .args_json =
          absl::StrCat(R"({"command_line":"sleep 1000 & (setsid sleep 1000 &); sleep 1000",)",
                       R"("env":{"RCT_MARKER":")", marker2, R"("}})")});
  auto handle = runner_->Start(std::move(req), &rec);
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(Eventually([&] { return ProcessesWith(marker2).size() >= 4; }));
  (*handle)->Cancel();
  rec.done.WaitForNotification();
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker2).empty(); }));
}

}  // namespace
}  // namespace toolexec

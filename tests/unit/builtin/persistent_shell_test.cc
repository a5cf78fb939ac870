// bash and shell: the session's persistent shell through the ToolRunner, as
// the daemon runs them. What persists, what does not, how a command's end,
// exit code, timeout and the shell's own end are reported, and the
// persistent-state tricks that must not carry from one call to the next.
// (The file sorts after the command lifecycle tests, which count this
// process's zombies: these tests make the process a subreaper early.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/builtin/process_test_util.h"
#include "tools/builtin.h"
#include "tools/runtime/session.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::Flag;
using testing::Int;
using testing::Quoted;
using testing::Str;

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}
std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class BashToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/bash_tool_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    ws_ = tmpl;
    char real[PATH_MAX];
    ASSERT_NE(realpath(ws_.c_str(), real), nullptr);
    real_ws_ = real;
    options_.command_kill_grace = absl::Milliseconds(300);
    Build();
  }

  void TearDown() override {
    if (registry_) registry_->Find("bash")->tool->shutdown();
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
    session_ = NewSession("s1");
  }

  std::shared_ptr<Session> NewSession(const std::string& id) {
    SessionOptions so;
    so.workspaces = {testing::RootAt(ws_)};
    return std::make_shared<Session>(id, so);
  }

  ToolCallResult Bash(const std::string& command, std::shared_ptr<Session> session = nullptr) {
    return testing::RunOneCall(*runner_, "bash", absl::StrCat(R"({"command":)", Quoted(command), "}"),
                               session ? session : session_);
  }
  ToolCallResult Restart() {
    return testing::RunOneCall(*runner_, "bash", R"({"restart":true})", session_);
  }
  std::string Notes(const ToolCallResult& r) {
    return r.payload.HasMember("notes") ? ToJsonString(r.payload["notes"]) : "";
  }

  std::string ws_, real_ws_;
  BuiltinOptions options_;
  std::unique_ptr<ToolRegistry> registry_;
  std::unique_ptr<ToolRunner> runner_;
  std::shared_ptr<Session> session_;
};

TEST_F(BashToolTest, RegisteredAfterTheCommandTools) {
  EXPECT_THAT(registry_->names(), ::testing::ElementsAre("run_command", "command_status",
                                                         "kill_command", "bash", "shell"));
  EXPECT_EQ(registry_->Find("bash")->tool->spec().type, ToolType::kBashCmd);
  EXPECT_TRUE(registry_->Find("bash")->tool->spec().needs_context);
}

TEST_F(BashToolTest, WorkingDirectoryAndVariablesPersist) {
  std::filesystem::create_directories(ws_ + "/src/pkg");
  auto cd = Bash("cd src/pkg && export GREETING=hello && PLAIN=kept");
  ASSERT_TRUE(cd.ok()) << cd.error_message;
  EXPECT_EQ(Int(cd.payload, "exit_code"), 0);
  EXPECT_TRUE(Flag(cd.payload, "new_shell"));
  auto pwd = Bash("pwd; echo $GREETING $PLAIN; bash -c 'echo child:$GREETING'");
  ASSERT_TRUE(pwd.ok()) << pwd.error_message;
  EXPECT_EQ(Str(pwd.payload, "output"), real_ws_ + "/src/pkg\nhello kept\nchild:hello\n");
  EXPECT_FALSE(Flag(pwd.payload, "new_shell"));
  EXPECT_EQ(Str(pwd.payload, "cwd"), real_ws_ + "/src/pkg");

  // A virtualenv's activation is variables: it carries over.
  std::filesystem::create_directories(ws_ + "/venv/bin");
  {
    std::ofstream act(ws_ + "/venv/bin/activate");
    act << "export VIRTUAL_ENV=" << real_ws_ << "/venv\nexport PATH=\"$VIRTUAL_ENV/bin:$PATH\"\n";
    std::ofstream tool(ws_ + "/venv/bin/venvtool");
    tool << "#!/bin/sh\necho from-venv\n";
  }
  std::filesystem::permissions(ws_ + "/venv/bin/venvtool", std::filesystem::perms::owner_all);
  ASSERT_TRUE(Bash("cd " + real_ws_ + " && source venv/bin/activate").ok());
  auto tool = Bash("venvtool");
  EXPECT_EQ(Str(tool.payload, "output"), "from-venv\n") << tool.error_message;

  // Another session has a shell of its own.
  auto other = Bash("pwd; echo \"[$GREETING]\"", NewSession("s2"));
  EXPECT_EQ(Str(other.payload, "output"), real_ws_ + "\n[]\n");
}

TEST_F(BashToolTest, ExitCodesAreExact) {
  for (int code : {0, 1, 2, 42, 127, 255}) {
    auto r = Bash(absl::StrCat("(exit ", code, ")"));
    ASSERT_TRUE(r.ok()) << r.error_message;
    EXPECT_EQ(Int(r.payload, "exit_code"), code);
  }
  auto missing = Bash("no-such-command-here");
  EXPECT_EQ(Int(missing.payload, "exit_code"), 127);
  EXPECT_THAT(Str(missing.payload, "output"), HasSubstr("command not found"));
  EXPECT_THAT(missing.model_content, HasSubstr("exit code 127"));
  // The shell survived all of it.
  EXPECT_FALSE(Flag(missing.payload, "new_shell"));
}

// Output over the budget is cut in the middle with a hint the shell itself can
// follow: a model given bash or shell may have no file viewer.
TEST_F(BashToolTest, CutOutputSaysHowToReadItWithTheShell) {
  auto r = Bash("seq 1 300000");
  ASSERT_TRUE(r.ok()) << r.error_message;
  const std::string out = Str(r.payload, "output");
  EXPECT_THAT(out, HasSubstr("bytes omitted"));
  EXPECT_THAT(out, HasSubstr("sed -n '1,200p' FILE"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("view_file")));
  EXPECT_THAT(r.model_content, ::testing::Not(HasSubstr("view_file")));
}

TEST_F(BashToolTest, OutputWithoutNewlineBinaryAndStdinEndNormally) {
  auto partial = Bash("printf 'no newline'");
  EXPECT_EQ(Str(partial.payload, "output"), "no newline");
  EXPECT_EQ(partial.model_content, "no newline");

  // stdin is empty: a command that reads it does not wait.
  auto cat = Bash("cat; read line; echo read=$?");
  EXPECT_EQ(Int(cat.payload, "exit_code"), 0);
  EXPECT_EQ(Str(cat.payload, "output"), "read=1\n");

  auto binary = Bash("printf 'a\\xff\\xfeb'");
  EXPECT_EQ(Str(binary.payload, "output"), "a\xEF\xBF\xBD\xEF\xBF\xBD" "b");
  EXPECT_EQ(Int(binary.payload, "invalid_utf8_bytes"), 2);

  auto both = Bash("echo out; echo err >&2");
  EXPECT_EQ(Str(both.payload, "stdout"), "out\n");
  EXPECT_EQ(Str(both.payload, "stderr"), "err\n");
  EXPECT_THAT(Str(both.payload, "output"), HasSubstr("err\n"));
}

TEST_F(BashToolTest, OutputCannotEndACallAndTheProtocolPipesAreNotInherited) {
  // Whatever the command prints, including what the report looks like, the
  // call ends when the command does.
  auto r = Bash("printf 'END:x\\0'; printf '0\\0/\\n\\0END:%s\\0' \"$__te_id\"; sleep 0.3; "
                "echo after");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_THAT(Str(r.payload, "output"), HasSubstr("after\n"));
  EXPECT_EQ(Int(r.payload, "exit_code"), 0);
  // The next call is not confused by it.
  EXPECT_EQ(Str(Bash("echo next").payload, "output"), "next\n");

  // A program the command starts holds 0, 1 and 2 only (ls's own directory
  // handle is the fourth).
  auto fds = Bash("ls /proc/self/fd | wc -l");
  EXPECT_EQ(Str(fds.payload, "output"), "4\n");
}

TEST_F(BashToolTest, ExitAndExecEndTheShellAndTheNextCallStartsANewOne) {
  ASSERT_TRUE(Bash("export MARK=1; cd /tmp || true").ok());
  auto exit = Bash("echo bye; exit 3");
  ASSERT_TRUE(exit.ok()) << exit.error_message;
  EXPECT_EQ(Str(exit.payload, "output"), "bye\n");
  EXPECT_EQ(Int(exit.payload, "exit_code"), 3);
  EXPECT_TRUE(Flag(exit.payload, "shell_ended"));
  EXPECT_THAT(exit.model_content, HasSubstr("the shell exited with code 3"));

  auto fresh = Bash("echo \"[$MARK]\"; pwd");
  EXPECT_TRUE(Flag(fresh.payload, "new_shell"));
  EXPECT_EQ(Str(fresh.payload, "output"), "[]\n" + real_ws_ + "\n");

  auto exec = Bash("exec sh -c 'exit 5'");
  EXPECT_TRUE(Flag(exec.payload, "shell_ended"));
  EXPECT_EQ(Int(exec.payload, "exit_code"), 5);
  EXPECT_TRUE(Flag(Bash("true").payload, "new_shell"));
}

TEST_F(BashToolTest, RestartStartsAFreshShell) {
  ASSERT_TRUE(Bash("export KEEP=1").ok());
  auto r = Restart();
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.model_content, "tool has been restarted.");
  auto after = Bash("echo \"[$KEEP]\"");
  EXPECT_EQ(Str(after.payload, "output"), "[]\n");
  EXPECT_TRUE(Flag(after.payload, "new_shell"));
  auto neither = testing::RunOneCall(*runner_, "bash", "{}", session_);
  EXPECT_EQ(neither.error->code, ErrorCode::kInvalidArguments) << neither.error_message;
}

TEST_F(BashToolTest, WithoutASessionThereIsNoShell) {
  auto r = testing::RunOneCall(*runner_, "bash", R"({"command":"true"})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error->code, ErrorCode::kNoContext);
}

TEST_F(BashToolTest, ATimeoutStopsTheCommandAndTheShellRunningIt) {
  options_.command_default_timeout = absl::Milliseconds(400);
  Build();
  ASSERT_TRUE(Bash("export KEEP=yes").ok());
  auto slow = Bash("echo started; sleep 30");
  ASSERT_TRUE(slow.ok()) << slow.error_message;
  EXPECT_EQ(Str(slow.payload, "timed_out"), "wall");
  EXPECT_FALSE(slow.payload.HasMember("exit_code"));
  EXPECT_FALSE(slow.payload.HasMember("signal"));
  EXPECT_TRUE(Flag(slow.payload, "shell_ended"));
  EXPECT_THAT(Str(slow.payload, "output"), HasSubstr("started"));
  EXPECT_THAT(slow.model_content, HasSubstr("timed out after 400 ms"));
  EXPECT_THAT(slow.model_content, HasSubstr("the next call starts a new shell"));
  auto after = Bash("echo \"[$KEEP]\"");
  EXPECT_EQ(Str(after.payload, "output"), "[]\n");
  EXPECT_TRUE(Flag(after.payload, "new_shell"));

  // A loop in the shell itself stops the same way.
  auto loop = Bash("while :; do :; done");
  EXPECT_EQ(Str(loop.payload, "timed_out"), "wall");
  EXPECT_TRUE(Flag(loop.payload, "shell_ended"));
  auto fresh = Bash("echo fresh");
  EXPECT_TRUE(Flag(fresh.payload, "new_shell"));
  EXPECT_EQ(Str(fresh.payload, "output"), "fresh\n");
}

TEST_F(BashToolTest, ClosingTheSessionEndsTheShellAndItsBackgroundJobs) {
  const std::string marker = absl::StrCat("bash-close-", getpid(), "-", absl::ToUnixNanos(absl::Now()));
  ASSERT_TRUE(Bash("export " + std::string("M=") + marker + "; sleep 300 &").ok());
  EXPECT_TRUE(testing::Eventually([&] { return !testing::ProcessesWith(marker).empty(); }));
  registry_->Find("bash")->tool->cleanup_session(session_->id());
  EXPECT_TRUE(testing::Eventually([&] { return testing::ProcessesWith(marker).empty(); }));
}

TEST_F(BashToolTest, IdleShellsAreEnded) {
  options_.shell_idle_timeout = absl::Milliseconds(200);
  Build();
  const std::string marker = absl::StrCat("bash-idle-", getpid(), "-", absl::ToUnixNanos(absl::Now()));
  ASSERT_TRUE(Bash("export M=" + marker + "; sleep 300 &").ok());
  EXPECT_TRUE(testing::Eventually([&] { return !testing::ProcessesWith(marker).empty(); }));
  EXPECT_TRUE(testing::Eventually([&] { return testing::ProcessesWith(marker).empty(); },
                                  absl::Seconds(10)));
  EXPECT_TRUE(Flag(Bash("true").payload, "new_shell"));
}

// --- persistent state that would change what a later line runs ---

TEST_F(BashToolTest, FunctionsDoNotPersistSoALaterNameRunsWhatItSays) {
  WriteFile(ws_ + "/precious", "keep");
  auto define = Bash("ls() { rm -f \"$@\"; }; echo defined");
  ASSERT_TRUE(define.ok()) << define.error_message;
  EXPECT_THAT(define.model_content, HasSubstr("functions do not persist"));
  EXPECT_THAT(define.model_content, HasSubstr("ls"));
  auto later = Bash("ls precious");
  EXPECT_EQ(Str(later.payload, "output"), "precious\n");
  EXPECT_TRUE(std::filesystem::exists(ws_ + "/precious"));

  // Exported to child shells: gone as well.
  ASSERT_TRUE(Bash("cat() { rm -f \"$@\"; }; export -f cat").ok());
  Bash("bash -c 'cat precious'");
  EXPECT_TRUE(std::filesystem::exists(ws_ + "/precious"));

  // A function named like the loop's own builtins cannot hijack it.
  ASSERT_TRUE(Bash("builtin() { :; }; unset() { :; }; printf() { :; }; eval() { :; }").ok());
  auto still = Bash("echo alive");
  EXPECT_EQ(Str(still.payload, "output"), "alive\n");
  EXPECT_FALSE(Flag(still.payload, "new_shell"));
}

TEST_F(BashToolTest, AReadonlyFunctionReplacesTheShellBeforeTheNextCommand) {
  WriteFile(ws_ + "/precious", "keep");
  ASSERT_TRUE(Bash("export KEEP=1; ls() { rm -f \"$@\"; }; readonly -f ls").ok());
  auto later = Bash("ls precious; echo \"[$KEEP]\"");
  ASSERT_TRUE(later.ok()) << later.error_message;
  EXPECT_EQ(Str(later.payload, "output"), "precious\n[]\n");
  EXPECT_TRUE(Flag(later.payload, "new_shell"));
  EXPECT_THAT(later.model_content, HasSubstr("readonly"));
  EXPECT_TRUE(std::filesystem::exists(ws_ + "/precious"));
}

TEST_F(BashToolTest, AliasesTrapsAndKeywordAssignmentsDoNotPersist) {
  WriteFile(ws_ + "/x", "keep");
  ASSERT_TRUE(Bash("shopt -s expand_aliases; alias ls='rm -f'").ok());
  auto ls = Bash("ls x");
  EXPECT_EQ(Str(ls.payload, "output"), "x\n");
  EXPECT_TRUE(std::filesystem::exists(ws_ + "/x"));

  ASSERT_TRUE(Bash("trap 'echo TRAPPED' DEBUG EXIT").ok());
  auto quiet = Bash("echo plain");
  EXPECT_EQ(Str(quiet.payload, "output"), "plain\n");

  // set -k would make `NAME=value` after a command's name an assignment.
  ASSERT_TRUE(Bash("set -k").ok());
  EXPECT_EQ(Str(Bash("echo a LD_PRELOAD=x").payload, "output"), "a LD_PRELOAD=x\n");

  // hash -p would make a name run another program.
  ASSERT_TRUE(Bash("hash -p /bin/echo ls").ok());
  EXPECT_EQ(Str(Bash("ls x").payload, "output"), "x\n");
}

TEST_F(BashToolTest, EnableIsRefused) {
  for (const char* line : {"enable -n echo", "builtin enable -n echo", "true; enable -a"}) {
    auto r = Bash(line);
    ASSERT_FALSE(r.ok()) << line;
    EXPECT_EQ(r.error->code, ErrorCode::kDenied) << line;
    EXPECT_THAT(r.error_message, HasSubstr("enable")) << line;
  }
}

TEST_F(BashToolTest, AWorkingDirectoryOutsideTheWorkspaceIsNotKept) {
  auto out = Bash("cd /etc && pwd");
  ASSERT_TRUE(out.ok()) << out.error_message;
  EXPECT_EQ(Str(out.payload, "output"), "/etc\n");
  EXPECT_THAT(out.model_content, HasSubstr("outside the workspace"));
  auto next = Bash("pwd; cat passwd >/dev/null 2>&1; echo $?");
  EXPECT_EQ(Str(next.payload, "output"), real_ws_ + "\n1\n");
  // Symbolic links count where they lead.
  std::filesystem::create_directory_symlink("/etc", ws_ + "/etc-link");
  auto link = Bash("cd etc-link");
  EXPECT_THAT(link.model_content, HasSubstr("outside the workspace"));
  EXPECT_EQ(Str(Bash("pwd").payload, "output"), real_ws_ + "\n");
}

TEST_F(BashToolTest, CallsOfABatchRunInOrderOnTheSessionShell) {
  BatchRequest req;
  req.session = session_;
  for (int i = 0; i < 5; ++i) {
    req.calls.push_back(CallRequest{
        .id = std::to_string(i), .name = "bash",
        .args_json = absl::StrCat(R"({"command":"sleep 0.0)", 5 - i, R"(; echo )", i,
                                  R"( >> order; cat order | wc -l"})")});
  }
  auto results = runner_->Run(std::move(req));
  ASSERT_TRUE(results.ok());
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(Str((*results)[i].payload, "output"), absl::StrCat(i + 1, "\n"));
  }
  EXPECT_EQ(ReadFile(ws_ + "/order"), "0\n1\n2\n3\n4\n");
}

// Under the bwrap sandbox the shell runs inside it, and persists the same way.
TEST_F(BashToolTest, PersistsInsideTheSandbox) {
  options_.sandbox = "bwrap";
  Build();
  std::filesystem::create_directories(ws_ + "/sub");
  ASSERT_TRUE(Bash("cd sub && export X=in-sandbox").ok());
  auto r = Bash("pwd; echo $X; touch made; ls /proc | grep -c '^[0-9]'");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_THAT(Str(r.payload, "output"), ::testing::StartsWith(real_ws_ + "/sub\nin-sandbox\n"));
  EXPECT_TRUE(std::filesystem::exists(ws_ + "/sub/made"));
  // A timeout under bwrap takes the shell with it, and says so.
  options_.command_default_timeout = absl::Milliseconds(300);
  Build();
  auto slow = Bash("sleep 30");
  EXPECT_EQ(Str(slow.payload, "timed_out"), "wall");
  EXPECT_TRUE(Bash("true").ok());
}

// --- the user's shell options and names never reach the loop's own code ---

TEST_F(BashToolTest, ErrexitNounsetAndPipefailPersistAndTheLoopIgnoresThem) {
  auto set = Bash("set -euo pipefail; echo hi");
  ASSERT_TRUE(set.ok()) << set.error_message;
  EXPECT_EQ(Str(set.payload, "output"), "hi\n");
  EXPECT_EQ(Int(set.payload, "exit_code"), 0);
  EXPECT_FALSE(Flag(set.payload, "shell_ended")) << set.model_content;

  // The options carry over to the next call, as in a terminal.
  auto on = Bash("case $- in *e*u*|*u*e*) echo eu;; esac; "
                 "if false | true; then echo no-pipefail; else echo pipefail; fi; "
                 "(: \"$NOT_SET_ANYWHERE\") 2>/dev/null || echo nounset");
  ASSERT_TRUE(on.ok()) << on.error_message;
  EXPECT_EQ(Str(on.payload, "output"), "eu\npipefail\nnounset\n");
  EXPECT_EQ(Int(on.payload, "exit_code"), 0);
  EXPECT_FALSE(Flag(on.payload, "new_shell"));

  // A failing command under the user's set -e ends the shell, as it would a
  // terminal's, and says so; the next call starts a new one.
  auto fail = Bash("echo before; false; echo after");
  ASSERT_TRUE(fail.ok()) << fail.error_message;
  EXPECT_EQ(Str(fail.payload, "output"), "before\n");
  EXPECT_EQ(Int(fail.payload, "exit_code"), 1);
  EXPECT_TRUE(Flag(fail.payload, "shell_ended"));
  EXPECT_EQ(Str(fail.payload, "timed_out"), "");
  EXPECT_THAT(fail.model_content, HasSubstr("the shell exited with code 1"));
  EXPECT_THAT(fail.model_content, HasSubstr("set -e"));
  auto fresh = Bash("echo \"[$-]\"; false; echo still");
  EXPECT_TRUE(Flag(fresh.payload, "new_shell"));
  EXPECT_THAT(Str(fresh.payload, "output"), Not(HasSubstr("e")));
  EXPECT_THAT(Str(fresh.payload, "output"), HasSubstr("still\n"));
  EXPECT_EQ(Int(fresh.payload, "exit_code"), 0);

  // Turned off again, they stay off.
  ASSERT_TRUE(Bash("set -u; set +u; echo \"[$NOT_SET_ANYWHERE]\"").ok());
  EXPECT_EQ(Str(Bash("echo \"[$NOT_SET_ANYWHERE]\"").payload, "output"), "[]\n");
}

TEST_F(BashToolTest, XtraceShowsTheCommandOnlyAndNoNameBelongsToTheLoop) {
  options_.command_default_timeout = absl::Seconds(5);
  Build();
  auto x = Bash("set -x; echo hi");
  ASSERT_TRUE(x.ok()) << x.error_message;
  // (One `+` more than at a prompt: the command runs inside an eval.)
  EXPECT_EQ(Str(x.payload, "stdout"), "hi\n");
  EXPECT_THAT(Str(x.payload, "stderr"), ::testing::MatchesRegex("\\++ echo hi\n"));
  auto again = Bash("echo again");
  EXPECT_EQ(Str(again.payload, "stdout"), "again\n");
  EXPECT_THAT(Str(again.payload, "stderr"), ::testing::MatchesRegex("\\++ echo again\n"));
  EXPECT_FALSE(Flag(again.payload, "new_shell"));
  auto off = Bash("set +x; echo quiet");
  EXPECT_THAT(Str(off.payload, "stderr"), ::testing::MatchesRegex("\\++ set \\+x\n"));
  EXPECT_EQ(Str(Bash("echo quiet").payload, "stderr"), "");

  // Whatever names a command assigns, the call ends when it does.
  auto names = Bash("__te_id=1; __te_st=x; __te_pre=x; __te_cmd=x; "
                    "for v in $(compgen -v __te_); do declare -g \"$v=1\"; done; "
                    "declare -u __te_id; IFS=x; echo assigned");
  ASSERT_TRUE(names.ok()) << names.error_message;
  EXPECT_EQ(Str(names.payload, "timed_out"), "");
  EXPECT_EQ(Str(names.payload, "output"), "assigned\n");
  EXPECT_EQ(Int(names.payload, "exit_code"), 0);
  auto after = Bash("unset IFS; for v in $(compgen -v __te_); do unset \"$v\"; declare -n \"$v=X\"; done; "
                    "(exit 4)");
  EXPECT_EQ(Str(after.payload, "timed_out"), "");
  EXPECT_EQ(Int(after.payload, "exit_code"), 4);
  auto next = Bash("echo next");
  EXPECT_EQ(Str(next.payload, "output"), "next\n");
  EXPECT_FALSE(Flag(next.payload, "new_shell"));
}

TEST_F(BashToolTest, ATimeoutStopsTheWholeCommandList) {
  options_.command_default_timeout = absl::Milliseconds(400);
  Build();
  auto slow = Bash("echo started; sleep 5; echo never; echo never >> late");
  ASSERT_TRUE(slow.ok()) << slow.error_message;
  EXPECT_EQ(Str(slow.payload, "timed_out"), "wall");
  EXPECT_THAT(Str(slow.payload, "output"), HasSubstr("started"));
  EXPECT_THAT(Str(slow.payload, "output"), Not(HasSubstr("never")));
  absl::SleepFor(absl::Milliseconds(800));
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/late"));
  // Nor does a loop in the shell itself, or a command list that traps the
  // signal, run on.
  auto loop = Bash("trap 'echo caught' TERM; while :; do :; done; echo never >> late");
  EXPECT_EQ(Str(loop.payload, "timed_out"), "wall");
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/late"));
  EXPECT_EQ(Str(Bash("echo next").payload, "output"), "next\n");
}

TEST_F(BashToolTest, AShellKilledByASignalIsNotATimeout) {
  ASSERT_TRUE(Bash("export KEEP=1").ok());
  auto killed = Bash("echo dying; kill -9 $$");
  ASSERT_TRUE(killed.ok()) << killed.error_message;
  EXPECT_EQ(Str(killed.payload, "timed_out"), "");
  EXPECT_TRUE(Flag(killed.payload, "shell_ended"));
  EXPECT_EQ(Str(killed.payload, "signal"), "SIGKILL");
  EXPECT_EQ(Int(killed.payload, "exit_code"), 128 + SIGKILL);
  EXPECT_THAT(killed.model_content, HasSubstr("the shell was killed by SIGKILL"));
  EXPECT_THAT(killed.model_content, Not(HasSubstr("timed out")));
  auto fresh = Bash("echo \"[$KEEP]\"");
  EXPECT_TRUE(Flag(fresh.payload, "new_shell"));
  EXPECT_EQ(Str(fresh.payload, "output"), "[]\n");

  auto shell = testing::RunOneCall(
      *runner_, "shell", R"({"commands":["kill -TERM $$","echo after"]})", session_);
  ASSERT_TRUE(shell.ok()) << shell.error_message;
  const JsonValue& out = shell.payload["output"];
  ASSERT_EQ(out.Size(), 2u);
  EXPECT_EQ(std::string(out[0]["outcome"]["type"].GetString()), "exit");
  EXPECT_EQ(out[0]["outcome"]["exit_code"].GetInt(), 128 + SIGTERM);
  EXPECT_EQ(Str(out[1], "stdout"), "after\n");
  EXPECT_THAT(shell.model_content, HasSubstr("the shell was killed by SIGTERM"));
  EXPECT_THAT(shell.model_content, Not(HasSubstr("timed out")));
}

// --- shell: the Responses shape over the same shell ---

TEST_F(BashToolTest, ShellRunsCommandsInOrderWithAnOutcomeEach) {
  std::filesystem::create_directories(ws_ + "/sub");
  auto r = testing::RunOneCall(
      *runner_, "shell",
      R"({"commands":["cd sub","pwd","echo oops >&2; exit_code_is() { return $1; }; exit_code_is 7"]})",
      session_);
  ASSERT_TRUE(r.ok()) << r.error_message;
  const JsonValue& out = r.payload["output"];
  ASSERT_EQ(out.Size(), 3u);
  EXPECT_EQ(Str(out[1], "stdout"), real_ws_ + "/sub\n");
  EXPECT_EQ(std::string(out[2]["outcome"]["type"].GetString()), "exit");
  EXPECT_EQ(out[2]["outcome"]["exit_code"].GetInt(), 7);
  EXPECT_EQ(Str(out[2], "stderr"), "oops\n");
  EXPECT_FALSE(r.payload.HasMember("max_output_length"));
  // bash sees the same shell.
  EXPECT_EQ(Str(Bash("pwd").payload, "output"), real_ws_ + "/sub\n");

  auto timed = testing::RunOneCall(
      *runner_, "shell",
      R"({"commands":["sleep 5","seq 1 1000"],"timeout_ms":300,"max_output_length":20})",
      session_);
  ASSERT_TRUE(timed.ok()) << timed.error_message;
  EXPECT_EQ(std::string(timed.payload["output"][0]["outcome"]["type"].GetString()), "timeout");
  EXPECT_EQ(timed.payload["max_output_length"].GetInt(), 20);
  const std::string seq = Str(timed.payload["output"][1], "stdout");
  EXPECT_THAT(seq, HasSubstr("omitted"));
  EXPECT_THAT(seq, ::testing::StartsWith("1\n"));
}

}  // namespace
}  // namespace toolexec

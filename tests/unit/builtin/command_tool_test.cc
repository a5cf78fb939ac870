// Command tools (config command_tools) through the ToolRunner, as the daemon
// runs them: JSON in on stdin, the result from stdout, failures with the end
// of stderr, [Failures are results]/[Arguments] like any other tool, and run_command's process lifecycle.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/builtin/process_test_util.h"
#include "tools/builtin.h"
#include "tools/runtime/tool_runner.h"
#include "tools/runtime/tool_sets.h"

namespace toolexec {
namespace {

using testing::Eventually;
using ::testing::HasSubstr;
using testing::ProcessesWith;

constexpr char kEchoSchema[] = R"({
  "type": "object",
  "properties": {"n": {"type": "integer"}, "word": {"type": "string", "default": "hi"}},
  "required": ["n"],
  "additionalProperties": false
})";

class CommandToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/command_tool_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    ws_ = tmpl;
    std::filesystem::create_directories(ws_ + "/sub");
    options_.command_kill_grace = absl::Milliseconds(300);
  }
  void TearDown() override {
    runner_.reset();
    std::filesystem::remove_all(ws_);
  }

  // A tool running `bash -c script` with the schema above.
  CommandToolOptions Bash(const std::string& name, const std::string& script) {
    CommandToolOptions t;
    t.name = name;
    t.description = "a test tool";
    t.parameters_json = kEchoSchema;
    t.argv = {"bash", "-c", script};
    return t;
  }

  absl::Status Build(const std::vector<CommandToolOptions>& tools) {
    runner_.reset();
    registry_ = std::make_unique<ToolRegistry>();
    absl::Status s = RegisterConfiguredCommandTools(*registry_, options_, tools);
    if (!s.ok()) return s;
    ToolRunner::Options ro;
    ro.default_workspace = testing::RootAt(ws_);
    runner_ = std::make_unique<ToolRunner>(registry_.get(), ro);
    return absl::OkStatus();
  }

  ToolCallResult Call(const std::string& tool, const std::string& args,
                      std::optional<absl::Duration> timeout = std::nullopt) {
    return testing::RunOneCall(*runner_, tool, args, nullptr, timeout);
  }

  std::string ws_;
  BuiltinOptions options_;
  std::unique_ptr<ToolRegistry> registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(CommandToolTest, ArgumentsArriveCoercedAndDefaultedAsJsonOnStdin) {
  ASSERT_TRUE(Build({Bash("echo_args", "cat")}).ok());
  // [Arguments]: "3" becomes 3, the default fills word.
  ToolCallResult r = Call("echo_args", R"({"n": "3"})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(ToJsonString(r.payload), R"({"n":3,"word":"hi"})");
}

TEST_F(CommandToolTest, ArgumentsAreOneLineThatShellReadAccepts) {
  ASSERT_TRUE(Build({Bash("read_line", "set -e; IFS= read -r line; printf '%s' \"$line\"")}).ok());
  ToolCallResult r = Call("read_line", R"({"n": 1})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(ToJsonString(r.payload), R"({"n":1,"word":"hi"})");
}

TEST_F(CommandToolTest, InvalidArgumentsNeverReachTheProgram) {
  ASSERT_TRUE(Build({Bash("echo_args", "touch ran; cat")}).ok());
  ToolCallResult r = Call("echo_args", R"({"n": "maybe"})");
  EXPECT_EQ(r.status, ResultStatus::kError);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->code, ErrorCode::kInvalidArguments);
  EXPECT_FALSE(std::filesystem::exists(ws_ + "/ran"));
}

TEST_F(CommandToolTest, StdoutBecomesTheResult) {
  ASSERT_TRUE(Build({Bash("obj", R"(echo '{"a": [1, 2]}')"), Bash("num", "echo 42"),
                     Bash("text", "echo hello world"), Bash("nothing", "true"),
                     Bash("arr", "echo '[1,2]'")})
                  .ok());
  EXPECT_EQ(ToJsonString(Call("obj", R"({"n":1})").payload), R"({"a":[1,2]})");
  EXPECT_EQ(ToJsonString(Call("num", R"({"n":1})").payload), R"({"result":42})");
  EXPECT_EQ(ToJsonString(Call("text", R"({"n":1})").payload), R"({"result":"hello world"})");
  EXPECT_EQ(ToJsonString(Call("nothing", R"({"n":1})").payload), "{}");
  EXPECT_EQ(ToJsonString(Call("arr", R"({"n":1})").payload), R"({"result":[1,2]})");
}

TEST_F(CommandToolTest, PlainTextReachesTheModelAsText) {
  ASSERT_TRUE(
      Build({Bash("text", "printf 'line one\\nline two\\n'"), Bash("obj", "echo '{\"a\":1}'")})
          .ok());
  ToolCallResult text = Call("text", R"({"n":1})");
  EXPECT_EQ(ToJsonString(text.payload), R"({"result":"line one\nline two"})");
  EXPECT_EQ(text.model_content, "line one\nline two");
  EXPECT_EQ(Call("obj", R"({"n":1})").model_content, R"({"a":1})");
}

TEST_F(CommandToolTest, NonZeroExitFailsWithTheStderrTail) {
  ASSERT_TRUE(
      Build({Bash("bad", "echo out; echo 'first line' >&2; echo 'it broke' >&2; exit 3")}).ok());
  ToolCallResult r = Call("bad", R"({"n":1})");
  EXPECT_EQ(r.status, ResultStatus::kError);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->code, ErrorCode::kToolFailed);
  EXPECT_EQ(r.error->tool_name, "bad");
  EXPECT_EQ(r.error->server_name, "");
  EXPECT_THAT(r.error_message, HasSubstr("exited with code 3"));
  EXPECT_THAT(r.error_message, HasSubstr("first line\nit broke"));
  EXPECT_EQ(ToJsonString(r.payload), ToJsonString(*ParseJson(absl::StrCat(
                                         R"({"error":)", testing::Quoted(r.error_message), "}"))));
}

TEST_F(CommandToolTest, OutputBeyondTheCaptureIsAClearFailureNotBrokenJson) {
  options_.command_capture_bytes = 1000;
  ASSERT_TRUE(Build({Bash("big", "head -c 5000 /dev/zero | tr '\\0' x")}).ok());
  ToolCallResult r = Call("big", R"({"n":1})");
  EXPECT_EQ(r.status, ResultStatus::kError);
  EXPECT_THAT(r.error_message, HasSubstr("printed 5000 bytes"));
}

TEST_F(CommandToolTest, TimeoutEndsTheProcessTree) {
  const std::string marker =
      absl::StrCat("ctt-timeout-", getpid(), "-", absl::ToUnixNanos(absl::Now()));
  CommandToolOptions t = Bash("slow", "sleep 1000 & echo started >&2; sleep 1000");
  t.timeout = absl::Milliseconds(300);
  t.env = {{"CTT_MARKER", marker}};
  ASSERT_TRUE(Build({t}).ok());
  ToolCallResult r = Call("slow", R"({"n":1})");
  EXPECT_EQ(r.status, ResultStatus::kTimeout);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->code, ErrorCode::kTimeout);
  EXPECT_THAT(r.error_message, HasSubstr("timed out after 300 ms: started"));
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }));
}

TEST_F(CommandToolTest, CancellationEndsTheProcessTree) {
  const std::string marker =
      absl::StrCat("ctt-cancel-", getpid(), "-", absl::ToUnixNanos(absl::Now()));
  CommandToolOptions t = Bash("slow", "sleep 1000 & sleep 1000");
  t.env = {{"CTT_MARKER", marker}};
  ASSERT_TRUE(Build({t}).ok());
  class Recorder final : public BatchObserver {
   public:
    void OnProgress(ProgressEvent) override {}
    void OnResult(ToolCallResult r) override { result = std::move(r); }
    void OnBatchDone() override { done.Notify(); }
    ToolCallResult result;
    absl::Notification done;
  } rec;
  BatchRequest req;
  req.calls.push_back(CallRequest{.id = "1", .name = "slow", .args_json = R"({"n":1})"});
  auto handle = runner_->Start(std::move(req), &rec);
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(Eventually([&] { return ProcessesWith(marker).size() >= 2; }));
  (*handle)->Cancel();
  rec.done.WaitForNotification();
  EXPECT_EQ(rec.result.status, ResultStatus::kCancelled);
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }));
}

TEST_F(CommandToolTest, StderrStreamsAsProgress) {
  ASSERT_TRUE(Build({Bash("chatty", "echo working >&2; echo '{\"done\": true}'")}).ok());
  class Recorder final : public BatchObserver {
   public:
    void OnProgress(ProgressEvent e) override {
      absl::MutexLock lock(&mu);
      progress.push_back(e.stream + ":" + e.text);
    }
    void OnResult(ToolCallResult r) override { result = std::move(r); }
    void OnBatchDone() override { done.Notify(); }
    absl::Mutex mu;
    std::vector<std::string> progress;
    ToolCallResult result;
    absl::Notification done;
  } rec;
  BatchRequest req;
  req.calls.push_back(CallRequest{.id = "1", .name = "chatty", .args_json = R"({"n":1})"});
  ASSERT_TRUE(runner_->Start(std::move(req), &rec).ok());
  rec.done.WaitForNotification();
  EXPECT_EQ(ToJsonString(rec.result.payload), R"({"done":true})");
  absl::MutexLock lock(&rec.mu);
  EXPECT_THAT(rec.progress, ::testing::ElementsAre("stderr:working\n"));
}

TEST_F(CommandToolTest, RunsInsideTheSandbox) {
  options_.sandbox = "bwrap";
  const std::string outside = absl::StrCat("/tmp/ctt-sandbox-", getpid());
  ASSERT_TRUE(Build({Bash("sandboxed", absl::StrCat("touch ", outside, " made-here; cat"))}).ok());
  ToolCallResult r = Call("sandboxed", R"({"n":1})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(ToJsonString(r.payload), R"({"n":1,"word":"hi"})");
  EXPECT_TRUE(std::filesystem::exists(ws_ + "/made-here"));  // the workspace is bound
  EXPECT_FALSE(std::filesystem::exists(outside));            // /tmp is the sandbox's own
}

TEST_F(CommandToolTest, WorkingDirEnvAndTags) {
  CommandToolOptions ro =
      Bash("where", R"sh(printf '{"dir":"%s","v":"%s"}' "$(basename "$PWD")" "$V")sh");
  ro.working_dir = "sub";
  ro.env = {{"V", "x1"}};
  ro.read_only = true;
  ASSERT_TRUE(Build({ro, Bash("writer", "true")}).ok());
  EXPECT_EQ(ToJsonString(Call("where", R"({"n":1})").payload), R"({"dir":"sub","v":"x1"})");
  const RegisteredTool* where = registry_->Find("where");
  ASSERT_NE(where, nullptr);
  EXPECT_TRUE(where->tool->spec().read_only);
  EXPECT_TRUE(where->tool->spec().HasTag(kTagReadOnly));
  EXPECT_FALSE(where->tool->spec().HasTag(kTagDestructive));
  EXPECT_TRUE(registry_->Find("writer")->tool->spec().HasTag(kTagDestructive));
  EXPECT_FALSE(registry_->Find("writer")->tool->spec().read_only);
}

TEST_F(CommandToolTest, WorkingDirThatEscapesIsDenied) {
  std::filesystem::create_symlink("/", ws_ + "/out");
  CommandToolOptions t = Bash("escape", "pwd");
  t.working_dir = "out";
  ASSERT_TRUE(Build({t}).ok());
  ToolCallResult r = Call("escape", R"({"n":1})");
  EXPECT_EQ(r.status, ResultStatus::kDenied);
  ASSERT_TRUE(r.error.has_value());
  EXPECT_EQ(r.error->code, ErrorCode::kDenied) << r.error_message;
}

TEST_F(CommandToolTest, StartupErrorsNameTheTool) {
  CommandToolOptions missing = Bash("gone", "true");
  missing.argv = {"no-such-program-anywhere"};
  absl::Status s = Build({missing});
  EXPECT_THAT(std::string(s.message()), HasSubstr("'gone'"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("no-such-program-anywhere"));

  CommandToolOptions relative = Bash("rel", "true");
  relative.argv = {"./tool.sh"};
  EXPECT_THAT(std::string(Build({relative}).message()), HasSubstr("relative path"));

  CommandToolOptions bad_schema = Bash("schema", "true");
  bad_schema.parameters_json = R"({"type": "no-such-type"})";
  EXPECT_FALSE(Build({bad_schema}).ok());

  EXPECT_THAT(std::string(Build({Bash("twice", "true"), Bash("twice", "true")}).message()),
              HasSubstr("twice"));
}

}  // namespace
}  // namespace toolexec

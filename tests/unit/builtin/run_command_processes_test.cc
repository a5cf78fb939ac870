// run_command.rlimit_processes: a limit on one command's processes, enforced
// with a pids cgroup per command, or refused at start-up where the daemon
// cannot create one.
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/builtin/process_test_util.h"
#include "tools/builtin.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::Eventually;
using testing::ProcessesWith;
using testing::Quoted;
using testing::ReadProcFile;
using testing::Str;

// This process's cgroup v1 pids directory, or "" without a v1 pids hierarchy.
std::string OwnPidsCgroupV1() {
  for (absl::string_view line : absl::StrSplit(ReadProcFile("/proc/self/cgroup"), '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (f.size() == 3 && f[1] == "pids") return absl::StrCat("/sys/fs/cgroup/pids", f[2]);
  }
  return "";
}

// The cgroups this process made for its commands, under `dir`.
int CommandCgroupsUnder(const std::string& dir) {
  int n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    const std::string prefix = absl::StrCat("toolexec-", getpid(), "-");
    while (struct dirent* e = readdir(d)) n += absl::StartsWith(e->d_name, prefix) ? 1 : 0;
    closedir(d);
  }
  return n;
}

// Command tools with rlimit_processes set, on a scratch workspace.
class RunCommandProcessLimitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/run_command_processes_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    ws_ = tmpl;
    cgroup_dir_ = OwnPidsCgroupV1();
    can_make_pids_cgroups_ =
        geteuid() == 0 && !cgroup_dir_.empty() && access(cgroup_dir_.c_str(), W_OK) == 0;
  }

  void TearDown() override {
    if (runner_) registry_->Find("run_command")->tool->shutdown();
    runner_.reset();
    std::filesystem::remove_all(ws_);
  }

  // Registers the tools with `limit`; the start-up error, if any.
  absl::Status Build(uint64_t limit) {
    BuiltinOptions options;
    options.rlimit_processes = limit;
    options.command_kill_grace = absl::Milliseconds(300);
    registry_ = std::make_unique<ToolRegistry>();
    if (absl::Status s = RegisterCommandTools(*registry_, options); !s.ok()) return s;
    ToolRunner::Options ro;
    ro.default_workspace = testing::RootAt(ws_);
    runner_ = std::make_unique<ToolRunner>(registry_.get(), ro);
    return absl::OkStatus();
  }

  ToolCallResult Call(const std::string& tool, const std::string& args) {
    return testing::RunOneCall(*runner_, tool, args);
  }

  std::string ws_;
  std::string cgroup_dir_;
  bool can_make_pids_cgroups_ = false;
  std::unique_ptr<ToolRegistry> registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(RunCommandProcessLimitTest, LimitsTheCommandsTreeNotTheUser) {
  absl::Status registered = Build(20);
  if (!registered.ok()) {
    // Where no pids cgroup can be made, the setting is refused with the reason.
    EXPECT_FALSE(can_make_pids_cgroups_) << registered;
    EXPECT_EQ(registered.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(std::string(registered.message()), HasSubstr("rlimit_processes"));
    EXPECT_THAT(std::string(registered.message()), HasSubstr("pids cgroup"));
    GTEST_SKIP() << "no pids cgroup here: " << registered;
  }

  // As root RLIMIT_NPROC binds nothing: all 100 would start. Under the limit
  // the shell (one of the 20) gets fork failures and retries until the wall
  // timeout ends it.
  const std::string marker = absl::StrCat("rcp-", getpid(), "-", absl::ToUnixNanos(absl::Now()));
  const std::string command =
      "for i in $(seq 100); do (echo started; exec sleep 30) & done; wait";
  auto r = Call("run_command", absl::StrCat(R"({"command_line":)", Quoted(command),
                                            R"(,"timeout_ms":4000,"env":{"MARK":)",
                                            Quoted(marker), "}}"));
  ASSERT_TRUE(r.ok()) << r.error_message;
  const std::string out = Str(r.payload, "stdout");
  const size_t started = static_cast<size_t>(std::count(out.begin(), out.end(), '\n'));
  EXPECT_GE(started, 1u);
  EXPECT_LE(started, 19u) << "the shell is one of the 20 processes";
  EXPECT_THAT(Str(r.payload, "stderr"), HasSubstr("fork"));

  // Nothing of it is left: no process, no cgroup.
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker).empty(); }));
  if (!cgroup_dir_.empty()) {
    EXPECT_EQ(CommandCgroupsUnder(cgroup_dir_), 0);
  }

  // The daemon and its next commands are unaffected.
  auto next = Call("run_command",
                   R"({"command_line":"for i in 1 2 3; do sleep 0 & done; wait; echo ok"})");
  ASSERT_TRUE(next.ok()) << next.error_message;
  EXPECT_EQ(Str(next.payload, "stdout"), "ok\n");
  if (!cgroup_dir_.empty()) {
    EXPECT_EQ(CommandCgroupsUnder(cgroup_dir_), 0);
  }
}

TEST_F(RunCommandProcessLimitTest, BackgroundCommandsCgroupEndsWithItsProcesses) {
  if (!can_make_pids_cgroups_) GTEST_SKIP() << "needs a writable cgroup v1 pids hierarchy";
  ASSERT_TRUE(Build(5).ok());
  auto started = Call("run_command", R"({"command_line":"sleep 30 & sleep 30","background":true})");
  ASSERT_TRUE(started.ok()) << started.error_message;
  const std::string id = Str(started.payload, "process_id");
  // Its cgroup holds the shell and both sleeps, limited to 5.
  const std::string prefix = absl::StrCat(cgroup_dir_, "/toolexec-", getpid(), "-");
  std::string dir;
  ASSERT_TRUE(Eventually([&] {
    if (DIR* d = opendir(cgroup_dir_.c_str())) {
      while (struct dirent* e = readdir(d)) {
        std::string path = absl::StrCat(cgroup_dir_, "/", e->d_name);
        if (absl::StartsWith(path, prefix)) dir = path;
      }
      closedir(d);
    }
    return !dir.empty() && ReadProcFile(dir + "/pids.current") == "3\n";
  })) << dir;
  EXPECT_EQ(ReadProcFile(dir + "/pids.max"), "5\n");

  // Once its processes are gone, so is its cgroup, though its entry stays.
  auto killed = Call("kill_command", absl::StrCat(R"({"process_id":")", id, R"("})"));
  ASSERT_TRUE(killed.ok()) << killed.error_message;
  EXPECT_TRUE(Eventually([&] { return CommandCgroupsUnder(cgroup_dir_) == 0; }));
}

}  // namespace
}  // namespace toolexec

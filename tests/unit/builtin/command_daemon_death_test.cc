// A real toolexecd takes every process its commands started with it when it
// ends: SIGKILLed (nothing of it runs any more) or stopped with SIGTERM. The
// commands' trees include setsid'd, nohup'd and daemonized (double-forked
// setsid) children, one that cleared its environment, and background commands.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/unit/builtin/process_test_util.h"

extern char** environ;

namespace toolexec {
namespace {

using testing::Eventually;
using testing::ProcessesWith;
using testing::ReadProcFile;

// Starts argv with stdout and stderr appended to `log`, with `env` as its
// environment (the test's own when empty).
pid_t Spawn(const std::vector<std::string>& args, const std::string& log,
            const std::vector<std::string>& env = {}) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), env.empty() ? environ : envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Waits up to `limit` for `pid`; kills it if it is still running then.
int WaitOrKill(pid_t pid, absl::Duration limit) {
  int status = 0;
  absl::Time end = absl::Now() + limit;
  while (absl::Now() < end) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    absl::SleepFor(absl::Milliseconds(10));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  return status;
}

class DaemonDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/daemon_death_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // A unique sleep argument marks every process of this test's commands,
    // also one that cleared its environment.
    marker_ = absl::StrCat("1000.", getpid(), absl::ToUnixMicros(absl::Now()) % 1000000);
  }

  void StartDaemon() {
    daemon_ = Spawn({TOOLEXECD_PATH, "--listen=127.0.0.1:0", "--address_file=" + dir_ + "/addr",
                     "--workspace=" + dir_, "--drain_grace_ms=300", "--log_level=warn"},
                    dir_ + "/daemon.log");
    ASSERT_GT(daemon_, 0);
    ASSERT_TRUE(Eventually([&] { return access((dir_ + "/addr").c_str(), R_OK) == 0; },
                           absl::Seconds(20)))
        << ReadProcFile(dir_ + "/daemon.log");
    address_ = std::string(absl::StripAsciiWhitespace(ReadProcFile(dir_ + "/addr")));
  }

  void TearDown() override {
    for (pid_t p : clients_) WaitOrKill(p, absl::Seconds(5));
    if (daemon_ > 0) WaitOrKill(daemon_, absl::Seconds(5));
    for (int pid : ProcessesWith(marker_)) kill(pid, SIGKILL);
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // run_command through the CLI, which waits for a foreground command.
  void Call(const std::string& command_line, bool background) {
    std::string args =
        absl::StrCat(R"({"command_line":")", command_line, R"(")",
                     background ? R"(,"background":true)" : "", "}");
    pid_t p = Spawn({TOOLEXEC_CLI_PATH, "--target=" + address_, "call", "run_command", args},
                    dir_ + "/clients.log");
    ASSERT_GT(p, 0);
    clients_.push_back(p);
  }

  // Starts foreground and background commands with escaping children and
  // waits until all of their processes run.
  void StartCommandTrees() {
    const std::string s = "sleep " + marker_;
    const std::string tree = absl::StrCat(
        "setsid ", s, " & nohup ", s, " >/dev/null 2>&1 & (setsid ", s, " &); (env -i setsid ", s,
        " &); bash -c '", s, " & wait' & ", s, "; true");
    // Per tree: 5 sleeps and the bash in the middle; the marker is in the
    // shell's command line too.
    constexpr size_t kPerTree = 6;
    Call(tree, false);
    Call(tree, false);
    Call(tree, true);
    ASSERT_TRUE(Eventually([&] { return ProcessesWith(marker_).size() >= 3 * kPerTree; },
                           absl::Seconds(20)))
        << ProcessesWith(marker_).size() << "\n"
        << ReadProcFile(dir_ + "/clients.log");
  }

  // The clients' command lines carry the marker too: wait for them (their
  // calls end with the daemon) before looking for survivors.
  void WaitForClients() {
    for (pid_t p : clients_) WaitOrKill(p, absl::Seconds(10));
    clients_.clear();
  }

  std::string dir_;
  std::string marker_;
  std::string address_;
  pid_t daemon_ = -1;
  std::vector<pid_t> clients_;
};

TEST_F(DaemonDeathTest, SigkillOfTheDaemonEndsEveryCommandTree) {
  StartDaemon();
  StartCommandTrees();
  size_t running = ProcessesWith(marker_).size();
  ASSERT_EQ(kill(daemon_, SIGKILL), 0);
  WaitOrKill(daemon_, absl::Seconds(5));
  daemon_ = -1;
  WaitForClients();
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker_).empty(); }))
      << ProcessesWith(marker_).size() << " of " << running << " processes survived the daemon";
}

TEST_F(DaemonDeathTest, GracefulSigtermEndsEveryCommandTree) {
  StartDaemon();
  StartCommandTrees();
  size_t running = ProcessesWith(marker_).size();
  ASSERT_EQ(kill(daemon_, SIGTERM), 0);
  int status = WaitOrKill(daemon_, absl::Seconds(20));
  daemon_ = -1;
  WaitForClients();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(Eventually([&] { return ProcessesWith(marker_).empty(); }))
      << ProcessesWith(marker_).size() << " of " << running << " processes survived the daemon";
}

// A starting daemon ends what commands of a daemon that is gone left running
// (found by their TOOLEXEC_RUN_ID: "<daemon pid>-<its start time>-<n>"), and
// only those.
TEST_F(DaemonDeathTest, StartUpEndsWhatAGoneDaemonLeft) {
  std::string stat = ReadProcFile("/proc/self/stat");
  std::vector<std::string> fields;
  std::istringstream in(stat.substr(stat.rfind(')') + 2));
  for (std::string f; in >> f;) fields.push_back(f);
  ASSERT_GT(fields.size(), 19u);
  const std::string alive_id = absl::StrCat(getpid(), "-", fields[19], "-1");
  // This process's pid with another start time: a daemon that is gone.
  const std::string gone_id = absl::StrCat(getpid(), "-", fields[19], "1-1");
  const std::string alive_marker = marker_ + "1";
  const std::string gone_marker = marker_ + "2";
  pid_t alive = Spawn({"/bin/sleep", alive_marker}, "/dev/null",
                      {"PATH=/usr/bin:/bin", "TOOLEXEC_RUN_ID=" + alive_id});
  pid_t gone = Spawn({"/bin/sleep", gone_marker}, "/dev/null",
                     {"PATH=/usr/bin:/bin", "TOOLEXEC_RUN_ID=" + gone_id});
  ASSERT_GT(alive, 0);
  ASSERT_GT(gone, 0);
  StartDaemon();
  int status = 0;
  bool ended = Eventually([&] { return waitpid(gone, &status, WNOHANG) == gone; });
  EXPECT_TRUE(ended) << "what a daemon that is gone left still runs";
  if (!ended) {
    kill(gone, SIGKILL);
    waitpid(gone, &status, 0);
  }
  EXPECT_EQ(waitpid(alive, &status, WNOHANG), 0) << "the live daemon's command was killed";
  kill(alive, SIGKILL);
  waitpid(alive, &status, 0);
}

}  // namespace
}  // namespace toolexec

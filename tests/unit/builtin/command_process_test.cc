// The process layer under run_command: spawning, supervising, reaping.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tests/unit/builtin/process_test_util.h"
#include "tools/process/child_process.h"
#include "tools/process/command_run.h"
#include "tools/process/reaper.h"

extern char** environ;

namespace toolexec::command {
namespace {

using ::testing::HasSubstr;

TEST(CommandChildProcess, ExecFailureIsAStartFailure) {
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  SpawnSpec spec;
  spec.argv = {"/nonexistent/program"};
  auto child = ChildProcess::Spawn(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_THAT(std::string(child.status().message()), HasSubstr("execve failed: No such file"));
}

TEST(CommandChildProcess, OwnSessionAndGroup) {
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo $$ $(ps -o sid= -p $$) $(ps -o pgid= -p $$)"};
  spec.env = {"PATH=/usr/bin:/bin"};
  auto run = CommandRun::Start(std::move(spec));
  ASSERT_TRUE(run.ok()) << run.status();
  pid_t pid = (*run)->pid();
  CommandOutcome o = (*run)->Wait(nullptr);
  EXPECT_EQ(o.exit.code, 0);
  EXPECT_EQ(o.stdout_text, absl::StrCat(pid, " ", pid, " ", pid, "\n")) << "pid sid pgid";
}

TEST(CommandChildProcess, DestructorKillsAndReaps) {
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  SpawnSpec spec;
  spec.argv = {"/bin/sleep", "1000"};
  pid_t pid;
  {
    auto child = ChildProcess::Spawn(spec);
    ASSERT_TRUE(child.ok());
    pid = (*child)->pid();
    EXPECT_EQ(kill(pid, 0), 0);
  }
  EXPECT_EQ(kill(pid, 0), -1);  // gone, and reaped (not even a zombie)
  EXPECT_EQ(errno, ESRCH);
}

std::string Marker(const char* what) {
  static int n = 0;
  return absl::StrCat("cpt-", what, "-", getpid(), "-", ++n, "-", absl::ToUnixNanos(absl::Now()));
}

TEST(CommandChildProcess, TreeDiesWithTheThreadThatSpawnedIt) {
  // PR_SET_PDEATHSIG on the supervisor: if the daemon (the spawning thread)
  // dies, the whole tree is killed, setsid'd processes too, rather than left
  // running with nobody to stop it.
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  const std::string marker = Marker("thread");
  std::unique_ptr<ChildProcess> child;
  std::thread([&] {
    SpawnSpec spec;
    spec.argv = {"/bin/sh", "-c", "setsid sleep 1000 & (setsid sleep 1000 &); exec sleep 1000"};
    spec.env = {"PATH=/usr/bin:/bin", "CPT_MARKER=" + marker};
    auto c = ChildProcess::Spawn(spec);
    ASSERT_TRUE(c.ok());
    child = std::move(*c);
    // The thread ends only once the command's children run.
    testing::Eventually([&] { return testing::ProcessesWith(marker).size() >= 3; });
  }).join();
  ASSERT_NE(child, nullptr);
  std::optional<ExitStatus> st;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!(st = child->TryReap()) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->signaled);
  EXPECT_EQ(st->code, SIGKILL);
  std::vector<int> left = testing::ProcessesWith(marker);
  EXPECT_TRUE(left.empty()) << left.size() << " processes outlived the spawning thread";
  for (int pid : left) kill(pid, SIGKILL);
}

TEST(CommandChildProcess, TreeIsGoneAndReapedWhenTheCommandEnds) {
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  const std::string marker = Marker("ends");
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "sleep 1000 & (setsid sleep 1000 &); (sleep 0.1; exit 3)"};
  spec.env = {"PATH=/usr/bin:/bin", "CPT_MARKER=" + marker};
  auto run = CommandRun::Start(std::move(spec));
  ASSERT_TRUE(run.ok());
  CommandOutcome o = (*run)->Wait(nullptr);
  EXPECT_EQ(o.exit.code, 3);
  EXPECT_FALSE(o.exit.signaled);
  // Killed and reaped by the supervisor before Wait returned.
  EXPECT_THAT(testing::ProcessesWith(marker), ::testing::IsEmpty());
  EXPECT_EQ(testing::ZombieChildren(), 0);
}

TEST(CommandChildProcess, SupervisorKilledFromOutsideLeavesNothing) {
  // The command kills its own supervisor: the leader dies of its PDEATHSIG,
  // the rest is re-parented to the daemon (a subreaper) and killed there by
  // its TOOLEXEC_RUN_ID.
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  const std::string marker = Marker("supervisor");
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "setsid sleep 1000 & sleep 1000 & sleep 0.1; kill -9 $PPID; sleep 1000"};
  spec.marker = "TOOLEXEC_RUN_ID=" + marker;
  spec.env = {"PATH=/usr/bin:/bin", spec.marker};
  auto run = CommandRun::Start(std::move(spec));
  ASSERT_TRUE(run.ok());
  CommandOutcome o = (*run)->Wait(nullptr);
  EXPECT_TRUE(o.exit.signaled);
  EXPECT_TRUE(testing::Eventually([&] { return testing::ProcessesWith(marker).empty(); }))
      << testing::ProcessesWith(marker).size() << " processes left";
  for (int pid : testing::ProcessesWith(marker)) kill(pid, SIGKILL);
}

TEST(CommandReaper, LeavesChildrenInTheDaemonsSessionToTheirOwner) {
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  // A child spawned elsewhere in the daemon, without a session of its own:
  // the reaper sees its zombie but must leave its status to its owner.
  pid_t pid;
  const char* argv[] = {"/bin/sh", "-c", "exit 7", nullptr};
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

TEST(CommandReaper, ReapsOrphansAdoptedByTheDaemon) {
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  uint64_t before = ChildReaper::Get().orphans_reaped();
  // A process of another session whose parent exits is re-parented to this
  // process (a subreaper), and reaped when it exits.
  pid_t pid;
  const char* argv[] = {"/bin/sh", "-c", "(setsid sleep 0.2 &)", nullptr};
  ASSERT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(testing::Eventually([&] { return ChildReaper::Get().orphans_reaped() >= before + 1; }));
  EXPECT_TRUE(testing::Eventually([] { return testing::ZombieChildren() == 0; }));
}

TEST(CommandProcFiles, ReadSmallFileIsEmptyWhenTheReadFails) {
  // open(2) of a directory succeeds and read(2) then fails (EISDIR), as a
  // read of /proc/<pid>/stat fails (ESRCH) when that process is gone between
  // the open and the read: the daemon scans every process's stat, so that
  // must be "", never an exception.
  std::string text = "unset";
  EXPECT_NO_THROW(text = ReadSmallFile("/"));
  EXPECT_EQ(text, "");
  EXPECT_EQ(ReadSmallFile("/nonexistent/file"), "");
  EXPECT_THAT(ReadSmallFile("/proc/self/stat"), HasSubstr(absl::StrCat(getpid(), " (")));
}

TEST(CommandRunId, NamesThisDaemonAndCounts) {
  std::string a = NewRunId();
  std::string b = NewRunId();
  EXPECT_NE(a, b);
  EXPECT_EQ(a.substr(0, a.find('-') + 1), absl::StrCat(getpid(), "-"));
}

}  // namespace
}  // namespace toolexec::command

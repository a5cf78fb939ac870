// The process layer under run_command: spawning, reaping (issue 4).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "tools/builtin/command/child_process.h"
#include "tools/builtin/command/command_run.h"
#include "tools/builtin/command/reaper.h"

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

TEST(CommandChildProcess, LeaderDiesWithTheThreadThatSpawnedIt) {
  // PR_SET_PDEATHSIG: if the daemon (the spawning thread) dies, the leader
  // is killed rather than left running with nobody to stop it.
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  std::unique_ptr<ChildProcess> child;
  std::thread([&] {
    SpawnSpec spec;
    spec.argv = {"/bin/sleep", "1000"};
    auto c = ChildProcess::Spawn(spec);
    ASSERT_TRUE(c.ok());
    child = std::move(*c);
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

TEST(CommandReaper, ReapsOrphans) {
  ASSERT_TRUE(ChildReaper::Get().Start().ok());
  uint64_t before = ChildReaper::Get().orphans_reaped();
  // The grandchild outlives its parent; the daemon (subreaper) adopts it and
  // must reap it when it exits.
  CommandSpec spec;
  spec.argv = {"/bin/sh", "-c", "(setsid sleep 0.2 &)"};
  auto run = CommandRun::Start(std::move(spec));
  ASSERT_TRUE(run.ok());
  (*run)->Wait(nullptr);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (ChildReaper::Get().orphans_reaped() < before + 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // At least the setsid'd sleep (also the subshell, if the shell forked one).
  EXPECT_GE(ChildReaper::Get().orphans_reaped(), before + 1);
}

}  // namespace
}  // namespace toolexec::command

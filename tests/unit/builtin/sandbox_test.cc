// run_command under the bwrap sandbox, as whoever runs the test (root in CI):
// the command holds no capability, sees the daemon's own ids, keeps its
// workspace writable, and everyday tools still work. The escape attempts
// (umount, remount, nsenter, host writes) run against a real daemon, as root
// and as another user, in tests/integration/isolation_test.cc.
#include "tools/process/sandbox.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tools/builtin.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::Int;
using testing::Quoted;
using testing::Str;

TEST(BwrapArgv, IsolatesEveryCommand) {
  std::vector<std::string> flags;
  command::AppendIsolationFlags(/*network=*/false, &flags);
  EXPECT_THAT(flags,
              ::testing::ElementsAre("--unshare-user", "--disable-userns", "--cap-drop", "ALL",
                                     "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                                     "--unshare-net", "--die-with-parent", "--new-session"));
  std::vector<std::string> argv =
      command::BwrapArgv("/usr/bin/bwrap", {{7, "/ws"}}, "/ws", /*network=*/false,
                         {"/bin/bash", "-c", "true"});
  EXPECT_NE(std::search(argv.begin(), argv.end(), flags.begin(), flags.end()), argv.end());
  // The workspace is bound by its handle, not by its path.
  const std::vector<std::string> bind = {"--bind-fd", "7", "/ws"};
  EXPECT_NE(std::search(argv.begin(), argv.end(), bind.begin(), bind.end()), argv.end());
  // With the network allowed, only --unshare-net goes.
  std::vector<std::string> with_net;
  command::AppendIsolationFlags(/*network=*/true, &with_net);
  flags.erase(std::find(flags.begin(), flags.end(), "--unshare-net"));
  EXPECT_EQ(with_net, flags);
}

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BuiltinOptions options;
    options.sandbox = "bwrap";
    options.command_kill_grace = absl::Milliseconds(300);
    // A daemon that cannot build the sandbox refuses to start; so does this
    // test, with bwrap's reason, rather than skipping.
    absl::Status registered = RegisterCommandTools(registry_, options);
    ASSERT_TRUE(registered.ok()) << registered;
    ToolRunner::Options ro;
    ro.default_workspace = testing::RootAt(ws_.path());
    runner_ = std::make_unique<ToolRunner>(&registry_, ro);
  }
  void TearDown() override { registry_.Find("run_command")->tool->shutdown(); }

  // Runs `command` and returns its stdout; fails the test unless it exits 0.
  std::string ShOk(const std::string& command) {
    ToolCallResult r = testing::RunOneCall(
        *runner_, "run_command", absl::StrCat(R"({"command_line":)", Quoted(command), "}"));
    EXPECT_TRUE(r.ok()) << r.error_message;
    EXPECT_EQ(Int(r.payload, "exit_code"), 0) << command << "\nstdout: " << Str(r.payload, "stdout")
                                              << "\nstderr: " << Str(r.payload, "stderr");
    return Str(r.payload, "stdout");
  }

  testing::TempTree ws_;
  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(SandboxTest, CommandHoldsNoCapability) {
  EXPECT_EQ(ShOk("grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status"),
            "CapInh:\t0000000000000000\n"
            "CapPrm:\t0000000000000000\n"
            "CapEff:\t0000000000000000\n"
            "CapBnd:\t0000000000000000\n"
            "CapAmb:\t0000000000000000\n");
  // Nor can it get a fresh set in a nested user namespace.
  EXPECT_EQ(ShOk("unshare --user true 2>/dev/null && echo nested || echo refused"), "refused\n");
}

TEST_F(SandboxTest, CommandSeesTheDaemonsIdsAndOwnsTheWorkspace) {
  const uid_t uid = getuid();
  const gid_t gid = getgid();
  EXPECT_EQ(ShOk("id -u; id -g"), absl::StrCat(uid, "\n", gid, "\n"));
  // Only the daemon's ids are mapped (one id each); every other host id, root
  // who owns / included, shows as the overflow id.
  EXPECT_EQ(ShOk("awk '{print $3}' /proc/self/uid_map /proc/self/gid_map"), "1\n1\n");
  EXPECT_EQ(ShOk("stat -c '%u %g' /"), uid == 0 ? "0 0\n" : "65534 65534\n");
  EXPECT_EQ(ShOk("mkdir -p made/sub && echo ok > made/sub/file && cat made/sub/file"), "ok\n");
  struct stat st;
  ASSERT_EQ(stat(ws_.Abs("made/sub/file").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid);
  EXPECT_EQ(st.st_gid, gid);
}

TEST_F(SandboxTest, EverydayCommandsWork) {
  EXPECT_EQ(ShOk("git init -q repo && cd repo && echo a > a && git add a && "
                 "git -c user.name=t -c user.email=t@example.com commit -qm first && "
                 "git log --format=%s && git status --porcelain"),
            "first\n");
  EXPECT_EQ(ShOk("/usr/bin/python3 -c 'import multiprocessing as m\n"
                 "with m.Pool(2) as p: print(sum(p.map(abs, [-1, -2])))'"),
            "3\n");
  EXPECT_EQ(ShOk("cd /tmp && pushd / >/dev/null && popd >/dev/null && pwd && "
                 "read -r x <<< 'word' && printf '%s\\n' \"$x\" && type -t ulimit && "
                 "ulimit -n >/dev/null && echo $((6 * 7))"),
            "/tmp\nword\nbuiltin\n42\n");
  EXPECT_THAT(ShOk("hostname && echo x > /dev/null && f=$(mktemp) && echo t > $f && cat $f && "
                   "echo s > /dev/shm/s && cat /dev/shm/s"),
              HasSubstr("t\ns\n"));
}

}  // namespace
}  // namespace toolexec

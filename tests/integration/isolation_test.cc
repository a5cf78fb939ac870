// What a command can reach of the daemon and the host, against the real
// toolexecd binary (so its start-up, environment and process attributes are
// the ones under test), started with secrets in its environment:
// * as the test's own user (root in CI), and
// * as another, unprivileged uid with no passwd entry, when the test runs as
//   root; a workspace of its own that it owns.
// Without a sandbox a command must not read a secret from its own
// environment, from the environment or memory of the daemon or any other
// ancestor, nor (as the same non-root uid) ptrace the daemon or list its
// fds. Under the bwrap sandbox it must hold no capability, and unmounting,
// remounting, writing outside the workspace and entering the host's
// namespaces must all fail. Either way it inherits no fd but 0, 1 and 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "tests/common/daemon_process.h"
#include "tools/runtime/json.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A uid (and gid of the same number) with no passwd entry: nothing on the
// machine runs as it or owns anything as it, except what the test creates.
uid_t UnusedUid() {
  uid_t uid = 64321;
  while (getpwuid(uid) != nullptr) ++uid;
  return uid;
}

struct CommandResult {
  int exit_code = -1;
  std::string stdout_text;
  std::string stderr_text;
};

// One toolexecd process (tests/common/daemon_process.h), started with exactly
// `env` as its environment, as `uid`:`gid` (the same number, as the common
// helper runs it), with its own base directory (owned by that uid) holding
// the workspace, the config, the address file and the daemon's log. Stopped
// with SIGTERM (SIGKILL after 30 s) on destruction; killed if the test dies.
class IsolatedDaemon final {
 public:
  static std::unique_ptr<IsolatedDaemon> Start(uid_t uid, bool sandbox,
                                               const std::vector<std::string>& env) {
    auto d = std::unique_ptr<IsolatedDaemon>(new IsolatedDaemon());
    char tmpl[] = "/tmp/toolexec-isolation-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return nullptr;
    d->base_ = tmpl;
    d->workspace_ = d->base_ + "/ws";
    std::filesystem::create_directory(d->workspace_);
    std::string binary = TOOLEXECD_PATH;
    const bool other_user = uid != getuid();
    if (other_user) {
      // The build tree may sit where that user cannot reach it.
      std::error_code ec;
      std::filesystem::create_hard_link(binary, d->base_ + "/toolexecd", ec);
      if (ec) std::filesystem::copy_file(binary, d->base_ + "/toolexecd");
      binary = d->base_ + "/toolexecd";
    }
    std::ofstream(d->base_ + "/config.txtpb")
        << "listen: \"127.0.0.1:0\"\n"
        << "workspace: \"" << d->workspace_ << "\"\n"
        << "log_level: \"warn\"\n"
        << "run_command { kill_grace_ms: 200 " << (sandbox ? "sandbox: \"bwrap\" " : "") << "}\n";
    chmod(d->base_.c_str(), 0755);
    for (const std::string& p : {d->base_, d->workspace_}) {
      if (chown(p.c_str(), uid, uid) != 0) return nullptr;
    }
    test_support::DaemonProcess::Options options;
    options.binary = binary;
    options.state_dir = d->base_;
    options.args = {"--config=" + d->base_ + "/config.txtpb"};
    if (other_user) options.as_uid = static_cast<int>(uid);
    options.env = env;
    options.die_with_test = true;
    d->process_ = std::make_unique<test_support::DaemonProcess>(std::move(options));
    const std::string address = d->process_->WaitForAddress();
    if (address.empty()) {
      ADD_FAILURE() << "toolexecd did not start: " << d->process_->Log();
      return nullptr;
    }
    d->client_ = Client::Create(address);
    return d;
  }

  ~IsolatedDaemon() {
    client_.reset();  // an open channel would hold up the daemon's drain
    if (process_ != nullptr) process_->SignalAndWait(SIGTERM, absl::Seconds(30));
    process_.reset();  // SIGKILL if it is still there
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }

  pid_t pid() const { return process_->pid(); }
  const std::string& workspace() const { return workspace_; }
  std::string Log() const { return process_->Log(); }

  // run_command with `command_line`; a failed call fails the test.
  CommandResult Run(const std::string& command_line) {
    CommandResult out;
    Json args = MakeObject();
    args.AddMember(
        "command_line",
        JsonValue(command_line.data(), static_cast<rapidjson::SizeType>(command_line.size()),
                  args.GetAllocator()),
        args.GetAllocator());
    auto call = MakeCall("c", "run_command", ToJsonString(args));
    if (!call.ok()) {
      ADD_FAILURE() << call.status();
      return out;
    }
    v1::ExecuteBatchRequest req;
    *req.add_calls() = *call;
    auto results = client_->ExecuteBatchCollect(req);
    if (!results.ok() || results->size() != 1 || !(*results)[0].error_message().empty()) {
      ADD_FAILURE() << "run_command failed: "
                    << (results.ok() && !results->empty() ? (*results)[0].error_message()
                                                          : results.status().ToString());
      return out;
    }
    const auto& fields = (*results)[0].payload().struct_value().fields();
    out.exit_code = static_cast<int>(fields.at("exit_code").number_value());
    out.stdout_text = fields.at("stdout").string_value();
    out.stderr_text = fields.at("stderr").string_value();
    return out;
  }

 private:
  IsolatedDaemon() = default;

  std::string base_;
  std::string workspace_;
  std::unique_ptr<test_support::DaemonProcess> process_;
  std::unique_ptr<Client> client_;
};

struct RunAs {
  const char* name;
  bool other_user;  // an unprivileged uid of its own rather than the test's
};

class IsolationTest : public ::testing::TestWithParam<RunAs> {
 protected:
  void SetUp() override {
    uid_ = getuid();
    gid_ = getgid();
    if (GetParam().other_user) {
      if (getuid() != 0) {
        GTEST_SKIP() << "only root can start the daemon as another user; the run as "
                     << "the test's own (non-root) user covers the unprivileged case";
      }
      uid_ = UnusedUid();
      gid_ = uid_;
    }
    const std::string nonce = absl::StrCat(getpid(), "-", absl::ToUnixNanos(absl::Now()));
    secrets_ = {"sk-live-" + nonce, "dbpass-" + nonce, "ghp_" + nonce, "urlpw-" + nonce};
    secret_names_ = {"MY_API_KEY", "DB_PASS", "GITHUB_PAT", "DATABASE_URL"};
    visible_ = "plain-" + nonce;
    env_ = {"PATH=/usr/local/bin:/usr/bin:/bin",
            "LANG=C.UTF-8",
            "MY_API_KEY=" + secrets_[0],
            "DB_PASS=" + secrets_[1],
            "GITHUB_PAT=" + secrets_[2],
            "DATABASE_URL=postgres://app:" + secrets_[3] + "@db/app",
            "ISOLATION_VISIBLE=" + visible_};
  }

  std::unique_ptr<IsolatedDaemon> StartDaemon(bool sandbox) {
    auto d = IsolatedDaemon::Start(uid_, sandbox, env_);
    EXPECT_NE(d, nullptr) << "could not start toolexecd as uid " << uid_;
    return d;
  }

  // Names the secret found, not the text it was found in (which may hold
  // other processes' environments).
  void ExpectNoSecret(const std::string& text, const std::string& what) {
    for (size_t i = 0; i < secrets_.size(); ++i) {
      EXPECT_FALSE(absl::StrContains(text, secrets_[i]))
          << what << " shows the value of " << secret_names_[i];
    }
  }

  bool root() const { return uid_ == 0; }

  uid_t uid_;
  gid_t gid_;
  std::vector<std::string> secrets_;
  std::vector<std::string> secret_names_;  // the variable holding each secret
  std::string visible_;
  std::vector<std::string> env_;
};

// The ancestors' environments, from the command's shell up to the daemon
// (or to pid 1 if there is none).
constexpr const char* kWalkAncestors =
    "p=$$; while [ \"$p\" -gt 1 ]; do c=$(cat /proc/$p/comm); echo \"== $p $c\"; "
    "tr '\\0' '\\n' < /proc/$p/environ; [ \"$c\" = toolexecd ] && break; "
    "p=$(sed 's/.*) //' /proc/$p/stat | cut -d' ' -f2); done";

// Reads every readable mapping of process $1 and prints the index of each
// needle (hex-encoded in $2..., so the request that carries them does not put
// them into the daemon's memory) found there.
constexpr const char* kScanMemory =
    "/usr/bin/python3 -c '\n"
    "import sys\n"
    "pid = sys.argv[1]\n"
    "needles = [bytes.fromhex(h) for h in sys.argv[2:]]\n"
    "found = set()\n"
    "with open(f\"/proc/{pid}/maps\") as maps, open(f\"/proc/{pid}/mem\", \"rb\", 0) as mem:\n"
    "    for line in maps:\n"
    "        span, perms = line.split()[:2]\n"
    "        lo, hi = (int(x, 16) for x in span.split(\"-\"))\n"
    "        if perms[0] != \"r\" or hi - lo > (1 << 30):\n"
    "            continue\n"
    "        try:\n"
    "            mem.seek(lo)\n"
    "            data = mem.read(hi - lo)\n"
    "        except OSError:\n"
    "            continue\n"
    "        found.update(i for i, n in enumerate(needles) if n in data)\n"
    "print(\" \".join(str(i) for i in sorted(found)))\n"
    "' ";

TEST_P(IsolationTest, CommandsCannotReachTheDaemonsSecrets) {
  auto daemon = StartDaemon(/*sandbox=*/false);
  ASSERT_NE(daemon, nullptr);
  const std::string pid = absl::StrCat(daemon->pid());

  CommandResult own = daemon->Run("env");
  EXPECT_THAT(own.stdout_text, HasSubstr("ISOLATION_VISIBLE=" + visible_));
  ExpectNoSecret(own.stdout_text, "the command's environment");

  // The daemon is found by walking up from the command.
  CommandResult ancestors = daemon->Run(kWalkAncestors);
  EXPECT_THAT(ancestors.stdout_text, HasSubstr(absl::StrCat("== ", pid, " toolexecd")));
  ExpectNoSecret(ancestors.stdout_text, "an ancestor's environment");

  CommandResult parent = daemon->Run(absl::StrCat("tr '\\0' '\\n' < /proc/", pid, "/environ"));
  ExpectNoSecret(parent.stdout_text, "the daemon's environment");
  if (root()) {
    // Readable to root: the secrets are gone from it, the rest is there.
    EXPECT_EQ(parent.exit_code, 0) << parent.stderr_text;
    EXPECT_THAT(parent.stdout_text, HasSubstr("ISOLATION_VISIBLE=" + visible_));
    EXPECT_THAT(parent.stdout_text, HasSubstr("PATH=/usr/local/bin:/usr/bin:/bin"));

    // Nor anywhere else in its memory, where the environment it keeps is.
    std::vector<std::string> hex = {absl::BytesToHexString("ISOLATION_VISIBLE=" + visible_)};
    for (const std::string& s : secrets_) hex.push_back(absl::BytesToHexString(s));
    CommandResult scan = daemon->Run(absl::StrCat(kScanMemory, pid, " ", absl::StrJoin(hex, " ")));
    EXPECT_EQ(scan.exit_code, 0) << scan.stderr_text;
    EXPECT_EQ(scan.stdout_text, "0\n") << "0 is the visible variable; 1.. are secrets";
  } else {
    // Same uid, no CAP_SYS_PTRACE: the daemon is not dumpable, so none of
    // its /proc files that could reveal memory or fds can be opened.
    EXPECT_NE(parent.exit_code, 0);
    EXPECT_THAT(parent.stderr_text, HasSubstr("Permission denied"));
    for (const char* file : {"mem", "maps", "fd", "auxv", "syscall"}) {
      CommandResult r = daemon->Run(
          absl::StrCat("ls /proc/", pid, "/", file, "/ || head -c1 /proc/", pid, "/", file));
      EXPECT_NE(r.exit_code, 0) << file << ": " << r.stdout_text;
    }
    // 0x4206 is PTRACE_SEIZE: it would not stop the daemon if it succeeded.
    CommandResult ptrace = daemon->Run(absl::StrCat(
        "/usr/bin/python3 -c 'import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
        "print(libc.ptrace(0x4206, int(sys.argv[1]), 0, 0), ctypes.get_errno())' ",
        pid));
    EXPECT_EQ(ptrace.stdout_text, "-1 1\n") << ptrace.stderr_text;  // EPERM
  }

  // Nothing of the daemon's is open in the command but 0, 1 and 2.
  EXPECT_EQ(daemon->Run("ls /proc/$$/fd; true").stdout_text, "0\n1\n2\n");
}

TEST_P(IsolationTest, SandboxedCommandsCannotEscape) {
  auto daemon = StartDaemon(/*sandbox=*/true);
  ASSERT_NE(daemon, nullptr);

  CommandResult caps = daemon->Run("grep -E '^Cap(Prm|Eff|Bnd|Amb):' /proc/self/status; id -u");
  EXPECT_EQ(caps.stdout_text, absl::StrCat("CapPrm:\t0000000000000000\n"
                                           "CapEff:\t0000000000000000\n"
                                           "CapBnd:\t0000000000000000\n"
                                           "CapAmb:\t0000000000000000\n",
                                           uid_, "\n"));

  for (const char* escape :
       {"umount -l /tmp", "umount -l /proc", "mount -o remount,rw /", "mount -o remount,rw,bind /",
        "mount -t tmpfs none /mnt", "nsenter --net=/proc/1/ns/net true",
        "nsenter --mount=/proc/1/ns/mnt true", "unshare --user --map-root-user true"}) {
    CommandResult r = daemon->Run(escape);
    EXPECT_NE(r.exit_code, 0) << escape << " succeeded in the sandbox";
  }

  // A host directory outside the workspace that this uid may write to.
  char tmpl[] = "/var/tmp/toolexec-isolation-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string outside = tmpl;
  ASSERT_EQ(chown(outside.c_str(), uid_, gid_), 0);
  CommandResult write = daemon->Run(absl::StrCat(
      "mount -o remount,rw / 2>/dev/null; umount -l /var/tmp 2>/dev/null; echo pwned > ", outside,
      "/pwned"));
  EXPECT_NE(write.exit_code, 0);
  EXPECT_THAT(write.stderr_text, HasSubstr("Read-only file system"));
  EXPECT_FALSE(std::filesystem::exists(outside + "/pwned"));
  std::filesystem::remove_all(outside);

  // The workspace stays writable, and what the command makes there is the
  // daemon user's.
  CommandResult made = daemon->Run("echo ok > made && cat made");
  EXPECT_EQ(made.stdout_text, "ok\n") << made.stderr_text;
  struct stat st;
  ASSERT_EQ(stat((daemon->workspace() + "/made").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, uid_);

  // The daemon is out of sight (its own pid namespace), and nothing the
  // sandbox shows carries a secret.
  CommandResult all =
      daemon->Run("cat /proc/[0-9]*/environ | tr '\\0' '\\n'; " + std::string(kWalkAncestors));
  EXPECT_THAT(all.stdout_text, HasSubstr("ISOLATION_VISIBLE=" + visible_));
  EXPECT_THAT(all.stdout_text, Not(HasSubstr("toolexecd")));
  ExpectNoSecret(all.stdout_text, "a process in the sandbox");
  EXPECT_EQ(daemon->Run("ls /proc/$$/fd; true").stdout_text, "0\n1\n2\n");
}

INSTANTIATE_TEST_SUITE_P(Users, IsolationTest,
                         ::testing::Values(RunAs{"TestUser", false}, RunAs{"OtherUser", true}),
                         [](const ::testing::TestParamInfo<RunAs>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace toolexec

#include "tools/process/sandbox.h"

#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/process/command_run.h"

namespace toolexec::command {

absl::StatusOr<std::string> FindExecutable(absl::string_view name, absl::string_view path_var) {
  if (name.find('/') != absl::string_view::npos) {
    std::string p(name);
    if (access(p.c_str(), X_OK) == 0) return p;
    return absl::NotFoundError(absl::StrCat(name, " is not an executable file"));
  }
  for (absl::string_view dir : absl::StrSplit(path_var, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    if (candidate[0] == '/' && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(name, " was not found on PATH (", path_var, ")"));
}

void AppendIsolationFlags(bool network, std::vector<std::string>* argv) {
  argv->insert(argv->end(), {"--unshare-user", "--disable-userns", "--cap-drop", "ALL",
                             "--unshare-pid", "--unshare-ipc", "--unshare-uts"});
  if (!network) argv->push_back("--unshare-net");
  argv->insert(argv->end(), {"--die-with-parent", "--new-session"});
}

std::vector<std::string> BwrapArgv(const std::string& bwrap,
                                   const std::vector<SandboxBind>& workspaces,
                                   const std::string& cwd, bool network,
                                   const std::vector<std::string>& program) {
  // Order matters: later mounts go on top, so /tmp is made private before the
  // workspaces are bound (a workspace under /tmp stays visible).
  std::vector<std::string> argv = {bwrap,  "--ro-bind", "/",     "/",       "--dev",
                                   "/dev", "--proc",    "/proc", "--tmpfs", "/tmp"};
  for (const SandboxBind& ws : workspaces) {
    argv.insert(argv.end(), {"--bind-fd", std::to_string(ws.fd), ws.path});
  }
  AppendIsolationFlags(network, &argv);
  if (!cwd.empty()) argv.insert(argv.end(), {"--chdir", cwd});
  argv.push_back("--");
  argv.insert(argv.end(), program.begin(), program.end());
  return argv;
}

absl::Status ProbeBwrap(const std::string& bwrap, bool network) {
  std::vector<std::string> argv = {bwrap,  "--ro-bind", "/",     "/",       "--dev",
                                   "/dev", "--proc",    "/proc", "--tmpfs", "/tmp"};
  AppendIsolationFlags(network, &argv);
  argv.insert(argv.end(), {"--", "/bin/true"});
  CommandSpec spec;
  spec.argv = std::move(argv);
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.wall_timeout = std::chrono::seconds(10);
  spec.kill_grace = std::chrono::milliseconds(0);
  spec.capture_bytes = 4096;
  auto run = CommandRun::Start(std::move(spec));
  if (!run.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("run_command.sandbox is \"bwrap\" but ", bwrap,
                     " could not be started: ", run.status().message()));
  }
  CommandOutcome o = (*run)->Wait(nullptr);
  if (o.stop != StopReason::kNone || o.exit.signaled || o.exit.code != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("run_command.sandbox is \"bwrap\" but bwrap cannot create its sandbox here (",
                     o.stop != StopReason::kNone ? "timed out" : absl::StrCat("exit ", o.exit.code),
                     "): ", absl::StripTrailingAsciiWhitespace(o.stderr_text),
                     ". bwrap needs user namespaces: user.max_user_namespaces above 0, for a "
                     "daemon not run as root also kernel.unprivileged_userns_clone = 1 where that "
                     "sysctl exists, and no seccomp filter or AppArmor profile forbidding them. "
                     "Allow them, or set run_command.sandbox to \"\""));
  }
  return absl::OkStatus();
}

}  // namespace toolexec::command

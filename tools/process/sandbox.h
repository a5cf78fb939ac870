// The optional bwrap sandbox (see "Sandbox" in command.h).
#ifndef TOOLEXEC_TOOLS_PROCESS_SANDBOX_H_
#define TOOLEXEC_TOOLS_PROCESS_SANDBOX_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace toolexec::command {

// The absolute path of `name` found on `path_var` (a PATH value, ':'-separated),
// NotFound if none is executable.
absl::StatusOr<std::string> FindExecutable(absl::string_view name, absl::string_view path_var);

// Appends the bwrap flags that isolate a command, the same for every command
// and for ProbeBwrap:
// * --unshare-user: a user namespace of its own, mapping only the daemon's
//   uid and gid, each to itself (bwrap's default). The command sees the
//   daemon's ids (uid 0 for a daemon run as root), so what it creates in the
//   workspace belongs to the daemon's user and the workspace stays writable;
//   every other host id shows as the overflow id (65534, nobody).
// * --cap-drop ALL: no capability at all, in any namespace (effective,
//   permitted, inheritable, ambient and bounding sets empty; bwrap also sets
//   no_new_privs, so a setuid program grants nothing). Even as uid 0 the
//   command cannot mount, unmount or remount anything, setns() into another
//   namespace, or ptrace what it does not own.
// * --disable-userns: no nested user namespace, which would give the command
//   a fresh set of capabilities there.
// * --unshare-pid (the sandbox dies with its init; no other process is
//   visible, the daemon included), --unshare-ipc, --unshare-uts, and
//   --unshare-net unless `network`.
// * --die-with-parent and --new-session (no TIOCSTI into the daemon's
//   terminal).
// A uid 0 command still passes the owner checks of root-owned files outside
// the workspace: / is read-only, but files only root may read (mode 0600,
// 0640) are readable. Run the daemon as an unprivileged user to prevent it.
void AppendIsolationFlags(bool network, std::vector<std::string>* argv);

// Runs `bwrap ... /bin/true` once with the same namespaces commands will use,
// so a bwrap that cannot create them (no user namespaces, a seccomp filter,
// missing privileges) stops the daemon at start-up with bwrap's own message
// rather than failing every command later.
absl::Status ProbeBwrap(const std::string& bwrap, bool network);

// A workspace directory, by an open handle, and where the sandbox shows it.
struct SandboxBind {
  int fd;            // inherited by bwrap (see CommandSpec::inherit_fds)
  std::string path;  // absolute
};

// bwrap's argv for running `program` (an argv): / read-only,
// each of `workspaces` bound read-write by its handle (--bind-fd) at its
// path, so the sandbox shows the directory the handle holds whatever is at
// that path now; private /tmp, fresh /dev and /proc, isolated by
// AppendIsolationFlags (no network unless `network`), cwd `cwd` (an absolute
// path inside a bound workspace).
std::vector<std::string> BwrapArgv(const std::string& bwrap,
                                   const std::vector<SandboxBind>& workspaces,
                                   const std::string& cwd, bool network,
                                   const std::vector<std::string>& program);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_PROCESS_SANDBOX_H_

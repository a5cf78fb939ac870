// The optional bwrap sandbox (see "Sandbox" in command.h).
#ifndef TOOLEXEC_TOOLS_BUILTIN_COMMAND_SANDBOX_H_
#define TOOLEXEC_TOOLS_BUILTIN_COMMAND_SANDBOX_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace toolexec::command {

// The absolute path of `name` found on `path_var` (a PATH value, ':'-separated),
// NotFound if none is executable.
absl::StatusOr<std::string> FindExecutable(absl::string_view name, absl::string_view path_var);

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

// bwrap's argv for running `command_line` with /bin/bash -c: / read-only,
// each of `workspaces` bound read-write by its handle (--bind-fd) at its
// path, so the sandbox shows the directory the handle holds whatever is at
// that path now; private /tmp, fresh /dev and /proc, its own PID namespace,
// no network unless `network`, dies with its parent, new session, cwd `cwd`
// (an absolute path inside a bound workspace).
std::vector<std::string> BwrapArgv(const std::string& bwrap,
                                   const std::vector<SandboxBind>& workspaces,
                                   const std::string& cwd, bool network,
                                   const std::string& command_line);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_BUILTIN_COMMAND_SANDBOX_H_

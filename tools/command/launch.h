// What every command a tool starts in the foreground shares between the
// call's arguments and its CommandRun: the spec the daemon's settings and the
// call give it (environment, limits, working directory, sandbox), and the run
// itself on the call's thread (timeout fitted inside the call's deadline,
// cancellation, output as progress). run_command and the configured command
// tools (command_tool.cc) both go through here, so they share one lifecycle:
// process group, supervisor, timeouts, capture limits and sandbox.
//
// Thread safety: plain functions; RunForeground runs on the calling (executor)
// thread and returns once every process of the command is gone.
#ifndef TOOLEXEC_TOOLS_COMMAND_LAUNCH_H_
#define TOOLEXEC_TOOLS_COMMAND_LAUNCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/command/command.h"
#include "tools/process/command_run.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/tool_context.h"

namespace toolexec::command {

// A command's spec: `program` (argv; wrapped in bwrap when the daemon
// sandboxes commands, binding the call's workspaces), run in `cwd` (resolved
// beneath a workspace root; `cwd_fd` is its open directory and must stay open
// until the run starts), the daemon's scrubbed environment with `overrides`
// and a fresh TOOLEXEC_RUN_ID on top, and the configured capture size, kill
// grace, rlimits and pids cgroup. Timeouts and stdin are the caller's.
CommandSpec MakeCommandSpec(const CommandConfig& config, const ToolContext& ctx,
                            const fs::WorkspacePath& cwd, int cwd_fd,
                            std::vector<std::string> program,
                            std::vector<std::pair<std::string, std::string>> overrides);

struct ForegroundOutcome {
  CommandOutcome outcome;
  int64_t timeout_ms = 0;  // the wall timeout used
  bool shortened = false;  // shortened to end before the call's deadline
};

// Runs `spec` to its end on this thread with a wall timeout of `timeout_ms`,
// shortened (with the kill grace) so that it fires before the call's own
// deadline and the partial output still comes back as a result. The call's
// cancellation stops it; `on_output` (may be empty) sees its output as it
// arrives. Fails only if the command cannot be started.
absl::StatusOr<ForegroundOutcome> RunForeground(CommandSpec spec, int64_t timeout_ms,
                                                ToolContext& ctx,
                                                const CommandRun::OutputFn& on_output);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_COMMAND_LAUNCH_H_

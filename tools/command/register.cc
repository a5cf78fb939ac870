// RegisterCommandTools and CommandConfig::Create (design in
// tools/command/command.h).
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/builtin.h"
#include "tools/command/background.h"
#include "tools/command/command.h"
#include "tools/command/shell_session.h"
#include "tools/process/environment.h"
#include "tools/process/reaper.h"
#include "tools/process/sandbox.h"

extern char** environ;

namespace toolexec {
namespace command {

absl::StatusOr<std::shared_ptr<const CommandConfig>> CommandConfig::Create(
    const BuiltinOptions& options) {
  auto config = std::make_shared<CommandConfig>();
  config->options = options;
  if (options.command_max_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("run_command.max_timeout_ms must be positive");
  }
  if (options.command_kill_grace < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("run_command.kill_grace_ms must not be negative");
  }
  // Snapshot once: reading environ while something calls setenv is a race,
  // and the daemon's environment does not change after start-up.
  config->base_env = ScrubEnvironment(environ, options.allow_env);
  if (options.sandbox == "bwrap") {
    std::string path_var = LookupEnvironment(config->base_env, "PATH");
    if (path_var.empty()) path_var = "/usr/local/bin:/usr/bin:/bin";
    auto bwrap = FindExecutable("bwrap", path_var);
    if (!bwrap.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "run_command.sandbox is \"bwrap\" but bwrap is not installed: ", bwrap.status().message(),
          ". Install it (Debian: apt-get install bubblewrap) or set run_command.sandbox to \"\""));
    }
    config->bwrap_path = *bwrap;
  } else if (!options.sandbox.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("run_command.sandbox: unknown value \"",
                                                   options.sandbox,
                                                   "\"; use \"\" (no sandbox) or \"bwrap\""));
  }
  if (options.rlimit_processes > 0) {
    auto pids = PidsCgroups::Find(options.rlimit_processes);
    if (!pids.ok()) return pids.status();
    config->pids = *std::move(pids);
  }
  return std::shared_ptr<const CommandConfig>(std::move(config));
}

}  // namespace command

absl::Status RegisterCommandTools(ToolRegistry& registry, const BuiltinOptions& options) {
  auto config = command::CommandConfig::Create(options);
  if (!config.ok()) return config.status();
  if (absl::Status s = command::ChildReaper::Get().Start(); !s.ok()) return s;
  if (!(*config)->bwrap_path.empty()) {
    if (absl::Status s = command::ProbeBwrap((*config)->bwrap_path, options.sandbox_network);
        !s.ok()) {
      return s;
    }
  }
  auto background = std::make_shared<command::BackgroundProcesses>();
  if (absl::Status s =
          registry.Register(command::MakeRunCommandTool(*config, background), "built-in");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = registry.Register(command::MakeCommandStatusTool(background), "built-in");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = registry.Register(command::MakeKillCommandTool(background), "built-in");
      !s.ok()) {
    return s;
  }
  auto shells = std::make_shared<command::ShellTable>(*config, options.shell_idle_timeout);
  if (absl::Status s = registry.Register(command::MakeBashTool(*config, shells), "built-in");
      !s.ok()) {
    return s;
  }
  return registry.Register(command::MakeShellTool(*config, shells), "built-in");
}

}  // namespace toolexec

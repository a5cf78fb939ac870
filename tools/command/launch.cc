// Design in launch.h and command.h.
#include "tools/command/launch.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/process/environment.h"
#include "tools/process/reaper.h"
#include "tools/process/sandbox.h"

namespace toolexec::command {

using std::chrono::milliseconds;

CommandSpec MakeCommandSpec(const CommandConfig& config, const ToolContext& ctx,
                            const fs::WorkspacePath& cwd, int cwd_fd,
                            std::vector<std::string> program,
                            std::vector<std::pair<std::string, std::string>> overrides) {
  const BuiltinOptions& opt = config.options;
  // The caller's trace, with the daemon's span as parent (W3C Trace Context),
  // so what the program does can join it.
  if (!ctx.info().traceparent.empty()) {
    overrides.emplace_back("TRACEPARENT", ctx.info().traceparent);
  }
  const std::string run_id = NewRunId();
  overrides.emplace_back("TOOLEXEC_RUN_ID", run_id);

  CommandSpec spec;
  spec.env = MergeEnvironment(config.base_env, overrides);
  spec.marker = absl::StrCat("TOOLEXEC_RUN_ID=", run_id);
  spec.cwd_fd = cwd_fd;
  spec.capture_bytes = opt.command_capture_bytes;
  spec.output_chars = ctx.info().model_content.TextChars();
  spec.kill_grace = milliseconds(absl::ToInt64Milliseconds(opt.command_kill_grace));
  if (opt.rlimit_cpu_seconds > 0) spec.rlimits.emplace_back(RLIMIT_CPU, opt.rlimit_cpu_seconds);
  if (opt.rlimit_address_space_bytes > 0) {
    spec.rlimits.emplace_back(RLIMIT_AS, opt.rlimit_address_space_bytes);
  }
  if (opt.rlimit_open_files > 0) spec.rlimits.emplace_back(RLIMIT_NOFILE, opt.rlimit_open_files);
  spec.pids = config.pids;

  if (config.bwrap_path.empty()) {
    spec.argv = std::move(program);
  } else {
    // Each root is bound by its handle, so the sandbox shows the directories
    // the call was given even if their paths now name something else; the
    // working directory is the one opened by the caller, named inside its
    // root's bind.
    std::vector<SandboxBind> binds;
    for (const auto& root : ctx.info().workspaces) {
      binds.push_back({root->fd(), root->path()});
      spec.inherit_fds.push_back(root->fd());
    }
    const std::string& bound = cwd.root->path();
    const std::string dir =
        cwd.relative == "." ? bound : absl::StrCat(bound == "/" ? "" : bound, "/", cwd.relative);
    spec.argv = BwrapArgv(config.bwrap_path, binds, dir, opt.sandbox_network, program);
    spec.sandboxed = true;
  }
  return spec;
}

absl::StatusOr<ForegroundOutcome> RunForeground(CommandSpec spec, int64_t timeout_ms,
                                                ToolContext& ctx,
                                                const CommandRun::OutputFn& on_output) {
  ForegroundOutcome out;
  // The call's own deadline is an outer bound: fit the command's timeout, its
  // kill grace and the drain inside it, so the caller gets the partial output
  // as a result rather than a bare TIMEOUT.
  if (ctx.info().deadline != absl::InfiniteFuture()) {
    const int64_t remaining =
        std::max<int64_t>(0, absl::ToInt64Milliseconds(ctx.info().deadline - absl::Now()));
    const int64_t margin = CommandRun::kDrainAfterExit.count() + 50;
    const int64_t reserve = std::min<int64_t>(spec.kill_grace.count() + margin, remaining / 2);
    spec.kill_grace =
        milliseconds(std::clamp<int64_t>(reserve - margin, 0, spec.kill_grace.count()));
    const int64_t fit = std::max<int64_t>(remaining - reserve, 1);
    if (fit < timeout_ms) {
      timeout_ms = fit;
      out.shortened = true;
    }
  }
  spec.wall_timeout = milliseconds(timeout_ms);
  out.timeout_ms = timeout_ms;

  auto run = CommandRun::Start(std::move(spec));
  if (!run.ok()) return run.status();
  CommandRun* r = run->get();
  const CancellationToken& token = ctx.cancellation();
  int cb = token.AddCallback([r] { r->RequestStop(StopReason::kCancelled); });
  out.outcome = r->Wait(on_output);
  token.RemoveCallback(cb);
  return out;
}

}  // namespace toolexec::command

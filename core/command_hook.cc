#include "core/command_hook.h"

#include <unistd.h>

#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/process/command_run.h"
#include "tools/process/environment.h"
#include "tools/process/reaper.h"
#include "tools/process/sandbox.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

using command::CommandOutcome;
using command::CommandRun;
using command::CommandSpec;
using command::StopReason;

// How long a hook that is stopped gets between SIGTERM and SIGKILL.
constexpr std::chrono::milliseconds kHookKillGrace{500};
// Of a failing hook's stderr, this much goes into the message.
constexpr size_t kStderrChars = 300;

std::string StderrTail(const std::string& text) {
  absl::string_view s = absl::StripTrailingAsciiWhitespace(text);
  if (s.empty()) return "";
  return absl::StrCat(": ", s.substr(s.size() - Utf8SuffixBytes(s, kStderrChars)));
}

}  // namespace

CommandHook::CommandHook(CommandHookOptions options, std::vector<std::string> base_env)
    : options_(std::move(options)),
      tools_(options_.tools.begin(), options_.tools.end()),
      base_env_(std::move(base_env)) {}

absl::StatusOr<std::unique_ptr<CommandHook>> CommandHook::Create(CommandHookOptions options,
                                                                 const ToolRegistry& registry,
                                                                 std::vector<std::string> base_env) {
  const std::string what = absl::StrCat("hook '", options.name, "'");
  if (options.name.empty()) return absl::InvalidArgumentError("a hook has no name");
  if (options.argv.empty() || options.argv[0].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has no argv: give the program and its arguments"));
  }
  if (options.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": timeout_ms must be positive"));
  }
  for (const auto& tool : options.tools) {
    if (registry.Find(tool) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(what, " names tool '", tool,
                                                     "', which is not registered; the tools are: ",
                                                     absl::StrJoin(registry.names(), ", ")));
    }
  }
  if (options.argv[0].find('/') == std::string::npos) {
    std::string path_var = command::LookupEnvironment(base_env, "PATH");
    if (path_var.empty()) path_var = "/usr/local/bin:/usr/bin:/bin";
    auto found = command::FindExecutable(options.argv[0], path_var);
    if (!found.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": ", options.argv[0], " is not on PATH (", path_var,
                       "); give its absolute path"));
    }
    options.argv[0] = *found;
  }
  if (access(options.argv[0].c_str(), X_OK) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", options.argv[0], " is not an executable file"));
  }
  if (absl::Status s = command::ChildReaper::Get().Start(); !s.ok()) return s;
  return std::unique_ptr<CommandHook>(new CommandHook(std::move(options), std::move(base_env)));
}

absl::StatusOr<std::string> CommandHook::Run(const std::string& event,
                                             const CancellationToken& cancel,
                                             const CancellationToken* also_cancel) const {
  const std::string what = absl::StrCat("hook '", options_.name, "'");
  const std::string run_id = command::NewRunId();
  CommandSpec spec;
  spec.argv = options_.argv;
  spec.env = command::MergeEnvironment(base_env_, {{"TOOLEXEC_RUN_ID", run_id}});
  spec.marker = absl::StrCat("TOOLEXEC_RUN_ID=", run_id);
  spec.stdin_text = event;
  spec.wall_timeout = std::chrono::milliseconds(absl::ToInt64Milliseconds(options_.timeout));
  spec.kill_grace = kHookKillGrace;
  spec.capture_bytes = kMaxOutputBytes;
  auto run = CommandRun::Start(std::move(spec));
  if (!run.ok()) {
    return absl::UnavailableError(
        absl::StrCat(what, " could not start ", options_.argv[0], ": ", run.status().message()));
  }
  CommandRun* r = run->get();
  auto stop = [r] { r->RequestStop(StopReason::kCancelled); };
  int cb = cancel.AddCallback(stop);
  int also_cb = also_cancel != nullptr ? also_cancel->AddCallback(stop) : 0;
  CommandOutcome o = r->Wait([](bool, absl::string_view) {});
  cancel.RemoveCallback(cb);
  if (also_cancel != nullptr) also_cancel->RemoveCallback(also_cb);
  run->reset();  // every process of the hook is gone and reaped
  if (o.stop == StopReason::kWall) {
    return absl::DeadlineExceededError(
        absl::StrCat(what, " timed out after ", absl::FormatDuration(options_.timeout)));
  }
  if (o.stop != StopReason::kNone) {
    return absl::CancelledError(absl::StrCat(what, " was stopped: the call was cancelled"));
  }
  if (o.exit.signaled) {
    return absl::UnavailableError(
        absl::StrCat(what, " was killed by signal ", o.exit.code, StderrTail(o.stderr_text)));
  }
  if (o.exit.code != 0) {
    return absl::UnavailableError(
        absl::StrCat(what, " exited with code ", o.exit.code, StderrTail(o.stderr_text)));
  }
  if (o.stdout_bytes > kMaxOutputBytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, " printed ", o.stdout_bytes,
                                                   " bytes; an answer is at most ",
                                                   kMaxOutputBytes));
  }
  return std::move(o.stdout_text);
}

}  // namespace toolexec

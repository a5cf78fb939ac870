// A command hook: a program from the config that gets one JSON event on
// stdin and answers on stdout (the protocol is in API.md, "Hooks speak
// JSON"). It runs under the supervisor run_command uses
// (tools/process/command_run.h): the same scrubbed environment (no
// secrets), its own process group and session, the whole tree killed on its
// timeout or when a token is cancelled (SIGTERM, a grace, SIGKILL) and reaped
// before Run returns, so no hook process outlives its run.
//
// Thread safety: immutable after Create; Run may be called from many threads
// at once (each run is its own process). Run blocks the calling thread for
// at most the hook's timeout plus the kill grace.
#ifndef TOOLEXEC_CORE_COMMAND_HOOK_H_
#define TOOLEXEC_CORE_COMMAND_HOOK_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "core/hooks.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

class CommandHook final {
 public:
  // Resolves argv[0] on the daemon's PATH and checks the tool filter against
  // `registry`. InvalidArgument names the hook and what to fix.
  static absl::StatusOr<std::unique_ptr<CommandHook>> Create(CommandHookOptions options,
                                                             const ToolRegistry& registry,
                                                             std::vector<std::string> base_env);

  const std::string& name() const { return options_.name; }
  HookEvent event() const { return options_.event; }
  bool Applies(const std::string& tool) const { return tools_.empty() || tools_.contains(tool); }

  // Runs the program with `event` on stdin. Its stdout, or an error naming
  // the hook: it could not start, timed out, was stopped by `cancel` or
  // `also_cancel` (may be null), exited non-zero or by a signal, or printed
  // more than kMaxOutputBytes.
  absl::StatusOr<std::string> Run(const std::string& event, const CancellationToken& cancel,
                                  const CancellationToken* also_cancel) const;

  static constexpr size_t kMaxOutputBytes = 1 << 20;

 private:
  explicit CommandHook(CommandHookOptions options, std::vector<std::string> base_env);

  const CommandHookOptions options_;
  const absl::flat_hash_set<std::string> tools_;
  const std::vector<std::string> base_env_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_COMMAND_HOOK_H_

// Background commands (run_command background:true) and the table that owns
// them (see "Who owns what" in command.h).
//
// A background command belongs to the session that started it: only calls of
// that session can see, read or kill it, and closing the session kills it
// (cleanup_session). Calls without a session share the key "" (a daemon
// without sessions keeps them until kill_command or shutdown).
//
// Thread safety: every method is thread-safe. The command tools share one
// table (see command.h); Shutdown() ends what it holds, and so does the
// destructor.
#ifndef TOOLEXEC_TOOLS_COMMAND_BACKGROUND_H_
#define TOOLEXEC_TOOLS_COMMAND_BACKGROUND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/process/command_run.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"

namespace toolexec::command {

class BackgroundProcesses final {
 public:
  BackgroundProcesses() = default;
  // Shutdown(): the commands still running are stopped together, then waited for.
  ~BackgroundProcesses();
  BackgroundProcesses(const BackgroundProcesses&) = delete;
  BackgroundProcesses& operator=(const BackgroundProcesses&) = delete;

  // Finished entries kept for command_status before the oldest is dropped.
  static constexpr size_t kMaxEntries = 256;

  struct StartRequest {
    std::string session_id;
    std::string command_line;
    CommandSpec spec;
  };
  // Starts the command and its pump thread; returns its process id.
  // ResourceExhausted past kMaxRunningBackground(PerSession), FailedPrecondition
  // after Shutdown(), or the spawn's own error.
  absl::StatusOr<std::string> Start(StartRequest request);

  // command_status: waits up to `wait` (or until `cancel` trips) for the
  // command to exit, then returns the output not read before and its state.
  absl::StatusOr<Json> Status(absl::string_view session_id, absl::string_view process_id,
                              absl::Duration wait, const CancellationToken& cancel);

  // kill_command: ends the command (SIGTERM, grace, SIGKILL), waits for it,
  // and returns the same report as Status.
  absl::StatusOr<Json> Kill(absl::string_view session_id, absl::string_view process_id,
                            const CancellationToken& cancel);

  // Kills and forgets every background command of `session_id`; returns
  // when they have exited.
  void CloseSession(absl::string_view session_id);

  // Kills and forgets all; refuses new ones from now on.
  void Shutdown();

  // Running background commands (for tests and diagnostics).
  size_t running() const;

 private:
  struct Entry;
  std::shared_ptr<Entry> Find(absl::string_view session_id, absl::string_view process_id) const;
  static Json Report(Entry& entry, bool killed);
  // Ends the given entries together and waits for them (outside mu_).
  static void EndAll(std::vector<std::shared_ptr<Entry>> entries);

  mutable absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::vector<std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);  // oldest first
  // Session ids of the Start() calls between the limit check and publication.
  std::vector<std::string> starting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_COMMAND_BACKGROUND_H_

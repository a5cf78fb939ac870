// Replaying a session recording (core/recorder.h) against a daemon:
// `toolexec replay FILE`. Opens a session like the recorded one (its tools,
// conversation and user, policy profile; its workspace, or the one given),
// re-runs every recorded batch in order, and compares each result with the
// recorded one after both are normalized the same way (ReplayRules below,
// the one list of what may differ). Without a workspace given, the recorded
// workspace is first restored to the session's first checkpoint (if it took
// one), the daemon keeping checkpoints past the session's close.
//
// - Calls the harness ran (the recorded result failed NOT_EXECUTABLE_HERE,
//   or the daemon declares the tool EXECUTOR_HARNESS or EXECUTOR_PROVIDER)
//   are not sent: the recorded result stands for them.
// - A permission request is answered as it was answered in the recording
//   (the n-th request of a batch by the n-th recorded answer); an answer
//   that was a timeout is a deny.
// - Arguments are sent as recorded: a value the recorder masked is sent
//   masked, and the batch's notes name each call that carried one.
// - A batch whose results the recording lacks (cut, or the daemon crashed)
//   is run and compared as far as the recording goes.
//
// Thread safety: Replay runs on the calling thread; no shared state.
#ifndef TOOLEXEC_CLIENT_REPLAY_H_
#define TOOLEXEC_CLIENT_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/client.h"

namespace toolexec {

// What is meant to vary between a recording and its replay, and so is left
// out of the comparison. Documented in the README ("Replaying a session");
// change both together.
struct ReplayRules {
  // Result fields compared, as "field" or "field.member" (the ToolResult's
  // .proto names). Everything else (duration, trace_id, display.full_length,
  // display.is_truncated, exception.tool_name …) is ignored.
  static const std::vector<std::string>& ComparedFields();
  // Object members dropped at any depth of a payload or state_delta: times,
  // and the byte counts of a command's streams (their text is compared).
  static const std::vector<std::string>& IgnoredKeys();
  // In every string (payload values, model_content, messages): each match is
  // replaced by its placeholder before comparing. Session and permission
  // request ids, timestamps, durations as the tools print them, and paths
  // under /tmp; the recorded and the replayed workspace paths become
  // "<workspace>" too.
  struct Pattern {
    std::string regex;
    std::string placeholder;
  };
  static const std::vector<Pattern>& Patterns();
};

struct ReplayOptions {
  // The replay session's workspace (relative to the daemon's, or absolute
  // inside it); "" = the recorded session's workspaces.
  std::string workspace;
};

// One result that differs: its call, and each compared field that differs.
struct ReplayDifference {
  uint64_t batch = 0;
  uint32_t index = 0;  // the call's position in its batch
  std::string id;
  std::string name;
  struct Field {
    std::string field;
    std::string recorded;  // normalized JSON; "" = absent or empty
    std::string replayed;
  };
  std::vector<Field> fields;
};

struct ReplayBatch {
  uint64_t batch = 0;
  size_t calls = 0;
  size_t from_recording = 0;  // harness-run calls answered from the recording
  size_t compared = 0;
  std::vector<ReplayDifference> differences;
  std::vector<std::string> notes;
};

struct ReplayReport {
  std::string recorded_session;
  std::string replay_session;
  // The recorded session's first checkpoint, restored before the first batch
  // (no workspace given), and the undo checkpoint that restore took: the
  // workspace as it was before the replay. "" when none was restored.
  std::string start_checkpoint;
  std::string undo_checkpoint;
  std::vector<ReplayBatch> batches;
  size_t differences = 0;  // results that differ
};

// Replays `recording` (a recording's text). Errors: a file that is not a
// recording (InvalidArgument), or an RPC that failed (its status).
absl::StatusOr<ReplayReport> Replay(Client& client, absl::string_view recording,
                                    const ReplayOptions& options);

// One line per batch, then a line per difference; then the total.
std::string ReplayReportText(const ReplayReport& report);
// {"recorded_session", "replay_session", "differences": N, "start_checkpoint",
// "undo_checkpoint", "batches": [{"batch",
// "calls", "from_recording", "compared", "differences": [{index, id, name,
// fields: [{field, recorded, replayed}]}], "notes"}]}
std::string ReplayReportJson(const ReplayReport& report);

}  // namespace toolexec

#endif  // TOOLEXEC_CLIENT_REPLAY_H_

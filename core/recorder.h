// Session recordings: every batch and result of a session, in order, in a
// file that can be read back, exported as a provider transcript
// (core/recording_export.h) and replayed against another build.
//
// The file
// --------
// One file per session, <dir>/<session_id>.jsonl (session ids are 128 random
// bits, so several daemons can share a directory: no index, nothing to
// lock; the file is created O_EXCL, mode 0600). JSON lines; the first is the
// header {"format": "toolexec-recording/1", "session_id", "created_at",
// "producer"}, then one object per event, each with "type" and "time" (UTC,
// RFC 3339 with microseconds):
//   open_session        {"session": {session_id, conversation_id, user_id,
//                        parent_session_id, subagent, policy_profile,
//                        workspaces (real paths), tools, owner}}
//   batch               {"batch": N (1, 2, … per session), "calls": [{index,
//                        id, name, step_id, args | args_json}], "timeout_ms",
//                        "model_content_max_chars"}
//   permission_request  {"batch", "request": {request_id, index, tool_name,
//                        target: {kind, value, recursive}, level, description,
//                        reason}}
//   permission_answer   {"batch", "request_id", "decision" (allow_once,
//                        allow_session, deny, timeout), "reason"}
//   result              {"batch", "result": the ToolResult with the .proto
//                        field names, as the Python client returns it:
//                        index, id, name, step_id, status
//                        ("RESULT_STATUS_SUCCESS"…), payload, error_message,
//                        exception (failures), actions, display,
//                        compact_summary, model_content, duration (seconds)}
//   checkpoint          {"batch", "checkpoint": {…}}
//   cut                 {"bytes": the limit, "reason"}: nothing after it
//   close_session       {}
// Arguments, results and error messages are masked as the audit log masks
// them (AuditLog::MaskInto: secret-looking keys' values, NAME=VALUE,
// credentials in headers and URLs), but never cut.
//
// Threads and ownership
// ---------------------
// The Engine owns the Recorder. A recorded session's SessionRecording is
// held by the Recorder's table (until the session closes) and by each of its
// batches' RecordingObservers. A RecordingObserver wraps the transport's
// observer for one batch: on the thread that delivers each event (the runner
// serializes a batch's results) it queues a copy of what the event carries
// and its time, as a PendingLine, for the Recorder's one writer thread, then
// forwards the event. The writer renders each line (masking, JSON) into the
// batch's own buffer, so a batch's lines stay together in the file, and
// writes the batch with one write(2) at its end. The writer is woken at a
// batch's end, for a session event, and every kWakeEvery queued lines (so a
// large batch is rendered while it runs), never per result: a wake-up costs
// more than rendering a small result. When the batch ends (its last result)
// the observer queues the batch's end, deletes itself and forwards the last
// event; the session's next batch first waits until that one is written
// (normally long done). So the thread that hands out results pays a copy
// and a queue push per result, and a crash loses the batch in flight and at
// most the session's batch before it. Session events (open, close) are
// written as they come.
//
// A crash: every write(2) is of whole lines; a process killed while the
// writer is inside one can leave at most the last line short. Every complete
// line stays parseable and ReadRecording drops a final line without its
// newline (saying so). A crash loses the batch in flight and at most the
// session's batch before it (above); nothing is fsynced except at
// close_session.
//
// The limit: max_bytes_per_session counts every line admitted. The first
// line that would pass it (less room for the cut line) is replaced by one
// "cut" event and nothing more is recorded for the session; its calls go on
// unaffected.
//
// Restarts: files are never rewritten or removed by the daemon; a recording
// of a session from before a restart is still exported (ExportRecording
// reads the file; the header's owner must match the caller).
#ifndef TOOLEXEC_CORE_RECORDER_H_
#define TOOLEXEC_CORE_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/runtime/file_io.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {

inline constexpr char kRecordingFormatVersion[] = "toolexec-recording/1";

struct RecordingOptions {
  // Where recordings go; "" = recording off (OpenSession's record refused).
  std::string dir;
  // Record every session, not only those opened with record.
  bool all_sessions = false;
  // Bytes one session's file may reach; past it the recording is cut.
  uint64_t max_bytes_per_session = uint64_t{64} << 20;
  // Who wrote the file, for the header ("toolexecd 0.1.0 (abc1234)").
  std::string producer;
};

class Recorder;

// One event's line (without its newline), rendered by the writer thread.
using PendingLine = absl::AnyInvocable<std::string()>;

// One session's recording. Thread-safe.
class SessionRecording final : public std::enable_shared_from_this<SessionRecording> {
 public:
  const std::string& session_id() const { return session_id_; }
  const std::string& path() const { return path_; }

  // The next batch's number (1, 2, …).
  uint64_t NextBatch() { return next_batch_.fetch_add(1) + 1; }

  // A session event of its own, written as it comes. `sync`: fsync after.
  void RecordEvent(Json event, bool sync = false);
  // A line of a batch, rendered into `batch` (the batch's bytes).
  void AddToBatch(const std::shared_ptr<std::string>& batch, PendingLine line);
  // Queues the writing of what `batch` holds.
  void EndBatch(const std::shared_ptr<std::string>& batch);
  // Returns once the session's last ended batch is written.
  void WaitForLastBatch();

  SessionRecording(Recorder* recorder, std::string session_id, std::string path, UniqueFd fd,
                   uint64_t max_bytes)
      : recorder_(recorder),
        session_id_(std::move(session_id)),
        path_(std::move(path)),
        fd_(std::move(fd)),
        max_bytes_(max_bytes) {}

 private:
  friend class Recorder;
  // Writer thread: appends one event line (without its newline) to `bytes`,
  // or, once the limit is reached, the cut line (once) and nothing after.
  void AppendLine(std::string* bytes, std::string line);

  Recorder* const recorder_;
  const std::string session_id_;
  const std::string path_;
  const UniqueFd fd_;  // written by the writer thread only
  // Writer thread only: a write failed part way, so nothing more is
  // appended (a line after a partial one would not parse).
  bool broken_ = false;
  const uint64_t max_bytes_;
  std::atomic<uint64_t> next_batch_{0};
  std::atomic<uint64_t> last_batch_ticket_{0};
  uint64_t bytes_ = 0;  // writer thread only
  bool cut_ = false;    // writer thread only
};

// A new event object {"type": type, "time": time}, allocating from `pool`
// (null: its own).
Json RecordingEvent(absl::string_view type, absl::Time time,
                    Json::AllocatorType* pool = nullptr);
// The ToolResult object a result line carries (see the header comment),
// masked.
void ResultToRecordingJson(const ToolCallResult& result, JsonValue& out, Json::AllocatorType& a);

// Wraps the transport's observer of one batch (see the header comment).
// Created by the engine for a recorded session's batch; deletes itself after
// forwarding the batch's final event. If the batch never starts, its creator
// deletes it (the runner never called it).
class RecordingObserver final : public BatchObserver {
 public:
  // `calls`: the batch's calls as the caller sent them (before the policy or
  // hooks change anything).
  RecordingObserver(std::shared_ptr<SessionRecording> recording, BatchObserver* inner,
                    const std::vector<CallRequest>& calls,
                    std::optional<absl::Duration> timeout, uint32_t model_content_max_chars);

  void OnProgress(ProgressEvent event) override { inner_->OnProgress(std::move(event)); }
  void OnPermissionRequest(const PermissionRequestEvent& event) override;
  void OnPermissionAnswer(const std::string& request_id, absl::string_view decision,
                          const std::string& reason) override;
  void OnResult(ToolCallResult result) override;
  void OnLastResult(ToolCallResult result) override;
  bool HoldsResults() const override { return inner_->HoldsResults(); }
  void OnBatchDone() override;
  // The checkpoint the batch took before its first call, recorded in order
  // with the batch's other events ({id, session_id, batch_id, created_at,
  // tools, files_changed, bytes_stored}), then passed on.
  void OnCheckpoint(const CheckpointEvent& event) override;

 private:
  void AddResult(const ToolCallResult& result);
  // Queues the batch's end, deletes this, and returns the observer to hand
  // the final event to.
  BatchObserver* CommitAndEnd();

  const std::shared_ptr<SessionRecording> recording_;
  BatchObserver* const inner_;
  const uint64_t batch_;
  // The batch's lines as the writer renders them (writer thread only).
  const std::shared_ptr<std::string> bytes_ = std::make_shared<std::string>();
};

class Recorder final {
 public:
  // Checks `options.dir` (creating it, mode 0700, when missing) and starts
  // the writer thread. InvalidArgument naming the directory when it cannot
  // be used.
  static absl::StatusOr<std::unique_ptr<Recorder>> Create(RecordingOptions options);
  // Writes what is queued, then joins the writer.
  ~Recorder();
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  const RecordingOptions& options() const { return options_; }

  // Creates the session's file with its header and open_session event
  // (`session`: that event's "session" object). Errors: the file cannot be
  // created.
  absl::StatusOr<std::shared_ptr<SessionRecording>> Start(const std::string& session_id,
                                                          const JsonValue& session);
  // The session's recording, or null when it is not recorded (or closed).
  std::shared_ptr<SessionRecording> Find(const std::string& session_id) const;
  // Records close_session and forgets the session; returns once it is
  // written and synced. Called where the session closes (never on a
  // transport thread: CloseSession's work executor, the drain, the sweeper).
  void Close(const std::string& session_id);

  // Where `session_id`'s recording is (whether or not it exists).
  // InvalidArgument for an id that is not a session id.
  absl::StatusOr<std::string> PathOf(const std::string& session_id) const;

  // Waits until everything queued so far is written (tests, export).
  void Flush();

 private:
  friend class SessionRecording;
  struct Item {
    std::shared_ptr<SessionRecording> session;  // keeps the file open
    // Where the line is rendered: a batch's bytes, written at the batch's
    // end; null: written at once.
    std::shared_ptr<std::string> batch;
    PendingLine line;  // none: a batch's end
    bool sync = false;
  };
  explicit Recorder(RecordingOptions options) : options_(std::move(options)) {}
  // Lines queued without a wake-up of the writer, at most.
  static constexpr uint64_t kWakeEvery = 64;
  // Queues `item`; returns its ticket for WaitWritten. `wake`: the writer
  // starts on the queue now.
  uint64_t Enqueue(Item item, bool wake);
  // Returns once the item with `ticket`, and all before it, are written.
  void WaitWritten(uint64_t ticket);
  void WriterLoop();
  void Write(SessionRecording& session, const std::string& bytes, bool sync);

  const RecordingOptions options_;
  absl::Mutex mu_;
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t written_ ABSL_GUARDED_BY(mu_) = 0;
  bool wake_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
  mutable absl::Mutex sessions_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<SessionRecording>> sessions_
      ABSL_GUARDED_BY(sessions_mu_);
  std::thread writer_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_RECORDER_H_

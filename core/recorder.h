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
// The Engine owns the Recorder, which keeps a table of the open sessions'
// SessionRecordings; each of a recorded session's batches holds it too,
// through its RecordingObserver. A RecordingObserver wraps the transport's
// observer for one batch: on the thread that delivers each event it renders
// the event's line (masked JSON, written straight from the event, with no
// copy of the result and no document) into the batch's own buffer, then
// forwards the event. At the batch's end, before it forwards the last
// event, it writes the buffer with one write(2) of whole lines (a batch of
// large results also writes each time kFlushBytes have gathered). So the
// file holds a batch before its client has seen the batch end, and a
// session's batches follow each other in the file as its client sent them;
// the lines of two batches of one session run at once may interleave, each
// naming its batch. There is no writer thread: handing a batch to one cost
// more than the write(2) into the page cache. A disk that cannot keep up
// slows the recorded sessions' batches, rather than holding their lines in
// memory. Session events (the header, open and close) are written as they
// come; close_session is fsynced.
//
// A crash: every write(2) is of whole lines; a process killed while inside
// one can leave at most the last line short. Every complete line stays
// parseable and ReadRecording drops a final line without its newline (saying
// so). A crash loses at most the batch in flight; nothing is fsynced except
// at close_session.
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
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tools/runtime/file_io.h"
#include "tools/runtime/json.h"
#include "rapidjson/stringbuffer.h"
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

// Lines rendered and not yet written: each ends in '\n'; `ends` holds the
// offset just past each one.
struct RecordingLines {
  rapidjson::StringBuffer text;
  std::vector<size_t> ends;
  // Renders `event` as the next line.
  void Add(const JsonValue& event);
  // Ends the line written so far into `text` (with a writer on it).
  void EndLine();
  void Clear();
};

// One session's recording. Thread-safe.
class SessionRecording final {
 public:
  const std::string& session_id() const { return session_id_; }
  const std::string& path() const { return path_; }

  // The next batch's number (1, 2, …).
  uint64_t NextBatch() { return next_batch_.fetch_add(1) + 1; }
  // Whether the recording was cut: nothing more is written.
  bool cut() const { return cut_.load(std::memory_order_relaxed); }

  // Writes one event of its own. `sync`: fsync after.
  void WriteEvent(const JsonValue& event, bool sync = false);
  // Writes `lines` (whole lines) and clears them: every line the limit
  // admits, then, at the first it does not, the cut line and nothing after.
  void Write(RecordingLines& lines, bool sync = false);

  SessionRecording(std::string session_id, std::string path, UniqueFd fd, uint64_t max_bytes)
      : session_id_(std::move(session_id)),
        path_(std::move(path)),
        max_bytes_(max_bytes),
        fd_(std::move(fd)) {}

 private:
  // Writes what of `lines` the limit admits (and the cut line); false when
  // nothing could be written (a write failed, now or before).
  bool WriteAdmitted(const RecordingLines& lines) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One write(2) loop over `bytes`; false (logged once) when it failed.
  bool WriteOut(absl::string_view bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string session_id_;
  const std::string path_;
  const uint64_t max_bytes_;
  std::atomic<uint64_t> next_batch_{0};
  std::atomic<bool> cut_{false};
  absl::Mutex mu_;  // the file's writes and what they count
  const UniqueFd fd_;
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;  // admitted so far
  // A write failed part way, so nothing more is written (a line after a
  // partial one would not parse).
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
};

// A new event object {"type": type, "time": time}.
Json RecordingEvent(absl::string_view type, absl::Time time);

// Wraps the transport's observer of one batch (see the header comment).
// Created by the engine for a recorded session's batch; deletes itself after
// forwarding the batch's final event. If the batch never starts, its creator
// deletes it (the runner never called it).
class RecordingObserver final : public BatchObserver {
 public:
  // Past this many bytes of a batch's lines, they are written before its end.
  static constexpr size_t kFlushBytes = 1 << 20;

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
  // Adds one event of the batch (a document: the rare ones).
  void Add(const JsonValue& event);
  void AddResult(const ToolCallResult& result);
  // Writes the batch's lines, deletes this, and returns the observer to hand
  // the final event to.
  BatchObserver* WriteAndEnd();

  const std::shared_ptr<SessionRecording> recording_;
  BatchObserver* const inner_;
  const uint64_t batch_;
  absl::Mutex mu_;  // events of one batch may come from several threads
  RecordingLines lines_ ABSL_GUARDED_BY(mu_);
};

class Recorder final {
 public:
  // Checks `options.dir` (creating it, mode 0700, when missing).
  // InvalidArgument naming the directory when it cannot be used.
  static absl::StatusOr<std::unique_ptr<Recorder>> Create(RecordingOptions options);
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
  // Writes close_session, fsyncs, and forgets the session. Called where the
  // session closes (never on a transport thread: CloseSession's work
  // executor, the drain, the sweeper).
  void Close(const std::string& session_id);

  // Where `session_id`'s recording is (whether or not it exists).
  // InvalidArgument for an id that is not a session id.
  absl::StatusOr<std::string> PathOf(const std::string& session_id) const;

 private:
  explicit Recorder(RecordingOptions options) : options_(std::move(options)) {}

  const RecordingOptions options_;
  mutable absl::Mutex sessions_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<SessionRecording>> sessions_
      ABSL_GUARDED_BY(sessions_mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_RECORDER_H_

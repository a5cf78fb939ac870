// The audit log: one JSON line per tool call, appended to a file.
//
// A line: {"time", "call_id", "tool", "server_name", "session", "identity",
// "decision" ("allowed": the pre-call round let it run; "denied": a hook, the
// policy or the session refused it; "not_run": it failed before that, e.g.
// an unknown tool or invalid arguments, or was cancelled or timed out
// first), "decided_by" (what decided: for a denial "hook <name>", the
// policy's "policy <name>: rule <rule>" or "policy <name>: default
// decision", "user" for an answer to a permission request, "timeout" for
// an unanswered one, else "daemon" (the session's tool list); for an
// allowed call what the policy decided, the same or "grant" (the session
// held one), absent when nothing was decided, see core/policy.h), "args"
// (secrets redacted, long strings cut), "status", "error", "duration_ms"}.
//
// Redaction masks secret values and keeps the rest, using run_command's rule
// for secret names (command::LooksSecret): an object member whose key looks
// secret has its whole value replaced by "[redacted]"; in any string, only
// the secret part is: the VALUE of NAME=VALUE or --NAME=VALUE whose NAME looks
// secret (`X_TOKEN=[redacted] touch f`), the word after --password, the
// credential of a header whose name looks secret (`Authorization: Bearer
// [redacted]`) or after "Bearer", a URL's password
// (`https://user:[redacted]@host`), PASS in `mysql -pPASS` and in `curl -u
// user:PASS`, the value of a JSON member written out in a string
// (`{"api_token": "[redacted]"}`) whose key looks secret. Then strings, keys,
// the tool name and the call id longer than
// kMaxStringChars are cut, so a huge request makes a bounded line.
//
// Writing: the file is opened with O_APPEND at start-up. A call's thread
// queues its line (a copy into one buffer under a mutex) and goes on; one
// writer thread writes everything queued in one write(2) of whole lines, so
// lines never interleave, neither with each other nor (O_APPEND) with another
// process appending to the file, and a batch of a thousand quick calls costs a
// few writes, not a thousand. Lines are written in the order they are queued,
// moments after their result is delivered. Past kMaxQueuedBytes (a disk that
// has stalled) Write waits for room, so calls slow down and no line is
// dropped. Shutdown (the destructor) writes everything queued first. Nothing
// is fsynced: a crash of the daemon loses the lines not yet written (those
// queued in the last moments), a crash of the machine what the kernel had not
// written out. A failed write is logged (the first, then every 1000th line
// lost) and never fails a call or the daemon. Thread-safe.
#ifndef TOOLEXEC_CORE_AUDIT_LOG_H_
#define TOOLEXEC_CORE_AUDIT_LOG_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/hooks.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tools/runtime/file_io.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {

// What a masked secret becomes, in the audit log and in recordings.
inline constexpr char kRedacted[] = "[redacted]";

namespace audit_internal {
// Whether a string can hold anything the masking masks: false means it is
// kept as it is, unscanned.
bool MayHoldSecret(absl::string_view s);
// The masking's scan of every form, without that check first.
std::string MaskEveryForm(absl::string_view s);
}  // namespace audit_internal

// The audit line's "decision": who let the call run, or refused it.
struct AuditDecision {
  enum class Kind { kAllowed, kDenied, kNotRun } kind = Kind::kNotRun;
  std::string by;  // what decided; "" = nothing (no policy) or kNotRun
};

class AuditLog final {
 public:
  static constexpr size_t kMaxStringChars = 256;

  // Opens (creating, mode 0600) `path` for appending.
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(const std::string& path);

  // The line for one call, newline included.
  static std::string Line(const HookCall& call, const JsonValue* args,
                          const ToolCallResult& result, const AuditDecision& decision);
  // `args` with secrets redacted and long strings and keys cut.
  static Json Redact(const JsonValue& args);
  // A string as the log keeps it: secret parts masked, then cut.
  static std::string RedactString(absl::string_view s);
  // The same masking without the cut, for records that keep values whole
  // (session recordings, core/recorder.h): `in` into `out` (allocated with
  // `a`), and one string.
  static void MaskInto(const JsonValue& in, JsonValue& out, Json::AllocatorType& a);
  static std::string MaskString(absl::string_view s);
  // The same masking written straight to JSON text, with no copy of what
  // has nothing to mask: `in`, and one string.
  using TextWriter = rapidjson::Writer<rapidjson::StringBuffer>;
  static void WriteMasked(const JsonValue& in, TextWriter& out);
  static void WriteMasked(absl::string_view s, TextWriter& out);

  // Where Write starts to wait for the writer: a few thousand lines.
  static constexpr size_t kMaxQueuedBytes = 4 << 20;
  // Once woken, the writer waits this long for more lines, or this many
  // bytes, before it writes: the lines of a burst go in one write.
  static constexpr absl::Duration kGatherTime = absl::Milliseconds(1);
  static constexpr size_t kGatherBytes = 64 << 10;

  // Writes what is queued, then stops the writer.
  ~AuditLog();

  // Queues `line` (whole lines, newline included) for the writer. Waits only
  // while kMaxQueuedBytes are queued, and not at all with `may_wait` false
  // (a thread that must not block: the line is queued past the bound).
  void Write(absl::string_view line, bool may_wait = true);
  // Waits until every line queued before it is written (or failed).
  void Flush();

 private:
  AuditLog(std::string path, UniqueFd fd);
  void WriterLoop();
  // One write(2) loop over `bytes` (whole lines); logs a failure.
  void WriteOut(const std::string& bytes);

  const std::string path_;
  const UniqueFd fd_;  // written by the writer thread only
  uint64_t lines_lost_ = 0;  // the writer thread's
  absl::Mutex mu_;
  std::string queued_ ABSL_GUARDED_BY(mu_);
  uint64_t queued_count_ ABSL_GUARDED_BY(mu_) = 0;   // bytes ever queued
  uint64_t written_count_ ABSL_GUARDED_BY(mu_) = 0;  // of those, written or failed
  int flushing_ ABSL_GUARDED_BY(mu_) = 0;  // Flush calls waiting
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;  // last: started when the rest is ready
};

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_AUDIT_LOG_H_

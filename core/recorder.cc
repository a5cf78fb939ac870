#include "core/recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/audit_log.h"
#include "core/permissions.h"
#include "spdlog/spdlog.h"
#include "tools/runtime/executor.h"

namespace toolexec {
namespace {

// Room kept below the limit for the cut line.
constexpr uint64_t kCutReserve = 512;

void Put(JsonValue& o, const char* key, absl::string_view value, Json::AllocatorType& a) {
  o.AddMember(JsonValue(key, a), JsonValue(value.data(), static_cast<rapidjson::SizeType>(value.size()), a), a);
}
void PutMasked(JsonValue& o, const char* key, absl::string_view value, Json::AllocatorType& a) {
  Put(o, key, AuditLog::MaskString(value), a);
}
void Put(JsonValue& o, const char* key, JsonValue value, Json::AllocatorType& a) {
  o.AddMember(JsonValue(key, a), value, a);
}

// UTC, RFC 3339 with microseconds. By hand: absl::FormatTime costs more than
// the rest of a small result's line.
std::string Now() {
  const int64_t us = absl::ToUnixMicros(absl::Now());
  const time_t seconds = static_cast<time_t>(us / 1000000);
  struct tm t;
  gmtime_r(&seconds, &t);
  char buf[96];
  snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", t.tm_year + 1900, t.tm_mon + 1,
           t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, static_cast<int>(us % 1000000));
  return buf;
}

std::string EnumName(absl::string_view prefix, absl::string_view name) {
  return absl::StrCat(prefix, absl::AsciiStrToUpper(name));
}

absl::string_view ContentTypeName(ContentType t) {
  switch (t) {
    case ContentType::kPlainText: return "CONTENT_TYPE_PLAIN_TEXT";
    case ContentType::kJson: return "CONTENT_TYPE_JSON";
    case ContentType::kMarkdown: return "CONTENT_TYPE_MARKDOWN";
    case ContentType::kYaml: return "CONTENT_TYPE_YAML";
    case ContentType::kXml: return "CONTENT_TYPE_XML";
    case ContentType::kAuto: return "CONTENT_TYPE_AUTO";
  }
  return "CONTENT_TYPE_PLAIN_TEXT";
}

bool IsSessionId(absl::string_view id) {
  if (id.empty() || id.size() > 128 || id[0] == '.') return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_') return false;
  }
  return true;
}

}  // namespace

Json RecordingEvent(absl::string_view type, Json::AllocatorType* pool) {
  Json e(pool);
  e.SetObject();
  auto& a = e.GetAllocator();
  Put(e, "type", type, a);
  Put(e, "time", Now(), a);
  return e;
}

void ResultToRecordingJson(const ToolCallResult& r, JsonValue& out, Json::AllocatorType& a) {
  out.SetObject();
  Put(out, "index", JsonValue(r.index), a);
  Put(out, "id", r.id, a);
  Put(out, "name", r.name, a);
  Put(out, "step_id", r.step_id, a);
  Put(out, "status", EnumName("RESULT_STATUS_", ResultStatusName(r.status)), a);
  JsonValue payload;
  AuditLog::MaskInto(r.payload, payload, a);
  Put(out, "payload", std::move(payload), a);
  PutMasked(out, "error_message", r.error_message, a);
  if (r.error.has_value()) {
    JsonValue e(rapidjson::kObjectType);
    PutMasked(e, "message", r.error->message, a);
    Put(e, "tool_name", r.error->tool_name, a);
    Put(e, "server_name", r.error->server_name, a);
    Put(e, "code", EnumName("ERROR_CODE_", ErrorCodeName(r.error->code)), a);
    Put(e, "call_id", r.id, a);
    Put(e, "step_id", r.step_id, a);
    Put(out, "exception", std::move(e), a);
  }
  JsonValue actions(rapidjson::kObjectType);
  JsonValue state(rapidjson::kObjectType);
  if (r.actions.state_delta.IsObject()) AuditLog::MaskInto(r.actions.state_delta, state, a);
  Put(actions, "state_delta", std::move(state), a);
  JsonValue artifacts(rapidjson::kObjectType);
  for (const auto& [name, version] : r.actions.artifact_delta) {
    artifacts.AddMember(JsonValue(name, a), JsonValue(static_cast<int64_t>(version)), a);
  }
  Put(actions, "artifact_delta", std::move(artifacts), a);
  Put(actions, "escalate", JsonValue(r.actions.escalate), a);
  Put(actions, "skip_summarization", JsonValue(r.actions.skip_summarization), a);
  Put(actions, "transfer_to_agent", r.actions.transfer_to_agent, a);
  Put(out, "actions", std::move(actions), a);
  JsonValue display(rapidjson::kObjectType);
  Put(display, "title", r.display.title, a);
  PutMasked(display, "content", r.display.content, a);
  Put(display, "content_type", ContentTypeName(r.display.content_type), a);
  Put(display, "is_truncated", JsonValue(r.display.is_truncated), a);
  Put(display, "full_length", JsonValue(static_cast<uint64_t>(r.display.full_length)), a);
  Put(out, "display", std::move(display), a);
  PutMasked(out, "compact_summary", r.compact_summary, a);
  Put(out, "duration", JsonValue(absl::ToDoubleSeconds(r.duration)), a);
  PutMasked(out, "model_content", r.model_content, a);
}

// ---- SessionRecording --------------------------------------------------------

void SessionRecording::AppendLine(std::string* chunk, std::string line) {
  if (cut_.load(std::memory_order_relaxed)) return;
  const uint64_t size = line.size() + 1;
  const uint64_t after = bytes_.fetch_add(size, std::memory_order_relaxed) + size;
  if (after + kCutReserve > max_bytes_) {
    if (cut_.exchange(true)) return;
    Json cut = RecordingEvent("cut");
    auto& a = cut.GetAllocator();
    Put(cut, "bytes", JsonValue(static_cast<uint64_t>(max_bytes_)), a);
    Put(cut, "reason",
        absl::StrCat("the recording reached recording.max_bytes_per_session (", max_bytes_,
                     " bytes): later events are not recorded; the session went on"),
        a);
    absl::StrAppend(chunk, ToJsonString(cut), "\n");
    return;
  }
  absl::StrAppend(chunk, line, "\n");
}

void SessionRecording::Commit(std::string chunk, bool sync) {
  if (chunk.empty() && !sync) return;
  recorder_->Enqueue({shared_from_this(), std::move(chunk), sync});
}

void SessionRecording::RecordEvent(Json event, bool sync) {
  std::string chunk;
  AppendLine(&chunk, ToJsonString(event));
  Commit(std::move(chunk), sync);
}

// ---- RecordingObserver -------------------------------------------------------

RecordingObserver::RecordingObserver(std::shared_ptr<SessionRecording> recording,
                                     BatchObserver* inner, const std::vector<CallRequest>& calls,
                                     std::optional<absl::Duration> timeout,
                                     uint32_t model_content_max_chars)
    : recording_(std::move(recording)), inner_(inner), batch_(recording_->NextBatch()) {
  char buffer[16384];
  Json::AllocatorType pool(buffer, sizeof(buffer));
  Json e = RecordingEvent("batch", &pool);
  auto& a = e.GetAllocator();
  Put(e, "batch", JsonValue(static_cast<uint64_t>(batch_)), a);
  JsonValue list(rapidjson::kArrayType);
  for (size_t i = 0; i < calls.size(); ++i) {
    const CallRequest& c = calls[i];
    JsonValue call(rapidjson::kObjectType);
    Put(call, "index", JsonValue(static_cast<uint64_t>(i)), a);
    Put(call, "id", c.id, a);
    Put(call, "name", c.name, a);
    Put(call, "step_id", c.step_id, a);
    if (c.args.has_value()) {
      JsonValue args;
      AuditLog::MaskInto(*c.args, args, a);
      Put(call, "args", std::move(args), a);
    } else if (auto parsed = ParseJson(c.args_json); parsed.ok() && !c.args_json.empty()) {
      JsonValue args;
      AuditLog::MaskInto(*parsed, args, a);
      Put(call, "args", std::move(args), a);
    } else if (!c.args_json.empty()) {
      PutMasked(call, "args_json", c.args_json, a);
    } else {
      Put(call, "args", JsonValue(rapidjson::kObjectType), a);
    }
    list.PushBack(call, a);
  }
  Put(e, "calls", std::move(list), a);
  if (timeout.has_value()) {
    Put(e, "timeout_ms", JsonValue(static_cast<int64_t>(absl::ToInt64Milliseconds(*timeout))), a);
  }
  Put(e, "model_content_max_chars", JsonValue(model_content_max_chars), a);
  absl::MutexLock lock(&mu_);
  recording_->AppendLine(&chunk_, ToJsonString(e));
}

void RecordingObserver::OnPermissionRequest(const PermissionRequestEvent& event) {
  Json e = RecordingEvent("permission_request");
  auto& a = e.GetAllocator();
  Put(e, "batch", JsonValue(static_cast<uint64_t>(batch_)), a);
  JsonValue r(rapidjson::kObjectType);
  Put(r, "request_id", event.request_id, a);
  Put(r, "index", JsonValue(event.index), a);
  Put(r, "tool_name", event.tool_name, a);
  JsonValue target(rapidjson::kObjectType);
  Put(target, "kind", PermissionKindName(event.target.kind), a);
  PutMasked(target, "value", event.target.value, a);
  Put(target, "recursive", JsonValue(event.target.recursive), a);
  Put(r, "target", std::move(target), a);
  Put(r, "level", PermissionLevelName(event.target.level), a);
  PutMasked(r, "description", event.description, a);
  PutMasked(r, "reason", event.reason, a);
  Put(e, "request", std::move(r), a);
  {
    absl::MutexLock lock(&mu_);
    recording_->AppendLine(&chunk_, ToJsonString(e));
  }
  inner_->OnPermissionRequest(event);
}

void RecordingObserver::OnPermissionAnswer(const std::string& request_id,
                                           absl::string_view decision,
                                           const std::string& reason) {
  Json e = RecordingEvent("permission_answer");
  auto& a = e.GetAllocator();
  Put(e, "batch", JsonValue(static_cast<uint64_t>(batch_)), a);
  Put(e, "request_id", request_id, a);
  Put(e, "decision", decision, a);
  PutMasked(e, "reason", reason, a);
  {
    absl::MutexLock lock(&mu_);
    recording_->AppendLine(&chunk_, ToJsonString(e));
  }
  inner_->OnPermissionAnswer(request_id, decision, reason);
}

void RecordingObserver::OnCheckpoint(const CheckpointEvent& event) {
  Json e = RecordingEvent("checkpoint");
  auto& a = e.GetAllocator();
  Put(e, "batch", JsonValue(static_cast<uint64_t>(batch_)), a);
  JsonValue c(rapidjson::kObjectType);
  Put(c, "id", event.id, a);
  Put(c, "session_id", event.session_id, a);
  Put(c, "batch_id", event.batch_id, a);
  Put(c, "created_at", absl::FormatTime(absl::RFC3339_full, event.created_at, absl::UTCTimeZone()), a);
  JsonValue tools(rapidjson::kArrayType);
  for (const std::string& t : event.tools) {
    tools.PushBack(JsonValue(t.data(), static_cast<rapidjson::SizeType>(t.size()), a), a);
  }
  Put(c, "tools", std::move(tools), a);
  Put(c, "files_changed", JsonValue(event.files_changed), a);
  Put(c, "bytes_stored", JsonValue(event.bytes_stored), a);
  Put(e, "checkpoint", std::move(c), a);
  {
    absl::MutexLock lock(&mu_);
    recording_->AppendLine(&chunk_, ToJsonString(e));
  }
  inner_->OnCheckpoint(event);
}

void RecordingObserver::AddResult(const ToolCallResult& result) {
  // A small result's event fits on the stack: no heap block per result.
  char buffer[16384];
  Json::AllocatorType pool(buffer, sizeof(buffer));
  Json e = RecordingEvent("result", &pool);
  auto& a = e.GetAllocator();
  Put(e, "batch", JsonValue(static_cast<uint64_t>(batch_)), a);
  JsonValue r;
  ResultToRecordingJson(result, r, a);
  Put(e, "result", std::move(r), a);
  absl::MutexLock lock(&mu_);
  recording_->AppendLine(&chunk_, ToJsonString(e));
}

void RecordingObserver::OnResult(ToolCallResult result) {
  AddResult(result);
  inner_->OnResult(std::move(result));
}

void RecordingObserver::OnLastResult(ToolCallResult result) {
  AddResult(result);
  CommitAndEnd()->OnLastResult(std::move(result));
}

void RecordingObserver::OnBatchDone() { CommitAndEnd()->OnBatchDone(); }

BatchObserver* RecordingObserver::CommitAndEnd() {
  std::string chunk;
  {
    absl::MutexLock lock(&mu_);
    chunk.swap(chunk_);
  }
  recording_->Commit(std::move(chunk));
  // The inner observer may end the whole call (and its owner) in the last
  // event: nothing of this object is touched after it.
  BatchObserver* inner = inner_;
  delete this;
  return inner;
}

// ---- Recorder ----------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Recorder>> Recorder::Create(RecordingOptions options) {
  if (options.dir.empty()) return absl::InvalidArgumentError("recording.dir is empty");
  if (absl::Status made = MakeDirectories(options.dir, 0700); !made.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("recording.dir ", options.dir, ": cannot create it: ", made.message()));
  }
  struct stat st;
  if (stat(options.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat("recording.dir ", options.dir, " is not a directory"));
  }
  if (access(options.dir.c_str(), W_OK | X_OK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("recording.dir ", options.dir,
                                                   ": cannot write there: ", ErrnoText(errno)));
  }
  std::unique_ptr<Recorder> recorder(new Recorder(std::move(options)));
  auto thread = StartThread([r = recorder.get()] { r->WriterLoop(); });
  if (!thread.ok()) return thread.status();
  recorder->writer_ = *std::move(thread);
  return recorder;
}

Recorder::~Recorder() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  if (writer_.joinable()) writer_.join();
}

absl::StatusOr<std::string> Recorder::PathOf(const std::string& session_id) const {
  if (!IsSessionId(session_id)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", session_id, "' is not a session id (OpenSession's session_id)"));
  }
  return absl::StrCat(options_.dir, "/", session_id, ".jsonl");
}

absl::StatusOr<std::shared_ptr<SessionRecording>> Recorder::Start(const std::string& session_id,
                                                                   const JsonValue& session) {
  auto path = PathOf(session_id);
  if (!path.ok()) return path.status();
  int fd = open(path->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOCTTY,
                0600);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot create the recording ", *path, ": ", ErrnoText(errno)));
  }
  auto rec = std::make_shared<SessionRecording>(this, session_id, *path, UniqueFd(fd),
                                                options_.max_bytes_per_session);
  {
    absl::MutexLock lock(&sessions_mu_);
    sessions_[session_id] = rec;
  }
  Json header = MakeObject();
  auto& a = header.GetAllocator();
  Put(header, "format", kRecordingFormatVersion, a);
  Put(header, "session_id", session_id, a);
  Put(header, "created_at", Now(), a);
  Put(header, "producer", options_.producer, a);
  Json open = RecordingEvent("open_session");
  JsonValue copy;
  copy.CopyFrom(session, open.GetAllocator());
  Put(open, "session", std::move(copy), open.GetAllocator());
  std::string chunk;
  rec->AppendLine(&chunk, ToJsonString(header));
  rec->AppendLine(&chunk, ToJsonString(open));
  rec->Commit(std::move(chunk));
  return rec;
}

std::shared_ptr<SessionRecording> Recorder::Find(const std::string& session_id) const {
  absl::MutexLock lock(&sessions_mu_);
  auto it = sessions_.find(session_id);
  return it == sessions_.end() ? nullptr : it->second;
}

void Recorder::Close(const std::string& session_id) {
  std::shared_ptr<SessionRecording> rec = Find(session_id);
  if (rec == nullptr) return;
  std::string chunk;
  rec->AppendLine(&chunk, ToJsonString(RecordingEvent("close_session")));
  rec->Commit(std::move(chunk), /*sync=*/true);
  {
    absl::MutexLock lock(&sessions_mu_);
    sessions_.erase(session_id);
  }
  // On disk (synced) by the time the session's close is answered.
  Flush();
}

void Recorder::Enqueue(Chunk chunk) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(chunk));
  ++queued_;
}

void Recorder::Flush() {
  absl::MutexLock lock(&mu_);
  const uint64_t target = queued_;
  auto done = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return written_ >= target; };
  mu_.Await(absl::Condition(&done));
}

void Recorder::WriterLoop() {
  for (;;) {
    Chunk chunk;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !queue_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) return;  // stopping, everything written
      chunk = std::move(queue_.front());
      queue_.pop_front();
    }
    Write(*chunk.session, chunk.bytes, chunk.sync);
    chunk.session.reset();  // the last owner closes the file, off the lock
    absl::MutexLock lock(&mu_);
    ++written_;
  }
}

void Recorder::Write(SessionRecording& session, const std::string& bytes, bool sync) {
  if (session.broken_) return;
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(session.fd_.get(), bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    int err = n < 0 ? errno : ENOSPC;
    session.broken_ = true;
    absl::MutexLock lock(&mu_);
    if (failures_++ % 1000 == 0) {
      spdlog::error("recording {}: {} bytes could not be written ({}); {} write(s) failed so far",
                    session.path(), bytes.size() - done, ErrnoText(err), failures_);
    }
    return;
  }
  if (sync) fsync(session.fd_.get());
}

}  // namespace toolexec

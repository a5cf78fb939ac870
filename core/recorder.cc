#include "core/recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <optional>
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
std::string TimeText(absl::Time time) {
  const int64_t us = absl::ToUnixMicros(time);
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

// What a result event needs, kept by the delivering thread for the writer
// (the result itself goes on to the transport).
ToolCallResult CopyOf(const ToolCallResult& r) {
  ToolCallResult c;
  c.index = r.index;
  c.id = r.id;
  c.name = r.name;
  c.called_as = r.called_as;
  c.item_type = r.item_type;
  c.step_id = r.step_id;
  c.status = r.status;
  c.payload = CopyJson(r.payload);
  c.error_message = r.error_message;
  c.error = r.error;
  c.actions.state_delta = CopyJson(r.actions.state_delta);
  c.actions.artifact_delta = r.actions.artifact_delta;
  c.actions.escalate = r.actions.escalate;
  c.actions.skip_summarization = r.actions.skip_summarization;
  c.actions.transfer_to_agent = r.actions.transfer_to_agent;
  c.display = r.display;
  c.compact_summary = r.compact_summary;
  c.model_content = r.model_content;
  c.duration = r.duration;
  return c;
}

// A call of a batch event, as the caller sent it.
struct SentCall {
  std::string id;
  std::string name;
  std::string called_as;
  std::string item_type;
  std::string step_id;
  std::optional<Json> args;
  std::string args_json;
};

// A line already rendered.
PendingLine Rendered(std::string line) {
  return [line = std::move(line)]() mutable { return std::move(line); };
}

bool IsSessionId(absl::string_view id) {
  if (id.empty() || id.size() > 128 || id[0] == '.') return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_') return false;
  }
  return true;
}

}  // namespace

Json RecordingEvent(absl::string_view type, absl::Time time, Json::AllocatorType* pool) {
  Json e(pool);
  e.SetObject();
  auto& a = e.GetAllocator();
  Put(e, "type", type, a);
  Put(e, "time", TimeText(time), a);
  return e;
}

void ResultToRecordingJson(const ToolCallResult& r, JsonValue& out, Json::AllocatorType& a) {
  out.SetObject();
  Put(out, "index", JsonValue(r.index), a);
  Put(out, "id", r.id, a);
  Put(out, "name", r.name, a);
  if (!r.called_as.empty()) Put(out, "called_as", r.called_as, a);
  if (!r.item_type.empty()) Put(out, "item_type", r.item_type, a);
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

void SessionRecording::AppendLine(std::string* bytes, std::string line) {
  if (cut_) return;
  bytes_ += line.size() + 1;
  if (bytes_ + kCutReserve > max_bytes_) {
    cut_ = true;
    Json cut = RecordingEvent("cut", absl::Now());
    auto& a = cut.GetAllocator();
    Put(cut, "bytes", JsonValue(static_cast<uint64_t>(max_bytes_)), a);
    Put(cut, "reason",
        absl::StrCat("the recording reached recording.max_bytes_per_session (", max_bytes_,
                     " bytes): later events are not recorded; the session went on"),
        a);
    absl::StrAppend(bytes, ToJsonString(cut), "\n");
    return;
  }
  absl::StrAppend(bytes, line, "\n");
}

void SessionRecording::RecordEvent(Json event, bool sync) {
  recorder_->Enqueue({shared_from_this(), nullptr,
                      [event = std::move(event)] { return ToJsonString(event); }, sync},
                     /*wake=*/true);
}

void SessionRecording::AddToBatch(const std::shared_ptr<std::string>& batch, PendingLine line) {
  recorder_->Enqueue({shared_from_this(), batch, std::move(line)}, /*wake=*/false);
}

void SessionRecording::EndBatch(const std::shared_ptr<std::string>& batch) {
  last_batch_ticket_.store(recorder_->Enqueue({shared_from_this(), batch, nullptr}, /*wake=*/true));
}

void SessionRecording::WaitForLastBatch() {
  if (const uint64_t ticket = last_batch_ticket_.load(); ticket != 0) {
    recorder_->WaitWritten(ticket);
  }
}

// ---- RecordingObserver -------------------------------------------------------

RecordingObserver::RecordingObserver(std::shared_ptr<SessionRecording> recording,
                                     BatchObserver* inner, const std::vector<CallRequest>& calls,
                                     std::optional<absl::Duration> timeout,
                                     uint32_t model_content_max_chars)
    : recording_(std::move(recording)), inner_(inner), batch_(recording_->NextBatch()) {
  recording_->WaitForLastBatch();
  std::vector<SentCall> sent;
  sent.reserve(calls.size());
  for (const CallRequest& c : calls) {
    sent.push_back({c.id, c.name, c.called_as, c.item_type, c.step_id,
                    c.args.has_value() ? std::optional<Json>(CopyJson(*c.args)) : std::nullopt,
                    c.args_json});
  }
  recording_->AddToBatch(bytes_, [batch = batch_, time = absl::Now(), sent = std::move(sent), timeout,
       model_content_max_chars] {
    char buffer[16384];
    Json::AllocatorType pool(buffer, sizeof(buffer));
    Json e = RecordingEvent("batch", time, &pool);
    auto& a = e.GetAllocator();
    Put(e, "batch", JsonValue(static_cast<uint64_t>(batch)), a);
    JsonValue list(rapidjson::kArrayType);
    for (size_t i = 0; i < sent.size(); ++i) {
      const SentCall& c = sent[i];
      JsonValue call(rapidjson::kObjectType);
      Put(call, "index", JsonValue(static_cast<uint64_t>(i)), a);
      Put(call, "id", c.id, a);
      Put(call, "name", c.name, a);
      if (!c.called_as.empty()) Put(call, "called_as", c.called_as, a);
      if (!c.item_type.empty()) Put(call, "item_type", c.item_type, a);
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
      Put(e, "timeout_ms",
          JsonValue(static_cast<int64_t>(absl::ToInt64Milliseconds(*timeout))), a);
    }
    Put(e, "model_content_max_chars", JsonValue(model_content_max_chars), a);
    return ToJsonString(e);
  });
}

// Permission and checkpoint events are few: rendered where they happen.
void RecordingObserver::OnPermissionRequest(const PermissionRequestEvent& event) {
  Json e = RecordingEvent("permission_request", absl::Now());
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
  recording_->AddToBatch(bytes_, Rendered(ToJsonString(e)));
  inner_->OnPermissionRequest(event);
}

void RecordingObserver::OnPermissionAnswer(const std::string& request_id,
                                           absl::string_view decision,
                                           const std::string& reason) {
  Json e = RecordingEvent("permission_answer", absl::Now());
  auto& a = e.GetAllocator();
  Put(e, "batch", JsonValue(static_cast<uint64_t>(batch_)), a);
  Put(e, "request_id", request_id, a);
  Put(e, "decision", decision, a);
  PutMasked(e, "reason", reason, a);
  recording_->AddToBatch(bytes_, Rendered(ToJsonString(e)));
  inner_->OnPermissionAnswer(request_id, decision, reason);
}

void RecordingObserver::OnCheckpoint(const CheckpointEvent& event) {
  Json e = RecordingEvent("checkpoint", absl::Now());
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
  recording_->AddToBatch(bytes_, Rendered(ToJsonString(e)));
  inner_->OnCheckpoint(event);
}

void RecordingObserver::AddResult(const ToolCallResult& result) {
  recording_->AddToBatch(bytes_, [batch = batch_, time = absl::Now(), r = CopyOf(result)] {
    // A small result's event fits on the stack: no heap block per result.
    char buffer[16384];
    Json::AllocatorType pool(buffer, sizeof(buffer));
    Json e = RecordingEvent("result", time, &pool);
    auto& a = e.GetAllocator();
    Put(e, "batch", JsonValue(static_cast<uint64_t>(batch)), a);
    JsonValue out;
    ResultToRecordingJson(r, out, a);
    Put(e, "result", std::move(out), a);
    return ToJsonString(e);
  });
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
  recording_->EndBatch(bytes_);
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
  Put(header, "created_at", TimeText(absl::Now()), a);
  Put(header, "producer", options_.producer, a);
  Json open = RecordingEvent("open_session", absl::Now());
  JsonValue copy;
  copy.CopyFrom(session, open.GetAllocator());
  Put(open, "session", std::move(copy), open.GetAllocator());
  rec->RecordEvent(std::move(header));
  rec->RecordEvent(std::move(open));
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
  rec->RecordEvent(RecordingEvent("close_session", absl::Now()), /*sync=*/true);
  {
    absl::MutexLock lock(&sessions_mu_);
    sessions_.erase(session_id);
  }
  // On disk (synced) by the time the session's close is answered.
  Flush();
}

uint64_t Recorder::Enqueue(Item item, bool wake) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(item));
  // The writer's condition is judged when the lock is let go: while it is
  // false the writer sleeps on, and no wake-up is paid.
  if (wake || queue_.size() >= kWakeEvery) wake_ = true;
  return ++queued_;
}

void Recorder::WaitWritten(uint64_t ticket) {
  absl::MutexLock lock(&mu_);
  // What the ticket waits for may be queued without a wake-up.
  if (written_ < ticket) wake_ = true;
  auto done = [this, ticket]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return written_ >= ticket; };
  mu_.Await(absl::Condition(&done));
}

void Recorder::Flush() {
  uint64_t ticket;
  {
    absl::MutexLock lock(&mu_);
    ticket = queued_;
  }
  WaitWritten(ticket);
}

void Recorder::WriterLoop() {
  std::deque<Item> items;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      written_ += items.size();
      items.clear();
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || wake_; };
      mu_.Await(absl::Condition(&ready));
      if (queue_.empty()) {
        wake_ = false;
        if (stop_) return;  // everything written
        continue;
      }
      items.swap(queue_);
      wake_ = false;
    }
    std::string now;
    for (Item& item : items) {
      SessionRecording& session = *item.session;
      std::string& bytes = item.batch != nullptr ? *item.batch : now;
      // Past the cut nothing more is rendered.
      if (item.line != nullptr && !session.cut_) session.AppendLine(&bytes, item.line());
      if (item.batch == nullptr || item.line == nullptr) {
        Write(session, bytes, item.sync);
        bytes.clear();
      }
      item.line = nullptr;  // what the line kept goes now, off the lock
    }
    // The last owners of sessions close their files here, off the lock.
    for (Item& item : items) item.session.reset();
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

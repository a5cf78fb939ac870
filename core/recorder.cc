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

using TextWriter = AuditLog::TextWriter;

void Key(TextWriter& w, absl::string_view key) {
  w.Key(key.data(), static_cast<rapidjson::SizeType>(key.size()));
}
void Str(TextWriter& w, absl::string_view key, absl::string_view value) {
  Key(w, key);
  w.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
}
void Masked(TextWriter& w, absl::string_view key, absl::string_view value) {
  Key(w, key);
  AuditLog::WriteMasked(value, w);
}

// Starts an event's object: {"type": type, "time": time, "batch": batch, …
void StartEvent(TextWriter& w, absl::string_view type, absl::Time time, uint64_t batch) {
  w.StartObject();
  Str(w, "type", type);
  Str(w, "time", TimeText(time));
  Key(w, "batch");
  w.Uint64(batch);
}

// The "result" member's ToolResult (see the header comment), masked.
void WriteResult(TextWriter& w, const ToolCallResult& r) {
  w.StartObject();
  Key(w, "index");
  w.Uint(r.index);
  Str(w, "id", r.id);
  Str(w, "name", r.name);
  if (!r.called_as.empty()) Str(w, "called_as", r.called_as);
  if (!r.item_type.empty()) Str(w, "item_type", r.item_type);
  Str(w, "step_id", r.step_id);
  Str(w, "status", EnumName("RESULT_STATUS_", ResultStatusName(r.status)));
  Key(w, "payload");
  AuditLog::WriteMasked(r.payload, w);
  Masked(w, "error_message", r.error_message);
  if (r.error.has_value()) {
    Key(w, "exception");
    w.StartObject();
    Masked(w, "message", r.error->message);
    Str(w, "tool_name", r.error->tool_name);
    Str(w, "server_name", r.error->server_name);
    Str(w, "code", EnumName("ERROR_CODE_", ErrorCodeName(r.error->code)));
    Str(w, "call_id", r.id);
    Str(w, "step_id", r.step_id);
    w.EndObject();
  }
  Key(w, "actions");
  w.StartObject();
  Key(w, "state_delta");
  if (r.actions.state_delta.IsObject()) {
    AuditLog::WriteMasked(r.actions.state_delta, w);
  } else {
    w.StartObject();
    w.EndObject();
  }
  Key(w, "artifact_delta");
  w.StartObject();
  for (const auto& [name, version] : r.actions.artifact_delta) {
    Key(w, name);
    w.Int64(static_cast<int64_t>(version));
  }
  w.EndObject();
  Key(w, "escalate");
  w.Bool(r.actions.escalate);
  Key(w, "skip_summarization");
  w.Bool(r.actions.skip_summarization);
  Str(w, "transfer_to_agent", r.actions.transfer_to_agent);
  w.EndObject();
  Key(w, "display");
  w.StartObject();
  Str(w, "title", r.display.title);
  Masked(w, "content", r.display.content);
  Str(w, "content_type", ContentTypeName(r.display.content_type));
  Key(w, "is_truncated");
  w.Bool(r.display.is_truncated);
  Key(w, "full_length");
  w.Uint64(static_cast<uint64_t>(r.display.full_length));
  w.EndObject();
  Masked(w, "compact_summary", r.compact_summary);
  Key(w, "duration");
  w.Double(absl::ToDoubleSeconds(r.duration));
  Masked(w, "model_content", r.model_content);
  w.EndObject();
}

bool IsSessionId(absl::string_view id) {
  if (id.empty() || id.size() > 128 || id[0] == '.') return false;
  for (char c : id) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_') return false;
  }
  return true;
}

}  // namespace

Json RecordingEvent(absl::string_view type, absl::Time time) {
  Json e = MakeObject();
  auto& a = e.GetAllocator();
  Put(e, "type", type, a);
  Put(e, "time", TimeText(time), a);
  return e;
}

// ---- RecordingLines ----------------------------------------------------------

void RecordingLines::Add(const JsonValue& event) {
  TextWriter w(text);
  event.Accept(w);
  EndLine();
}

void RecordingLines::EndLine() {
  text.Put('\n');
  ends.push_back(text.GetSize());
}

void RecordingLines::Clear() {
  text.Clear();
  ends.clear();
}

// ---- SessionRecording --------------------------------------------------------

void SessionRecording::WriteEvent(const JsonValue& event, bool sync) {
  RecordingLines lines;
  lines.Add(event);
  Write(lines, sync);
}

void SessionRecording::Write(RecordingLines& lines, bool sync) {
  bool written = false;
  {
    absl::MutexLock lock(&mu_);
    written = WriteAdmitted(lines);
    lines.Clear();
  }
  // The file is closed only with this object, so the sync needs no lock: a
  // close_session's sync does not hold up a batch writing meanwhile. A cut
  // recording is synced too (what it holds is all there will be).
  if (written && sync) fsync(fd_.get());
}

bool SessionRecording::WriteAdmitted(const RecordingLines& lines) {
  if (broken_) return false;
  if (cut()) return true;
  // The lines the limit admits, then the cut line in place of the first it
  // does not.
  size_t admitted = 0;
  for (size_t end : lines.ends) {
    if (bytes_ + (end - admitted) + kCutReserve > max_bytes_) break;
    bytes_ += end - admitted;
    admitted = end;
  }
  const absl::string_view text(lines.text.GetString(), lines.text.GetSize());
  if (!WriteOut(text.substr(0, admitted))) return false;
  if (admitted == text.size()) return true;
  cut_.store(true, std::memory_order_relaxed);
  Json cut = RecordingEvent("cut", absl::Now());
  auto& a = cut.GetAllocator();
  Put(cut, "bytes", JsonValue(static_cast<uint64_t>(max_bytes_)), a);
  Put(cut, "reason",
      absl::StrCat("the recording reached recording.max_bytes_per_session (", max_bytes_,
                   " bytes): later events are not recorded; the session went on"),
      a);
  return WriteOut(absl::StrCat(ToJsonString(cut), "\n"));
}

bool SessionRecording::WriteOut(absl::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd_.get(), bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    broken_ = true;
    spdlog::error("recording {}: {} bytes could not be written ({}); nothing more is recorded "
                  "for this session",
                  path_, bytes.size() - done, ErrnoText(n < 0 ? errno : ENOSPC));
    return false;
  }
  return true;
}

// ---- RecordingObserver -------------------------------------------------------

RecordingObserver::RecordingObserver(std::shared_ptr<SessionRecording> recording,
                                     BatchObserver* inner, const std::vector<CallRequest>& calls,
                                     std::optional<absl::Duration> timeout,
                                     uint32_t model_content_max_chars)
    : recording_(std::move(recording)), inner_(inner), batch_(recording_->NextBatch()) {
  if (recording_->cut()) return;
  absl::MutexLock lock(&mu_);
  TextWriter w(lines_.text);
  StartEvent(w, "batch", absl::Now(), batch_);
  Key(w, "calls");
  w.StartArray();
  for (size_t i = 0; i < calls.size(); ++i) {
    const CallRequest& c = calls[i];
    w.StartObject();
    Key(w, "index");
    w.Uint64(i);
    Str(w, "id", c.id);
    Str(w, "name", c.name);
    if (!c.called_as.empty()) Str(w, "called_as", c.called_as);
    if (!c.item_type.empty()) Str(w, "item_type", c.item_type);
    Str(w, "step_id", c.step_id);
    if (c.args.has_value()) {
      Key(w, "args");
      AuditLog::WriteMasked(*c.args, w);
    } else if (c.args_json.empty()) {
      Key(w, "args");
      w.StartObject();
      w.EndObject();
    } else if (auto parsed = ParseJson(c.args_json); parsed.ok()) {
      Key(w, "args");
      AuditLog::WriteMasked(*parsed, w);
    } else {
      Masked(w, "args_json", c.args_json);
    }
    w.EndObject();
  }
  w.EndArray();
  if (timeout.has_value()) {
    Key(w, "timeout_ms");
    w.Int64(absl::ToInt64Milliseconds(*timeout));
  }
  Key(w, "model_content_max_chars");
  w.Uint(model_content_max_chars);
  w.EndObject();
  lines_.EndLine();
}

void RecordingObserver::Add(const JsonValue& event) {
  absl::MutexLock lock(&mu_);
  lines_.Add(event);
}

// Permission and checkpoint events are few: built as documents.
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
  Add(e);
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
  Add(e);
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
  Add(e);
  inner_->OnCheckpoint(event);
}

void RecordingObserver::AddResult(const ToolCallResult& result) {
  // Past the cut nothing more is rendered.
  if (recording_->cut()) return;
  const absl::Time time = absl::Now();
  absl::MutexLock lock(&mu_);
  TextWriter w(lines_.text);
  StartEvent(w, "result", time, batch_);
  Key(w, "result");
  WriteResult(w, result);
  w.EndObject();
  lines_.EndLine();
  if (lines_.text.GetSize() >= kFlushBytes) recording_->Write(lines_);
}

void RecordingObserver::OnResult(ToolCallResult result) {
  AddResult(result);
  inner_->OnResult(std::move(result));
}

void RecordingObserver::OnLastResult(ToolCallResult result) {
  AddResult(result);
  WriteAndEnd()->OnLastResult(std::move(result));
}

void RecordingObserver::OnBatchDone() { WriteAndEnd()->OnBatchDone(); }

BatchObserver* RecordingObserver::WriteAndEnd() {
  {
    absl::MutexLock lock(&mu_);
    recording_->Write(lines_);
  }
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
  return std::unique_ptr<Recorder>(new Recorder(std::move(options)));
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
  auto rec = std::make_shared<SessionRecording>(session_id, *path, UniqueFd(fd),
                                                options_.max_bytes_per_session);
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
  RecordingLines lines;
  lines.Add(header);
  lines.Add(open);
  rec->Write(lines);
  {
    absl::MutexLock lock(&sessions_mu_);
    sessions_[session_id] = rec;
  }
  return rec;
}

std::shared_ptr<SessionRecording> Recorder::Find(const std::string& session_id) const {
  absl::MutexLock lock(&sessions_mu_);
  auto it = sessions_.find(session_id);
  return it == sessions_.end() ? nullptr : it->second;
}

void Recorder::Close(const std::string& session_id) {
  std::shared_ptr<SessionRecording> rec;
  {
    absl::MutexLock lock(&sessions_mu_);
    auto it = sessions_.find(session_id);
    if (it == sessions_.end()) return;
    rec = std::move(it->second);
    sessions_.erase(it);
  }
  // On disk (synced) by the time the session's close is answered.
  rec->WriteEvent(RecordingEvent("close_session", absl::Now()), /*sync=*/true);
}

}  // namespace toolexec

#include "core/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"
#include "tools/builtin/command/environment.h"
#include "tools/builtin/command/result.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

constexpr char kRedacted[] = "[redacted]";

// A string as the log keeps it: redacted when it holds a secret, cut when long.
std::string RedactString(absl::string_view s) {
  if (command::ValueHasUrlPassword(s)) return kRedacted;
  if (size_t eq = s.find('='); eq != absl::string_view::npos && eq > 0 &&
                               command::LooksSecret(s.substr(0, eq))) {
    return absl::StrCat(s.substr(0, eq), "=", kRedacted);  // "NAME=value", as run_command's env
  }
  const size_t keep = Utf8PrefixBytes(s, AuditLog::kMaxStringChars);
  if (keep == s.size()) return std::string(s);
  return absl::StrCat(s.substr(0, keep), "...[", s.size() - keep, " more bytes]");
}

void RedactInto(const JsonValue& in, JsonValue& out, Json::AllocatorType& a) {
  if (in.IsObject()) {
    out.SetObject();
    for (auto m = in.MemberBegin(); m != in.MemberEnd(); ++m) {
      JsonValue key(m->name, a);
      JsonValue value;
      if (command::LooksSecret(m->name.GetString())) {
        value.SetString(kRedacted, a);
      } else {
        RedactInto(m->value, value, a);
      }
      out.AddMember(key, value, a);
    }
  } else if (in.IsArray()) {
    out.SetArray();
    for (const auto& item : in.GetArray()) {
      JsonValue value;
      RedactInto(item, value, a);
      out.PushBack(value, a);
    }
  } else if (in.IsString()) {
    out.SetString(RedactString(absl::string_view(in.GetString(), in.GetStringLength())), a);
  } else {
    out.CopyFrom(in, a);
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
  if (fd < 0) {
    int err = errno;
    return absl::InvalidArgumentError(absl::StrCat("audit_log ", path, ": cannot open it for "
                                                   "appending: ", ErrnoText(err)));
  }
  return std::unique_ptr<AuditLog>(new AuditLog(path, UniqueFd(fd)));
}

Json AuditLog::Redact(const JsonValue& args) {
  Json out;
  RedactInto(args, out, out.GetAllocator());
  return out;
}

std::string AuditLog::Line(const HookCall& call, const JsonValue* args,
                           const ToolCallResult& result, const AuditDecision& decision) {
  Json doc = MakeObject();
  auto& a = doc.GetAllocator();
  command::SetString(doc, "time", absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()));
  command::SetString(doc, "call_id", call.call_id);
  command::SetString(doc, "tool", call.tool);
  command::SetString(doc, "server_name", call.server_name);
  command::SetString(doc, "session", call.session_id);
  command::SetString(doc, "identity", call.identity);
  switch (decision.kind) {
    case AuditDecision::Kind::kAllowed:
      command::SetString(doc, "decision", "allowed");
      if (!decision.by.empty()) command::SetString(doc, "decided_by", decision.by);
      break;
    case AuditDecision::Kind::kDenied:
      command::SetString(doc, "decision", "denied");
      command::SetString(doc, "decided_by", decision.by);
      break;
    case AuditDecision::Kind::kNotRun:
      command::SetString(doc, "decision", "not_run");
      break;
  }
  JsonValue redacted;
  if (args != nullptr) RedactInto(*args, redacted, a);
  doc.AddMember("args", redacted, a);
  command::SetString(doc, "status", ResultStatusName(result.status));
  if (!result.ok()) command::SetString(doc, "error", RedactString(result.error_message));
  command::SetInt(doc, "duration_ms", absl::ToInt64Milliseconds(result.duration));
  std::string line = ToJsonString(doc);
  line.push_back('\n');
  return line;
}

void AuditLog::Write(const std::string& line) {
  absl::MutexLock lock(&mu_);
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = write(fd_.get(), line.data() + done, line.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    int err = n < 0 ? errno : ENOSPC;
    if (failures_++ % 1000 == 0) {
      spdlog::error("audit log {}: a line could not be written ({}); {} line(s) lost so far",
                    path_, ErrnoText(err), failures_);
    }
    return;
  }
}

}  // namespace toolexec

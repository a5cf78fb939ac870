#include "core/audit_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "spdlog/spdlog.h"
#include "tools/process/environment.h"
#include "tools/process/result.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

using Range = std::pair<size_t, size_t>;  // [begin, end) of `s` to mask

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The end of the shell word that starts at `i`: quoted parts are crossed,
// whitespace and the operators ; & | < > ( ) end it.
size_t ShellWordEnd(absl::string_view s, size_t i) {
  while (i < s.size()) {
    const char c = s[i];
    if (IsSpace(c) || absl::string_view(";&|<>()").find(c) != absl::string_view::npos) break;
    if (c == '\\') {
      i += 2;
    } else if (c == '\'' || c == '"') {
      size_t close = i + 1;
      while (close < s.size() && s[close] != c) close += (c == '"' && s[close] == '\\') ? 2 : 1;
      i = close + 1;
    } else {
      ++i;
    }
  }
  return std::min(i, s.size());
}

// The end of a credential at `i` inside a header or a quoted argument: the
// first whitespace, quote, ',' or ';'.
size_t TokenEnd(absl::string_view s, size_t i) {
  while (i < s.size() && !IsSpace(s[i]) && absl::string_view("\"',;").find(s[i]) ==
                                               absl::string_view::npos) {
    ++i;
  }
  return i;
}

// The first index at or after `i` that is not whitespace.
size_t SkipSpaces(absl::string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// The start of the word after the one at `i` (npos when none follows).
size_t NextWord(absl::string_view s, size_t i) {
  while (i < s.size() && !IsSpace(s[i])) ++i;
  if (i == s.size()) return absl::string_view::npos;
  i = SkipSpaces(s, i);
  return i < s.size() ? i : absl::string_view::npos;
}

// The passwords of URLs: "scheme://user:PASSWORD@host".
void UrlPasswords(absl::string_view s, std::vector<Range>* out) {
  for (size_t at = s.find("://"); at != absl::string_view::npos; at = s.find("://", at + 3)) {
    const size_t begin = at + 3;
    size_t end = begin;
    while (end < s.size() && !IsSpace(s[end]) &&
           absl::string_view("/?#\"'<>").find(s[end]) == absl::string_view::npos) {
      ++end;
    }
    absl::string_view authority = s.substr(begin, end - begin);
    const size_t userinfo_end = authority.rfind('@');
    if (userinfo_end == absl::string_view::npos) continue;
    const size_t colon = authority.substr(0, userinfo_end).find(':');
    if (colon == absl::string_view::npos || colon + 1 == userinfo_end) continue;
    out->emplace_back(begin + colon + 1, begin + userinfo_end);
  }
}

// The values of JSON members inside a string (a payload rendered as text)
// whose key looks secret: "api_token": "VALUE".
void JsonMemberSecrets(absl::string_view s, std::vector<Range>* out) {
  for (size_t colon = s.find(':'); colon != absl::string_view::npos;
       colon = s.find(':', colon + 1)) {
    size_t close = colon;
    while (close > 0 && IsSpace(s[close - 1])) --close;
    if (close < 2 || s[close - 1] != '"') continue;
    const size_t quote = close - 1;  // the key's closing quote
    const size_t open = s.rfind('"', quote - 1);
    if (open == absl::string_view::npos || open + 1 >= quote) continue;
    if (!command::LooksSecret(s.substr(open + 1, quote - open - 1))) continue;
    size_t value = SkipSpaces(s, colon + 1);
    if (value >= s.size() || s[value] != '"') continue;
    size_t end = value + 1;
    while (end < s.size() && s[end] != '"') end += s[end] == '\\' ? 2 : 1;
    if (end > value + 1) out->emplace_back(value + 1, std::min(end, s.size()));
  }
}

// The basename of the word at `i`, as far as a word goes.
absl::string_view ProgramAt(absl::string_view s, size_t i) {
  absl::string_view word = s.substr(i, TokenEnd(s, i) - i);
  if (size_t slash = word.rfind('/'); slash != absl::string_view::npos) {
    word = word.substr(slash + 1);
  }
  return word;
}

// What the audit log masks in a string: the value of NAME=VALUE and
// --NAME=VALUE when NAME looks secret (command::LooksSecret), the word after
// --password / --passwd, the credential of a header whose name looks secret
// ("Authorization: Bearer X", "X-Api-Key: X", "Cookie: …") and after
// "Bearer", a URL's password, and in a command line that runs mysql or
// mariadb the PASS of -pPASS, in one that runs curl the password of
// -u/--user USER:PASS, and the value of a JSON member written in the string
// ("api_token": "…") whose key looks secret. The rest of the string stays.
std::vector<Range> SecretRanges(absl::string_view s) {
  std::vector<Range> ranges;
  UrlPasswords(s, &ranges);
  if (ranges.empty() && command::ValueHasUrlPassword(s)) ranges.emplace_back(0, s.size());
  JsonMemberSecrets(s, &ranges);
  // Word starts: after whitespace, a quote or a shell operator.
  std::vector<size_t> starts;
  bool mysql = false, curl = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (IsSpace(s[i])) continue;
    if (i > 0 && !IsSpace(s[i - 1]) &&
        absl::string_view("\"'(;&|{`").find(s[i - 1]) == absl::string_view::npos) {
      continue;
    }
    starts.push_back(i);
    absl::string_view program = ProgramAt(s, i);
    mysql = mysql || absl::StartsWith(program, "mysql") || absl::StartsWith(program, "mariadb");
    curl = curl || program == "curl";
  }
  // Words inside a range already masked are not looked at again, so each
  // byte is scanned a bounded number of times whatever the string holds.
  size_t covered = 0;
  auto mask = [&](size_t begin, size_t end) {
    ranges.emplace_back(begin, end);
    covered = std::max(covered, end);
  };
  for (size_t i : starts) {
    if (i < covered) continue;
    // NAME=VALUE, --NAME=VALUE.
    size_t n = i;
    while (n < s.size() && n < i + 2 && s[n] == '-') ++n;
    size_t name_end = n;
    while (name_end < s.size() &&
           (absl::ascii_isalnum(s[name_end]) || s[name_end] == '_' || s[name_end] == '-' ||
            s[name_end] == '.')) {
      ++name_end;
    }
    absl::string_view name = s.substr(n, name_end - n);
    if (!name.empty() && name_end < s.size()) {
      if (s[name_end] == '=' && command::LooksSecret(name)) {
        mask(name_end + 1, ShellWordEnd(s, name_end + 1));
        continue;
      }
      // A header "Name: value".
      if (s[name_end] == ':' && n == i && name_end + 1 < s.size() && IsSpace(s[name_end + 1]) &&
          command::LooksSecret(name)) {
        size_t value = SkipSpaces(s, name_end + 1);
        if (value < s.size()) {
          absl::string_view scheme = s.substr(value, TokenEnd(s, value) - value);
          for (absl::string_view known : {"bearer", "basic", "token", "digest", "negotiate"}) {
            if (!absl::EqualsIgnoreCase(scheme, known)) continue;
            value = SkipSpaces(s, value + scheme.size());
            break;
          }
          size_t end = value;
          while (end < s.size() && s[end] != '\n' && s[end] != '"' && s[end] != '\'') ++end;
          if (end > value) mask(value, end);
        }
        continue;
      }
    }
    absl::string_view word = s.substr(i, TokenEnd(s, i) - i);
    if (absl::EqualsIgnoreCase(word, "bearer") || word == "--password" || word == "--passwd") {
      size_t next = NextWord(s, i);
      if (next != absl::string_view::npos) mask(next, TokenEnd(s, next));
    } else if (mysql && absl::StartsWith(s.substr(i), "-p") && i + 2 < s.size() &&
               !IsSpace(s[i + 2])) {
      mask(i + 2, ShellWordEnd(s, i + 2));
    } else if (curl && (word == "-u" || word == "--user" || absl::StartsWith(word, "--user=") ||
                        (absl::StartsWith(word, "-u") && word.size() > 2))) {
      size_t user = word == "-u" || word == "--user" ? NextWord(s, i)
                    : absl::StartsWith(word, "--user=") ? i + 7
                                                         : i + 2;
      if (user == absl::string_view::npos) continue;
      const size_t end = ShellWordEnd(s, user);
      const size_t colon = s.substr(user, end - user).find(':');
      if (colon != absl::string_view::npos) mask(user + colon + 1, end);
    }
  }
  return ranges;
}

// Whether `s` contains `word` (lower-case), in any case.
bool ContainsIgnoringCase(absl::string_view s, absl::string_view word) {
  const char first = word[0];
  for (size_t i = 0; i + word.size() <= s.size(); ++i) {
    if (absl::ascii_tolower(s[i]) == first && absl::EqualsIgnoreCase(s.substr(i, word.size()), word)) {
      return true;
    }
  }
  return false;
}

}  // namespace

// Whether `s` can hold anything SecretRanges masks. Every form needs one of:
// a name that command::LooksSecret accepts (NAME=VALUE, headers, JSON
// members), and every such name has one of kSecretParts in it, in some case
// (each secret word and ending does: KEY, SECRET, TOKEN, PASS…, CRED…, PAT,
// AUTH…, BEARER, JWT, PRIVATE, COOKIE…, DSN, PWD, CONNECTION); "bearer" and
// "--password"/"--passwd" (in kSecretParts too); "://" (a URL's password);
// "-p" (mysql's -pPASS); "curl" (its -u USER:PASS). Most strings, a JSON
// payload rendered as text among them, have none, and are kept without the
// scan of words, which costs more than the rest of a result's rendering.
bool audit_internal::MayHoldSecret(absl::string_view s) {
  static constexpr absl::string_view kSecretParts[] = {
      "key",     "secret", "token", "pass", "cred", "pat",    "auth",      "bearer",
      "jwt",     "private", "cookie", "dsn", "pwd", "connection"};
  if (s.find("://") != absl::string_view::npos || s.find("-p") != absl::string_view::npos ||
      s.find("curl") != absl::string_view::npos) {
    return true;
  }
  for (absl::string_view part : kSecretParts) {
    if (ContainsIgnoringCase(s, part)) return true;
  }
  return false;
}

std::string audit_internal::MaskEveryForm(absl::string_view s) {
  std::vector<Range> ranges = SecretRanges(s);
  if (ranges.empty()) return std::string(s);
  std::sort(ranges.begin(), ranges.end());
  std::string out;
  size_t done = 0;
  for (auto [begin, end] : ranges) {
    if (end <= done || begin >= end) continue;
    if (begin > done) absl::StrAppend(&out, s.substr(done, begin - done));
    if (begin >= done) absl::StrAppend(&out, kRedacted);
    done = end;
  }
  absl::StrAppend(&out, s.substr(done));
  return out;
}

namespace {

// `s` with every secret range replaced by "[redacted]".
std::string MaskSecrets(absl::string_view s) {
  if (!audit_internal::MayHoldSecret(s)) return std::string(s);
  return audit_internal::MaskEveryForm(s);
}

}  // namespace

std::string AuditLog::RedactString(absl::string_view s) {
  return Utf8Cut(MaskSecrets(s), kMaxStringChars);
}

std::string AuditLog::MaskString(absl::string_view s) { return MaskSecrets(s); }

namespace {

// `in` with secrets masked; strings and keys cut to `max_chars` (0 = kept whole).
void RedactInto(const JsonValue& in, JsonValue& out, Json::AllocatorType& a,
                size_t max_chars = AuditLog::kMaxStringChars) {
  auto cut = [max_chars](std::string s) { return max_chars == 0 ? s : Utf8Cut(s, max_chars); };
  if (in.IsObject()) {
    out.SetObject();
    for (auto m = in.MemberBegin(); m != in.MemberEnd(); ++m) {
      absl::string_view name(m->name.GetString(), m->name.GetStringLength());
      JsonValue key(max_chars == 0 ? std::string(name) : Utf8Cut(name, max_chars), a);
      JsonValue value;
      if (command::LooksSecret(StringOf(m->name))) {
        value.SetString(kRedacted, a);
      } else {
        RedactInto(m->value, value, a, max_chars);
      }
      out.AddMember(key, value, a);
    }
  } else if (in.IsArray()) {
    out.SetArray();
    for (const auto& item : in.GetArray()) {
      JsonValue value;
      RedactInto(item, value, a, max_chars);
      out.PushBack(value, a);
    }
  } else if (in.IsString()) {
    out.SetString(cut(MaskSecrets(absl::string_view(in.GetString(), in.GetStringLength()))), a);
  } else {
    out.CopyFrom(in, a);
  }
}

}  // namespace

void AuditLog::MaskInto(const JsonValue& in, JsonValue& out, Json::AllocatorType& a) {
  RedactInto(in, out, a, /*max_chars=*/0);
}

void AuditLog::WriteMasked(absl::string_view s, TextWriter& out) {
  if (!audit_internal::MayHoldSecret(s)) {
    out.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
    return;
  }
  const std::string masked = audit_internal::MaskEveryForm(s);
  out.String(masked.data(), static_cast<rapidjson::SizeType>(masked.size()));
}

// The rules of RedactInto without its cut: a secret-looking key's value
// becomes kRedacted, every string is masked.
void AuditLog::WriteMasked(const JsonValue& in, TextWriter& out) {
  if (in.IsObject()) {
    out.StartObject();
    for (auto m = in.MemberBegin(); m != in.MemberEnd(); ++m) {
      out.Key(m->name.GetString(), m->name.GetStringLength());
      if (command::LooksSecret(StringOf(m->name))) {
        out.String(kRedacted);
      } else {
        WriteMasked(m->value, out);
      }
    }
    out.EndObject();
  } else if (in.IsArray()) {
    out.StartArray();
    for (const auto& item : in.GetArray()) WriteMasked(item, out);
    out.EndArray();
  } else if (in.IsString()) {
    WriteMasked(StringOf(in), out);
  } else {
    in.Accept(out);
  }
}

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
  // What the caller named is cut like a value.
  command::SetString(doc, "call_id", Utf8Cut(call.call_id, kMaxStringChars));
  command::SetString(doc, "tool", Utf8Cut(call.tool, kMaxStringChars));
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
  if (!result.ok()) command::SetString(doc, "error", AuditLog::RedactString(result.error_message));
  command::SetInt(doc, "duration_ms", absl::ToInt64Milliseconds(result.duration));
  std::string line = ToJsonString(doc);
  line.push_back('\n');
  return line;
}

AuditLog::AuditLog(std::string path, UniqueFd fd)
    : path_(std::move(path)), fd_(std::move(fd)), writer_([this] { WriterLoop(); }) {}

AuditLog::~AuditLog() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  writer_.join();
}

void AuditLog::Write(absl::string_view line, bool may_wait) {
  absl::MutexLock lock(&mu_);
  if (may_wait) {
    mu_.Await(absl::Condition(
        +[](AuditLog* log) ABSL_EXCLUSIVE_LOCKS_REQUIRED(log->mu_) {
          return log->queued_.size() < kMaxQueuedBytes;
        },
        this));
  }
  queued_.append(line.data(), line.size());
  queued_count_ += line.size();
}

void AuditLog::Flush() {
  absl::MutexLock lock(&mu_);
  const uint64_t target = queued_count_;
  auto written = [this, target]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return written_count_ >= target;
  };
  ++flushing_;
  mu_.Await(absl::Condition(&written));
  --flushing_;
}

void AuditLog::WriterLoop() {
  std::string bytes;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      written_count_ += bytes.size();
      mu_.Await(absl::Condition(
          +[](AuditLog* log) ABSL_EXCLUSIVE_LOCKS_REQUIRED(log->mu_) {
            return !log->queued_.empty() || log->stopping_;
          },
          this));
      if (queued_.empty()) return;  // stopping, and everything is written
      // Lets the lines of calls completing now join this write: a waiting
      // writer is woken by every line queued, and woken per line it would
      // write a line per call.
      mu_.AwaitWithTimeout(
          absl::Condition(
              +[](AuditLog* log) ABSL_EXCLUSIVE_LOCKS_REQUIRED(log->mu_) {
                return log->queued_.size() >= kGatherBytes || log->stopping_ ||
                       log->flushing_ > 0;
              },
              this),
          kGatherTime);
      bytes.clear();
      bytes.swap(queued_);
    }
    WriteOut(bytes);
  }
}

void AuditLog::WriteOut(const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd_.get(), bytes.data() + done, bytes.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const int err = n < 0 ? errno : ENOSPC;
    // The lines that did not make it whole, the one cut short included.
    const uint64_t lost = static_cast<uint64_t>(
        std::count(bytes.begin() + static_cast<std::ptrdiff_t>(done), bytes.end(), '\n'));
    if (lines_lost_ / 1000 != (lines_lost_ + lost) / 1000 || lines_lost_ == 0) {
      spdlog::error("audit log {}: {} line(s) could not be written ({}); {} lost so far", path_,
                    lost, ErrnoText(err), lines_lost_ + lost);
    }
    lines_lost_ += lost;
    return;
  }
}

}  // namespace toolexec

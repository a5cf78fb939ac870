// toolexecd's flags as a layer over the config file (FlagsOverlay,
// MergeOverlay): each flag that has a config field writes it, by the field's
// path in toolexec.v1.DaemonConfig, so that one ApplyConfig turns the merged
// config into options and one table (validate.cc) holds them to their ranges.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/field_mask_util.h"
#include "server/config/config.h"
#include "server/config/internal.h"

namespace toolexec {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Each flag with a config field. A flag's type is its field's, but for the
// flags given as text (FlagField::Form). Flags with no field (--config,
// --check_config, --address_file, the transport's message sizes and
// keepalive, --insecure_allow_unauthenticated) are main.cc's own.
constexpr FlagField kFlagFields[] = {
    {"listen", "listen"},
    {"workspace", "workspace"},
    {"example_tools", "example_tools"},
    {"log_level", "log_level"},
    {"log_format", "log_format"},
    {"max_calls_per_batch", "limits.max_calls_per_batch"},
    {"max_concurrent_calls", "limits.max_concurrent_calls"},
    {"max_pending_calls", "limits.max_pending_calls"},
    {"call_timeout_ms", "limits.default_call_timeout_ms"},
    {"max_call_timeout_ms", "limits.max_call_timeout_ms"},
    {"drain_grace_ms", "limits.drain_grace_ms"},
    {"max_sessions_per_caller", "limits.max_sessions_per_caller"},
    {"session_idle_ttl_ms", "sessions.idle_ttl_ms"},
    {"model_content_default_chars", "model_content_default_chars"},
    {"model_content_max_chars", "model_content_max_chars"},
    {"token_file", "auth.token_file"},
    {"tls_cert_file", "auth.tls.cert_file"},
    {"tls_key_file", "auth.tls.key_file"},
    {"tls_client_ca_file", "auth.tls.client_ca_file"},
    {"unix_socket_mode", "auth.unix_socket.mode", FlagField::Form::kOctal,
     "octal permission bits (e.g. 0660)"},
    {"unix_socket_allowed_uids", "auth.unix_socket.allowed_uids", FlagField::Form::kList,
     "a uid (give numbers: 0,1000)"},
    {"metrics_listen", "metrics.listen"},
    {"mcp_listen", "mcp_listen"},
    {"mcp_max_sessions_per_caller", "mcp_max_sessions_per_caller"},
    {"mcp_session_idle_ttl_ms", "mcp_session_idle_ttl_ms"},
    {"mcp_allowed_hosts", "mcp_allowed_hosts", FlagField::Form::kList},
};

const FlagField* FindFlag(absl::string_view flag) {
  for (const FlagField& f : kFlagFields) {
    if (flag == f.flag) return &f;
  }
  return nullptr;
}

const FlagField* FindField(absl::string_view field) {
  for (const FlagField& f : kFlagFields) {
    if (field == f.field) return &f;
  }
  return nullptr;
}

// One value of `field` (an element, if it is repeated) from `text`; false
// when the text is not one.
bool SetFromText(const FieldDescriptor& field, absl::string_view text, Message* message) {
  const Reflection& r = *message->GetReflection();
  const bool add = field.is_repeated();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32: {
      uint32_t v = 0;
      if (!absl::SimpleAtoi(text, &v)) return false;
      add ? r.AddUInt32(message, &field, v) : r.SetUInt32(message, &field, v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v = 0;
      if (!absl::SimpleAtoi(text, &v)) return false;
      add ? r.AddUInt64(message, &field, v) : r.SetUInt64(message, &field, v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool v = false;
      if (add || !absl::SimpleAtob(text, &v)) return false;
      r.SetBool(message, &field, v);
      return true;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      add ? r.AddString(message, &field, std::string(text))
          : r.SetString(message, &field, std::string(text));
      return true;
    default:
      return false;
  }
}

// The field `path` names ("limits.max_concurrent_calls") in `config`, with
// the message that holds it (made where missing).
const FieldDescriptor* Resolve(absl::string_view path, Message* config, Message** holder) {
  std::vector<absl::string_view> names = absl::StrSplit(path, '.');
  Message* message = config;
  for (size_t i = 0; i < names.size(); ++i) {
    const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(std::string(names[i]));
    if (field == nullptr) return nullptr;
    if (i + 1 == names.size()) {
      *holder = message;
      return field;
    }
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) {
      return nullptr;
    }
    message = message->GetReflection()->MutableMessage(message, field);
  }
  return nullptr;
}

// Writes `text`, the value of `flag`, into its field of `config`.
absl::Status SetFlag(const FlagField& flag, absl::string_view text, v1::DaemonConfig* config) {
  Message* holder = nullptr;
  const FieldDescriptor* field = Resolve(flag.field, config, &holder);
  if (field == nullptr) {
    return absl::InternalError(absl::StrCat("--", flag.flag, ": no config field ", flag.field));
  }
  const std::string what =
      flag.what != nullptr ? flag.what : absl::StrCat("a ", field->cpp_type_name());
  switch (flag.form) {
    case FlagField::Form::kValue:
      if (!SetFromText(*field, text, holder)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.flag, " '", text, "' is not ", what));
      }
      return absl::OkStatus();
    case FlagField::Form::kOctal: {
      if (text.empty() || text.size() > 4 || text.find_first_not_of("01234567") != text.npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("--", flag.flag, " '", text, "' is not ", what));
      }
      uint32_t bits = 0;
      for (char digit : text) bits = bits * 8 + static_cast<uint32_t>(digit - '0');
      holder->GetReflection()->SetUInt32(holder, field, bits);
      return absl::OkStatus();
    }
    case FlagField::Form::kList:
      holder->GetReflection()->ClearField(holder, field);
      for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
        part = absl::StripAsciiWhitespace(part);
        if (!SetFromText(*field, part, holder)) {
          return absl::InvalidArgumentError(
              absl::StrCat("--", flag.flag, ": '", part, "' is not ", what));
        }
      }
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace

absl::Span<const FlagField> FlagFields() { return kFlagFields; }

std::string OptionName(absl::string_view option) {
  if (absl::StartsWith(option, "--")) return std::string(option);
  const FlagField* f = FindField(option);
  return f == nullptr ? std::string(option) : absl::StrCat(option, " (--", f->flag, ")");
}

std::string FlagOption(absl::string_view flag) {
  const FlagField* f = FindFlag(flag);
  return f == nullptr ? absl::StrCat("--", flag) : std::string(f->field);
}

absl::StatusOr<ConfigOverlay> FlagsOverlay(const std::map<std::string, std::string>& flags) {
  ConfigOverlay overlay;
  for (const auto& [name, text] : flags) {
    const FlagField* flag = FindFlag(name);
    if (flag == nullptr) continue;
    if (absl::Status s = SetFlag(*flag, text, &overlay.config); !s.ok()) return s;
    overlay.fields.add_paths(flag->field);
  }
  // Checked as a config file is, on their own: whatever ApplyConfig refuses
  // here is a flag's value, and its message names the flag.
  DaemonOptions scratch;
  std::string log_level;
  if (absl::Status s = ApplyConfig(overlay.config, &scratch, &log_level); !s.ok()) return s;
  return overlay;
}

void MergeOverlay(const ConfigOverlay& overlay, v1::DaemonConfig* config) {
  google::protobuf::util::FieldMaskUtil::MergeOptions options;
  options.set_replace_repeated_fields(true);
  google::protobuf::util::FieldMaskUtil::MergeMessageTo(overlay.config, overlay.fields, options,
                                                        config);
}

}  // namespace toolexec

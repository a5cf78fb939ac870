// Reading the daemon's config file: the file itself (a regular file of
// bounded size), text proto or JSON as toolexec.v1.DaemonConfig, the type
// checks protobuf's JSON parser leaves out, and the file's zeros that mean
// the default.
#include "server/config/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "tools/runtime/file_io.h"
#include "tools/runtime/json.h"
#include "tools/workspace/confined.h"

namespace toolexec {
namespace {

class CollectErrors final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors.push_back(absl::StrCat("line ", line + 1, ":", column + 1, ": ", message));
  }
  std::vector<std::string> errors;
};

}  // namespace

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, absl::string_view what,
                                            uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (fstat refuses it).
  fs::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(errno)));
  }
  const std::string too_big = absl::StrCat(what, " ", path, " is larger than ", max_bytes,
                                           " bytes");
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", path, " is ", FileKindName(st.st_mode), "; give a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::InvalidArgumentError(too_big);
  }
  // Read up to one byte past the cap: the file may grow after fstat.
  std::string text(max_bytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd.get(), text.data() + got, text.size() - got);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::NotFoundError(
          absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  if (got > max_bytes) return absl::InvalidArgumentError(too_big);
  text.resize(got);
  return text;
}

namespace {

// Protobuf's JSON parser takes any string for a bool field ("yes" reads as
// true): a bool must be JSON true or false. Walks `value` as a `message`;
// fields it does not know are left to the parser, which refuses them.
absl::Status CheckJsonBooleans(const JsonValue& value, const google::protobuf::Descriptor& message,
                               const std::string& where);

// One value of `field` (an element of a repeated field, or a map's value):
// a bool must be true or false (null only where the field may be left out).
absl::Status CheckJsonValue(const google::protobuf::FieldDescriptor& field, const JsonValue& value,
                            const std::string& name, bool null_allowed) {
  using google::protobuf::FieldDescriptor;
  if (field.type() == FieldDescriptor::TYPE_BOOL && !value.IsBool() &&
      !(null_allowed && value.IsNull())) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be true or false, not ", ToJsonString(value)));
  }
  if (field.type() == FieldDescriptor::TYPE_MESSAGE) {
    return CheckJsonBooleans(value, *field.message_type(), name);
  }
  return absl::OkStatus();
}

absl::Status CheckJsonBooleans(const JsonValue& value, const google::protobuf::Descriptor& message,
                               const std::string& where) {
  using google::protobuf::FieldDescriptor;
  if (!value.IsObject()) return absl::OkStatus();
  for (const auto& member : value.GetObject()) {
    const std::string key(member.name.GetString(), member.name.GetStringLength());
    const FieldDescriptor* field = message.FindFieldByName(key);
    for (int i = 0; field == nullptr && i < message.field_count(); ++i) {
      if (message.field(i)->json_name() == key) field = message.field(i);
    }
    if (field == nullptr) continue;
    const std::string name = where.empty() ? key : absl::StrCat(where, ".", key);
    const JsonValue& v = member.value;
    absl::Status s;
    if (field->is_map()) {
      if (!v.IsObject()) continue;
      for (auto it = v.MemberBegin(); s.ok() && it != v.MemberEnd(); ++it) {
        s = CheckJsonValue(*field->message_type()->map_value(), it->value,
                           absl::StrCat(name, "[", it->name.GetString(), "]"), false);
      }
    } else if (field->is_repeated() && v.IsArray()) {
      for (rapidjson::SizeType i = 0; s.ok() && i < v.Size(); ++i) {
        s = CheckJsonValue(*field, v[i], absl::StrCat(name, "[", i, "]"), true);
      }
    } else {
      s = CheckJsonValue(*field, v, name, true);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Whether `field` of `message` (a singular scalar) holds its type's zero: 0,
// false, "" or the first enum value.
bool IsZero(const google::protobuf::Message& message,
            const google::protobuf::FieldDescriptor& field) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection& r = *message.GetReflection();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return r.GetInt32(message, &field) == 0;
    case FieldDescriptor::CPPTYPE_INT64: return r.GetInt64(message, &field) == 0;
    case FieldDescriptor::CPPTYPE_UINT32: return r.GetUInt32(message, &field) == 0;
    case FieldDescriptor::CPPTYPE_UINT64: return r.GetUInt64(message, &field) == 0;
    case FieldDescriptor::CPPTYPE_DOUBLE: return r.GetDouble(message, &field) == 0;
    case FieldDescriptor::CPPTYPE_FLOAT: return r.GetFloat(message, &field) == 0;
    case FieldDescriptor::CPPTYPE_BOOL: return !r.GetBool(message, &field);
    case FieldDescriptor::CPPTYPE_ENUM: return r.GetEnumValue(message, &field) == 0;
    case FieldDescriptor::CPPTYPE_STRING: return r.GetString(message, &field).empty();
    case FieldDescriptor::CPPTYPE_MESSAGE: return false;
  }
  return false;
}

// In the file, a field given as 0 or "" means its default. A field with
// presence (`optional`) given so is still set, and ApplyConfig applies each
// such field that is set: this unsets it again, except where 0 is a value of
// its own ("0 = never").
void ClearZerosThatMeanTheDefault(google::protobuf::Message* message) {
  using google::protobuf::FieldDescriptor;
  static const auto* const kZeroIsAValue = new std::set<std::string>{
      "toolexec.v1.SessionConfig.idle_ttl_ms", "toolexec.v1.DaemonConfig.shell_idle_timeout_ms"};
  const google::protobuf::Reflection& r = *message->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r.ListFields(*message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!field->is_repeated()) {
        ClearZerosThatMeanTheDefault(r.MutableMessage(message, field));
      } else if (!field->is_map()) {
        for (int i = 0; i < r.FieldSize(*message, field); ++i) {
          ClearZerosThatMeanTheDefault(r.MutableRepeatedMessage(message, field, i));
        }
      }
    } else if (!field->is_repeated() && field->has_presence() &&
               kZeroIsAValue->count(field->full_name()) == 0 && IsZero(*message, *field)) {
      r.ClearField(message, field);
    }
  }
}

}  // namespace

absl::StatusOr<v1::DaemonConfig> LoadConfigFile(const std::string& path) {
  auto read = ReadRegularFile(path, "config file", kMaxConfigFileBytes);
  if (!read.ok()) return read.status();
  const std::string& text = *read;
  v1::DaemonConfig config;
  if (absl::EndsWith(path, ".json")) {
    if (auto json = ParseJson(text); json.ok()) {
      if (absl::Status s = CheckJsonBooleans(*json, *config.GetDescriptor(), ""); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", s.message()));
      }
    }  // else the parser below names the syntax error
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    auto status = google::protobuf::util::JsonStringToMessage(text, &config, options);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config file ", path, ": ", std::string(status.message())));
    }
    ClearZerosThatMeanTheDefault(&config);
    return config;
  }
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config file ", path, ": ", absl::StrJoin(errors.errors, "; ")));
  }
  ClearZerosThatMeanTheDefault(&config);
  return config;
}

}  // namespace toolexec

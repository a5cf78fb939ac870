#include "server/convert.h"

#include <new>

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "tools/runtime/json.h"

namespace toolexec {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

absl::Status JsonToStructAt(const JsonValue& in, Struct* out, int depth);

absl::Status ConvertValue(const Value& in, JsonValue* out, Json::AllocatorType& alloc, int depth) {
  switch (in.kind_case()) {
    case Value::kNullValue:
    case Value::KIND_NOT_SET:
      out->SetNull();
      return absl::OkStatus();
    case Value::kBoolValue:
      out->SetBool(in.bool_value());
      return absl::OkStatus();
    case Value::kNumberValue: {
      double d = in.number_value();
      if (std::optional<int64_t> i = IntegralValue(d); i.has_value()) {
        out->SetInt64(*i);
      } else {
        out->SetDouble(d);
      }
      return absl::OkStatus();
    }
    case Value::kStringValue:
      out->SetString(in.string_value(), alloc);
      return absl::OkStatus();
    case Value::kStructValue: {
      if (depth + 1 > kMaxJsonDepth) break;
      out->SetObject();
      for (const auto& [key, v] : in.struct_value().fields()) {
        JsonValue child;
        if (auto s = ConvertValue(v, &child, alloc, depth + 1); !s.ok()) return s;
        out->AddMember(JsonValue(key, alloc), child, alloc);
      }
      return absl::OkStatus();
    }
    case Value::kListValue: {
      if (depth + 1 > kMaxJsonDepth) break;
      out->SetArray();
      for (const auto& v : in.list_value().values()) {
        JsonValue child;
        if (auto s = ConvertValue(v, &child, alloc, depth + 1); !s.ok()) return s;
        out->PushBack(child, alloc);
      }
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("arguments nest deeper than ", kMaxJsonDepth, " levels"));
}

// Returns the length of the valid UTF-8 sequence at s[i], or 0 if invalid.
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  unsigned char c = s[i];
  if (c < 0x80) return 1;
  size_t n;
  uint32_t min;
  if ((c & 0xE0) == 0xC0) {
    n = 2, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    unsigned char cc = s[i + k];
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

bool IsValidUtf8(absl::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = Utf8SequenceLength(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

const std::string& Utf8(const std::string& s, std::string* scratch) {
  if (IsValidUtf8(s)) return s;
  *scratch = SanitizeUtf8(s);
  return *scratch;
}

absl::Status FillValue(const JsonValue& in, Value* out, int depth) {
  switch (in.GetType()) {
    case rapidjson::kNullType:
      out->set_null_value(google::protobuf::NULL_VALUE);
      return absl::OkStatus();
    case rapidjson::kFalseType:
    case rapidjson::kTrueType:
      out->set_bool_value(in.GetBool());
      return absl::OkStatus();
    case rapidjson::kNumberType:
      out->set_number_value(in.GetDouble());
      return absl::OkStatus();
    case rapidjson::kStringType: {
      absl::string_view s(in.GetString(), in.GetStringLength());
      out->set_string_value(IsValidUtf8(s) ? std::string(s) : SanitizeUtf8(s));
      return absl::OkStatus();
    }
    case rapidjson::kObjectType:
      if (depth + 1 > kMaxWireJsonDepth) break;
      return JsonToStructAt(in, out->mutable_struct_value(), depth + 1);
    case rapidjson::kArrayType: {
      if (depth + 1 > kMaxWireJsonDepth) break;
      auto* list = out->mutable_list_value();
      for (const auto& e : in.GetArray()) {
        if (auto s = FillValue(e, list->add_values(), depth + 1); !s.ok()) return s;
      }
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("JSON nests deeper than the ", kMaxWireJsonDepth, " levels the wire carries"));
}

absl::Status JsonToStructAt(const JsonValue& in, Struct* out, int depth) {
  auto* fields = out->mutable_fields();
  for (const auto& m : in.GetObject()) {
    absl::string_view key(m.name.GetString(), m.name.GetStringLength());
    std::string k = IsValidUtf8(key) ? std::string(key) : SanitizeUtf8(key);
    if (auto s = FillValue(m.value, &(*fields)[k], depth); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

std::string StatusLogFields(const grpc::Status& status) {
  std::string out = absl::StrCat(
      "status=", absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())));
  if (!status.error_message().empty()) {
    absl::StrAppend(&out, " msg=\"", absl::CEscape(status.error_message()), "\"");
  }
  return out;
}

absl::StatusOr<Json> StructToJson(const Struct& in) {
  Value v;
  *v.mutable_struct_value() = in;
  return ValueToJson(v);
}

absl::StatusOr<Json> ValueToJson(const Value& in) {
  Json doc;
  if (auto s = ConvertValue(in, &doc, doc.GetAllocator(), 0); !s.ok()) return s;
  return doc;
}

absl::Status JsonToValue(const JsonValue& in, Value* out) { return FillValue(in, out, 0); }

absl::Status JsonToStruct(const JsonValue& in, Struct* out) {
  if (!in.IsObject()) return absl::InvalidArgumentError("not a JSON object");
  return JsonToStructAt(in, out, 1);
}

std::string SanitizeUtf8(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    size_t n = Utf8SequenceLength(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text.data() + i, n);
      i += n;
    }
  }
  return out;
}

CallRequest FromProto(const v1::ToolCall& call) {
  CallRequest req;
  req.id = call.id();
  req.name = call.name();
  req.step_id = call.step_id();
  req.args_json = call.args_json();
  if (call.has_args()) {
    auto args = StructToJson(call.args());
    if (args.ok()) {
      req.args = std::move(*args);
    } else {
      req.args_error = args.status();
    }
  }
  return req;
}

namespace {

v1::ErrorCode ToProto(ErrorCode code) {
  return static_cast<v1::ErrorCode>(static_cast<int>(code) + 1);
}

v1::ResultStatus ToProto(ResultStatus status) {
  return static_cast<v1::ResultStatus>(static_cast<int>(status) + 1);
}

void FillResult(const ToolCallResult& r, v1::ToolResult* out) {
  out->set_index(r.index);
  out->set_id(r.id);
  out->set_name(r.name);
  out->set_step_id(r.step_id);
  out->set_status(ToProto(r.status));
  std::string scratch;
  out->set_error_message(Utf8(r.error_message, &scratch));
  if (r.error.has_value()) {
    auto* e = out->mutable_exception();
    e->set_message(Utf8(r.error->message, &scratch));
    e->set_tool_name(r.error->tool_name);
    e->set_server_name(r.error->server_name);
    e->set_code(ToProto(r.error->code));
    e->set_call_id(r.id);
    e->set_step_id(r.step_id);
  }
  auto* d = out->mutable_display();
  d->set_title(Utf8(r.display.title, &scratch));
  d->set_content(Utf8(r.display.content, &scratch));
  d->set_content_type(static_cast<v1::ContentType>(r.display.content_type));
  d->set_is_truncated(r.display.is_truncated);
  d->set_full_length(r.display.full_length);
  out->set_compact_summary(Utf8(r.compact_summary, &scratch));
  auto* a = out->mutable_actions();
  a->set_escalate(r.actions.escalate);
  a->set_skip_summarization(r.actions.skip_summarization);
  a->set_transfer_to_agent(r.actions.transfer_to_agent);
  for (const auto& [k, v] : r.actions.artifact_delta) (*a->mutable_artifact_delta())[k] = v;
  int64_t micros = absl::ToInt64Microseconds(r.duration);
  out->mutable_duration()->set_seconds(micros / 1000000);
  out->mutable_duration()->set_nanos(static_cast<int32_t>((micros % 1000000) * 1000));
}

}  // namespace

void ToProto(ToolCallResult r, v1::ToolResult* out, size_t max_bytes) {
  ErrorCode code = ErrorCode::kInternal;
  std::string problem;
  try {
    FillResult(r, out);
    absl::Status s = JsonToValue(r.payload, out->mutable_payload());
    if (s.ok() && r.actions.state_delta.IsObject() && r.actions.state_delta.MemberCount() > 0) {
      s = JsonToStruct(r.actions.state_delta, out->mutable_actions()->mutable_state_delta());
    }
    if (!s.ok()) {
      problem = std::string(s.message());
    } else if (const size_t size = out->ByteSizeLong(); size > max_bytes) {
      // Sent, it would fail the whole stream and lose every later result.
      code = ErrorCode::kToolFailed;
      problem = absl::StrCat(size, " bytes, over the limit of ", max_bytes,
                             " bytes for one result; ask for less (a line range, fewer matches)");
    } else {
      return;
    }
  } catch (const std::bad_alloc&) {
    // Built below, once the result's memory is released.
  }
  // The result cannot be carried: say so instead of sending something broken.
  // Release what it holds first (memory may be what ran out).
  v1::ToolResult().Swap(out);
  Json().Swap(r.payload);
  r.actions = EventActions();
  r.display = DisplayResult();
  r.compact_summary = std::string();
  std::string message =
      problem.empty()
          ? absl::StrCat("tool '", r.name,
                         "' returned a result that cannot be sent: out of memory converting it")
      : code == ErrorCode::kToolFailed
          ? absl::StrCat("tool '", r.name, "' returned a result of ", problem)
          : absl::StrCat("tool '", r.name, "' returned a result that cannot be sent: ", problem);
  r.status = ResultStatus::kError;
  r.error_message = message;
  r.error = ToolCallError{message, r.name, r.error ? r.error->server_name : "", code};
  r.display = DisplayResult{r.name, message, ContentType::kPlainText, false, message.size()};
  r.compact_summary = absl::StrCat("[", r.name, ": error]");
  FillResult(r, out);
  (*out->mutable_payload()->mutable_struct_value()->mutable_fields())["error"].set_string_value(
      message);
}

void ToProto(const ProgressEvent& e, v1::ToolProgress* out) {
  out->set_index(e.index);
  out->set_id(e.id);
  out->set_stream(e.stream);
  std::string scratch;
  out->set_text(Utf8(e.text, &scratch));
  out->set_seq(e.seq);
}

void ToProto(const RegisteredTool& t, v1::ToolDeclaration* out) {
  const ToolSpec& spec = t.tool->spec();
  out->set_name(t.name);
  out->set_description(spec.description);
  // The schema compiled at registration; it is an object by construction.
  (void)JsonToStruct(t.schema->document(), out->mutable_parameters());
  // The Struct's map has no order; the text keeps the declared one.
  out->set_parameters_json(spec.parameters_schema);
  out->set_server_name(t.server_name);
  out->set_tool_type(static_cast<v1::ToolType>(spec.type));
  out->set_executor(static_cast<v1::Executor>(spec.executor));
  out->set_read_only(spec.read_only);
  out->set_needs_context(spec.needs_context);
  out->set_display_name(spec.display_name);
  for (const auto& tag : spec.tags) out->add_tags(tag);
  if (!spec.provider_config.empty()) {
    auto doc = ParseJson(spec.provider_config);
    if (doc.ok() && doc->IsObject()) (void)JsonToStruct(*doc, out->mutable_provider_config());
  }
}

grpc::ByteBuffer DeterministicBytes(const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  grpc::Slice slice(std::move(bytes));
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace toolexec

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
#include "tools/runtime/call_result.h"
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

void AddStatusFields(const grpc::Status& status, LogLine* line) {
  line->Add("status",
            absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code())));
  if (!status.error_message().empty()) line->AddQuoted("msg", status.error_message());
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

CallRequest FromProto(const v1::ToolCall& call) {
  CallRequest req;
  req.id = call.id();
  req.name = call.name();
  req.step_id = call.step_id();
  req.item_type = call.item_type();
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

// Runtime enums to wire enums, value by value. Each switch names every
// runtime value (-Wswitch under -Werror fails the build when one is added),
// and each static_assert fails the build when the wire enum grows, so a new
// value on either side is mapped on purpose.
static_assert(v1::ErrorCode_ARRAYSIZE == 11, "map the new ErrorCode in ToProto(ErrorCode)");
v1::ErrorCode ToProto(ErrorCode code) {
  switch (code) {
    case ErrorCode::kToolFailed: return v1::ERROR_CODE_TOOL_FAILED;
    case ErrorCode::kUnknownTool: return v1::ERROR_CODE_UNKNOWN_TOOL;
    case ErrorCode::kInvalidArguments: return v1::ERROR_CODE_INVALID_ARGUMENTS;
    case ErrorCode::kNoContext: return v1::ERROR_CODE_NO_CONTEXT;
    case ErrorCode::kDenied: return v1::ERROR_CODE_DENIED;
    case ErrorCode::kTimeout: return v1::ERROR_CODE_TIMEOUT;
    case ErrorCode::kCancelled: return v1::ERROR_CODE_CANCELLED;
    case ErrorCode::kNotExecutableHere: return v1::ERROR_CODE_NOT_EXECUTABLE_HERE;
    case ErrorCode::kServerUnavailable: return v1::ERROR_CODE_SERVER_UNAVAILABLE;
    case ErrorCode::kInternal: return v1::ERROR_CODE_INTERNAL;
  }
  return v1::ERROR_CODE_UNSPECIFIED;
}

static_assert(v1::ResultStatus_ARRAYSIZE == 6, "map the new ResultStatus in ToProto");
v1::ResultStatus ToProto(ResultStatus status) {
  switch (status) {
    case ResultStatus::kSuccess: return v1::RESULT_STATUS_SUCCESS;
    case ResultStatus::kError: return v1::RESULT_STATUS_ERROR;
    case ResultStatus::kTimeout: return v1::RESULT_STATUS_TIMEOUT;
    case ResultStatus::kCancelled: return v1::RESULT_STATUS_CANCELLED;
    case ResultStatus::kDenied: return v1::RESULT_STATUS_DENIED;
  }
  return v1::RESULT_STATUS_UNSPECIFIED;
}

static_assert(v1::ContentType_ARRAYSIZE == 6, "map the new ContentType in ToProto");
v1::ContentType ToProto(ContentType type) {
  switch (type) {
    case ContentType::kPlainText: return v1::CONTENT_TYPE_PLAIN_TEXT;
    case ContentType::kJson: return v1::CONTENT_TYPE_JSON;
    case ContentType::kMarkdown: return v1::CONTENT_TYPE_MARKDOWN;
    case ContentType::kYaml: return v1::CONTENT_TYPE_YAML;
    case ContentType::kXml: return v1::CONTENT_TYPE_XML;
    case ContentType::kAuto: return v1::CONTENT_TYPE_AUTO;
  }
  return v1::CONTENT_TYPE_PLAIN_TEXT;
}

static_assert(v1::ToolType_ARRAYSIZE == 7, "map the new ToolType in ToProto");
v1::ToolType ToProto(ToolType type) {
  switch (type) {
    case ToolType::kCustom: return v1::TOOL_TYPE_CUSTOM;
    case ToolType::kApiCall: return v1::TOOL_TYPE_API_CALL;
    case ToolType::kBashCmd: return v1::TOOL_TYPE_BASH_CMD;
    case ToolType::kWebSearch: return v1::TOOL_TYPE_WEB_SEARCH;
    case ToolType::kTextEdit: return v1::TOOL_TYPE_TEXT_EDIT;
    case ToolType::kFileRead: return v1::TOOL_TYPE_FILE_READ;
    case ToolType::kUserInteraction: return v1::TOOL_TYPE_USER_INTERACTION;
  }
  return v1::TOOL_TYPE_CUSTOM;
}

static_assert(v1::Executor_ARRAYSIZE == 3, "map the new Executor in ToProto");
v1::Executor ToProto(ToolExecutor executor) {
  switch (executor) {
    case ToolExecutor::kDaemon: return v1::EXECUTOR_DAEMON;
    case ToolExecutor::kHarness: return v1::EXECUTOR_HARNESS;
    case ToolExecutor::kProvider: return v1::EXECUTOR_PROVIDER;
  }
  return v1::EXECUTOR_DAEMON;
}

void FillResult(const ToolCallResult& r, v1::ToolResult* out) {
  out->set_index(r.index);
  out->set_id(r.id);
  out->set_name(r.name);
  out->set_called_as(r.called_as);
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
  d->set_content_type(ToProto(r.display.content_type));
  d->set_is_truncated(r.display.is_truncated);
  d->set_full_length(r.display.full_length);
  out->set_compact_summary(Utf8(r.compact_summary, &scratch));
  out->set_model_content(Utf8(r.model_content, &scratch));
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
  std::string problem;
  std::string oversized;  // the message for a result over max_bytes
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
      oversized = OversizedResultMessage(r.name, size, max_bytes);
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
  r.model_content = std::string();
  const ErrorCode code = oversized.empty() ? ErrorCode::kInternal : ErrorCode::kToolFailed;
  std::string message =
      !oversized.empty() ? std::move(oversized)
      : problem.empty()
          ? absl::StrCat("tool '", r.name,
                         "' returned a result that cannot be sent: out of memory converting it")
          : absl::StrCat("tool '", r.name, "' returned a result that cannot be sent: ", problem);
  const std::string server_name = r.error ? r.error->server_name : "";
  SetFailure(r, code, r.name, server_name, r.name, message, kDefaultModelContentChars);
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

namespace {

void SetTime(absl::Time t, google::protobuf::Timestamp* out) {
  const int64_t ns = absl::ToUnixNanos(t);
  out->set_seconds(ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000));
  out->set_nanos(static_cast<int32_t>(ns - out->seconds() * 1000000000));
}

v1::FileChangeKind KindOf(checkpoint::ChangeKind kind) {
  switch (kind) {
    case checkpoint::ChangeKind::kAdded:
      return v1::ADDED;
    case checkpoint::ChangeKind::kModified:
      return v1::MODIFIED;
    case checkpoint::ChangeKind::kDeleted:
      return v1::DELETED;
    case checkpoint::ChangeKind::kModeChanged:
      return v1::MODE_CHANGED;
    case checkpoint::ChangeKind::kTypeChanged:
      return v1::TYPE_CHANGED;
  }
  return v1::FILE_CHANGE_KIND_UNSPECIFIED;
}

void AddChanges(const std::vector<checkpoint::FileChange>& changes,
                google::protobuf::RepeatedPtrField<v1::FileChange>* out) {
  std::string scratch;
  for (const checkpoint::FileChange& c : changes) {
    v1::FileChange* f = out->Add();
    f->set_path(Utf8(c.path, &scratch));
    f->set_kind(KindOf(c.kind));
  }
}

}  // namespace

void ToProto(const CheckpointEvent& e, v1::Checkpoint* out) {
  std::string scratch;
  out->set_id(e.id);
  out->set_session_id(Utf8(e.session_id, &scratch));
  out->set_batch_id(Utf8(e.batch_id, &scratch));
  SetTime(e.created_at, out->mutable_created_at());
  for (const std::string& t : e.tools) out->add_tools(Utf8(t, &scratch));
  out->set_files_changed(e.files_changed);
  out->set_bytes_stored(e.bytes_stored);
}

void ToProto(const checkpoint::CheckpointInfo& info, v1::Checkpoint* out) {
  CheckpointEvent e;
  e.id = info.id;
  e.session_id = info.session_id;
  e.batch_id = info.batch_id;
  e.created_at = info.created_at;
  e.tools = info.tools;
  e.files_changed = info.files_changed;
  e.bytes_stored = info.bytes_stored;
  ToProto(e, out);
}

void ToProto(const checkpoint::DiffResult& diff, v1::DiffCheckpointResponse* out) {
  AddChanges(diff.changes, out->mutable_changes());
  std::string scratch;
  out->set_unified_diff(Utf8(diff.unified_diff, &scratch));
  out->set_diff_truncated(diff.diff_truncated);
}

void ToProto(const checkpoint::RestoreResult& restored, v1::RestoreCheckpointResponse* out) {
  AddChanges(restored.changes, out->mutable_changes());
  out->set_undo_checkpoint_id(restored.undo_checkpoint_id);
  std::string scratch;
  for (const checkpoint::LeftOut& l : restored.not_restored) {
    out->add_not_restored(
        Utf8(absl::StrCat(l.path, " (", checkpoint::LeftOutText(l.reason), ")"), &scratch));
  }
}

void ToProto(const PermissionRequestEvent& e, v1::PermissionRequest* out) {
  std::string scratch;
  out->set_request_id(e.request_id);
  out->set_index(e.index);
  out->set_tool_name(e.tool_name);
  v1::PermissionTarget* target = out->mutable_target();
  switch (e.target.kind) {
    case PermissionRequirement::Kind::kPath:
      target->set_kind(v1::PermissionTarget::KIND_PATH);
      break;
    case PermissionRequirement::Kind::kDomain:
      target->set_kind(v1::PermissionTarget::KIND_DOMAIN);
      break;
    case PermissionRequirement::Kind::kCommand:
      target->set_kind(v1::PermissionTarget::KIND_COMMAND);
      break;
    case PermissionRequirement::Kind::kTool:
      target->set_kind(v1::PermissionTarget::KIND_TOOL);
      break;
  }
  target->set_value(Utf8(e.target.value, &scratch));
  target->set_recursive(e.target.recursive);
  out->set_level(static_cast<v1::PermissionLevel>(static_cast<int>(e.target.level)));
  out->set_description(Utf8(e.description, &scratch));
  out->set_reason(Utf8(e.reason, &scratch));
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
  out->set_tool_type(ToProto(spec.type));
  out->set_executor(ToProto(spec.executor));
  out->set_read_only(spec.read_only);
  out->set_needs_context(spec.needs_context);
  out->set_display_name(spec.display_name);
  for (const auto& tag : spec.tags) out->add_tags(tag);
  if (!spec.provider_config.empty()) {
    auto doc = ParseJson(spec.provider_config);
    if (doc.ok() && doc->IsObject()) (void)JsonToStruct(*doc, out->mutable_provider_config());
  }
}

BatchSpec FromProto(const v1::ExecuteBatchRequest& request) {
  BatchSpec spec;
  spec.session_id = request.session_id();
  if (request.has_timeout()) {
    spec.timeout =
        absl::Seconds(request.timeout().seconds()) + absl::Nanoseconds(request.timeout().nanos());
  }
  spec.model_content_max_chars = request.model_content_max_chars();
  spec.calls.reserve(request.calls_size());
  for (const auto& call : request.calls()) spec.calls.push_back(FromProto(call));
  return spec;
}

OpenSessionSpec FromProto(const v1::OpenSessionRequest& request) {
  OpenSessionSpec spec;
  spec.conversation_id = request.conversation_id();
  spec.user_id = request.user_id();
  spec.parent_session_id = request.parent_session_id();
  spec.state_keys.assign(request.state_keys().begin(), request.state_keys().end());
  spec.subagent = request.subagent();
  spec.enabled_tools.assign(request.enabled_tools().begin(), request.enabled_tools().end());
  spec.disabled_tools.assign(request.disabled_tools().begin(), request.disabled_tools().end());
  spec.workspaces.assign(request.workspaces().begin(), request.workspaces().end());
  spec.policy_profile = request.policy_profile();
  spec.record = request.record();
  return spec;
}

MergeOptions FromProto(const v1::CloseSessionRequest& request) {
  MergeOptions merge;
  merge.output_state_keys.assign(request.output_state_keys().begin(),
                                 request.output_state_keys().end());
  merge.reject_conflicts = request.merge_policy() == v1::STATE_MERGE_POLICY_REJECT_CONFLICTS;
  merge.exempt_keys.assign(request.merge_exempt_keys().begin(), request.merge_exempt_keys().end());
  merge.artifact_prefixes.assign(request.artifact_prefixes().begin(),
                                 request.artifact_prefixes().end());
  merge.discard = request.discard();
  return merge;
}

Artifact FromProto(const v1::Artifact& in) {
  Artifact a;
  a.is_text = in.content_case() == v1::Artifact::kText;
  a.text = in.text();
  a.data = in.data();
  a.mime_type = in.mime_type();
  return a;
}

void ToProto(const SessionInfo& s, v1::Session* out) {
  out->set_session_id(s.session_id);
  for (const auto& w : s.warnings) out->add_warnings(w);
  out->set_conversation_id(s.conversation_id);
  out->set_idle(s.idle);
  out->set_user_id(s.user_id);
  out->set_parent_session_id(s.parent_session_id);
  for (const auto& w : s.workspaces) out->add_workspaces(w);
  for (const auto& t : s.tools) out->add_tools(t);
  out->set_recording(s.recording);
}

void ToProto(const MergeResult& merged, v1::EventActions* out) {
  (void)JsonToStruct(merged.state_delta, out->mutable_state_delta());
  for (const auto& [name, version] : merged.artifact_delta) {
    (*out->mutable_artifact_delta())[name] = version;
  }
}

void ToProto(const Artifact& a, v1::Artifact* out) {
  if (a.is_text) {
    out->set_text(a.text);
  } else {
    out->set_data(a.data);
  }
  out->set_mime_type(a.mime_type);
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

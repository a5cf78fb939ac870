#include "tools/runtime/call_result.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tools/runtime/model_content.h"

namespace toolexec {
namespace {

Json ErrorPayload(absl::string_view message) {
  Json payload = MakeObject();
  AddMember(payload, "error", MakeString(message, payload.GetAllocator()),
            payload.GetAllocator());
  return payload;
}

}  // namespace

ResultStatus StatusForCode(ErrorCode code) {
  switch (code) {
    case ErrorCode::kTimeout:
      return ResultStatus::kTimeout;
    case ErrorCode::kCancelled:
      return ResultStatus::kCancelled;
    case ErrorCode::kDenied:
      return ResultStatus::kDenied;
    default:
      return ResultStatus::kError;
  }
}

absl::string_view ResultStatusName(ResultStatus status) {
  switch (status) {
    case ResultStatus::kSuccess:
      return "success";
    case ResultStatus::kError:
      return "error";
    case ResultStatus::kTimeout:
      return "timeout";
    case ResultStatus::kCancelled:
      return "cancelled";
    case ResultStatus::kDenied:
      return "denied";
  }
  return "error";
}

std::string CancelledMessage(CancelReason reason) {
  return reason == CancelReason::kShutdown ? "call cancelled: the daemon is shutting down"
                                           : "call cancelled by the client";
}

void SetFailure(ToolCallResult& r, ErrorCode code, absl::string_view name,
                absl::string_view server_name, absl::string_view title,
                absl::string_view message, size_t model_content_chars) {
  r.status = StatusForCode(code);
  r.payload = ErrorPayload(message);
  r.error_message = std::string(message);
  r.error = ToolCallError{std::string(message), std::string(name), std::string(server_name), code};
  r.display = DisplayResult{std::string(title), r.error_message, ContentType::kPlainText, false,
                            r.error_message.size()};
  r.compact_summary = absl::StrCat("[", name, ": error]");
  r.model_content = FailureModelContent(code, name, message, model_content_chars);
}

void SetFailureMessage(ToolCallResult& r, absl::string_view message, size_t model_content_chars) {
  r.payload = ErrorPayload(message);
  r.error_message = std::string(message);
  r.error->message = r.error_message;
  r.display.content = r.error_message;
  r.display.full_length = message.size();
  r.model_content = FailureModelContent(r.error->code, r.name, message, model_content_chars);
}

Json ShapePayload(Json out) {
  if (out.IsObject()) return out;
  Json payload = MakeObject();
  if (!out.IsNull()) {
    payload.AddMember("result", JsonValue(out, payload.GetAllocator()), payload.GetAllocator());
  }
  return payload;
}

std::string OversizedResultMessage(absl::string_view tool, size_t bytes, size_t max_bytes) {
  return absl::StrCat("tool '", tool, "' returned a result of ", bytes, " bytes, over the limit of ",
                      max_bytes, " bytes for one result; ask for less (a line range, fewer matches)");
}

size_t ResultBytes(const ToolCallResult& r) {
  constexpr size_t kFixed = sizeof(ToolCallResult);
  return kFixed + ApproxJsonBytes(r.payload) + ApproxJsonBytes(r.actions.state_delta) +
         r.error_message.size() + r.display.title.size() + r.display.content.size() +
         r.compact_summary.size() + r.model_content.size() + r.id.size() + r.name.size() +
         r.step_id.size();
}

}  // namespace toolexec

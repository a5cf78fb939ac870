#include "tools/runtime/tool.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace toolexec {
namespace {

constexpr absl::string_view kErrorCodePayload = "type.toolexec.dev/ErrorCode";

constexpr absl::string_view kErrorCodeNames[] = {
    "TOOL_FAILED", "UNKNOWN_TOOL", "INVALID_ARGUMENTS", "NO_CONTEXT",         "DENIED",
    "TIMEOUT",     "CANCELLED",    "NOT_EXECUTABLE_HERE", "SERVER_UNAVAILABLE", "INTERNAL"};

}  // namespace

absl::Status ToolError(ErrorCode code, absl::string_view message) {
  absl::StatusCode status_code = absl::StatusCode::kUnknown;
  switch (code) {
    case ErrorCode::kInvalidArguments:
      status_code = absl::StatusCode::kInvalidArgument;
      break;
    case ErrorCode::kDenied:
      status_code = absl::StatusCode::kPermissionDenied;
      break;
    case ErrorCode::kTimeout:
      status_code = absl::StatusCode::kDeadlineExceeded;
      break;
    case ErrorCode::kCancelled:
      status_code = absl::StatusCode::kCancelled;
      break;
    case ErrorCode::kUnknownTool:
      status_code = absl::StatusCode::kNotFound;
      break;
    case ErrorCode::kNotExecutableHere:
      status_code = absl::StatusCode::kUnimplemented;
      break;
    case ErrorCode::kServerUnavailable:
      status_code = absl::StatusCode::kUnavailable;
      break;
    case ErrorCode::kNoContext:
      status_code = absl::StatusCode::kFailedPrecondition;
      break;
    case ErrorCode::kInternal:
      status_code = absl::StatusCode::kInternal;
      break;
    case ErrorCode::kToolFailed:
      break;
  }
  absl::Status status(status_code, message);
  status.SetPayload(kErrorCodePayload, absl::Cord(std::string(1, static_cast<char>(code))));
  return status;
}

ErrorCode ErrorCodeOf(const absl::Status& status) {
  if (auto payload = status.GetPayload(kErrorCodePayload); payload && payload->size() == 1) {
    int code = static_cast<unsigned char>(std::string(*payload)[0]);
    if (code <= static_cast<int>(ErrorCode::kInternal)) return static_cast<ErrorCode>(code);
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      return ErrorCode::kInvalidArguments;
    case absl::StatusCode::kPermissionDenied:
      return ErrorCode::kDenied;
    case absl::StatusCode::kDeadlineExceeded:
      return ErrorCode::kTimeout;
    case absl::StatusCode::kCancelled:
      return ErrorCode::kCancelled;
    case absl::StatusCode::kUnavailable:
      return ErrorCode::kServerUnavailable;
    default:
      return ErrorCode::kToolFailed;
  }
}

absl::string_view ErrorCodeName(ErrorCode code) {
  return kErrorCodeNames[static_cast<int>(code)];
}

bool ToolSpec::HasTag(absl::string_view tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

Tool::Tool(ToolSpec spec) : spec_(std::move(spec)) {
  if (spec_.display_name.empty()) spec_.display_name = spec_.name;
  if (spec_.HasTag(kTagReadOnly)) spec_.read_only = true;
}

std::string Tool::not_executable_message() const {
  return absl::StrCat(name(), spec_.executor == ToolExecutor::kProvider
                                  ? " is handled internally by the model provider"
                                  : " is executed by the harness");
}

std::vector<PermissionRequirement> PathPermission(std::string path, PermissionLevel level,
                                                  bool recursive) {
  PermissionRequirement r;
  r.kind = PermissionRequirement::Kind::kPath;
  r.value = std::move(path);
  r.recursive = recursive;
  r.level = level;
  return {r};
}

std::string NormalizePath(absl::string_view path) {
  if (path.empty()) return "";
  const bool absolute = path.front() == '/';
  std::vector<absl::string_view> parts;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (part == ".." && !parts.empty() && parts.back() != "..") {
      parts.pop_back();
    } else if (part != ".." || !absolute) {
      parts.push_back(part);  // ".." above the root of an absolute path is the root
    }
  }
  std::string joined = absl::StrJoin(parts, "/");
  if (absolute) return absl::StrCat("/", joined);
  return joined.empty() ? "." : joined;
}

std::string PathResource(absl::string_view path) {
  if (path.empty()) return "";
  return absl::StrCat("path:", NormalizePath(path));
}

std::string CommandResource(absl::string_view process_id) {
  return process_id.empty() ? "" : absl::StrCat("command:", process_id);
}

DisplayResult TextDisplay(std::string title, ContentType type, std::string text, size_t max) {
  DisplayResult d;
  d.title = std::move(title);
  d.content_type = type;
  d.full_length = text.size();
  d.content = std::move(text);
  if (d.content.size() > max) {
    d.content.resize(Utf8SafePrefix(d.content, max));
    d.is_truncated = true;
  }
  return d;
}

DisplayResult Tool::display(const JsonValue& input, const JsonValue& result) const {
  return TextDisplay(display_title(input), ContentType::kJson, ToJsonString(result),
                     kDefaultDisplayBytes);
}

std::string Tool::model_content(const JsonValue& /*input*/, const JsonValue& result,
                                const ModelContentBudget& budget) const {
  return DefaultModelContent(result, budget.max_chars);
}

std::string Tool::compact_summary(const JsonValue& input, const JsonValue& result, bool ok) const {
  return absl::StrCat("[", name(), ok ? ": completed]" : ": error]");
}

}  // namespace toolexec

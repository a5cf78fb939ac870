// Building a call's result [Failures are results]: a failure's shape (payload
// {"error": message}, error_message, the structured ToolCallError, display,
// summary and model_content), made by the runner for every failed call and
// by a transport for a result it cannot carry; a success's payload shape;
// and how much memory a result holds. Thread safety: pure functions.
#ifndef TOOLEXEC_TOOLS_RUNTIME_CALL_RESULT_H_
#define TOOLEXEC_TOOLS_RUNTIME_CALL_RESULT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"
#include "tools/runtime/batch.h"
#include "tools/runtime/cancellation.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool.h"

namespace toolexec {

// The status of a failure with `code`: TIMEOUT, CANCELLED and DENIED have
// their own; every other code is an error.
ResultStatus StatusForCode(ErrorCode code);

// The message of a call cancelled for `reason`.
std::string CancelledMessage(CancelReason reason);

// Makes `r` a failure with `code` and `message`, by the tool `name` (from
// `server_name`, "" for the daemon's own), displayed under `title`, its
// model_content within `model_content_chars`. The call's identity (index,
// id, names, step, duration) and actions stay.
void SetFailure(ToolCallResult& r, ErrorCode code, absl::string_view name,
                absl::string_view server_name, absl::string_view title,
                absl::string_view message, size_t model_content_chars);

// The same failure told in other words (a hook's message): its status, code,
// names and summary stay.
void SetFailureMessage(ToolCallResult& r, absl::string_view message, size_t model_content_chars);

// A success's payload: an object as it is, null (nothing) as {}, any other v
// as {"result": v}.
Json ShapePayload(Json out);

// Why a result of `bytes` is not sent where one result may be at most
// `max_bytes` (the message of the TOOL_FAILED result sent instead), naming
// the tool and what to ask for.
std::string OversizedResultMessage(absl::string_view tool, size_t bytes, size_t max_bytes);

// About how much memory a result holds until it is released.
size_t ResultBytes(const ToolCallResult& r);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_CALL_RESULT_H_

// toolexecd's log lines on stderr: text (the default) or JSON, one object per
// line. Both carry the trace of the RPC being served (trace_id and span_id,
// tools/runtime/trace_context.h) on every line written while a ScopedTraceLog
// is active on the writing thread: the RPC's handler and log line, and the
// tool calls of its batch.
//
//   text: 2026-12-03T18:00:00.123 info ExecuteBatch peer=... status=OK trace_id=4bf9...
//         span_id=00f0... (one line)
//   json: {"time":"2026-12-03T18:00:00.123Z","level":"info","msg":"ExecuteBatch peer=...",
//          "trace_id":"4bf9...","span_id":"00f0..."}
//
// Threads: SetLogFormat is called once, at start-up, before other threads log.
#ifndef TOOLEXEC_SERVER_LOGGING_H_
#define TOOLEXEC_SERVER_LOGGING_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spdlog/formatter.h"

namespace toolexec {

enum class LogFormat { kText, kJson };

// "text" or "json"; InvalidArgument naming both otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name);

// The formatter of `format` (for a sink of one's own, e.g. in tests).
std::unique_ptr<spdlog::formatter> NewLogFormatter(LogFormat format);

// Formats the default logger's lines (and every logger made later) so.
void SetLogFormat(LogFormat format);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_LOGGING_H_

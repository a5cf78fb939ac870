// toolexecd's log lines on stderr: text (the default) or JSON, one object per
// line. Both carry the trace of the RPC being served (trace_id and span_id,
// tools/runtime/trace_context.h) on every line written while a ScopedTraceLog
// is active on the writing thread: the RPC's handler and log line, and the
// tool calls of its batch.
//
//   text: 2026-12-03T18:00:00.123Z info ExecuteBatch peer=... status=OK trace_id=4bf9...
//         span_id=00f0... (one line)
//   json: {"time":"2026-12-03T18:00:00.123Z","level":"info","msg":"ExecuteBatch",
//          "peer":"...","status":"OK","ms":1.25,"trace_id":"4bf9...","span_id":"00f0..."}
//
// Threads: SetLogFormat is called once, at start-up, before other threads log.
#ifndef TOOLEXEC_SERVER_LOGGING_H_
#define TOOLEXEC_SERVER_LOGGING_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spdlog/common.h"
#include "spdlog/formatter.h"

namespace toolexec {

// One structured line, such as an RPC's outcome. Text: "<what> key=value ..."
// (a value with a space, quote, backslash or control character quoted and
// escaped); JSON: "msg" is <what> and each field is a member of its own,
// numbers as numbers. Write() hands it to the formatter on this thread.
class LogLine {
 public:
  explicit LogLine(std::string what) : what_(std::move(what)) {}

  LogLine& Add(absl::string_view key, absl::string_view value);
  LogLine& AddQuoted(absl::string_view key, absl::string_view value);  // always quoted in text
  LogLine& AddNumber(absl::string_view key, double value, int decimals = 0);
  // "key=value key=value" written by toolexec itself (an RPC's detail): each
  // pair becomes a field; text that is not such pairs becomes "detail".
  LogLine& AddPairs(absl::string_view pairs);

  const std::string& what() const { return what_; }
  std::string Text() const;
  void Write(spdlog::level::level_enum level) const;

  struct Field {
    std::string key;
    std::string value;  // a number's text when `number`
    bool number = false;
    bool quoted = false;
  };
  const std::vector<Field>& fields() const { return fields_; }

 private:
  std::string what_;
  std::vector<Field> fields_;
};

enum class LogFormat { kText, kJson };

// "text" or "json"; InvalidArgument naming both otherwise.
absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name);

// The formatter of `format` (for a sink of one's own, e.g. in tests).
std::unique_ptr<spdlog::formatter> NewLogFormatter(LogFormat format);

// Formats the default logger's lines (and every logger made later) so.
void SetLogFormat(LogFormat format);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_LOGGING_H_

// W3C Trace Context (https://www.w3.org/TR/trace-context/) for correlating
// what toolexec does with the caller's trace: the `traceparent` a harness
// sends (gRPC metadata) is parsed, or a new trace is started when it sends
// none or an invalid one; the daemon's work is one span of that trace.
//
// traceparent = "00-<trace-id: 32 hex>-<parent-id: 16 hex>-<flags: 2 hex>",
// lower-case; neither id all zeros; version ff is invalid; a later version is
// read by its first four fields.
//
// What goes where: log lines carry trace_id and span_id (the daemon's span);
// the traceparent handed on (to commands as TRACEPARENT, to hooks and command
// tools through ToolContext) names the daemon's span as the parent.
//
// Threads: TraceContext is a value. ScopedTraceLog marks the current thread's
// log lines with a trace until it is destroyed (a thread-local pointer; the
// traceparent must outlive the scope).
#ifndef TOOLEXEC_TOOLS_RUNTIME_TRACE_CONTEXT_H_
#define TOOLEXEC_TOOLS_RUNTIME_TRACE_CONTEXT_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace toolexec {

struct TraceContext {
  std::string trace_id;   // 32 lower-case hex
  std::string parent_id;  // the caller's span (16 hex); "" when the trace starts here
  std::string span_id;    // the daemon's span (16 hex)
  std::string flags;      // 2 hex ("01" = sampled)

  // The caller's trace with a new span of the daemon's, or a new trace when
  // `header` is empty or not a valid traceparent.
  static TraceContext FromTraceparent(absl::string_view header);
  // "00-<trace_id>-<span_id>-<flags>": what the daemon hands on.
  std::string Traceparent() const;
};

// The fields of a valid traceparent, or nullopt (span_id left empty).
std::optional<TraceContext> ParseTraceparent(absl::string_view header);

// A new traceparent (a new trace and span): for callers that bring none.
std::string NewTraceparent();

// While it lives, log lines written on this thread carry the trace of
// `traceparent` (a traceparent as Traceparent() makes it; "" = none).
class ScopedTraceLog final {
 public:
  explicit ScopedTraceLog(const std::string& traceparent);
  ~ScopedTraceLog();
  ScopedTraceLog(const ScopedTraceLog&) = delete;
  ScopedTraceLog& operator=(const ScopedTraceLog&) = delete;

 private:
  const std::string* previous_;
};

// The traceparent of the innermost ScopedTraceLog on this thread, or null.
const std::string* CurrentTraceLog();

// The trace-id and parent-id fields of a traceparent (empty if too short).
absl::string_view TraceIdOf(absl::string_view traceparent);
absl::string_view SpanIdOf(absl::string_view traceparent);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TRACE_CONTEXT_H_

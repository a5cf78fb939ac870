// Reading a session recording (core/recorder.h describes the file) and
// writing it out again: as it is (native), or as a provider transcript, the
// conversation a harness would have held with the model: per batch, the
// model's turn with the tool calls, then the tool-result messages exactly as
// tools/runtime/provider_format.h (and the Python client's
// tool_result_messages) build them. A transcript is a JSON array, one
// message (or Responses item) per line, ready to be the request's
// "messages" (OpenAI Chat, Anthropic), "input" (OpenAI Responses) or
// "contents" (Gemini).
//
// Thread safety: pure functions.
#ifndef TOOLEXEC_CORE_RECORDING_EXPORT_H_
#define TOOLEXEC_CORE_RECORDING_EXPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/json.h"

namespace toolexec {

// Mirrors toolexec.v1.RecordingFormat.
enum class RecordingFormat { kNative, kOpenAi, kOpenAiResponses, kAnthropic, kGemini };

struct Recording {
  Json header;
  std::vector<Json> events;  // in file order
  // The last line had no newline (a crash while it was written): dropped.
  bool torn_tail = false;
};

// Parses a recording's text. InvalidArgument naming the line for a line
// that is not a JSON object, or a header that is not toolexec-recording/1.
absl::StatusOr<Recording> ParseRecording(absl::string_view text);

// The recording's owner (its open_session event's session.owner), "" when
// it has none.
std::string RecordingOwner(const Recording& recording);

// The transcript of `recording` in `format` (not kNative).
std::string RecordingTranscript(const Recording& recording, RecordingFormat format);

}  // namespace toolexec

#endif  // TOOLEXEC_CORE_RECORDING_EXPORT_H_

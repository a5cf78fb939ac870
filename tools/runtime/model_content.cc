#include "tools/runtime/model_content.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "tools/runtime/tool.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

// What the model should do after a failure of this kind.
absl::string_view Advice(ErrorCode code) {
  switch (code) {
    case ErrorCode::kToolFailed:
      return "The tool ran and failed. Fix the cause the error names (a path, an argument, the "
             "file's current content) and call it again, or take another approach.";
    case ErrorCode::kUnknownTool:
      return "No tool has that name. Call only the tools you were given, spelled exactly as "
             "declared.";
    case ErrorCode::kInvalidArguments:
      return "The arguments do not match the tool's parameters. Correct them as the error says "
             "and call the tool again.";
    case ErrorCode::kNoContext:
      return "This tool cannot run in this conversation (it needs a session). Continue without "
             "it.";
    case ErrorCode::kDenied:
      return "This call is not permitted. Do not repeat it; choose another approach or ask the "
             "user.";
    case ErrorCode::kTimeout:
      return "The call ran out of time and was stopped; its effects may be partial. Retry with "
             "less work (a narrower path or pattern, a smaller range), or for a long command "
             "use a larger timeout_ms or background:true.";
    case ErrorCode::kCancelled:
      return "The call was stopped before it finished; its effects may be partial. Check the "
             "state before retrying.";
    case ErrorCode::kNotExecutableHere:
      return "Call this tool through the harness or model provider that runs it, not here.";
    case ErrorCode::kServerUnavailable:
      return "The tool's server is unavailable. Try again shortly, or continue without this "
             "tool.";
    case ErrorCode::kInternal:
      return "The tool executor failed, not your call. Try once more; if it fails again, "
             "continue without this tool.";
  }
  return "";
}

}  // namespace

std::string GroupDigits(uint64_t n) {
  std::string digits = absl::StrCat(n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string OmittedBytesMarker(uint64_t omitted_bytes, absl::string_view hint) {
  return absl::StrCat("\n[... ", GroupDigits(omitted_bytes), " bytes omitted",
                      hint.empty() ? "" : "; ", hint, " ...]\n");
}

std::string JoinHeadTail(absl::string_view head, absl::string_view tail, uint64_t gap_bytes,
                         size_t max_chars, OmittedMarkerFn marker, bool* cut) {
  const size_t head_chars = Utf8Chars(head);
  const size_t tail_chars = Utf8Chars(tail);
  if (cut != nullptr) *cut = false;
  if (gap_bytes == 0 && head_chars + tail_chars <= max_chars) return absl::StrCat(head, tail);
  const uint64_t total = head.size() + gap_bytes + tail.size();
  // The marker for the most that can be omitted is the longest one.
  const size_t marker_chars = Utf8Chars(marker(total));
  const size_t room = max_chars > marker_chars ? max_chars - marker_chars : 0;
  size_t h = std::min(room / 2, head_chars);
  const size_t t = std::min(room - h, tail_chars);
  h = std::min(room - t, head_chars);
  size_t head_bytes = Utf8PrefixBytes(head, h);
  size_t tail_start = tail.size() - Utf8SuffixBytes(tail, t);
  // Whole lines where a line end is near: the marker then sits on its own line.
  if (head_bytes < head.size()) {
    size_t nl = head.substr(0, head_bytes).rfind('\n');
    if (nl != absl::string_view::npos && nl >= head_bytes / 2) head_bytes = nl;
  }
  if (tail_start > 0 && tail[tail_start - 1] != '\n') {
    size_t nl = tail.find('\n', tail_start);
    if (nl != absl::string_view::npos && nl + 1 < tail.size() &&
        nl - tail_start < (tail.size() - tail_start) / 2) {
      tail_start = nl + 1;
    }
  }
  const uint64_t omitted = total - head_bytes - (tail.size() - tail_start);
  if (omitted == 0) return absl::StrCat(head, tail);
  if (cut != nullptr) *cut = true;
  return absl::StrCat(head.substr(0, head_bytes), marker(omitted), tail.substr(tail_start));
}

std::string CutMiddle(absl::string_view text, size_t max_chars, OmittedMarkerFn marker,
                      bool* cut) {
  const size_t mid = Utf8SafePrefix(text, text.size() / 2);
  return JoinHeadTail(text.substr(0, mid), text.substr(mid), 0, max_chars, marker, cut);
}

std::string CutMiddle(absl::string_view text, size_t max_chars, absl::string_view hint,
                      bool* cut) {
  return CutMiddle(
      text, max_chars, [hint](uint64_t n) { return OmittedBytesMarker(n, hint); }, cut);
}

std::string DefaultModelContent(const JsonValue& payload, size_t max_chars) {
  return CutMiddle(ToJsonString(payload), max_chars, "the result was cut to fit");
}

std::string FailureModelContent(ErrorCode code, absl::string_view tool_name,
                                absl::string_view message, size_t max_chars) {
  const std::string advice = absl::StrCat("\n", Advice(code));
  const std::string head = absl::StrCat("Error from ", tool_name, " (", ErrorCodeName(code), "): ");
  const size_t fixed = Utf8Chars(head) + Utf8Chars(advice);
  const size_t room = max_chars > fixed ? max_chars - fixed : kMinModelContentChars / 2;
  return absl::StrCat(head, CutMiddle(message, room), advice);
}

}  // namespace toolexec

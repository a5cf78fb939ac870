// model_content: the text a harness sends the model as a tool result.
//
// Every result carries one, rendered within the call's budget of Unicode code
// points (characters, not bytes; cuts fall between UTF-8 sequences). A tool
// renders its own success (Tool::model_content; the default is the payload as
// JSON); the runtime renders every failure (FailureModelContent) as what went
// wrong and what to do next. Text over the budget keeps its head and its tail
// around a marker saying how much was left out, so the last line of a long
// output (a test summary) survives.
//
// Thread safety: free functions without shared state.
#ifndef TOOLEXEC_TOOLS_RUNTIME_MODEL_CONTENT_H_
#define TOOLEXEC_TOOLS_RUNTIME_MODEL_CONTENT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/json.h"
#include "tools/runtime/utf8.h"

namespace toolexec {

enum class ErrorCode;

// Budgets in characters (Unicode code points). The daemon's defaults; its
// config may change the first two.
inline constexpr size_t kDefaultModelContentChars = 30000;
inline constexpr size_t kDefaultModelContentMaxChars = 200000;
// A smaller requested budget is raised to this: the markers need room.
inline constexpr size_t kMinModelContentChars = 200;

// One call's budget: model_content is at most max_chars characters, and a
// tool whose payload carries text for the model (file content, command
// output, matches) keeps that text within it too.
struct ModelContentBudget {
  size_t max_chars = kDefaultModelContentChars;

  // What a tool may spend on its payload's main text when its rendering adds
  // a header and a marker of at most `reserve` characters around it.
  size_t TextChars(size_t reserve = 400) const {
    return max_chars > 2 * reserve ? max_chars - reserve : max_chars / 2;
  }
};

// "1,157,849".
std::string GroupDigits(uint64_t n);

// Makes the marker put where `omitted_bytes` bytes were left out.
using OmittedMarkerFn = absl::FunctionRef<std::string(uint64_t omitted_bytes)>;

// "\n[... 1,157,849 bytes omitted ...]\n", or with `hint` after a semicolon:
// "\n[... 1,157,849 bytes omitted; rerun with | tail ...]\n".
std::string OmittedBytesMarker(uint64_t omitted_bytes, absl::string_view hint = "");

// What a command tool tells the model when the command printed nothing: a
// text, never "" (an empty model_content reads as "none given" to a harness,
// which would send the payload instead).
inline constexpr char kNoOutputText[] = "(no output)";

// A text known as `head`, then `gap_bytes` bytes already dropped, then `tail`,
// rendered within `max_chars` code points: all of it when it fits and nothing
// was dropped; else the start of head and the end of tail (about half the
// room each, moved to line boundaries when one is near) around
// marker(bytes left out in all). `*cut` (optional) says whether anything is
// missing.
std::string JoinHeadTail(absl::string_view head, absl::string_view tail, uint64_t gap_bytes,
                         size_t max_chars, OmittedMarkerFn marker, bool* cut = nullptr);

// `text` within `max_chars` code points, head and tail kept (JoinHeadTail).
std::string CutMiddle(absl::string_view text, size_t max_chars, OmittedMarkerFn marker,
                      bool* cut = nullptr);
// The same with OmittedBytesMarker(n, hint).
std::string CutMiddle(absl::string_view text, size_t max_chars, absl::string_view hint = "",
                      bool* cut = nullptr);

// The default rendering of a successful result: the payload as JSON, cut in
// the middle when over budget.
std::string DefaultModelContent(const JsonValue& payload, size_t max_chars);

// A failed call, told to the model: "Error: <message>" (cut to the budget),
// then what to do about this kind of failure.
std::string FailureModelContent(ErrorCode code, absl::string_view tool_name,
                                absl::string_view message, size_t max_chars);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_MODEL_CONTENT_H_

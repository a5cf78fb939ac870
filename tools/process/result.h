// How a command's outcome is shown: the JSON result fields shared by
// run_command, command_status and kill_command, and the display helpers.
#ifndef TOOLEXEC_TOOLS_PROCESS_RESULT_H_
#define TOOLEXEC_TOOLS_PROCESS_RESULT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "tools/process/child_process.h"
#include "tools/runtime/json.h"

namespace toolexec::command {

// Adds `value` as member `name` of the object `out`.
void SetString(Json& out, absl::string_view name, absl::string_view value);
void SetInt(Json& out, absl::string_view name, int64_t value);
void SetBool(Json& out, absl::string_view name, bool value);

// exit_code (128+N when killed by signal N, as a shell reports it) and, when
// killed by a signal, "signal": "SIGKILL".
void SetExit(Json& out, const ExitStatus& exit);

// The first line of `command_line`, cut to `max_chars` bytes on a character
// boundary, with "..." when anything was cut.
std::string ShortCommand(absl::string_view command_line, size_t max_chars = 80);

// "1.2s" / "350ms".
std::string FormatMs(int64_t ms);

// Sets stdout, stderr and, only when both streams wrote something,
// combined_output (their interleaving; otherwise it would repeat the one
// stream that wrote).
void SetOutput(Json& out, absl::string_view stdout_text, absl::string_view stderr_text,
               absl::string_view combined);

// model_content of run_command, command_status and kill_command: a first line
// saying how the command ended (exit code, signal, which timeout fired and
// what to do about it) or that it still runs, notes, then the output (the
// interleaved output when both streams wrote, else the one that did), cut in
// the middle to the budget with OmittedMarker.
std::string CommandModelContent(const JsonValue& input, const JsonValue& result,
                                size_t max_chars);

}  // namespace toolexec::command

#endif  // TOOLEXEC_TOOLS_PROCESS_RESULT_H_

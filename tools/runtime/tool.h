// The tool model. A Tool is a named function from JSON arguments to a JSON
// result, with a JSON Schema for its arguments and optional metadata. Every
// optional method has a default, so a minimal tool overrides only name(),
// description(), parameters_schema() and Call().
//
// Thread safety: one Tool instance serves every call, concurrently, from the
// runtime's executor threads. Call() and every const method must be safe to
// call from many threads at once; guard any shared state yourself.
#ifndef TOOLEXEC_TOOLS_RUNTIME_TOOL_H_
#define TOOLEXEC_TOOLS_RUNTIME_TOOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/runtime/json.h"

namespace toolexec {

class ToolContext;

// Mirrors toolexec.v1.ToolType.
enum class ToolType { kCustom, kApiCall, kBashCmd, kWebSearch, kTextEdit, kFileRead, kUserInteraction };

// Who runs the tool (mirrors toolexec.v1.Executor).
enum class ToolExecutor { kDaemon, kHarness, kProvider };

// Mirrors toolexec.v1.ContentType.
enum class ContentType { kPlainText, kJson, kMarkdown, kYaml, kXml, kAuto };

// Mirrors toolexec.v1.ErrorCode (S3).
enum class ErrorCode {
  kToolFailed,
  kUnknownTool,
  kInvalidArguments,
  kNoContext,
  kDenied,
  kTimeout,
  kCancelled,
  kNotExecutableHere,
  kServerUnavailable,
  kInternal,
};

// S12: None < Read < Write < Execute < Admin.
enum class PermissionLevel { kNone, kRead, kWrite, kExecute, kAdmin };

// What a call needs permission for: a path, a domain, a command or a tool.
struct PermissionRequirement {
  enum class Kind { kPath, kDomain, kCommand, kTool };
  Kind kind = Kind::kTool;
  std::string value;
  bool recursive = false;
  PermissionLevel level = PermissionLevel::kNone;
};

// What a tool that touches one workspace path needs (S12).
std::vector<PermissionRequirement> PathPermission(std::string path, PermissionLevel level,
                                                  bool recursive = false);

// Resource keys (Tool::resources). PathResource normalizes the spelling, so
// "a/./b", "a//b", "./a/b/" and "a/c/../b" are one key; it does not resolve
// symbolic links (two spellings through a link are two keys, and such calls
// run concurrently, each write still atomic). "" when `path` is empty.
std::string PathResource(absl::string_view path);
std::string CommandResource(absl::string_view process_id);

// S13: how a result is shown to a person.
struct DisplayResult {
  std::string title;
  std::string content;
  ContentType content_type = ContentType::kPlainText;
  bool is_truncated = false;
  uint64_t full_length = 0;
};

// The length of the longest prefix of `s` no longer than `max` that does not
// cut a UTF-8 sequence in two.
size_t Utf8SafePrefix(absl::string_view s, size_t max);

// A display of `text` under `title`, cut to `max` bytes on a UTF-8 boundary;
// full_length and is_truncated say what was cut.
DisplayResult TextDisplay(std::string title, ContentType type, std::string text, size_t max);

// A failure status that carries an explicit ErrorCode. A tool may return any
// absl::Status; without an explicit code the runner maps InvalidArgument to
// INVALID_ARGUMENTS, PermissionDenied to DENIED, DeadlineExceeded to TIMEOUT,
// Cancelled to CANCELLED, Unavailable to SERVER_UNAVAILABLE and the rest to
// TOOL_FAILED.
absl::Status ToolError(ErrorCode code, absl::string_view message);
ErrorCode ErrorCodeOf(const absl::Status& status);
absl::string_view ErrorCodeName(ErrorCode code);

class Tool {
 public:
  virtual ~Tool() = default;

  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // JSON Schema (draft 7) text for the arguments. Compiled once, at registration;
  // an invalid schema is a start-up error.
  virtual std::string parameters_schema() const = 0;

  // Runs the call. `args` are already coerced, validated and defaulted (S4).
  // Return any JSON value: an object is sent as-is, any other value v as
  // {"result": v}, null as {} (S3). Return a non-OK status to fail the call;
  // a thrown exception fails it too, and never takes the daemon down.
  // Long calls should honour ctx.cancellation() (see ToolContext).
  virtual absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const = 0;

  // --- optional, with defaults ---

  // A tool that needs_context() is only run with a session; without one the
  // call is a NO_CONTEXT error (S5).
  virtual bool needs_context() const { return false; }
  virtual ToolType tool_type() const { return ToolType::kCustom; }
  virtual ToolExecutor executor() const { return ToolExecutor::kDaemon; }
  virtual bool read_only() const { return false; }
  // The provider-native configuration (EXECUTOR_PROVIDER tools), JSON object text.
  virtual std::string provider_config() const { return ""; }
  // S9: why a tool that executor() says runs elsewhere fails when sent here
  // (NOT_EXECUTABLE_HERE). Default: "<name> is executed by the harness" or
  // "<name> is handled internally by the model provider".
  virtual std::string not_executable_message() const;

  // S13. display_name defaults to name(); display_title to display_name().
  virtual std::string display_name() const { return name(); }
  virtual std::string display_title(const JsonValue& /*input*/) const { return display_name(); }
  // The content shown for a finished call. Default: the result as JSON,
  // cut to kDefaultDisplayBytes with is_truncated and full_length set.
  virtual DisplayResult display(const JsonValue& input, const JsonValue& result) const;
  // One line for a compacted transcript. Default "[<name>: completed]" or
  // "[<name>: error]".
  virtual std::string compact_summary(const JsonValue& input, const JsonValue& result,
                                      bool ok) const;

  // S12: what this call needs permission for. Default: nothing.
  virtual std::vector<PermissionRequirement> required_permissions(
      const JsonValue& /*input*/) const {
    return {};
  }
  virtual bool handles_own_permissions() const { return false; }

  // What this call acts on that other calls of its batch may act on too: the
  // runner runs calls of one batch that share a key one after another, in
  // call order, and keeps every other call concurrent. `input` is the call's
  // arguments as sent: parsed, but not yet coerced or validated, so read it
  // defensively and name nothing for a field you cannot read (the call then
  // fails validation anyway). Keys: PathResource(p) for a workspace path the
  // call writes, CommandResource(id) for a background command it acts on;
  // any other string names a resource of your own. Default: none.
  virtual std::vector<std::string> resources(const JsonValue& /*input*/) const { return {}; }

  // Called once when a session closes, for every tool. Must not throw.
  virtual void cleanup_session(absl::string_view /*session_id*/) const {}

  // Called once when the daemon stops, for every tool, once in-flight batches
  // have finished or been cancelled. End everything that outlives calls
  // (background processes, connections) at once and refuse to start more;
  // the sessions are closed (cleanup_session) after this. Must not throw;
  // may block for a bounded time.
  virtual void shutdown() const {}

  static constexpr size_t kDefaultDisplayBytes = 4096;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TOOL_H_

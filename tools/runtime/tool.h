// The tool model. A Tool is a named function from JSON arguments to a JSON
// result. What it is (name, description, argument schema, type, tags...) is
// data, a ToolSpec given once to the constructor; what it does is virtual
// (Call, and optionally its display, permissions and cleanup). A minimal tool
// is a constructor passing ToolSpec(name, description, schema) and Call().
//
// Thread safety: one Tool instance serves every call, concurrently, from the
// runtime's executor threads. Call() and every const method must be safe to
// call from many threads at once; guard any shared state yourself.
#ifndef TOOLEXEC_TOOLS_RUNTIME_TOOL_H_
#define TOOLEXEC_TOOLS_RUNTIME_TOOL_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/runtime/json.h"
#include "tools/runtime/model_content.h"
#include "tools/runtime/utf8.h"

namespace toolexec {

class ToolContext;

// Mirrors toolexec.v1.ToolType.
enum class ToolType { kCustom, kApiCall, kBashCmd, kWebSearch, kTextEdit, kFileRead, kUserInteraction };

// Who runs the tool (mirrors toolexec.v1.Executor).
enum class ToolExecutor { kDaemon, kHarness, kProvider };

// Mirrors toolexec.v1.ContentType.
enum class ContentType { kPlainText, kJson, kMarkdown, kYaml, kXml, kAuto };

// Mirrors toolexec.v1.ErrorCode [Failures are results].
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

// [Deciding what runs]: None < Read < Write < Execute < Admin.
enum class PermissionLevel { kNone, kRead, kWrite, kExecute, kAdmin };

// What a call needs permission for: a path, a domain, a command or a tool.
// A command is a command line as bash reads it (a program's argv: its words
// quoted), and is judged by the simple commands it runs (core/permissions.h).
struct PermissionRequirement {
  enum class Kind { kPath, kDomain, kCommand, kTool };
  Kind kind = Kind::kTool;
  std::string value;
  bool recursive = false;
  PermissionLevel level = PermissionLevel::kNone;
  // kCommand: the variables the call sets on top of the daemon's
  // environment, as "NAME=value", in order. Judged with the command.
  std::vector<std::string> env;
};

// What a tool that touches one workspace path needs [Deciding what runs].
std::vector<PermissionRequirement> PathPermission(std::string path, PermissionLevel level,
                                                  bool recursive = false);

// [Deciding what runs]: a question to the person behind the harness, sent on the batch stream
// and to the session's watchers before any call of the batch starts
// (mirrors toolexec.v1.PermissionRequest). `target` is the suggested grant.
struct PermissionRequestEvent {
  std::string request_id;
  uint32_t index = 0;  // the first call of the batch that needs it
  std::string tool_name;
  PermissionRequirement target;
  std::string description;
  std::string reason;
};

// `path` with "." components, repeated and trailing '/' removed and ".."
// folded lexically (no symbolic link is resolved): "a/./b", "a//b", "./a/b/"
// and "a/c/../b" are all "a/b". A relative path keeps leading ".." and is "."
// when empty; ".." above "/" is "/". "" stays "".
std::string NormalizePath(absl::string_view path);

// Resource keys (Tool::resources). PathResource normalizes the spelling, so
// "a/./b", "a//b", "./a/b/" and "a/c/../b" are one key; it does not resolve
// symbolic links (two spellings through a link are two keys, and such calls
// run concurrently, each write still atomic). "" when `path` is empty.
std::string PathResource(absl::string_view path);
std::string CommandResource(absl::string_view process_id);

// [Display]: how a result is shown to a person.
struct DisplayResult {
  std::string title;
  std::string content;
  ContentType content_type = ContentType::kPlainText;
  bool is_truncated = false;
  uint64_t full_length = 0;
};

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

// Tags a tool may carry. A named tool set ([Tool sets], tool_sets.h) is the tools with
// its tag, so any tool (built-in, example or a plugin's) joins a set by
// declaring the tag; the runtime never lists tools by name. Other tags are
// free-form and sent with the declaration (ToolDeclaration.tags).
inline constexpr absl::string_view kTagReadOnly = "read_only";      // set read_only
inline constexpr absl::string_view kTagFile = "file";               // set file_tools
inline constexpr absl::string_view kTagPathScoped = "path_scoped";  // set path_scoped
inline constexpr absl::string_view kTagMinimal = "minimal";         // set minimal
// The tools in the shapes the providers train their models on
// (str_replace_based_edit_tool, apply_patch, bash, shell, memory).
inline constexpr absl::string_view kTagProvider = "provider";       // set provider_tools
// Not in nondestructive (which is every tool without this tag).
inline constexpr absl::string_view kTagDestructive = "destructive";

// What a tool is, declared once. Build it with the constructor and the
// chainable setters:
//   ToolSpec("get_weather", "Gets the weather.", kSchema).Type(ToolType::kApiCall).ReadOnly()
struct ToolSpec {
  ToolSpec(std::string name, std::string description, std::string parameters_schema)
      : name(std::move(name)),
        description(std::move(description)),
        parameters_schema(std::move(parameters_schema)) {}

  std::string name;
  std::string description;
  // JSON Schema (draft 7) text for the arguments. Compiled once, at
  // registration; an invalid schema is a start-up error.
  std::string parameters_schema;
  ToolType type = ToolType::kCustom;
  // Who runs it; a tool run elsewhere fails here with NOT_EXECUTABLE_HERE [Tools run elsewhere].
  ToolExecutor executor = ToolExecutor::kDaemon;
  // Only run with a session; without one the call is a NO_CONTEXT error [Context].
  bool needs_context = false;
  // The tool changes nothing (ToolDeclaration.read_only). The read_only tag
  // implies it; a tool may be read-only without being in the read_only set.
  bool read_only = false;
  // The tool never blocks (no I/O, no waiting, no lock held for long) and
  // returns within microseconds: the runner may run its calls on the thread
  // that starts them instead of handing each to a worker (ToolRunner).
  bool quick = false;
  std::vector<std::string> tags;
  // [Display]: the name shown to a person; "" means `name`.
  std::string display_name;
  // "" for built-ins and in-process tools; the MCP server's name for MCP tools.
  std::string server_name;
  // The provider-native configuration (EXECUTOR_PROVIDER tools), JSON object text.
  std::string provider_config;

  bool HasTag(absl::string_view tag) const;

  ToolSpec& Type(ToolType t) {
    type = t;
    return *this;
  }
  ToolSpec& Executor(ToolExecutor e) {
    executor = e;
    return *this;
  }
  ToolSpec& NeedsContext() {
    needs_context = true;
    return *this;
  }
  ToolSpec& ReadOnly() {
    read_only = true;
    return *this;
  }
  ToolSpec& Quick() {
    quick = true;
    return *this;
  }
  ToolSpec& Tags(std::initializer_list<absl::string_view> more) {
    for (absl::string_view t : more) tags.emplace_back(t);
    return *this;
  }
  ToolSpec& DisplayName(std::string n) {
    display_name = std::move(n);
    return *this;
  }
  ToolSpec& ServerName(std::string n) {
    server_name = std::move(n);
    return *this;
  }
  ToolSpec& ProviderConfig(std::string c) {
    provider_config = std::move(c);
    return *this;
  }
};

class Tool {
 public:
  // Fills the spec's defaults: display_name from name, read_only from the
  // read_only tag.
  explicit Tool(ToolSpec spec);
  virtual ~Tool() = default;
  Tool(const Tool&) = delete;
  Tool& operator=(const Tool&) = delete;

  const ToolSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }

  // Runs the call. `args` are already coerced, validated and defaulted [Arguments].
  // Return any JSON value: an object is sent as-is, any other value v as
  // {"result": v}, null as {} [Failures are results]. Return a non-OK status to fail the call;
  // a thrown exception fails it too, and never takes the daemon down.
  // Long calls should honour ctx.cancellation() (see ToolContext).
  virtual absl::StatusOr<Json> Call(const JsonValue& args, ToolContext& ctx) const = 0;

  // --- optional, with defaults ---

  // [Tools run elsewhere]: why a tool that spec().executor says runs elsewhere fails when sent here
  // (NOT_EXECUTABLE_HERE). Default: "<name> is executed by the harness" or
  // "<name> is handled internally by the model provider".
  virtual std::string not_executable_message() const;

  // [Display]. Default: spec().display_name.
  virtual std::string display_title(const JsonValue& /*input*/) const { return spec_.display_name; }
  // The content shown for a finished call. Default: the result as JSON,
  // cut to kDefaultDisplayBytes with is_truncated and full_length set.
  virtual DisplayResult display(const JsonValue& input, const JsonValue& result) const;
  // One line for a compacted transcript. Default "[<name>: completed]" or
  // "[<name>: error]".
  virtual std::string compact_summary(const JsonValue& input, const JsonValue& result,
                                      bool ok) const;

  // The text a harness sends the model as this successful call's result
  // (model_content.h), at most budget.max_chars characters; the runner cuts a
  // longer one in the middle. Default: the payload as JSON. Say what the
  // result means and, when something was left out, how to get it. Failures
  // are rendered by the runtime (FailureModelContent).
  virtual std::string model_content(const JsonValue& input, const JsonValue& result,
                                    const ModelContentBudget& budget) const;

  // [Deciding what runs]: what this call needs permission for. Default: nothing.
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

  // Why calls of this tool fail for now (an MCP tool whose server is down and
  // being restarted), shown in ListTools; "" when it can be called.
  virtual std::string unavailable_reason() const { return ""; }

  // Called once when a session closes, for every tool. Must not throw.
  virtual void cleanup_session(absl::string_view /*session_id*/) const {}

  // Called once when the daemon stops, for every tool, once in-flight batches
  // have finished or been cancelled. End everything that outlives calls
  // (background processes, connections) at once and refuse to start more;
  // the sessions are closed (cleanup_session) after this. Must not throw;
  // may block for a bounded time.
  virtual void shutdown() const {}

  static constexpr size_t kDefaultDisplayBytes = 4096;

 private:
  ToolSpec spec_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_RUNTIME_TOOL_H_

// The built-in workspace tools and their options. Each group registers itself
// through its own function; RegisterBuiltinTools registers every group in the
// order the model sees them [Names and order]:
//   view_file, create_file, edit_file, str_replace_based_edit_tool,
//   apply_patch                                            (RegisterFileTools)
//   list_directory, find_file, search_directory, grep_search (RegisterSearchTools)
//   run_command, command_status, kill_command, bash, shell  (RegisterCommandTools)
//   memory (when memory_dir is set)                         (RegisterMemoryTool)
//   finish, exit_loop, load_artifacts                      (RegisterControlTools)
//   tools run by the harness or the model provider         (RegisterDeclaredTools)
#ifndef TOOLEXEC_TOOLS_BUILTIN_H_
#define TOOLEXEC_TOOLS_BUILTIN_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "tools/runtime/tool_registry.h"

namespace toolexec {

struct BuiltinOptions {
  // --- file and search tools ---
  uint32_t view_max_lines = 2000;
  uint64_t view_max_bytes = 256 * 1024;
  uint32_t list_max_entries = 1000;
  uint32_t search_max_results = 1000;
  uint64_t max_file_bytes = 10 * 1024 * 1024;

  // --- run_command ---
  absl::Duration command_default_timeout = absl::Seconds(120);
  absl::Duration command_max_timeout = absl::Seconds(600);
  uint64_t command_capture_bytes = 64 * 1024;  // head and tail, per stream
  absl::Duration command_kill_grace = absl::Seconds(2);
  std::string sandbox;  // "" or "bwrap"
  bool sandbox_network = false;
  std::vector<std::string> allow_env;
  uint64_t rlimit_cpu_seconds = 0;  // 0 = not limited
  uint64_t rlimit_address_space_bytes = 0;
  uint64_t rlimit_open_files = 0;
  uint64_t rlimit_processes = 0;
  // bash and shell: a session's persistent shell with no call for this long
  // is ended (zero: never).
  absl::Duration shell_idle_timeout = absl::Minutes(30);

  // --- memory ---
  // Where the memory tool keeps each user's /memories (a directory per
  // user); "" = the memory tool is not registered.
  std::string memory_dir;

  // --- control tools ---
  // JSON Schema text the output of finish must satisfy ("" = any output).
  std::string finish_output_schema;
  // [Tools run elsewhere] tools declared here but run elsewhere, by name: ask_question,
  // start_subagent, search_web, read_url_content, generate_image (the
  // harness), google_search, url_context, web_search (the model provider).
  std::vector<std::string> declared_tools;
  // The configured subagents, listed in start_subagent's declaration (names
  // as an enum, descriptions in its text). Empty: a generic declaration.
  struct Subagent {
    std::string name;
    std::string description;
  };
  std::vector<Subagent> subagents;
  // Anthropic web_search options (provider_config).
  std::vector<std::string> web_search_allowed_domains;
  std::vector<std::string> web_search_blocked_domains;
  uint32_t web_search_max_uses = 0;  // 0 = not limited
};

// A tool whose work a program of the user's does, in any language (config
// command_tools): its arguments arrive as JSON on stdin; what it prints on
// stdout is the result (a JSON object as is, any other JSON or text as
// {"result": ...}); a non-zero exit fails the call with the end of its
// stderr. It runs as run_command's commands do (same supervisor, process
// group, capture limits, rlimits and sandbox).
struct CommandToolOptions {
  std::string name;
  std::string description;
  std::string parameters_json;    // JSON Schema text; "" = an object of any properties
  std::vector<std::string> argv;  // argv[0]: an absolute path or a name found on PATH
  absl::Duration timeout = absl::ZeroDuration();  // zero = run_command's default timeout
  std::vector<std::pair<std::string, std::string>> env;  // on top of the scrubbed environment
  std::string working_dir;  // relative to the call's workspace; "" = its root
  bool read_only = false;   // the read_only tag; otherwise destructive
};

absl::Status RegisterFileTools(ToolRegistry& registry, const BuiltinOptions& options);
absl::Status RegisterSearchTools(ToolRegistry& registry, const BuiltinOptions& options);
absl::Status RegisterCommandTools(ToolRegistry& registry, const BuiltinOptions& options);
// memory (Anthropic's memory_20250818) over options.memory_dir; nothing when
// it is "". A memory_dir that is relative or not a directory is an error.
absl::Status RegisterMemoryTool(ToolRegistry& registry, const BuiltinOptions& options);
// finish, exit_loop, load_artifacts.
absl::Status RegisterControlTools(ToolRegistry& registry, const BuiltinOptions& options);
// The options.declared_tools, in the order given [Tools run elsewhere].
absl::Status RegisterDeclaredTools(ToolRegistry& registry, const BuiltinOptions& options);
// The names RegisterDeclaredTools accepts.
const std::vector<std::string>& DeclarableToolNames();

// The configured command tools, in order, with source "config (command_tools)".
// A program not found on PATH or an invalid schema is an error naming the tool.
absl::Status RegisterConfiguredCommandTools(ToolRegistry& registry, const BuiltinOptions& options,
                                            const std::vector<CommandToolOptions>& tools);

// Every group above but the declared tools, in order: the tools the
// builtin_tools selection chooses from.
absl::Status RegisterSelectableBuiltinTools(ToolRegistry& registry, const BuiltinOptions& options);
// Every group above, in order.
absl::Status RegisterBuiltinTools(ToolRegistry& registry, const BuiltinOptions& options);

}  // namespace toolexec

#endif  // TOOLEXEC_TOOLS_BUILTIN_H_

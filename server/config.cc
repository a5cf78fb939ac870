#include "server/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include <arpa/inet.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "server/logging.h"
#include "tools/workspace/confined.h"
#include "tools/runtime/json.h"

namespace toolexec {
namespace {

class CollectErrors final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors.push_back(absl::StrCat("line ", line + 1, ":", column + 1, ": ", message));
  }
  std::vector<std::string> errors;
};

}  // namespace

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, absl::string_view what,
                                            uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (fstat refuses it).
  fs::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(errno)));
  }
  const std::string too_big = absl::StrCat(what, " ", path, " is larger than ", max_bytes,
                                           " bytes");
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " ", path, " is ", FileKindName(st.st_mode), "; give a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::InvalidArgumentError(too_big);
  }
  // Read up to one byte past the cap: the file may grow after fstat.
  std::string text(max_bytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd.get(), text.data() + got, text.size() - got);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::NotFoundError(
          absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  if (got > max_bytes) return absl::InvalidArgumentError(too_big);
  text.resize(got);
  return text;
}

namespace {

// One numeric option's effective value and its allowed range.
struct RangeCheck {
  const char* name;  // "config.field (--flag)" or "config.field"
  uint64_t value;
  uint64_t min;
  uint64_t max;
  const char* unit;  // "" or " ms (30 days)" etc., after the maximum
};

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kMaxMilliseconds = uint64_t{30} * 24 * 3600 * 1000;  // 30 days
constexpr const char* kMsUnit = " ms (30 days)";

// Milliseconds of a duration option; UINT64_MAX for an infinite or negative
// one (out of every range).
uint64_t ToMs(absl::Duration d) {
  if (d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return std::numeric_limits<uint64_t>::max();
  }
  return static_cast<uint64_t>(absl::ToInt64Milliseconds(d));
}

// --- command tools (config command_tools) ---

// Tool names every model provider accepts.
bool IsValidToolName(absl::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

// One command_tools entry as CommandToolOptions, or InvalidArgument naming the
// tool and the field. The schema is compiled (and a clash with another tool's
// name found) when the tool is registered.
absl::StatusOr<CommandToolOptions> ToCommandTool(const v1::CommandToolConfig& c) {
  const std::string what = absl::StrCat("command_tools '", c.name(), "'");
  if (!IsValidToolName(c.name())) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the name must be 1 to 64 letters, digits, '_' or '-' (what model providers "
              "accept)"));
  }
  if (c.argv().empty() || c.argv(0).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": argv is empty; give the program and its arguments"));
  }
  for (const std::string& a : c.argv()) {
    if (a.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": argv contains a NUL byte"));
    }
  }
  if (!c.parameters_json().empty()) {
    auto schema = ParseJson(c.parameters_json());
    if (!schema.ok() || !schema->IsObject()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": parameters_json is not a JSON object (a JSON Schema for the arguments)",
          schema.ok() ? "" : absl::StrCat(": ", schema.status().message())));
    }
  }
  if (c.timeout_ms() > kMaxMilliseconds) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": timeout_ms is ", c.timeout_ms(), "; allowed 1 to ",
                     kMaxMilliseconds, kMsUnit, " (0 = run_command's default timeout)"));
  }
  const std::string& wd = c.working_dir();
  bool escapes = absl::StartsWith(wd, "/");
  int depth = 0;
  for (absl::string_view part : absl::StrSplit(wd, '/', absl::SkipEmpty())) {
    if (part == "..") {
      if (--depth < 0) escapes = true;
    } else if (part != ".") {
      ++depth;
    }
  }
  if (escapes || wd.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": working_dir '", wd,
        "' must be a relative path inside the workspace (\"\" = the workspace root)"));
  }
  CommandToolOptions t;
  t.name = c.name();
  t.description = c.description();
  t.parameters_json = c.parameters_json();
  t.argv.assign(c.argv().begin(), c.argv().end());
  t.timeout = MillisecondsOption(c.timeout_ms());
  // A map field: sorted by name, so the environment is the same on every start.
  std::map<std::string, std::string> env(c.env().begin(), c.env().end());
  for (const auto& [name, value] : env) {
    if (name.empty() || name.find('=') != std::string::npos ||
        name.find('\0') != std::string::npos || value.find('\0') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": env '", name, "' is not a valid variable (a name without '=', no NUL)"));
    }
    t.env.emplace_back(name, value);
  }
  t.working_dir = wd;
  t.read_only = c.read_only();
  return t;
}

// Command hooks and the audit log. A hook needs a name, an event and an
// argv; its timeout_ms is 1 ms to 10 minutes (unset: 10 s). Whether the
// program exists and the tools it names are registered is checked when the
// engine starts (HookSet::Create).
absl::Status ApplyHooks(const v1::DaemonConfig& config, HookOptions* hooks) {
  constexpr uint64_t kMaxHookTimeoutMs = 10 * 60 * 1000;
  for (int i = 0; i < config.hooks_size(); ++i) {
    const v1::HookConfig& h = config.hooks(i);
    if (h.name().empty()) return absl::InvalidArgumentError(absl::StrCat("hooks[", i, "] has no name"));
    const std::string what = absl::StrCat("hook '", h.name(), "'");
    CommandHookOptions o;
    o.name = h.name();
    switch (h.event()) {
      case v1::HOOK_EVENT_PRE_CALL:
        o.event = HookEvent::kPreCall;
        break;
      case v1::HOOK_EVENT_POST_CALL:
        o.event = HookEvent::kPostCall;
        break;
      case v1::HOOK_EVENT_ON_ERROR:
        o.event = HookEvent::kOnError;
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": event is required: HOOK_EVENT_PRE_CALL, HOOK_EVENT_POST_CALL or "
                  "HOOK_EVENT_ON_ERROR"));
    }
    if (h.argv().empty() || h.argv(0).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": argv is required (the program, then its arguments)"));
    }
    o.argv.assign(h.argv().begin(), h.argv().end());
    if (h.timeout_ms() > kMaxHookTimeoutMs) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": timeout_ms is ", h.timeout_ms(),
                                                     "; allowed 1 to ", kMaxHookTimeoutMs,
                                                     " (10 minutes)"));
    }
    if (h.timeout_ms() > 0) o.timeout = absl::Milliseconds(static_cast<int64_t>(h.timeout_ms()));
    o.tools.assign(h.tools().begin(), h.tools().end());
    hooks->command_hooks.push_back(std::move(o));
  }
  hooks->audit_log = config.audit_log();
  return absl::OkStatus();
}

}  // namespace

namespace {

// Protobuf's JSON parser takes any string for a bool field ("yes" reads as
// true): a bool must be JSON true or false. Walks `value` as a `message`;
// fields it does not know are left to the parser, which refuses them.
absl::Status CheckJsonBooleans(const JsonValue& value, const google::protobuf::Descriptor& message,
                               const std::string& where);

// One value of `field` (an element of a repeated field, or a map's value):
// a bool must be true or false (null only where the field may be left out).
absl::Status CheckJsonValue(const google::protobuf::FieldDescriptor& field, const JsonValue& value,
                            const std::string& name, bool null_allowed) {
  using google::protobuf::FieldDescriptor;
  if (field.type() == FieldDescriptor::TYPE_BOOL && !value.IsBool() &&
      !(null_allowed && value.IsNull())) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be true or false, not ", ToJsonString(value)));
  }
  if (field.type() == FieldDescriptor::TYPE_MESSAGE) {
    return CheckJsonBooleans(value, *field.message_type(), name);
  }
  return absl::OkStatus();
}

absl::Status CheckJsonBooleans(const JsonValue& value, const google::protobuf::Descriptor& message,
                               const std::string& where) {
  using google::protobuf::FieldDescriptor;
  if (!value.IsObject()) return absl::OkStatus();
  for (const auto& member : value.GetObject()) {
    const std::string key(member.name.GetString(), member.name.GetStringLength());
    const FieldDescriptor* field = message.FindFieldByName(key);
    for (int i = 0; field == nullptr && i < message.field_count(); ++i) {
      if (message.field(i)->json_name() == key) field = message.field(i);
    }
    if (field == nullptr) continue;
    const std::string name = where.empty() ? key : absl::StrCat(where, ".", key);
    const JsonValue& v = member.value;
    absl::Status s;
    if (field->is_map()) {
      if (!v.IsObject()) continue;
      for (auto it = v.MemberBegin(); s.ok() && it != v.MemberEnd(); ++it) {
        s = CheckJsonValue(*field->message_type()->map_value(), it->value,
                           absl::StrCat(name, "[", it->name.GetString(), "]"), false);
      }
    } else if (field->is_repeated() && v.IsArray()) {
      for (rapidjson::SizeType i = 0; s.ok() && i < v.Size(); ++i) {
        s = CheckJsonValue(*field, v[i], absl::StrCat(name, "[", i, "]"), true);
      }
    } else {
      s = CheckJsonValue(*field, v, name, true);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::DaemonConfig> LoadConfigFile(const std::string& path) {
  auto read = ReadRegularFile(path, "config file", kMaxConfigFileBytes);
  if (!read.ok()) return read.status();
  const std::string& text = *read;
  v1::DaemonConfig config;
  if (absl::EndsWith(path, ".json")) {
    if (auto json = ParseJson(text); json.ok()) {
      if (absl::Status s = CheckJsonBooleans(*json, *config.GetDescriptor(), ""); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", s.message()));
      }
    }  // else the parser below names the syntax error
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    auto status = google::protobuf::util::JsonStringToMessage(text, &config, options);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config file ", path, ": ", std::string(status.message())));
    }
    return config;
  }
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config file ", path, ": ", absl::StrJoin(errors.errors, "; ")));
  }
  return config;
}

// ---- mcp_servers ------------------------------------------------------------
namespace {

// An MCP server's name: it prefixes its tools ("<server>__<tool>") and names it
// in errors, logs and ToolDeclaration.server_name.
absl::Status ValidateMcpServerName(const std::string& name) {
  if (name.empty() || name.size() > 32) return absl::InvalidArgumentError("a name of 1 to 32 characters is required");
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return absl::InvalidArgumentError("the name may contain only letters, digits, '_' and '-'");
    }
  }
  return absl::OkStatus();
}

// Copies and checks config.mcp_servers: unique valid names, exactly one of
// command (stdio) and url (streamable HTTP), at most one tool filter, and
// timeouts in range.
absl::Status ApplyMcpServers(const v1::DaemonConfig& config, EngineOptions* options) {
  constexpr uint64_t kMaxStartupMs = 600000;  // 10 minutes
  std::set<std::string> names;
  for (int i = 0; i < config.mcp_servers_size(); ++i) {
    const v1::McpServerConfig& m = config.mcp_servers(i);
    const std::string what = absl::StrCat("mcp_servers[", i, "]",
                                          m.name().empty() ? "" : absl::StrCat(" '", m.name(), "'"));
    auto fail = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", why));
    };
    if (absl::Status s = ValidateMcpServerName(m.name()); !s.ok()) return fail(s.message());
    if (!names.insert(m.name()).second) return fail("another MCP server has this name");
    const bool stdio = m.command_size() > 0;
    const bool http = !m.url().empty();
    if (stdio == http) {
      return fail("set exactly one of command (a stdio server toolexecd starts) and url (a "
                  "streamable HTTP server)");
    }
    if (http && !absl::StartsWith(m.url(), "http://") && !absl::StartsWith(m.url(), "https://")) {
      return fail("url must start with http:// or https://");
    }
    if (stdio && m.command(0).empty()) return fail("command[0] (the program) is empty");
    if (http && (!m.env().empty() || !m.cwd().empty())) {
      return fail("env and cwd apply to stdio servers (command) only");
    }
    if (stdio && !m.headers().empty()) return fail("headers apply to HTTP servers (url) only");
    if (m.enabled_tools_size() > 0 && m.disabled_tools_size() > 0) {
      return fail("set enabled_tools or disabled_tools, not both");
    }
    if (m.startup_timeout_ms() > kMaxStartupMs) {
      return fail(absl::StrCat("startup_timeout_ms is ", m.startup_timeout_ms(), "; allowed 1 to ",
                               kMaxStartupMs, " (0 = the default, 10000)"));
    }
    if (m.call_timeout_ms() > kMaxMilliseconds) {
      return fail(absl::StrCat("call_timeout_ms is too large; allowed up to ", kMaxMilliseconds));
    }
    mcp::McpServerOptions o;
    o.name = m.name();
    o.command.assign(m.command().begin(), m.command().end());
    // Maps have no order; sorted, so the child's environment is stable.
    std::map<std::string, std::string> env(m.env().begin(), m.env().end());
    for (auto& [k, v] : env) {
      if (k.empty() || k.find('=') != std::string::npos) {
        return fail(absl::StrCat("env name '", k, "' is empty or contains '='"));
      }
      o.env.emplace_back(k, v);
    }
    o.cwd = m.cwd();
    o.url = m.url();
    std::map<std::string, std::string> headers(m.headers().begin(), m.headers().end());
    for (auto& [k, v] : headers) {
      if (k.empty() || k.find_first_of(":\r\n") != std::string::npos ||
          v.find_first_of("\r\n") != std::string::npos) {
        return fail(absl::StrCat("header '", k, "' is not a valid HTTP header"));
      }
      o.headers.emplace_back(k, v);
    }
    o.prefix_tool_names = m.prefix_tool_names();
    o.trusted_annotations = m.trusted_annotations();
    o.enabled_tools.assign(m.enabled_tools().begin(), m.enabled_tools().end());
    o.disabled_tools.assign(m.disabled_tools().begin(), m.disabled_tools().end());
    if (m.startup_timeout_ms() > 0) o.startup_timeout = absl::Milliseconds(m.startup_timeout_ms());
    o.call_timeout = absl::Milliseconds(m.call_timeout_ms());
    options->mcp_servers.push_back(std::move(o));
  }
  return absl::OkStatus();
}

}  // namespace
// ---- end mcp_servers --------------------------------------------------------

absl::Status ApplyConfig(const v1::DaemonConfig& config, DaemonOptions* daemon,
                         std::string* log_level) {
  EngineOptions* options = &daemon->engine;
  ToolCatalogueOptions* tools = &daemon->tools;
  if (!config.listen().empty()) daemon->server.listen = config.listen();
  if (!config.workspace().empty()) options->workspace = config.workspace();
  if (config.example_tools()) tools->example_tools = true;
  if (!config.log_level().empty()) {
    static const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
    bool known = false;
    for (const char* l : kLevels) known = known || config.log_level() == l;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat(
          "log_level '", config.log_level(), "' is not one of trace, debug, info, warn, error"));
    }
    *log_level = config.log_level();
  }
  const v1::Limits& l = config.limits();
  if (l.max_calls_per_batch()) options->max_calls_per_batch = l.max_calls_per_batch();
  if (l.max_concurrent_calls()) options->max_concurrent_calls = l.max_concurrent_calls();
  if (l.max_pending_calls()) options->max_pending_calls = l.max_pending_calls();
  if (l.default_call_timeout_ms()) {
    options->default_call_timeout = MillisecondsOption(l.default_call_timeout_ms());
  }
  if (l.max_call_timeout_ms()) {
    options->max_call_timeout = MillisecondsOption(l.max_call_timeout_ms());
  }
  if (l.drain_grace_ms()) daemon->server.drain_grace = MillisecondsOption(l.drain_grace_ms());
  if (l.max_sessions()) options->max_sessions = l.max_sessions();
  if (l.max_sessions_per_caller()) {
    options->max_sessions_per_caller = l.max_sessions_per_caller();
  }
  if (config.model_content_default_chars()) {
    options->model_content_default_chars = config.model_content_default_chars();
  }
  if (config.model_content_max_chars()) {
    options->model_content_max_chars = config.model_content_max_chars();
  }
  const v1::ToolSelection& sel = config.builtin_tools();
  tools->builtin_enabled.assign(sel.enabled().begin(), sel.enabled().end());
  tools->builtin_disabled.assign(sel.disabled().begin(), sel.disabled().end());

  BuiltinOptions& b = tools->builtin;
  const v1::FileToolsConfig& f = config.file_tools();
  if (f.view_max_lines()) b.view_max_lines = f.view_max_lines();
  if (f.view_max_bytes()) b.view_max_bytes = f.view_max_bytes();
  if (f.list_max_entries()) b.list_max_entries = f.list_max_entries();
  if (f.search_max_results()) b.search_max_results = f.search_max_results();
  if (f.max_file_bytes()) b.max_file_bytes = f.max_file_bytes();
  const v1::RunCommandConfig& r = config.run_command();
  if (r.default_timeout_ms()) {
    b.command_default_timeout = MillisecondsOption(r.default_timeout_ms());
  }
  if (r.max_timeout_ms()) b.command_max_timeout = MillisecondsOption(r.max_timeout_ms());
  if (r.capture_bytes()) b.command_capture_bytes = r.capture_bytes();
  if (r.kill_grace_ms()) b.command_kill_grace = MillisecondsOption(r.kill_grace_ms());
  b.sandbox = r.sandbox();
  b.sandbox_network = r.sandbox_network();
  b.allow_env.assign(r.allow_env().begin(), r.allow_env().end());
  b.rlimit_cpu_seconds = r.rlimit_cpu_seconds();
  b.rlimit_address_space_bytes = r.rlimit_address_space_bytes();
  b.rlimit_open_files = r.rlimit_open_files();
  b.rlimit_processes = r.rlimit_processes();
  if (config.has_shell_idle_timeout_ms()) {  // 0 = never
    b.shell_idle_timeout = MillisecondsOption(config.shell_idle_timeout_ms());
  }
  b.memory_dir = config.memory_dir();
  if (!b.memory_dir.empty() && b.memory_dir.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory_dir \"", b.memory_dir, "\" must be an absolute path (where each user's "
        "/memories is kept)"));
  }
  const v1::ControlToolsConfig& c = config.control_tools();
  b.finish_output_schema = c.finish_output_schema_json();
  b.declared_tools.assign(c.declared_tools().begin(), c.declared_tools().end());
  b.web_search_allowed_domains.assign(c.web_search().allowed_domains().begin(),
                                      c.web_search().allowed_domains().end());
  b.web_search_blocked_domains.assign(c.web_search().blocked_domains().begin(),
                                      c.web_search().blocked_domains().end());
  b.web_search_max_uses = c.web_search().max_uses();

  if (!config.artifact_dir().empty()) options->artifact_dir = config.artifact_dir();
  for (const auto& sa : config.subagents()) {
    if (sa.name().empty()) return absl::InvalidArgumentError("a subagent has no name");
    options->subagents.push_back(
        {sa.name(), sa.description(), {sa.enabled_tools().begin(), sa.enabled_tools().end()},
         {sa.disabled_tools().begin(), sa.disabled_tools().end()}});
  }
  if (uint32_t depth = config.sessions().max_depth()) {  // an int: saturate, not wrap
    options->session_max_depth =
        static_cast<int>(std::min<uint32_t>(depth, std::numeric_limits<int>::max()));
  }
  if (config.sessions().has_idle_ttl_ms()) {  // 0 = never
    options->session_idle_ttl = MillisecondsOption(config.sessions().idle_ttl_ms());
  }
  // ---- auth: who may call (server/auth.h) ----
  const v1::AuthConfig& auth = config.auth();
  AuthOptions& a = daemon->server.auth;
  if (!auth.token_file().empty()) a.token_file = auth.token_file();
  if (!auth.tls().cert_file().empty()) a.tls.cert_file = auth.tls().cert_file();
  if (!auth.tls().key_file().empty()) a.tls.key_file = auth.tls().key_file();
  if (!auth.tls().client_ca_file().empty()) a.tls.client_ca_file = auth.tls().client_ca_file();
  if (auth.unix_socket().mode()) a.unix_socket.mode = auth.unix_socket().mode();
  if (auth.unix_socket().allowed_uids_size() > 0) {
    a.unix_socket.allowed_uids.assign(auth.unix_socket().allowed_uids().begin(),
                                      auth.unix_socket().allowed_uids().end());
  }
  // ---- end auth ----
  // --- command tools ---
  std::set<std::string> command_tool_names;
  for (const v1::CommandToolConfig& c : config.command_tools()) {
    auto tool = ToCommandTool(c);
    if (!tool.ok()) return tool.status();
    if (!command_tool_names.insert(tool->name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("command_tools '", tool->name, "' is declared twice"));
    }
    tools->command_tools.push_back(*std::move(tool));
  }
  if (absl::Status s = ApplyMcpServers(config, options); !s.ok()) return s;
  // --- operating it: metrics and log format ---
  if (!config.metrics().listen().empty()) daemon->server.metrics_listen = config.metrics().listen();
  if (!config.log_format().empty()) daemon->log_format = config.log_format();
  // --- MCP over streamable HTTP ---
  if (!config.mcp_listen().empty()) daemon->server.mcp_listen = config.mcp_listen();
  if (config.mcp_max_sessions_per_caller()) {
    daemon->server.mcp_max_sessions_per_caller = config.mcp_max_sessions_per_caller();
  }
  if (config.mcp_session_idle_ttl_ms()) {
    daemon->server.mcp_session_idle_ttl = MillisecondsOption(config.mcp_session_idle_ttl_ms());
  }
  for (const std::string& entry : config.mcp_allowed_hosts()) {
    auto host = NormalizeMcpAllowedHost(entry);
    if (!host.ok()) return host.status();
    daemon->server.mcp_allowed_hosts.push_back(*std::move(host));
  }
  if (config.has_policy()) {
    if (absl::Status s = ApplyPolicyConfig(config.policy(), &options->policy); !s.ok()) return s;
  }
  // --- checkpoints (tools/workspace/checkpoint) ---
  if (config.has_checkpoints()) {
    const v1::CheckpointConfig& c = config.checkpoints();
    options->checkpoints_enabled = c.enabled();
    checkpoint::StoreOptions& store = options->checkpoints;
    if (!c.store_dir().empty()) store.store_dir = c.store_dir();
    if (c.max_store_bytes()) store.max_store_bytes = c.max_store_bytes();
    if (c.keep_per_session()) store.keep_per_session = c.keep_per_session();
    if (c.max_file_bytes()) store.max_file_bytes = c.max_file_bytes();
    store.include_ignored = c.include_ignored();
  }
  // --- hooks and the audit log (core/hooks.h) ---
  if (absl::Status s = ApplyHooks(config, &options->hooks); !s.ok()) return s;
  // --- end hooks ---
  // --- session recordings (core/recorder.h) ---
  if (!config.recording().dir().empty()) options->recording.dir = config.recording().dir();
  options->recording.all_sessions = config.recording().all_sessions();
  if (config.recording().max_bytes_per_session()) {
    options->recording.max_bytes_per_session = config.recording().max_bytes_per_session();
  }
  // --- end session recordings ---
  return absl::OkStatus();
}

// ---- policy [Deciding what runs] ----
namespace {

absl::StatusOr<std::optional<PolicyDecision>> DecisionOf(v1::Decision d) {
  switch (d) {
    case v1::DECISION_UNSPECIFIED:
      return std::optional<PolicyDecision>();
    case v1::DECISION_ALLOW:
      return std::optional<PolicyDecision>(PolicyDecision::kAllow);
    case v1::DECISION_DENY:
      return std::optional<PolicyDecision>(PolicyDecision::kDeny);
    case v1::DECISION_ASK:
      return std::optional<PolicyDecision>(PolicyDecision::kAsk);
    default:
      return absl::InvalidArgumentError(absl::StrCat("unknown decision ", static_cast<int>(d)));
  }
}

absl::StatusOr<std::vector<PolicyRuleOptions>> RulesOf(
    absl::string_view where, const google::protobuf::RepeatedPtrField<v1::PolicyRule>& rules) {
  std::vector<PolicyRuleOptions> out;
  for (const v1::PolicyRule& r : rules) {
    auto d = DecisionOf(r.decision());
    if (!d.ok()) return d.status();
    if (!d->has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": rule '", r.name(), "' has no decision; give DECISION_ALLOW, DECISION_DENY "
                                       "or DECISION_ASK"));
    }
    out.push_back({r.name(), r.tool(), **d, r.path_glob(), r.command_pattern(), r.domain(),
                   r.outside_workspace(),
                   std::vector<std::string>(r.allow_code_env().begin(), r.allow_code_env().end())});
  }
  return out;
}

}  // namespace

absl::Status ApplyPolicyConfig(const v1::PolicyConfig& config, PolicyOptions* options) {
  auto d = DecisionOf(config.default_decision());
  if (!d.ok()) return d.status();
  options->default_decision = *d;
  auto rules = RulesOf("policy", config.rules());
  if (!rules.ok()) return rules.status();
  options->rules = *std::move(rules);
  for (const v1::PolicyProfile& p : config.profiles()) {
    PolicyProfileOptions profile;
    profile.name = p.name();
    auto pd = DecisionOf(p.default_decision());
    if (!pd.ok()) return pd.status();
    profile.default_decision = *pd;
    auto prules = RulesOf(absl::StrCat("policy profile '", p.name(), "'"), p.rules());
    if (!prules.ok()) return prules.status();
    profile.rules = *std::move(prules);
    options->profiles.push_back(std::move(profile));
  }
  if (config.ask_timeout_ms()) options->ask_timeout = MillisecondsOption(config.ask_timeout_ms());
  if (absl::Status s = ValidatePolicyOptions(*options); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("policy: ", s.message()));
  }
  return absl::OkStatus();
}
// ---- end policy ----

absl::Duration MillisecondsOption(uint64_t ms) {
  if (ms > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return absl::InfiniteDuration();
  }
  return absl::Milliseconds(static_cast<int64_t>(ms));
}

bool IsLocalListenAddress(absl::string_view listen) {
  if (absl::StartsWith(listen, "unix:") || absl::StartsWith(listen, "unix-abstract:")) return true;
  size_t colon = listen.rfind(':');
  if (colon == absl::string_view::npos) return false;
  absl::string_view host = listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host == "localhost") return true;
  std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  return inet_pton(AF_INET6, text.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

absl::StatusOr<std::string> NormalizeMcpAllowedHost(absl::string_view entry) {
  std::string host = absl::AsciiStrToLower(entry);
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  in6_addr v6{};
  if (host.find(':') != std::string::npos && inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return host;
  }
  const bool name = !bracketed && !host.empty() &&
                    host.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789.-_") ==
                        std::string::npos;
  if (!name) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mcp_allowed_hosts (--mcp_allowed_hosts) '", entry,
        "' is not a host: give a host name or an address without port (any port is "
        "accepted), e.g. mcp.example.com, 192.168.1.5 or [fd00::5]"));
  }
  return host;
}

bool AuthenticatesCallers(const ServerOptions& options) {
  return !options.auth.token_file.empty() || !options.auth.tls.client_ca_file.empty();
}

namespace {

// The auth settings fit together and fit the listen address.
absl::Status ValidateAuthOptions(const ServerOptions& server) {
  const AuthOptions& a = server.auth;
  const bool unix_listen = absl::StartsWith(server.listen, "unix:");
  const bool tls = !a.tls.cert_file.empty() || !a.tls.key_file.empty();
  if (tls && (a.tls.cert_file.empty() || a.tls.key_file.empty())) {
    return absl::InvalidArgumentError(
        "auth.tls needs both cert_file (--tls_cert_file) and key_file (--tls_key_file)");
  }
  if (!a.tls.client_ca_file.empty() && !tls) {
    return absl::InvalidArgumentError(
        "auth.tls.client_ca_file (--tls_client_ca_file) needs TLS: give cert_file "
        "(--tls_cert_file) and key_file (--tls_key_file) too");
  }
  if (tls && unix_listen) {
    return absl::InvalidArgumentError(absl::StrCat(
        "auth.tls applies to TCP listen addresses; ", server.listen,
        " is a unix socket, whose callers are known by uid (auth.unix_socket)"));
  }
  const UnixSocketOptions& u = a.unix_socket;
  if ((u.mode != 0 || !u.allowed_uids.empty()) && !unix_listen) {
    return absl::InvalidArgumentError(absl::StrCat(
        "auth.unix_socket (--unix_socket_mode, --unix_socket_allowed_uids) applies to a "
        "unix:/path listen address, not ", server.listen));
  }
  if (u.mode > 0777) {
    return absl::InvalidArgumentError(absl::StrCat(
        "auth.unix_socket.mode (--unix_socket_mode) is ", absl::StrFormat("0%o", u.mode),
        "; give permission bits, 0 to 0777 (e.g. 0660)"));
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<uint16_t> ListenPort(absl::string_view listen) {
  const size_t colon = listen.rfind(':');
  uint32_t port = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) ||
      port > 65535) {
    return std::nullopt;
  }
  return static_cast<uint16_t>(port);
}

namespace {

// "host:port" with a port of 0 to 65535 ("[v6]:port" for IPv6), for the
// HTTP listener `what` (e.g. "metrics.listen (--metrics_listen)").
absl::Status ValidateHttpListen(absl::string_view what, absl::string_view listen,
                                absl::string_view example) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", listen, "' ", why, "; give host:port, e.g. ", example,
                     " (port 0 picks one), or leave it empty for none"));
  };
  size_t colon = listen.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return bad("is not host:port");
  absl::string_view host = listen.substr(0, colon);
  if (!ListenPort(listen)) return bad("has no port number of 0 to 65535");
  const bool bracketed = host.front() == '[';
  if (bracketed ? host.back() != ']' : host.find_first_of(":/ ") != absl::string_view::npos) {
    return bad("has an invalid host");
  }
  return absl::OkStatus();
}

// The ranges ValidateOptions holds `daemon`'s numeric options to.
std::vector<RangeCheck> RangeChecks(const DaemonOptions& daemon) {
  const EngineOptions& o = daemon.engine;
  const ServerOptions& server = daemon.server;
  const BuiltinOptions& b = daemon.tools.builtin;
  return {
      {"limits.max_calls_per_batch (--max_calls_per_batch)", o.max_calls_per_batch, 1, 1 << 20,
       ""},
      // Each running call holds a thread.
      {"limits.max_concurrent_calls (--max_concurrent_calls)", o.max_concurrent_calls, 1, 4096,
       ""},
      {"limits.max_pending_calls (--max_pending_calls)", o.max_pending_calls, 1, 1 << 20,
       ", and at least limits.max_calls_per_batch"},
      {"limits.default_call_timeout_ms (--call_timeout_ms)", ToMs(o.default_call_timeout), 1,
       kMaxMilliseconds, kMsUnit},
      {"limits.max_call_timeout_ms (--max_call_timeout_ms)", ToMs(o.max_call_timeout), 1,
       kMaxMilliseconds, kMsUnit},
      {"limits.drain_grace_ms (--drain_grace_ms)", ToMs(server.drain_grace), 0, kMaxMilliseconds,
       kMsUnit},
      // gRPC takes an int; every result must fit one message.
      {"--max_receive_message_bytes", static_cast<uint64_t>(server.max_receive_message_bytes),
       4096, 1024 * kMiB, " bytes (1 GiB)"},
      {"--max_send_message_bytes", static_cast<uint64_t>(server.max_send_message_bytes), 4096,
       1024 * kMiB, " bytes (1 GiB)"},
      {"--keepalive_min_ping_interval_ms", ToMs(server.keepalive.min_ping_interval), 1,
       kMaxMilliseconds, kMsUnit},
      {"limits.max_sessions", o.max_sessions, 1, 1000000, ""},
      {"limits.max_sessions_per_caller (--max_sessions_per_caller)", o.max_sessions_per_caller,
       1, 1000000, ""},
      // 4M characters are at most 16 MiB of UTF-8: a result must fit in one message.
      {"model_content_max_chars (--model_content_max_chars)", o.model_content_max_chars,
       kMinModelContentChars, 4000000, ""},
      {"model_content_default_chars (--model_content_default_chars)",
       o.model_content_default_chars, kMinModelContentChars, o.model_content_max_chars,
       " (model_content_max_chars)"},
      {"sessions.max_depth", static_cast<uint64_t>(o.session_max_depth), 1, 100, ""},
      {"sessions.idle_ttl_ms (--session_idle_ttl_ms)", ToMs(o.session_idle_ttl), 0,
       kMaxMilliseconds, kMsUnit},
      {"mcp_max_sessions_per_caller (--mcp_max_sessions_per_caller)",
       server.mcp_max_sessions_per_caller, 1, kMcpMaxSessions, ""},
      {"mcp_session_idle_ttl_ms (--mcp_session_idle_ttl_ms)", ToMs(server.mcp_session_idle_ttl),
       1, kMaxMilliseconds, kMsUnit},
      {"file_tools.view_max_lines", b.view_max_lines, 1, 10000000, ""},
      // A result must fit in one gRPC message.
      {"file_tools.view_max_bytes", b.view_max_bytes, 1, 64 * kMiB, " bytes (64 MiB)"},
      {"file_tools.list_max_entries", b.list_max_entries, 1, 1000000, ""},
      {"file_tools.search_max_results", b.search_max_results, 1, 1000000, ""},
      {"file_tools.max_file_bytes", b.max_file_bytes, 1, 1024 * kMiB, " bytes (1 GiB)"},
      {"run_command.default_timeout_ms", ToMs(b.command_default_timeout), 1, kMaxMilliseconds,
       kMsUnit},
      {"run_command.max_timeout_ms", ToMs(b.command_max_timeout), 1, kMaxMilliseconds, kMsUnit},
      {"run_command.capture_bytes", b.command_capture_bytes, 1, 64 * kMiB, " bytes (64 MiB)"},
      {"run_command.kill_grace_ms", ToMs(b.command_kill_grace), 0, kMaxMilliseconds, kMsUnit},
      // 0 = not limited, for each rlimit.
      {"run_command.rlimit_cpu_seconds", b.rlimit_cpu_seconds, 0, 30 * 24 * 3600,
       " s (30 days)"},
      // x86-64's user address space.
      {"run_command.rlimit_address_space_bytes", b.rlimit_address_space_bytes, 0,
       uint64_t{1} << 47, " bytes (128 TiB)"},
      // Linux's default fs.nr_open.
      {"run_command.rlimit_open_files", b.rlimit_open_files, 0, 1 << 20, ""},
      // Linux's PID_MAX_LIMIT.
      {"run_command.rlimit_processes", b.rlimit_processes, 0, 1 << 22, ""},
      {"shell_idle_timeout_ms", ToMs(b.shell_idle_timeout), 0, kMaxMilliseconds, kMsUnit},
      {"control_tools.web_search.max_uses", b.web_search_max_uses, 0, 10000, ""},
      {"recording.max_bytes_per_session", o.recording.max_bytes_per_session, 4096,
       uint64_t{1} << 40, " bytes (1 TiB)"},
      {"checkpoints.max_store_bytes", o.checkpoints.max_store_bytes, kMiB, uint64_t{1} << 50,
       " bytes (1 MiB to 1 PiB)"},
      {"checkpoints.keep_per_session", o.checkpoints.keep_per_session, 1, 100000, ""},
      {"checkpoints.max_file_bytes", o.checkpoints.max_file_bytes, 1, 4096 * kMiB,
       " bytes (4 GiB)"},
  };
}

}  // namespace

std::string FlagRange(absl::string_view flag) {
  const std::string spelled = absl::StrCat("--", flag);
  for (const RangeCheck& c : RangeChecks(DaemonOptions())) {
    absl::string_view name = c.name;
    if (name == spelled || absl::StrContains(name, absl::StrCat("(", spelled, ")"))) {
      return absl::StrCat(c.min, " to ", c.max, c.unit);
    }
  }
  return "";
}

absl::Status ValidateOptions(const DaemonOptions& daemon) {
  const EngineOptions& o = daemon.engine;
  const ServerOptions& server = daemon.server;
  for (const RangeCheck& c : RangeChecks(daemon)) {
    if (c.value >= c.min && c.value <= c.max) continue;
    // A duration at UINT64_MAX is a saturated one: the exact count is gone.
    std::string shown = c.value == std::numeric_limits<uint64_t>::max() && c.unit == kMsUnit
                            ? std::string("too large")
                            : absl::StrCat(c.value);
    return absl::InvalidArgumentError(absl::StrCat(c.name, " is ", shown, "; allowed ", c.min,
                                                   " to ", c.max, c.unit));
  }
  if (o.max_pending_calls < o.max_calls_per_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "limits.max_pending_calls (", o.max_pending_calls,
        ") must be at least limits.max_calls_per_batch (", o.max_calls_per_batch, ")"));
  }
  if (o.default_call_timeout > o.max_call_timeout) {
    return absl::InvalidArgumentError(
        "limits.default_call_timeout_ms (--call_timeout_ms) must not exceed "
        "limits.max_call_timeout_ms (--max_call_timeout_ms)");
  }
  if (absl::Status s = ValidateAuthOptions(server); !s.ok()) return s;
  if (o.checkpoints_enabled) {
    const std::string& dir = o.checkpoints.store_dir;
    if (dir.empty() || dir.front() != '/') {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoints.store_dir must be an absolute directory outside the workspace (got '", dir,
          "'); checkpoints are enabled and need somewhere to keep what they take"));
    }
    std::error_code ec;
    const std::string store = std::filesystem::weakly_canonical(dir, ec).string();
    const std::string workspace = std::filesystem::weakly_canonical(o.workspace, ec).string();
    if (store == workspace || absl::StartsWith(store, absl::StrCat(workspace, "/")) ||
        absl::StartsWith(workspace, absl::StrCat(store, "/"))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoints.store_dir '", dir, "' overlaps the workspace ", o.workspace,
          ": the store must lie outside it (a checkpoint would take the store itself, and a "
          "restore could delete it)"));
    }
  }
  // --- operating it: metrics and log format ---
  if (!server.metrics_listen.empty()) {
    if (absl::Status s = ValidateHttpListen("metrics.listen (--metrics_listen)",
                                            server.metrics_listen, "127.0.0.1:9464");
        !s.ok()) {
      return s;
    }
  }
  if (auto format = ParseLogFormat(daemon.log_format); !format.ok()) return format.status();
  // Beyond loopback only with callers authenticated, or when told to anyway.
  auto refuse_unauthenticated = [&](absl::string_view listen, absl::string_view give) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refusing to listen on ", listen,
        " without authentication: whoever reaches it could run commands and write files in "
        "the workspace. Give ", give, ", or pass --insecure_allow_unauthenticated to serve it "
        "anyway"));
  };
  if (!absl::StartsWith(server.listen, "unix:") &&
      !absl::StartsWith(server.listen, "unix-abstract:")) {
    if (!ListenPort(server.listen)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "listen (--listen) '", server.listen,
          "' has no port number of 0 to 65535; give host:port (e.g. 127.0.0.1:50051; port 0 "
          "picks one) or unix:/path"));
    }
  }
  if (!server.insecure_allow_unauthenticated && !IsLocalListenAddress(server.listen) &&
      !AuthenticatesCallers(server)) {
    return refuse_unauthenticated(
        server.listen,
        "auth.token_file (--token_file) or a client CA for mTLS (--tls_client_ca_file), listen "
        "on a loopback address (127.0.0.1:50051) or a unix socket");
  }
  // --- MCP over streamable HTTP ---
  if (!server.mcp_listen.empty()) {
    if (absl::Status s =
            ValidateHttpListen("mcp_listen (--mcp_listen)", server.mcp_listen, "127.0.0.1:8765");
        !s.ok()) {
      return s;
    }
    // The HTTP endpoint checks bearer tokens only: TLS client certificates
    // never reach it.
    if (!server.insecure_allow_unauthenticated && !IsLocalListenAddress(server.mcp_listen) &&
        server.auth.token_file.empty()) {
      return refuse_unauthenticated(
          absl::StrCat(server.mcp_listen, " (mcp_listen)"),
          "auth.token_file (--token_file; MCP clients send 'Authorization: Bearer <token>', and "
          "a client CA does not apply to this plain-HTTP endpoint) or listen on a loopback "
          "address (127.0.0.1:8765)");
    }
  }
  // --- end MCP over streamable HTTP ---
  return absl::OkStatus();
}

}  // namespace toolexec

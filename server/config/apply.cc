// The config file onto DaemonOptions (ApplyConfig): each section's fields
// copied and converted, with the checks only the config's form allows
// (command tools, hooks, MCP servers, policy rules and profiles).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <arpa/inet.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/config/config.h"
#include "server/config/internal.h"
#include "tools/runtime/json.h"

namespace toolexec {
namespace {

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
  if (config.has_listen()) daemon->server.listen = config.listen();
  if (!config.workspace().empty()) options->workspace = config.workspace();
  if (config.example_tools()) tools->example_tools = true;
  if (config.has_log_level()) {
    static const char* kLevels[] = {"trace", "debug", "info", "warn", "error"};
    bool known = false;
    for (const char* l : kLevels) known = known || config.log_level() == l;
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat(OptionName("log_level"), " '", config.log_level(),
                       "' is not one of trace, debug, info, warn, error"));
    }
    *log_level = config.log_level();
  }
  const v1::Limits& l = config.limits();
  if (l.has_max_calls_per_batch()) options->max_calls_per_batch = l.max_calls_per_batch();
  if (l.has_max_concurrent_calls()) options->max_concurrent_calls = l.max_concurrent_calls();
  if (l.has_max_pending_calls()) options->max_pending_calls = l.max_pending_calls();
  if (l.has_default_call_timeout_ms()) {
    options->default_call_timeout = MillisecondsOption(l.default_call_timeout_ms());
  }
  if (l.has_max_call_timeout_ms()) {
    options->max_call_timeout = MillisecondsOption(l.max_call_timeout_ms());
  }
  if (l.has_drain_grace_ms()) daemon->server.drain_grace = MillisecondsOption(l.drain_grace_ms());
  if (l.max_sessions()) options->max_sessions = l.max_sessions();
  if (l.has_max_sessions_per_caller()) {
    options->max_sessions_per_caller = l.max_sessions_per_caller();
  }
  if (config.has_model_content_default_chars()) {
    options->model_content_default_chars = config.model_content_default_chars();
  }
  if (config.has_model_content_max_chars()) {
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
  if (config.has_log_format()) daemon->log_format = config.log_format();
  // --- MCP over streamable HTTP ---
  if (!config.mcp_listen().empty()) daemon->server.mcp_listen = config.mcp_listen();
  if (config.has_mcp_max_sessions_per_caller()) {
    daemon->server.mcp_max_sessions_per_caller = config.mcp_max_sessions_per_caller();
  }
  if (config.has_mcp_session_idle_ttl_ms()) {
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
        OptionName("mcp_allowed_hosts"), " '", entry,
        "' is not a host: give a host name or an address without port (any port is "
        "accepted), e.g. mcp.example.com, 192.168.1.5 or [fd00::5]"));
  }
  return host;
}

}  // namespace toolexec

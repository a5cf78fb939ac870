#include "server/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <vector>

#include <arpa/inet.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "tools/builtin/fs/confined.h"

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

// The whole file, if it is a regular file of at most kMaxConfigFileBytes.
absl::StatusOr<std::string> ReadConfigText(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (fstat refuses it).
  fs::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd.valid()) {
    return absl::NotFoundError(
        absl::StrCat("cannot read config file ", path, ": ", std::strerror(errno)));
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot read config file ", path, ": ", std::strerror(errno)));
  }
  const std::string too_big = absl::StrCat("config file ", path, " is larger than ",
                                           kMaxConfigFileBytes, " bytes (4 MiB)");
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config file ", path, " is ", FileKindName(st.st_mode), "; give a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxConfigFileBytes) {
    return absl::InvalidArgumentError(too_big);
  }
  // Read up to one byte past the cap: the file may grow after fstat.
  std::string text(kMaxConfigFileBytes + 1, '\0');
  size_t got = 0;
  while (got < text.size()) {
    ssize_t n = read(fd.get(), text.data() + got, text.size() - got);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::NotFoundError(
          absl::StrCat("cannot read config file ", path, ": ", std::strerror(errno)));
    }
    got += static_cast<size_t>(n);
  }
  if (got > kMaxConfigFileBytes) return absl::InvalidArgumentError(too_big);
  text.resize(got);
  return text;
}

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

absl::StatusOr<v1::DaemonConfig> LoadConfigFile(const std::string& path) {
  auto read = ReadConfigText(path);
  if (!read.ok()) return read.status();
  const std::string& text = *read;
  v1::DaemonConfig config;
  if (absl::EndsWith(path, ".json")) {
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

absl::Status ApplyConfig(const v1::DaemonConfig& config, DaemonOptions* daemon,
                         std::string* log_level) {
  EngineOptions* options = &daemon->engine;
  if (!config.listen().empty()) daemon->server.listen = config.listen();
  if (!config.workspace().empty()) options->workspace = config.workspace();
  if (config.example_tools()) options->example_tools = true;
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
  if (config.model_content_default_chars()) {
    options->model_content_default_chars = config.model_content_default_chars();
  }
  if (config.model_content_max_chars()) {
    options->model_content_max_chars = config.model_content_max_chars();
  }
  const v1::ToolSelection& sel = config.builtin_tools();
  options->builtin_enabled.assign(sel.enabled().begin(), sel.enabled().end());
  options->builtin_disabled.assign(sel.disabled().begin(), sel.disabled().end());

  BuiltinOptions& b = options->builtin;
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
  // --- hooks and the audit log (core/hooks.h) ---
  if (absl::Status s = ApplyHooks(config, &options->hooks); !s.ok()) return s;
  // --- end hooks ---
  return absl::OkStatus();
}

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

absl::Status ValidateOptions(const DaemonOptions& daemon) {
  const EngineOptions& o = daemon.engine;
  const ServerOptions& server = daemon.server;
  const BuiltinOptions& b = o.builtin;
  const RangeCheck checks[] = {
      {"limits.max_calls_per_batch (--max_calls_per_batch)", o.max_calls_per_batch, 1, 1 << 20,
       ""},
      // Each running call holds a thread.
      {"limits.max_concurrent_calls (--max_concurrent_calls)", o.max_concurrent_calls, 1, 4096,
       ""},
      {"limits.max_pending_calls (--max_pending_calls)", o.max_pending_calls, 1, 1 << 20, ""},
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
      // 4M characters are at most 16 MiB of UTF-8: a result must fit in one message.
      {"model_content_max_chars (--model_content_max_chars)", o.model_content_max_chars,
       kMinModelContentChars, 4000000, ""},
      {"model_content_default_chars (--model_content_default_chars)",
       o.model_content_default_chars, kMinModelContentChars, o.model_content_max_chars,
       " (model_content_max_chars)"},
      {"sessions.max_depth", static_cast<uint64_t>(o.session_max_depth), 1, 100, ""},
      {"sessions.idle_ttl_ms (--session_idle_ttl_ms)", ToMs(o.session_idle_ttl), 0,
       kMaxMilliseconds, kMsUnit},
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
      {"control_tools.web_search.max_uses", b.web_search_max_uses, 0, 10000, ""},
  };
  for (const RangeCheck& c : checks) {
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
  if (!server.insecure_allow_unauthenticated && !IsLocalListenAddress(server.listen)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "refusing to listen on ", server.listen,
        " without authentication: whoever reaches it could run commands and write files in "
        "the workspace. Listen on a loopback address (127.0.0.1:50051) or a unix socket, or "
        "pass --insecure_allow_unauthenticated to serve it anyway"));
  }
  return absl::OkStatus();
}

}  // namespace toolexec

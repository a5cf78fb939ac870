// Checking the options before the daemon starts (ValidateOptions): every
// numeric option against its range (RangeChecks, also FlagRange's source),
// the relations between options, and the listen addresses and the
// authentication they need.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <arpa/inet.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/config/config.h"
#include "server/config/internal.h"
#include "server/logging.h"

namespace toolexec {
namespace {

// One numeric option's effective value and its allowed range.
struct RangeCheck {
  const char* option;  // its config field, or "--flag" for a flag only (OptionName)
  uint64_t value;
  uint64_t min;
  uint64_t max;
  const char* unit;  // "" or " ms (30 days)" etc., after the maximum
};

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Milliseconds of a duration option; UINT64_MAX for an infinite or negative
// one (out of every range).
uint64_t ToMs(absl::Duration d) {
  if (d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return std::numeric_limits<uint64_t>::max();
  }
  return static_cast<uint64_t>(absl::ToInt64Milliseconds(d));
}

}  // namespace

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
        OptionName("auth.unix_socket.mode"), " is ", absl::StrFormat("0%o", u.mode),
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
// HTTP listener `what` (e.g. OptionName("metrics.listen")).
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
      {"limits.max_calls_per_batch", o.max_calls_per_batch, 1, 1 << 20, ""},
      // Each running call holds a thread.
      {"limits.max_concurrent_calls", o.max_concurrent_calls, 1, 4096, ""},
      {"limits.max_pending_calls", o.max_pending_calls, 1, 1 << 20,
       ", and at least limits.max_calls_per_batch"},
      {"limits.default_call_timeout_ms", ToMs(o.default_call_timeout), 1, kMaxMilliseconds,
       kMsUnit},
      {"limits.max_call_timeout_ms", ToMs(o.max_call_timeout), 1, kMaxMilliseconds, kMsUnit},
      {"limits.drain_grace_ms", ToMs(server.drain_grace), 0, kMaxMilliseconds, kMsUnit},
      // gRPC takes an int; every result must fit one message.
      {"--max_receive_message_bytes", static_cast<uint64_t>(server.max_receive_message_bytes),
       4096, 1024 * kMiB, " bytes (1 GiB)"},
      {"--max_send_message_bytes", static_cast<uint64_t>(server.max_send_message_bytes), 4096,
       1024 * kMiB, " bytes (1 GiB)"},
      {"--keepalive_min_ping_interval_ms", ToMs(server.keepalive.min_ping_interval), 1,
       kMaxMilliseconds, kMsUnit},
      {"limits.max_sessions", o.max_sessions, 1, 1000000, ""},
      {"limits.max_sessions_per_caller", o.max_sessions_per_caller, 1, 1000000, ""},
      // 4M characters are at most 16 MiB of UTF-8: a result must fit in one message.
      {"model_content_max_chars", o.model_content_max_chars, kMinModelContentChars, 4000000, ""},
      {"model_content_default_chars", o.model_content_default_chars, kMinModelContentChars,
       o.model_content_max_chars, " (model_content_max_chars)"},
      {"sessions.max_depth", static_cast<uint64_t>(o.session_max_depth), 1, 100, ""},
      {"sessions.idle_ttl_ms", ToMs(o.session_idle_ttl), 0, kMaxMilliseconds, kMsUnit},
      {"mcp_max_sessions_per_caller", server.mcp_max_sessions_per_caller, 1, kMcpMaxSessions, ""},
      {"mcp_session_idle_ttl_ms", ToMs(server.mcp_session_idle_ttl), 1, kMaxMilliseconds,
       kMsUnit},
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
  const std::string option = FlagOption(flag);
  for (const RangeCheck& c : RangeChecks(DaemonOptions())) {
    if (option == c.option) return absl::StrCat(c.min, " to ", c.max, c.unit);
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
    return absl::InvalidArgumentError(absl::StrCat(OptionName(c.option), " is ", shown,
                                                   "; allowed ", c.min, " to ", c.max, c.unit));
  }
  if (o.max_pending_calls < o.max_calls_per_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "limits.max_pending_calls (", o.max_pending_calls,
        ") must be at least limits.max_calls_per_batch (", o.max_calls_per_batch, ")"));
  }
  if (o.default_call_timeout > o.max_call_timeout) {
    return absl::InvalidArgumentError(
        absl::StrCat(OptionName("limits.default_call_timeout_ms"), " must not exceed ",
                     OptionName("limits.max_call_timeout_ms")));
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
    if (absl::Status s = ValidateHttpListen(OptionName("metrics.listen"), server.metrics_listen,
                                            "127.0.0.1:9464");
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
          OptionName("listen"), " '", server.listen,
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
            ValidateHttpListen(OptionName("mcp_listen"), server.mcp_listen, "127.0.0.1:8765");
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

// toolexecd: flags -> DaemonOptions (flags are parsed here only; those with a
// config field reach the options through the config, server/config/), then run the
// daemon until SIGTERM/SIGINT. A dedicated signal thread (not a handler) starts
// the graceful shutdown; a second signal exits at once.
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "server/build_info.h"
#include "server/config/config.h"
#include "server/daemon.h"
#include "server/logging.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "tools/process/environment.h"
#include "tools/runtime/executor.h"

namespace {

// A duration option's default as a millisecond flag's.
uint64_t DefaultMs(absl::Duration d) {
  return static_cast<uint64_t>(absl::ToInt64Milliseconds(d));
}

}  // namespace

// Each flag's default is its option's (server/options.h, core/engine_options.h).
ABSL_FLAG(std::string, listen, toolexec::ServerOptions().listen,
          "Address to serve on: host:port (port 0 picks a free one) or unix:/path.");
ABSL_FLAG(std::string, workspace, "",
          "Workspace root for calls without a session (default: the current directory).");
ABSL_FLAG(std::string, config, "",
          "Config file: toolexec.v1.DaemonConfig as text proto, or JSON if it ends in .json. "
          "Flags given on the command line override it.");
ABSL_FLAG(bool, example_tools, toolexec::ToolCatalogueOptions().example_tools,
          "Register the example tools (get_weather, counter, check_inventory, calculate_sum, wait).");
ABSL_FLAG(bool, check_config, false,
          "Load the config and register the tools, print the result, and exit (0 = valid).");
ABSL_FLAG(uint32_t, max_calls_per_batch, toolexec::EngineOptions().max_calls_per_batch,
          "Most calls one ExecuteBatch may carry.");
ABSL_FLAG(uint32_t, max_concurrent_calls, toolexec::EngineOptions().max_concurrent_calls,
          "Most tool calls running at once; others queue.");
ABSL_FLAG(uint32_t, max_pending_calls, toolexec::EngineOptions().max_pending_calls,
          "Most calls running, queued or waiting for a permission answer; a batch past it "
          "gets RESOURCE_EXHAUSTED.");
ABSL_FLAG(uint64_t, call_timeout_ms, DefaultMs(toolexec::EngineOptions().default_call_timeout),
          "Per-call timeout when the request sets none.");
ABSL_FLAG(uint64_t, max_call_timeout_ms, DefaultMs(toolexec::EngineOptions().max_call_timeout),
          "Cap on a requested per-call timeout.");
ABSL_FLAG(uint32_t, model_content_default_chars,
          toolexec::EngineOptions().model_content_default_chars,
          "Characters of model_content per call when the batch asks for none.");
ABSL_FLAG(uint32_t, model_content_max_chars, toolexec::EngineOptions().model_content_max_chars,
          "Most characters of model_content a batch may ask for per call.");
ABSL_FLAG(uint64_t, drain_grace_ms, DefaultMs(toolexec::ServerOptions().drain_grace),
          "On SIGTERM, how long in-flight batches may run before they are cancelled.");
ABSL_FLAG(uint64_t, session_idle_ttl_ms, DefaultMs(toolexec::EngineOptions().session_idle_ttl),
          "Close sessions unused this long (no call, no RPC, no batch running); 0 = never.");
ABSL_FLAG(uint32_t, max_receive_message_bytes,
          static_cast<uint32_t>(toolexec::ServerOptions().max_receive_message_bytes),
          "Largest request accepted (tool arguments such as file contents); 4096 to 1 GiB.");
ABSL_FLAG(uint32_t, max_send_message_bytes,
          static_cast<uint32_t>(toolexec::ServerOptions().max_send_message_bytes),
          "Largest response sent; a result over it becomes a TOOL_FAILED result saying so. "
          "4096 to 1 GiB.");
ABSL_FLAG(uint64_t, keepalive_min_ping_interval_ms,
          DefaultMs(toolexec::KeepAliveOptions().min_ping_interval),
          "Client keepalive pings closer together than this (without data) are refused.");
ABSL_FLAG(bool, keepalive_permit_without_calls, toolexec::KeepAliveOptions().permit_without_calls,
          "Accept keepalive pings on a connection with no call in flight.");
ABSL_FLAG(bool, insecure_allow_unauthenticated,
          toolexec::ServerOptions().insecure_allow_unauthenticated,
          "Serve a non-loopback TCP --listen address although no caller is authenticated: "
          "whoever reaches it can run commands and write files in the workspace.");
// ---- who may call (server/auth.h); config: auth { ... } ----
ABSL_FLAG(std::string, token_file, "",
          "Bearer tokens, one per line: TOKEN [NAME [PROFILE]]; every RPC but health and "
          "reflection needs 'authorization: Bearer <token>'. Reloaded on SIGHUP.");
ABSL_FLAG(std::string, tls_cert_file, "", "PEM certificate (chain): serve TLS on a TCP --listen.");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");
ABSL_FLAG(std::string, tls_client_ca_file, "",
          "PEM CA certificates: require and verify a client certificate signed by one (mTLS).");
ABSL_FLAG(std::string, unix_socket_mode, "",
          "Permission bits of a unix:/path --listen socket, in octal (e.g. 0660).");
ABSL_FLAG(std::string, unix_socket_allowed_uids, "",
          "Comma-separated uids that may call over a unix:/path --listen socket (root too "
          "only if listed); empty = any uid the socket's mode admits.");
ABSL_FLAG(uint32_t, max_sessions_per_caller, toolexec::EngineOptions().max_sessions_per_caller,
          "Most open sessions one authenticated caller (by identity name) may hold.");
// ---- end who may call ----
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn or error.");
ABSL_FLAG(std::string, address_file, "",
          "Once serving, write the bound address (with the real port) to this file.");
// --- operating it: metrics and log format ---
ABSL_FLAG(std::string, metrics_listen, "",
          "Serve Prometheus metrics at http://HOST:PORT/metrics (port 0 picks one); "
          "empty = off.");
// --- MCP over streamable HTTP ---
ABSL_FLAG(std::string, mcp_listen, "",
          "Also serve the tools to MCP clients over streamable HTTP at http://HOST:PORT/mcp "
          "(port 0 picks one); empty = off. Beyond loopback it needs --token_file.");
ABSL_FLAG(uint32_t, mcp_max_sessions_per_caller,
          toolexec::ServerOptions().mcp_max_sessions_per_caller,
          "MCP sessions one caller may hold on --mcp_listen; an initialize past it "
          "ends that caller's least recently used session.");
ABSL_FLAG(uint64_t, mcp_session_idle_ttl_ms,
          DefaultMs(toolexec::ServerOptions().mcp_session_idle_ttl),
          "An MCP session with no request this long ends.");
ABSL_FLAG(std::string, mcp_allowed_hosts, "",
          "Comma-separated hosts (without port) the Host header of an MCP request may name "
          "beyond localhost, 127.0.0.1 and [::1]; any other Host is 403.");
ABSL_FLAG(std::string, log_format, toolexec::DaemonOptions().log_format,
          "Log lines on stderr: text, or json (one object per line). Both carry the "
          "trace_id of the RPC they belong to.");

namespace toolexec {
namespace {

// The flags the user gave on the command line (by name; "--noX" counts as X).
// This abseil version keeps IsSpecifiedOnCommandLine() private, so look at argv.
absl::flat_hash_set<std::string>& GivenFlags() {
  static auto* given = new absl::flat_hash_set<std::string>();
  return *given;
}

// Each flag given, with its value as text ("256", "true", "0660").
std::map<std::string, std::string> GivenFlagValues() {
  std::map<std::string, std::string> values;
  for (const std::string& name : GivenFlags()) {
    values[name] = absl::FindCommandLineFlag(name)->CurrentValue();
  }
  return values;
}

// A byte count for gRPC (an int). Counts past INT_MAX saturate there, which is
// out of range, so ValidateOptions refuses them instead of seeing a wrapped value.
int IntOption(uint32_t value) {
  return value > static_cast<uint32_t>(std::numeric_limits<int>::max())
             ? std::numeric_limits<int>::max()
             : static_cast<int>(value);
}

// ---- --help, --version and the command line's own errors --------------------

// The exit status of every refusal to start: bad flags, a bad config, a token
// file or address that cannot be used (and of a failed --check_config).
constexpr int kExitRefused = 2;

struct FlagGroup {
  const char* title;
  std::vector<const char*> flags;
};

// --help's sections, in order. A flag of this file in none of them is listed
// under "Other", so none can be left out.
const std::vector<FlagGroup>& FlagGroups() {
  static const auto* groups = new std::vector<FlagGroup>{
      {"Config and tools",
       {"config", "workspace", "example_tools", "check_config"}},
      {"Listening",
       {"listen", "address_file", "insecure_allow_unauthenticated", "mcp_listen",
        "mcp_max_sessions_per_caller", "mcp_session_idle_ttl_ms", "mcp_allowed_hosts",
        "max_receive_message_bytes", "max_send_message_bytes", "keepalive_min_ping_interval_ms",
        "keepalive_permit_without_calls"}},
      {"Who may call",
       {"token_file", "tls_cert_file", "tls_key_file", "tls_client_ca_file", "unix_socket_mode",
        "unix_socket_allowed_uids", "max_sessions_per_caller"}},
      {"Limits",
       {"max_calls_per_batch", "max_concurrent_calls", "max_pending_calls", "call_timeout_ms",
        "max_call_timeout_ms", "model_content_default_chars", "model_content_max_chars",
        "drain_grace_ms", "session_idle_ttl_ms"}},
      {"Observability", {"log_level", "log_format", "metrics_listen"}},
  };
  return *groups;
}

// `text` wrapped at 80 columns, each line indented by `indent`.
std::string Wrap(absl::string_view text, size_t indent) {
  std::string out, line;
  const std::string pad(indent, ' ');
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && pad.size() + line.size() + 1 + word.size() > 80) {
      absl::StrAppend(&out, pad, line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(&out, pad, line, "\n");
  return out;
}

std::string FlagHelp(const absl::CommandLineFlag& flag) {
  std::string head = absl::StrCat("  --", flag.Name());
  const std::string def = flag.DefaultValue();
  if (flag.IsOfType<bool>()) {
    absl::StrAppend(&head, def == "true" ? "  (default true; --no" : "  (default false",
                    def == "true" ? absl::StrCat(flag.Name(), " turns it off)") : ")");
  } else {
    absl::StrAppend(&head, "=", flag.IsOfType<std::string>() ? "TEXT" : "N");
    if (!def.empty()) absl::StrAppend(&head, "  (default ", def, ")");
  }
  std::string help = flag.Help();
  if (std::string range = FlagRange(flag.Name()); !range.empty()) {
    absl::StrAppend(&help, " Allowed: ", range, ".");
  }
  return absl::StrCat(head, "\n", Wrap(help, 6));
}

std::string HelpText() {
  std::string out = absl::StrCat(
      VersionLine("toolexecd"), "\n",
      "Runs an agent's tools over gRPC (toolexec.v1.ToolExecutor).\n\n"
      "Usage: toolexecd [--config=FILE] [--listen=ADDR] [--workspace=DIR] [FLAG...]\n\n",
      Wrap("Flags given on the command line override the config file: a "
           "toolexec.v1.DaemonConfig (proto/toolexec/v1/config.proto, whose comments give "
           "every field's meaning and range) as text proto, or proto3 JSON if the file name "
           "ends in .json. Exit status: 0 after a clean shutdown or a valid --check_config; "
           "2 when toolexecd refuses to start (a bad flag, config, token file or address).",
           0),
      "\n");
  absl::flat_hash_set<std::string> listed;
  auto all = absl::GetAllFlags();
  for (const FlagGroup& group : FlagGroups()) {
    absl::StrAppend(&out, group.title, ":\n");
    for (const char* name : group.flags) {
      auto it = all.find(name);
      if (it == all.end()) continue;
      absl::StrAppend(&out, FlagHelp(*it->second));
      listed.insert(name);
    }
    absl::StrAppend(&out, "\n");
  }
  std::vector<const absl::CommandLineFlag*> other;
  for (const auto& [name, flag] : all) {
    if (absl::EndsWith(flag->Filename(), "server/main.cc") && !listed.contains(name)) {
      other.push_back(flag);
    }
  }
  std::sort(other.begin(), other.end(),
            [](auto* a, auto* b) { return a->Name() < b->Name(); });
  if (!other.empty()) {
    absl::StrAppend(&out, "Other:\n");
    for (const auto* flag : other) absl::StrAppend(&out, FlagHelp(*flag));
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "  --help  this text;  --version  the version, git commit and build type\n");
  return out;
}

// Answers --help itself and checks every flag and value before abseil's parser
// sees them (it exits 1 on an unknown flag, without a word on what to do),
// recording each flag given in GivenFlags(). Returns the exit status when
// toolexecd should stop now.
std::optional<int> CheckCommandLine(int argc, char** argv) {
  auto refuse = [](absl::string_view why) {
    std::cerr << "toolexecd: " << why << " (toolexecd --help lists the flags)\n";
    return std::optional<int>(kExitRefused);
  };
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--") break;
    if (!absl::ConsumePrefix(&arg, "--") && !absl::ConsumePrefix(&arg, "-")) {
      return refuse(absl::StrCat("unexpected argument '", arg, "': toolexecd takes only flags"));
    }
    const size_t eq = arg.find('=');
    const bool has_value = eq != absl::string_view::npos;
    absl::string_view name = arg.substr(0, eq);
    if (name == "help" || name == "helpfull" || name == "helpshort" || name == "h") {
      std::cout << HelpText();
      return 0;
    }
    if (name == "version") {
      std::cout << VersionLine("toolexecd") << "\n";
      return 0;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr && absl::StartsWith(name, "no") && !has_value) {
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) {
        GivenFlags().insert(std::string(name.substr(2)));
        continue;
      }
    }
    if (flag == nullptr) return refuse(absl::StrCat("unknown flag --", name));
    GivenFlags().insert(std::string(name));
    if (flag->IsOfType<bool>() && !has_value) continue;
    std::string value;
    if (has_value) {
      value = std::string(arg.substr(eq + 1));
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return refuse(absl::StrCat("--", name, " needs a value"));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return refuse(absl::StrCat("--", name, "='", value, "': ", error));
    }
  }
  return std::nullopt;
}

// Config file first, then the flags the user actually gave. With `check_only`
// (--check_config) what depends on the machine that serves rather than on the
// config (the workspace exists here; a listen address beyond loopback needs
// auth, which a deployment may give on its command line) is a warning added to
// `warnings`, not an error.
absl::StatusOr<DaemonOptions> BuildOptions(std::string* log_level, bool check_only,
                                           std::vector<std::string>* warnings) {
  DaemonOptions options;
  EngineOptions& engine = options.engine;
  ServerOptions& server = options.server;
  engine.recording.producer = VersionLine("toolexecd");
  *log_level = absl::GetFlag(FLAGS_log_level);  // unless the file or the flag sets one
  v1::DaemonConfig config;
  const std::string path = absl::GetFlag(FLAGS_config);
  if (!path.empty()) {
    auto file = LoadConfigFile(path);
    if (!file.ok()) return file.status();
    config = *std::move(file);
  }
  // The flags with a config field, over the file; FlagsOverlay has checked
  // their values, so what ApplyConfig refuses now is the file's.
  auto overlay = FlagsOverlay(GivenFlagValues());
  if (!overlay.ok()) return overlay.status();
  MergeOverlay(*overlay, &config);
  if (absl::Status s = ApplyConfig(config, &options, log_level); !s.ok()) {
    if (path.empty()) return s;
    return absl::InvalidArgumentError(absl::StrCat("config file ", path, ": ", s.message()));
  }
  // The options with no config field: their flags alone set them.
  server.max_receive_message_bytes = IntOption(absl::GetFlag(FLAGS_max_receive_message_bytes));
  server.max_send_message_bytes = IntOption(absl::GetFlag(FLAGS_max_send_message_bytes));
  server.keepalive.min_ping_interval =
      MillisecondsOption(absl::GetFlag(FLAGS_keepalive_min_ping_interval_ms));
  server.keepalive.permit_without_calls = absl::GetFlag(FLAGS_keepalive_permit_without_calls);
  server.insecure_allow_unauthenticated = absl::GetFlag(FLAGS_insecure_allow_unauthenticated);
  // The config file's values and the flags' are held to the same ranges.
  if (absl::Status s = ValidateOptions(options); !s.ok()) {
    DaemonOptions authenticated = options;
    authenticated.server.insecure_allow_unauthenticated = true;
    if (!check_only || !ValidateOptions(authenticated).ok()) return s;
    warnings->push_back(absl::StrCat(s.message(), " (when it serves)"));
  }
  // The workspace: absolute and real, so confinement compares real paths.
  std::error_code ec;
  std::filesystem::path ws = engine.workspace.empty() ? std::filesystem::current_path(ec)
                                                      : std::filesystem::path(engine.workspace);
  auto canonical = std::filesystem::canonical(ws, ec);
  if (ec || !std::filesystem::is_directory(canonical)) {
    std::string problem =
        absl::StrCat("workspace '", ws.string(), "' is not an existing directory");
    if (!check_only) return absl::InvalidArgumentError(problem);
    canonical = std::filesystem::current_path(ec);
    warnings->push_back(absl::StrCat(problem, " here; the tools were checked against ",
                                     canonical.string(), " instead"));
  }
  engine.workspace = canonical.string();
  return options;
}

// The serving daemon, for the signal thread's SIGHUP (null before it serves).
absl::Mutex reload_mu;
Daemon* serving_daemon ABSL_GUARDED_BY(reload_mu) = nullptr;

void ReloadCredentials() {
  absl::MutexLock lock(&reload_mu);
  if (serving_daemon == nullptr) {
    spdlog::warn("received SIGHUP before serving: nothing to reload");
    return;
  }
  if (absl::Status s = serving_daemon->ReloadCredentials(); !s.ok()) {
    spdlog::error("SIGHUP: keeping the tokens in use: {}", std::string(s.message()));
  }
}

int Run(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "runs an agent's tools over gRPC (toolexec.v1.ToolExecutor).\n"
      "  toolexecd [--listen=127.0.0.1:50051] [--workspace=DIR] [--config=FILE] "
      "[--example_tools]");
  // --help and --helpshort list the flags defined in this file (abseil's
  // default looks for a file named after the program, toolexecd.cc).
  absl::FlagsUsageConfig usage;
  usage.contains_help_flags = [](absl::string_view file) {
    return absl::EndsWith(file, "server/main.cc");
  };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  absl::SetFlagsUsageConfig(usage);
  if (std::optional<int> exit_status = CheckCommandLine(argc, argv)) return *exit_status;
  absl::ParseCommandLine(argc, argv);
  // Debian's abseil checks every Mutex acquisition for lock-order cycles, at a
  // cost on every RPC. The tests keep the check on; the daemon turns it off.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  auto logger = spdlog::stderr_logger_mt("toolexecd");
  spdlog::set_default_logger(logger);
  SetLogFormat(LogFormat::kText);

  const bool check_only = absl::GetFlag(FLAGS_check_config);
  std::string log_level;
  std::vector<std::string> warnings;
  auto options = BuildOptions(&log_level, check_only, &warnings);
  if (options.ok()) {  // ApplyConfig has checked the level's name, ValidateOptions the format's
    spdlog::set_level(spdlog::level::from_str(log_level));
    if (auto format = ParseLogFormat(options->log_format); format.ok()) SetLogFormat(*format);
  }
  if (!options.ok()) {
    std::cerr << "toolexecd: " << options.status().message() << "\n";
    return kExitRefused;
  }

  // Block the stop signals in every thread (gRPC's included) before any starts;
  // the signal thread below takes them with sigwait.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);  // reload the token file
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A client vanishing mid-write must not kill the daemon.
  signal(SIGPIPE, SIG_IGN);

  // The signal thread starts before the daemon serves: once it serves, a
  // command may take the user's last tasks (RLIMIT_NPROC), and shutting down
  // must then need no new thread. The first signal starts the drain on this
  // thread; a second exits at once.
  static absl::Notification stop_requested;  // outlives the detached thread
  auto signal_thread = StartThread([stop_signals]() mutable {
    int sig = 0;
    // SIGHUP reloads the credentials, at any time, and is no stop signal.
    auto next_stop = [&] {
      for (;;) {
        sigwait(&stop_signals, &sig);
        if (sig != SIGHUP) return;
        ReloadCredentials();
      }
    };
    next_stop();
    spdlog::info("received {}: shutting down gracefully (again to exit at once)", strsignal(sig));
    stop_requested.Notify();
    next_stop();
    spdlog::warn("received {} again: exiting without draining", strsignal(sig));
    spdlog::default_logger()->flush();
    _exit(1);
  });
  if (!signal_thread.ok()) {
    std::cerr << "toolexecd: " << signal_thread.status().message() << "\n";
    return kExitRefused;
  }
  signal_thread->detach();

  auto daemon = Daemon::Create(*options);
  if (!daemon.ok()) {
    std::cerr << "toolexecd: " << daemon.status().message() << "\n";
    return kExitRefused;
  }
  // The command tools hold their scrubbed copy of the environment now: wipe
  // the secrets from the daemon's own and make it non-dumpable, so that no
  // command can read them back (tools/process/environment.h).
  if (absl::Status s = command::SealDaemonSecrets(); !s.ok()) {
    std::cerr << "toolexecd: " << s.message() << "\n";
    return kExitRefused;
  }
  if (check_only) {
    const ToolRegistry& registry = (*daemon)->engine().registry();
    std::cout << "config OK: " << registry.size() << " tools ("
              << absl::StrJoin(registry.names(), ", ") << "), listen " << options->server.listen
              << ", workspace " << options->engine.workspace << "\n";
    for (const std::string& warning : warnings) std::cout << "warning: " << warning << "\n";
    return 0;
  }
  if (absl::Status s = (*daemon)->Start(); !s.ok()) {
    std::cerr << "toolexecd: " << s.message() << "\n";
    return kExitRefused;
  }
  if (std::string path = absl::GetFlag(FLAGS_address_file); !path.empty()) {
    // Write then rename, so a reader never sees a partial address.
    std::string tmp = path + ".tmp";
    std::ofstream(tmp) << (*daemon)->address() << "\n";
    std::rename(tmp.c_str(), path.c_str());
  }

  {
    absl::MutexLock lock(&reload_mu);
    serving_daemon = daemon->get();
  }
  stop_requested.WaitForNotification();
  (*daemon)->Shutdown();
  spdlog::default_logger()->flush();
  // A tool that ignored cancellation may still hold a runtime thread; the
  // drain is over, so do not wait on destructors that could join it.
  _exit(0);
}

}  // namespace
}  // namespace toolexec

int main(int argc, char** argv) { return toolexec::Run(argc, argv); }

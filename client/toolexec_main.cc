// toolexec: the command-line client of toolexecd. Also the container's
// HEALTHCHECK (`toolexec health`), so it must stay small, fast to start, and
// exact about its exit codes.
//
// Flags are parsed by hand: the binary links no flags library, and a handful
// of flags do not need one.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/mcp_server.h"
#include "client/replay.h"
#include "server/build_info.h"
#include "google/protobuf/message.h"
#include "google/protobuf/util/json_util.h"

namespace toolexec {
namespace {

namespace health = ::grpc::health::v1;

constexpr int kExitOk = 0;
constexpr int kExitNotSuccess = 1;  // a tool failed, or health is not SERVING
constexpr int kExitUsage = 2;
constexpr int kExitRpcFailed = 3;

constexpr char kDefaultTarget[] = "127.0.0.1:50051";
constexpr char kTargetEnv[] = "TOOLEXEC_TARGET";
constexpr char kTokenEnv[] = "TOOLEXEC_TOKEN";

constexpr char kUsage[] =
    R"(usage: toolexec [--target=ADDR] [--timeout=SECONDS] [--session=ID] COMMAND [ARGS]

Talks to a running toolexecd over gRPC.

commands:
  list [--set NAME] [--format F]
                           print the tool declarations, one JSON object per line;
                           NAME is a tool set: all, read_only, file_tools,
                           path_scoped, nondestructive, minimal,
                           provider_tools; with --format (openai,
                           openai_strict, openai_responses, anthropic, gemini), print
                           them instead as that provider's tools array, ready
                           to paste into its request
  call NAME [ARGS_JSON]    run one tool; ARGS_JSON is a JSON object (default {});
                           prints its ToolResult as one JSON line
  batch FILE               run the batch in FILE (- reads stdin): a JSON array of
                           calls [{"id":"1","name":"get_weather","args":{...}}, ...]
                           or an ExecuteBatchRequest object
                           {"calls":[...], "session_id":"...", "timeout":"5s"};
                           prints each event (result, progress, permission
                           request) as one JSON line as it arrives
  mcp [--set NAME]         serve the daemon's tools (or the tool set NAME) as an
                           MCP server over stdio (newline-delimited JSON-RPC),
                           for an MCP client to spawn; logs go to stderr
  export SESSION [--format F]
                           print the session's recording (the daemon's
                           recording.dir): as written, JSON lines (native, the
                           default), or as a transcript for openai,
                           openai_responses, anthropic or gemini: a JSON array of
                           messages, per batch the model's tool calls and then
                           the tool results
  replay FILE [--workspace DIR] [--json]
                           re-run the recorded session in FILE against the
                           daemon (in DIR as it is, else in the recorded
                           workspace restored to the session's first
                           checkpoint) and compare each result with the
                           recorded one; prints a
                           line per batch and each difference (--json: one JSON
                           object); exit 1 on any difference
  checkpoints SESSION      list the session's checkpoints (its workspace before each
                           batch that could write), oldest first, one JSON line each
  diff SESSION FROM [TO]   the changes from checkpoint FROM to checkpoint TO (default:
                           the workspace now): a unified diff (git's format) on
                           stdout, one "<kind> <path>" line per change on stderr;
                           --path P (repeatable) limits it to P
  restore SESSION CHECKPOINT [PATH...] [--dry-run]
                           put the workspace (or PATHs) back as CHECKPOINT had it;
                           prints each change, the undo checkpoint taken first,
                           and what the checkpoint had left out; --dry-run only
                           says what would change
  health [--service NAME]  print the serving status: SERVING, NOT_SERVING, ...
  help                     print this text (also --help, -h)
  version                  print the version, git commit and build type (also --version)

flags (anywhere on the line; "--flag VALUE" works as well as "--flag=VALUE"):
  --target=ADDR        the daemon: host:port or unix:/path/to.sock
                       (default: $TOOLEXEC_TARGET, else 127.0.0.1:50051)
  --timeout=SECONDS    deadline of the RPC, may be fractional (default: 30 for
                       list, 5 for health; none for call and batch, whose calls
                       the daemon times out itself)
  --session=ID         run in this session (list, call, batch, mcp)
  --token-file=FILE    send the token in FILE (its first field) as
                       "authorization: Bearer <token>" (default: $TOOLEXEC_TOKEN,
                       the token itself)
  --tls-ca=FILE        use TLS; trust the daemon's certificate if this PEM CA
                       signed it (TLS with the system's roots when only
                       --tls-cert/--tls-key are given)
  --tls-cert=FILE      with --tls-key: the client certificate for a daemon that
  --tls-key=FILE       requires one (mTLS)

exit status:
  0  success; for health, the status is SERVING
  1  a tool result is not SUCCESS (call, batch), health is not SERVING, or a
     replay found a difference
  2  bad usage, or a batch file that cannot be read or parsed
  3  the RPC failed; stderr says "toolexec: <CODE>: <message>"
)";

// Everything the command line says, validated.
struct Options {
  std::string command;
  std::vector<std::string> positional;  // after the command
  std::string target;
  std::optional<absl::Duration> timeout;
  std::string session;
  std::string tool_set;  // list --set
  v1::DeclarationFormat format = v1::DECLARATION_FORMAT_NATIVE;  // list --format
  v1::RecordingFormat recording_format = v1::RECORDING_FORMAT_NATIVE;  // export --format
  std::string workspace;  // replay --workspace
  bool json = false;      // replay --json
  std::string service;   // health --service
  std::vector<std::string> paths;  // diff --path
  bool dry_run = false;            // restore --dry-run
  ClientCredentials credentials;
  std::string token_file;
  bool help = false;
  bool version = false;
};

struct FlagSpec {
  absl::string_view name;
  // Commands the flag applies to; empty means every command.
  std::vector<absl::string_view> commands;
};

const std::vector<FlagSpec>& Flags() {
  static const auto* const kFlags = new std::vector<FlagSpec>{
      {"target", {}},
      {"timeout", {}},
      {"session", {"list", "call", "batch", "mcp"}},
      {"set", {"list", "mcp"}},
      {"format", {"list", "export"}},
      {"workspace", {"replay"}},
      {"json", {"replay"}},
      {"service", {"health"}},
      {"path", {"diff"}},
      {"token-file", {}},
      {"tls-ca", {}},
      {"tls-cert", {}},
      {"tls-key", {}},
  };
  return *kFlags;
}

const FlagSpec* FindFlag(absl::string_view name) {
  for (const FlagSpec& flag : Flags()) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

absl::StatusOr<absl::Duration> ParseSeconds(const std::string& text) {
  double seconds = 0;
  if (!absl::SimpleAtod(text, &seconds) || !std::isfinite(seconds) ||
      seconds <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--timeout wants a positive number of seconds, got \"", text, "\""));
  }
  return absl::Seconds(seconds);
}

// Strict: unknown flags, repeated flags, empty values, flags given to a
// command they do not apply to, and wrong argument counts are all errors.
absl::StatusOr<Options> ParseArgs(int argc, char** argv) {
  Options options;
  std::map<std::string, std::string, std::less<>> values;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      continue;
    }
    if (arg == "--version") {
      options.version = true;
      continue;
    }
    if (arg == "--json") {  // a switch: takes no value
      if (!values.emplace("json", "true").second) {
        return absl::InvalidArgumentError("--json is given more than once");
      }
      continue;
    }
    if (arg == "--dry-run") {
      options.dry_run = true;
      continue;
    }
    if (absl::StartsWith(arg, "--path=") || (arg == "--path" && i + 1 < argc)) {
      // Repeatable, unlike the other flags.
      options.paths.push_back(arg == "--path" ? argv[++i] : std::string(arg.substr(7)));
      if (options.paths.back().empty()) return absl::InvalidArgumentError("--path needs a value");
      continue;
    }
    if (arg.size() > 1 && arg[0] == '-' && arg[1] != '-') {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown flag ", arg, " (flags are spelt --name=value)"));
    }
    if (!absl::StartsWith(arg, "--")) {  // a command, an argument, or "-"
      if (options.command.empty()) {
        options.command = std::string(arg);
      } else {
        options.positional.emplace_back(arg);
      }
      continue;
    }
    absl::string_view body = arg.substr(2);
    absl::string_view name = body.substr(0, body.find('='));
    const FlagSpec* flag = FindFlag(name);
    if (flag == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name));
    }
    std::string value;
    if (name.size() < body.size()) {
      value = std::string(body.substr(name.size() + 1));
    } else if (i + 1 < argc && !absl::StartsWith(argv[i + 1], "--")) {
      value = argv[++i];
    }
    if (value.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " needs a value"));
    }
    if (!values.emplace(std::string(name), std::move(value)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, " is given more than once"));
    }
  }
  if (options.help || options.command == "help") {
    options.help = true;
    return options;
  }
  if (options.version || options.command == "version") {
    options.version = true;
    return options;
  }
  if (options.command.empty()) {
    return absl::InvalidArgumentError("no command given");
  }

  struct Arity {
    size_t min;
    size_t max;
  };
  static const auto* const kArity = new std::map<absl::string_view, Arity>{
      {"list", {0, 0}}, {"call", {1, 2}}, {"batch", {1, 1}}, {"health", {0, 0}},
      {"mcp", {0, 0}}, {"export", {1, 1}}, {"replay", {1, 1}},
      {"checkpoints", {1, 1}}, {"diff", {2, 3}},
      {"restore", {2, std::numeric_limits<size_t>::max()}}};
  auto arity = kArity->find(options.command);
  if (arity == kArity->end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown command \"", options.command, "\""));
  }
  if (options.dry_run && options.command != "restore") {
    return absl::InvalidArgumentError(absl::StrCat("--dry-run does not apply to ", options.command));
  }
  if (!options.paths.empty() && options.command != "diff") {
    return absl::InvalidArgumentError(absl::StrCat("--path does not apply to ", options.command));
  }
  if (options.positional.size() < arity->second.min ||
      options.positional.size() > arity->second.max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "wrong number of arguments for ", options.command, " (see usage)"));
  }

  for (const auto& [name, value] : values) {
    const FlagSpec* flag = FindFlag(name);
    if (!flag->commands.empty() &&
        std::find(flag->commands.begin(), flag->commands.end(),
                  options.command) == flag->commands.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", name, " does not apply to ", options.command));
    }
    if (name == "target") {
      options.target = value;
    } else if (name == "timeout") {
      absl::StatusOr<absl::Duration> timeout = ParseSeconds(value);
      if (!timeout.ok()) return timeout.status();
      options.timeout = *timeout;
    } else if (name == "session") {
      options.session = value;
    } else if (name == "set") {
      options.tool_set = value;
    } else if (name == "format" && options.command == "export") {
      if (!v1::RecordingFormat_Parse(
              absl::StrCat("RECORDING_FORMAT_", absl::AsciiStrToUpper(value)),
              &options.recording_format)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--format: unknown format '", value,
            "'; expected native, openai, openai_responses, anthropic or gemini"));
      }
    } else if (name == "workspace") {
      options.workspace = value;
    } else if (name == "json") {
      options.json = true;
    } else if (name == "format") {
      if (!v1::DeclarationFormat_Parse(
              absl::StrCat("DECLARATION_FORMAT_", absl::AsciiStrToUpper(value)), &options.format)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--format: unknown format '", value,
            "'; expected openai, openai_strict, openai_responses, anthropic, gemini or native"));
      }
    } else if (name == "service") {
      options.service = value;
    } else if (name == "token-file") {
      options.token_file = value;
    } else if (name == "tls-ca") {
      options.credentials.tls_ca_file = value;
    } else if (name == "tls-cert") {
      options.credentials.tls_cert_file = value;
    } else if (name == "tls-key") {
      options.credentials.tls_key_file = value;
    }
  }
  if (options.target.empty()) {
    const char* env = std::getenv(kTargetEnv);
    options.target = (env != nullptr && *env != '\0') ? env : kDefaultTarget;
  }
  return options;
}

int RpcFailed(const absl::Status& status) {
  std::cerr << "toolexec: " << absl::StatusCodeToString(status.code()) << ": "
            << status.message() << std::endl;
  return kExitRpcFailed;
}

// One compact JSON line per message, flushed at once so that a reader of a
// pipe sees each event as it arrives.
absl::Status PrintJsonLine(const google::protobuf::Message& message,
                           std::ostream& out = std::cout) {
  google::protobuf::util::JsonPrintOptions print_options;
  print_options.always_print_primitive_fields = false;
  print_options.preserve_proto_field_names = true;
  std::string json;
  auto status =
      google::protobuf::util::MessageToJsonString(message, &json, print_options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("cannot print ",
                                            message.GetTypeName(), " as JSON: ",
                                            status.ToString()));
  }
  out << json << std::endl;
  return absl::OkStatus();
}

// `json` (valid JSON text) without the whitespace between its tokens.
std::string CompactJson(absl::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < json.size()) {
        out += json[++i];
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
      out += c;
    }
  }
  return out;
}

// `value` as compact JSON with every object's keys sorted, so a Struct prints
// the same on every run (the JSON printer walks a Struct's map in no fixed
// order).
std::string SortedJson(const google::protobuf::Value& value) {
  auto leaf = [](const google::protobuf::Value& v) {
    std::string json;
    (void)google::protobuf::util::MessageToJsonString(v, &json);
    return json;
  };
  if (value.has_struct_value()) {
    const auto& fields = value.struct_value().fields();
    std::map<std::string, const google::protobuf::Value*> sorted;
    for (const auto& [key, field] : fields) sorted.emplace(key, &field);
    std::string out = "{";
    for (const auto& [key, field] : sorted) {
      google::protobuf::Value name;
      name.set_string_value(key);
      absl::StrAppend(&out, out.size() > 1 ? "," : "", leaf(name), ":", SortedJson(*field));
    }
    return out + "}";
  }
  if (value.has_list_value()) {
    std::string out = "[";
    for (const google::protobuf::Value& item : value.list_value().values()) {
      absl::StrAppend(&out, out.size() > 1 ? "," : "", SortedJson(item));
    }
    return out + "]";
  }
  return leaf(value);
}

int RunList(Client& client, const Options& options) {
  v1::ListToolsRequest request;
  request.set_session_id(options.session);
  request.set_tool_set(options.tool_set);
  request.set_format(options.format);
  absl::StatusOr<v1::ListToolsResponse> response =
      client.ListTools(request, options.timeout.value_or(kDefaultUnaryTimeout));
  if (!response.ok()) return RpcFailed(response.status());
  if (options.format != v1::DECLARATION_FORMAT_NATIVE) {
    std::cout << response->provider_tools_json() << std::endl;
    return kExitOk;
  }
  for (const v1::ToolDeclaration& tool : response->tools()) {
    // `parameters` from the schema text, in its declared order (a Struct's
    // JSON has its keys in no fixed order), and provider_config with sorted
    // keys, so every run prints the same.
    v1::ToolDeclaration shown = tool;
    shown.clear_parameters();
    shown.clear_parameters_json();
    shown.clear_provider_config();
    std::ostringstream line;
    if (absl::Status printed = PrintJsonLine(shown, line); !printed.ok()) {
      return RpcFailed(printed);
    }
    std::string text = line.str();
    size_t end = text.rfind('}');
    if (tool.has_provider_config() && end != std::string::npos) {
      google::protobuf::Value config;
      *config.mutable_struct_value() = tool.provider_config();
      std::string field = absl::StrCat(end > 1 ? "," : "", "\"provider_config\":", SortedJson(config));
      text.insert(end, field);
      end += field.size();
    }
    if (!tool.parameters_json().empty() && end != std::string::npos) {
      text.insert(end, absl::StrCat(end > 1 ? "," : "", "\"parameters\":",
                                    CompactJson(tool.parameters_json())));
    }
    std::cout << text << std::flush;
  }
  return kExitOk;
}

// Without a way to answer, a permission request would stall the batch with no
// visible cause; say so on stderr (RespondPermission can answer it).
void ReportPermissionRequest(const v1::PermissionRequest& request) {
  std::cerr << "toolexec: the daemon asks permission (answer it with "
               "RespondPermission, or the call waits): ";
  PrintJsonLine(request, std::cerr).IgnoreError();
}

int RunCall(Client& client, const Options& options) {
  const std::string& name = options.positional[0];
  const std::string args =
      options.positional.size() > 1 ? options.positional[1] : "";
  absl::StatusOr<v1::ToolCall> call = MakeCall("1", name, args);
  if (!call.ok()) {
    std::cerr << "toolexec: " << call.status().message() << std::endl;
    return kExitUsage;
  }
  v1::ExecuteBatchRequest request;
  request.set_session_id(options.session);
  *request.add_calls() = *std::move(call);

  std::optional<v1::ToolResult> result;
  absl::Status status = client.ExecuteBatch(
      request,
      [&result](const v1::ExecuteBatchResponse& event) {
        if (event.has_result()) {
          result = event.result();
        } else if (event.has_permission_request()) {
          ReportPermissionRequest(event.permission_request());
        } else if (event.has_checkpoint()) {
          std::cerr << "toolexec: checkpoint " << event.checkpoint().id()
                    << " taken first (toolexec restore " << event.checkpoint().session_id() << " "
                    << event.checkpoint().id() << " undoes the call)" << std::endl;
        }
        // Progress chunks are dropped: the final result carries the output.
      },
      options.timeout.value_or(kNoDeadline));
  if (!status.ok()) return RpcFailed(status);
  if (!result.has_value()) {
    return RpcFailed(
        absl::InternalError("the daemon ended the batch without a result"));
  }
  if (absl::Status printed = PrintJsonLine(*result); !printed.ok()) {
    return RpcFailed(printed);
  }
  return result->status() == v1::RESULT_STATUS_SUCCESS ? kExitOk
                                                       : kExitNotSuccess;
}

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin),
                       std::istreambuf_iterator<char>());
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A batch file is either a bare array of calls or a whole request object.
absl::StatusOr<v1::ExecuteBatchRequest> ParseBatch(const std::string& text,
                                                   const std::string& source) {
  size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos ||
      (text[start] != '[' && text[start] != '{')) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": expected a JSON array of calls or an ExecuteBatchRequest "
                "object, got ",
        start == std::string::npos
            ? std::string("nothing")
            : absl::StrCat("text starting with '", text.substr(start, 1), "'")));
  }
  std::string json =
      text[start] == '[' ? absl::StrCat("{\"calls\":", text, "}") : text;
  v1::ExecuteBatchRequest request;
  // Unknown fields stay errors: a misspelt "args" must not run a call with {}.
  auto parsed = google::protobuf::util::JsonStringToMessage(
      json, &request, google::protobuf::util::JsonParseOptions());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": not a valid batch: ", parsed.ToString()));
  }
  return request;
}

int RunBatch(Client& client, const Options& options) {
  const std::string& path = options.positional[0];
  const std::string source = path == "-" ? "stdin" : path;
  absl::StatusOr<std::string> text = ReadInput(path);
  absl::StatusOr<v1::ExecuteBatchRequest> request =
      text.ok() ? ParseBatch(*text, source) : text.status();
  if (!request.ok()) {
    std::cerr << "toolexec: " << request.status().message() << std::endl;
    return kExitUsage;
  }
  if (!options.session.empty()) {
    if (!request->session_id().empty() &&
        request->session_id() != options.session) {
      std::cerr << "toolexec: --session=" << options.session
                << " conflicts with session_id \"" << request->session_id()
                << "\" in " << source << "; give only one" << std::endl;
      return kExitUsage;
    }
    request->set_session_id(options.session);
  }

  bool all_succeeded = true;
  absl::Status print_error;
  absl::Status status = client.ExecuteBatch(
      *request,
      [&](const v1::ExecuteBatchResponse& event) {
        if (event.has_result() &&
            event.result().status() != v1::RESULT_STATUS_SUCCESS) {
          all_succeeded = false;
        }
        if (event.has_permission_request()) {
          ReportPermissionRequest(event.permission_request());
        }
        if (absl::Status printed = PrintJsonLine(event); !printed.ok()) {
          print_error.Update(printed);
        }
      },
      options.timeout.value_or(kNoDeadline));
  if (!status.ok()) return RpcFailed(status);
  if (!print_error.ok()) return RpcFailed(print_error);
  return all_succeeded ? kExitOk : kExitNotSuccess;
}

int RunExport(Client& client, const Options& options) {
  v1::ExportRecordingRequest request;
  request.set_session_id(options.positional[0]);
  request.set_format(options.recording_format);
  absl::StatusOr<std::string> text =
      client.ExportRecording(request, options.timeout.value_or(kDefaultUnaryTimeout));
  if (!text.ok()) return RpcFailed(text.status());
  std::cout << *text << std::flush;
  return kExitOk;
}

int RunReplay(Client& client, const Options& options) {
  absl::StatusOr<std::string> text = ReadInput(options.positional[0]);
  if (!text.ok()) {
    std::cerr << "toolexec: " << text.status().message() << std::endl;
    return kExitUsage;
  }
  ReplayOptions replay;
  replay.workspace = options.workspace;
  absl::StatusOr<ReplayReport> report = Replay(client, *text, replay);
  if (!report.ok()) {
    if (absl::IsInvalidArgument(report.status()) &&
        report.status().message().find("recording") != absl::string_view::npos) {
      std::cerr << "toolexec: " << options.positional[0] << ": " << report.status().message()
                << std::endl;
      return kExitUsage;
    }
    return RpcFailed(report.status());
  }
  std::cout << (options.json ? ReplayReportJson(*report) : ReplayReportText(*report))
            << std::flush;
  return report->differences == 0 ? kExitOk : kExitNotSuccess;
}

int RunCheckpoints(Client& client, const Options& options) {
  v1::ListCheckpointsRequest request;
  request.set_session_id(options.positional[0]);
  auto response = client.ListCheckpoints(request, options.timeout.value_or(kDefaultUnaryTimeout));
  if (!response.ok()) return RpcFailed(response.status());
  for (const v1::Checkpoint& c : response->checkpoints()) {
    if (absl::Status printed = PrintJsonLine(c, std::cout); !printed.ok()) return RpcFailed(printed);
  }
  return kExitOk;
}

// "added path", as FileChangeKind names it.
std::string ChangeLine(const v1::FileChange& change) {
  return absl::StrCat(absl::AsciiStrToLower(v1::FileChangeKind_Name(change.kind())), " ",
                      change.path());
}

int RunDiff(Client& client, const Options& options) {
  v1::DiffCheckpointRequest request;
  request.set_session_id(options.positional[0]);
  request.set_from_checkpoint_id(options.positional[1]);
  if (options.positional.size() > 2) request.set_to_checkpoint_id(options.positional[2]);
  for (const std::string& p : options.paths) request.add_paths(p);
  auto response = client.DiffCheckpoint(request, options.timeout.value_or(absl::Minutes(5)));
  if (!response.ok()) return RpcFailed(response.status());
  for (const v1::FileChange& c : response->changes()) std::cerr << ChangeLine(c) << "\n";
  std::cout << response->unified_diff();
  if (response->diff_truncated()) std::cerr << "toolexec: the diff was cut short\n";
  return kExitOk;
}

int RunRestore(Client& client, const Options& options) {
  v1::RestoreCheckpointRequest request;
  request.set_session_id(options.positional[0]);
  request.set_checkpoint_id(options.positional[1]);
  for (size_t i = 2; i < options.positional.size(); ++i) request.add_paths(options.positional[i]);
  request.set_dry_run(options.dry_run);
  auto response = client.RestoreCheckpoint(request, options.timeout.value_or(absl::Minutes(10)));
  if (!response.ok()) return RpcFailed(response.status());
  const char* verb = options.dry_run ? "would restore: " : "restored: ";
  for (const v1::FileChange& c : response->changes()) std::cout << verb << ChangeLine(c) << "\n";
  for (const std::string& p : response->not_restored()) std::cout << "not restored: " << p << "\n";
  if (!response->undo_checkpoint_id().empty()) {
    std::cout << "undo checkpoint: " << response->undo_checkpoint_id() << "\n";
  }
  std::cout << std::flush;
  return kExitOk;
}

int RunHealth(Client& client, const Options& options) {
  absl::StatusOr<health::HealthCheckResponse::ServingStatus> status =
      client.HealthStatus(options.service,
                          options.timeout.value_or(absl::Seconds(5)));
  if (!status.ok()) return RpcFailed(status.status());
  std::cout << health::HealthCheckResponse::ServingStatus_Name(*status)
            << std::endl;
  return *status == health::HealthCheckResponse::SERVING ? kExitOk
                                                         : kExitNotSuccess;
}

int Main(int argc, char** argv) {
  absl::StatusOr<Options> options = ParseArgs(argc, argv);
  if (!options.ok()) {
    std::cerr << "toolexec: " << options.status().message() << "\n\n"
              << kUsage;
    return kExitUsage;
  }
  if (options->help) {
    std::cout << kUsage;
    return kExitOk;
  }
  if (options->version) {
    std::cout << VersionLine("toolexec") << "\n";
    return kExitOk;
  }
  if (!options->token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(options->token_file);
    if (!token.ok()) {
      std::cerr << "toolexec: " << token.status().message() << "\n";
      return kExitUsage;
    }
    options->credentials.token = *std::move(token);
  } else if (const char* env = std::getenv(kTokenEnv); env != nullptr) {
    options->credentials.token = std::string(absl::StripAsciiWhitespace(env));
  }
  absl::StatusOr<std::unique_ptr<Client>> created =
      Client::Create(options->target, options->credentials);
  if (!created.ok()) {
    std::cerr << "toolexec: " << created.status().message() << "\n";
    return kExitUsage;
  }
  std::unique_ptr<Client> client = *std::move(created);
  if (options->command == "list") return RunList(*client, *options);
  if (options->command == "call") return RunCall(*client, *options);
  if (options->command == "batch") return RunBatch(*client, *options);
  if (options->command == "export") return RunExport(*client, *options);
  if (options->command == "replay") return RunReplay(*client, *options);
  if (options->command == "checkpoints") return RunCheckpoints(*client, *options);
  if (options->command == "diff") return RunDiff(*client, *options);
  if (options->command == "restore") return RunRestore(*client, *options);
  if (options->command == "mcp") {
    McpStdioServer::Options mcp;
    mcp.tool_set = options->tool_set;
    mcp.session_id = options->session;
    mcp.version = GetBuildInfo().version;
    return McpStdioServer::Serve(client.get(), std::move(mcp), STDIN_FILENO, STDOUT_FILENO);
  }
  return RunHealth(*client, *options);  // the only command left
}

}  // namespace
}  // namespace toolexec

int main(int argc, char** argv) { return toolexec::Main(argc, argv); }

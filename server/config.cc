#include "server/config.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"

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

absl::StatusOr<v1::DaemonConfig> LoadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read config file ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
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

absl::Status ApplyConfig(const v1::DaemonConfig& config, DaemonOptions* options,
                         std::string* log_level) {
  if (!config.listen().empty()) options->listen = config.listen();
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
    options->default_call_timeout = absl::Milliseconds(l.default_call_timeout_ms());
  }
  if (l.max_call_timeout_ms()) options->max_call_timeout = absl::Milliseconds(l.max_call_timeout_ms());
  if (l.drain_grace_ms()) options->drain_grace = absl::Milliseconds(l.drain_grace_ms());
  if (l.max_sessions()) options->max_sessions = l.max_sessions();
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
  if (r.default_timeout_ms()) b.command_default_timeout = absl::Milliseconds(r.default_timeout_ms());
  if (r.max_timeout_ms()) b.command_max_timeout = absl::Milliseconds(r.max_timeout_ms());
  if (r.capture_bytes()) b.command_capture_bytes = r.capture_bytes();
  if (r.kill_grace_ms()) b.command_kill_grace = absl::Milliseconds(r.kill_grace_ms());
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
  if (config.sessions().max_depth()) options->session_max_depth = config.sessions().max_depth();
  if (config.sessions().has_idle_ttl_ms()) {  // 0 = never
    options->session_idle_ttl = absl::Milliseconds(config.sessions().idle_ttl_ms());
  }
  if (options->max_concurrent_calls > 4096) {
    return absl::InvalidArgumentError(absl::StrCat(
        "limits.max_concurrent_calls is ", options->max_concurrent_calls,
        "; at most 4096 (each running call holds a thread)"));
  }
  if (options->max_pending_calls < options->max_calls_per_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "limits.max_pending_calls (", options->max_pending_calls,
        ") must be at least limits.max_calls_per_batch (", options->max_calls_per_batch, ")"));
  }
  if (options->default_call_timeout > options->max_call_timeout) {
    return absl::InvalidArgumentError(
        "limits.default_call_timeout_ms must not exceed limits.max_call_timeout_ms");
  }
  return absl::OkStatus();
}

}  // namespace toolexec

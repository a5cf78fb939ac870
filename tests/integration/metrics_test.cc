// Operating toolexecd: /metrics scraped over HTTP after a mixed batch (a
// success, an unknown tool, a timeout, a command) shows the calls, latencies,
// batch, RPC and command counts; the caller's traceparent reaches the
// command's environment, every result and the JSON log lines of the RPC; a
// policy's decisions are counted.
#include <curl/curl.h>
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "core/policy.h"
#include "server/build_info.h"
#include "server/daemon.h"
#include "server/logging.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "toolexec/v1/toolexec.grpc.pb.h"
#include "tools/runtime/json.h"
#include "tools/runtime/trace_context.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;

constexpr char kTraceId[] = "4bf92f3577b34da6a3ce929d0e0e4736";
constexpr char kCallerSpan[] = "00f067aa0ba902b7";

size_t Append(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// GET http://<address>/metrics: the body, or "" if the request failed.
std::string Scrape(const std::string& address) {
  std::string body;
  CURL* curl = curl_easy_init();
  if (curl == nullptr) return body;
  std::string url = "http://" + address + "/metrics";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
  if (curl_easy_perform(curl) != CURLE_OK) body.clear();
  curl_easy_cleanup(curl);
  return body;
}

// The samples of an exposition: "name{labels}" -> value.
std::map<std::string, double> Samples(const std::string& exposition) {
  std::map<std::string, double> out;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    double value = 0;
    if (space == absl::string_view::npos || !absl::SimpleAtod(line.substr(space + 1), &value)) {
      continue;
    }
    out[std::string(line.substr(0, space))] = value;
  }
  return out;
}

// Scrapes until `ready` holds of the samples (the batch's last metrics are
// recorded as its stream ends, just after the client has its status), for up
// to 10 s; the last samples.
template <typename Ready>
std::map<std::string, double> ScrapeUntil(const std::string& address, Ready ready) {
  std::map<std::string, double> samples;
  for (absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end;) {
    samples = Samples(Scrape(address));
    if (ready(samples)) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return samples;
}

double Get(const std::map<std::string, double>& samples, const std::string& key) {
  auto it = samples.find(key);
  return it == samples.end() ? -1 : it->second;
}

class MetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    workspace_ =
        std::filesystem::temp_directory_path() / ("toolexec_metrics_" + std::to_string(getpid()));
    std::filesystem::create_directories(workspace_);
    // The daemon's log lines, as toolexecd --log_format=json writes them.
    previous_logger_ = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log_);
    sink->set_formatter(NewLogFormatter(LogFormat::kJson));
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("metrics_test", sink));

    DaemonOptions options;
    options.server.listen = "127.0.0.1:0";
    options.server.metrics_listen = "127.0.0.1:0";
    options.engine.workspace = workspace_.string();
    options.tools.example_tools = true;
    Configure(options);
    auto daemon = Daemon::Create(options);
    ASSERT_TRUE(daemon.ok()) << daemon.status();
    daemon_ = *std::move(daemon);
    ASSERT_TRUE(daemon_->Start().ok());
    ASSERT_THAT(daemon_->metrics_address(), ::testing::StartsWith("127.0.0.1:"));
    stub_ = v1::ToolExecutor::NewStub(
        grpc::CreateChannel(daemon_->address(), grpc::InsecureChannelCredentials()));
  }

  // A fixture's own daemon options.
  virtual void Configure(DaemonOptions& /*options*/) {}

  void TearDown() override {
    if (daemon_) daemon_->Shutdown();
    daemon_.reset();
    spdlog::set_default_logger(previous_logger_);
    std::filesystem::remove_all(workspace_);
    curl_global_cleanup();
  }

  // Runs `request`, with `traceparent` as metadata unless empty: the results.
  std::vector<v1::ToolResult> Execute(const v1::ExecuteBatchRequest& request,
                                      const std::string& traceparent) {
    grpc::ClientContext context;
    if (!traceparent.empty()) context.AddMetadata("traceparent", traceparent);
    auto reader = stub_->ExecuteBatch(&context, request);
    std::vector<v1::ToolResult> results;
    v1::ExecuteBatchResponse response;
    while (reader->Read(&response)) {
      if (response.has_result()) results.push_back(response.result());
    }
    EXPECT_TRUE(reader->Finish().ok());
    return results;
  }

  static void AddCall(v1::ExecuteBatchRequest* request, const std::string& name,
                      const std::string& args_json) {
    auto* call = request->add_calls();
    call->set_id(std::to_string(request->calls_size()));
    call->set_name(name);
    call->set_args_json(args_json);
  }

  // The daemon's log lines, each parsed (a line that is not a JSON object
  // fails). Stops the daemon first: a stream's log line is written after its
  // client has the status, and the log stream is read only once nothing writes.
  std::vector<Json> LogLines() {
    daemon_->Shutdown();
    spdlog::default_logger()->flush();
    std::vector<Json> lines;
    for (absl::string_view line : absl::StrSplit(log_.str(), '\n', absl::SkipEmpty())) {
      auto parsed = ParseJson(line);
      EXPECT_TRUE(parsed.ok() && parsed->IsObject()) << "not a JSON object: " << line;
      if (parsed.ok() && parsed->IsObject()) lines.push_back(*std::move(parsed));
    }
    return lines;
  }

  std::filesystem::path workspace_;
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> previous_logger_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<v1::ToolExecutor::Stub> stub_;
};

TEST_F(MetricsTest, AMixedBatchShowsInTheMetricsTheResultsAndTheLogs) {
  const std::string caller = std::string("00-") + kTraceId + "-" + kCallerSpan + "-01";
  {  // a session, so the gauge has something to show
    grpc::ClientContext context;
    v1::OpenSessionRequest open;
    v1::Session session;
    ASSERT_TRUE(stub_->OpenSession(&context, open, &session).ok());
  }
  v1::ExecuteBatchRequest request;
  AddCall(&request, "get_weather", R"({"city":"Paris"})");
  AddCall(&request, "no_such_tool", "{}");
  AddCall(&request, "wait", R"({"ms":60000})");
  AddCall(&request, "run_command", R"({"command_line":"printf %s \"$TRACEPARENT\""})");
  request.mutable_timeout()->set_seconds(3);
  std::vector<v1::ToolResult> results = Execute(request, caller);

  ASSERT_EQ(results.size(), 4u);
  EXPECT_EQ(results[0].status(), v1::RESULT_STATUS_SUCCESS);
  EXPECT_EQ(results[1].status(), v1::RESULT_STATUS_ERROR);
  EXPECT_EQ(results[2].status(), v1::RESULT_STATUS_TIMEOUT);
  ASSERT_EQ(results[3].status(), v1::RESULT_STATUS_SUCCESS) << results[3].error_message();
  for (const auto& r : results) EXPECT_EQ(r.trace_id(), kTraceId) << r.name();
  // The command saw the caller's trace, with the daemon's span as its parent.
  const std::string seen = results[3].payload().struct_value().fields().at("stdout").string_value();
  auto handed_on = ParseTraceparent(seen);
  ASSERT_TRUE(handed_on.has_value()) << seen;
  EXPECT_EQ(handed_on->trace_id, kTraceId);
  EXPECT_NE(handed_on->parent_id, kCallerSpan);
  EXPECT_EQ(handed_on->flags, "01");

  auto samples = ScrapeUntil(daemon_->metrics_address(), [](const auto& s) {
    return Get(s, "toolexec_batch_duration_seconds_count") == 1 &&
           Get(s, "toolexec_child_processes_running") == 0;
  });
  // A failed call's series names its error code; a success's code is empty.
  auto calls = [&](const std::string& tool, const std::string& status,
                   const std::string& code = "") {
    return Get(samples, "toolexec_calls_total{code=\"" + code + "\",server_name=\"\",status=\"" +
                            status + "\",tool=\"" + tool + "\"}");
  };
  EXPECT_EQ(calls("get_weather", "success"), 1);
  EXPECT_EQ(calls("(unknown)", "error", "unknown_tool"), 1);
  EXPECT_EQ(calls("wait", "timeout", "timeout"), 1);
  EXPECT_EQ(calls("run_command", "success"), 1);
  EXPECT_EQ(calls("get_weather", "error", "tool_failed"), -1);  // nothing that did not happen
  // Durations are bucketed from 25 us: a trivial call's latency shows.
  double smallest = 1;
  const std::string bucket = "toolexec_call_duration_seconds_bucket{tool=\"get_weather\",le=\"";
  for (const auto& [key, value] : samples) {
    double le = 0;
    if (absl::StartsWith(key, bucket) &&
        absl::SimpleAtod(absl::StripSuffix(absl::string_view(key).substr(bucket.size()), "\"}"),
                         &le)) {
      smallest = std::min(smallest, le);
    }
  }
  EXPECT_DOUBLE_EQ(smallest, 25e-6);
  for (const char* tool : {"get_weather", "(unknown)", "wait", "run_command"}) {
    EXPECT_EQ(
        Get(samples, std::string("toolexec_call_duration_seconds_count{tool=\"") + tool + "\"}"), 1)
        << tool;
  }
  // The timed-out call took its 3 s; its +Inf bucket has it, the 1 s one not.
  EXPECT_GE(Get(samples, "toolexec_call_duration_seconds_sum{tool=\"wait\"}"), 2.9);
  EXPECT_GE(Get(samples, "toolexec_command_output_bytes_total"), seen.size());
  const std::pair<const char*, double> expected[] = {
      {"toolexec_call_duration_seconds_bucket{tool=\"wait\",le=\"1\"}", 0},
      {"toolexec_call_duration_seconds_bucket{tool=\"wait\",le=\"+Inf\"}", 1},
      {"toolexec_batch_size_calls_count", 1},
      {"toolexec_batch_size_calls_sum", 4},
      {"toolexec_batch_size_calls_bucket{le=\"4\"}", 1},
      {"toolexec_batch_size_calls_bucket{le=\"2\"}", 0},
      {"toolexec_batch_duration_seconds_count", 1},
      {"toolexec_rpcs_total{code=\"OK\",method=\"ExecuteBatch\"}", 1},
      {"toolexec_rpcs_total{code=\"OK\",method=\"OpenSession\"}", 1},
      {"toolexec_child_processes_running", 0},
      {"toolexec_calls_in_flight", 0},
      {"toolexec_calls_queued", 0},
      {"toolexec_batches_in_flight", 0},
      {"toolexec_sessions_open", 1},
      {"toolexec_permission_decisions_total{decided_by=\"rule\",decision=\"deny\"}", 0},
  };
  for (const auto& [key, value] : expected) EXPECT_EQ(Get(samples, key), value) << key;

  // The RPC's log line is JSON and carries the trace and the daemon's span.
  bool found = false;
  for (const Json& line : LogLines()) {
    EXPECT_TRUE(line.HasMember("time") && line.HasMember("level") && line.HasMember("msg"));
    std::string msg = line["msg"].GetString();
    if (msg != "ExecuteBatch") continue;
    found = true;
    ASSERT_TRUE(line.HasMember("trace_id")) << msg;
    EXPECT_STREQ(line["trace_id"].GetString(), kTraceId);
    EXPECT_EQ(line["span_id"].GetString(), handed_on->parent_id);
    // The outcome's parts are members of their own, numbers as numbers.
    ASSERT_TRUE(line.HasMember("status") && line.HasMember("ms") && line.HasMember("calls"))
        << ToJsonString(line);
    EXPECT_STREQ(line["status"].GetString(), "OK");
    EXPECT_TRUE(line["ms"].IsNumber());
    EXPECT_EQ(line["calls"].GetInt(), 4);
    EXPECT_EQ(line["failed"].GetInt(), 2);
    EXPECT_TRUE(line["peer"].IsString());
  }
  EXPECT_TRUE(found) << log_.str();
}

TEST_F(MetricsTest, WithoutATraceparentTheDaemonStartsATrace) {
  v1::ExecuteBatchRequest request;
  AddCall(&request, "run_command", R"({"command_line":"printf %s \"$TRACEPARENT\""})");
  AddCall(&request, "get_weather", R"({"city":"Paris"})");
  std::vector<v1::ToolResult> results = Execute(request, "not-a-traceparent");
  ASSERT_EQ(results.size(), 2u);
  const std::string trace_id = results[0].trace_id();
  EXPECT_EQ(results[1].trace_id(), trace_id);
  const std::string seen = results[0].payload().struct_value().fields().at("stdout").string_value();
  auto handed_on = ParseTraceparent(seen);
  ASSERT_TRUE(handed_on.has_value()) << seen;
  EXPECT_EQ(handed_on->trace_id, trace_id);

  bool found = false;
  for (const Json& line : LogLines()) {
    std::string msg = line["msg"].GetString();
    if (msg != "ExecuteBatch") continue;
    found = true;
    ASSERT_TRUE(line.HasMember("trace_id"));
    EXPECT_EQ(line["trace_id"].GetString(), trace_id);
  }
  EXPECT_TRUE(found);
}

// Every metric the Grafana dashboard queries is one toolexecd exports.
TEST_F(MetricsTest, TheDashboardQueriesExportedMetrics) {
  v1::ExecuteBatchRequest request;
  AddCall(&request, "get_weather", R"({"city":"Paris"})");
  ASSERT_EQ(Execute(request, "").size(), 1u);
  // Once the stream has ended (counted just after the client has its status).
  ScrapeUntil(daemon_->metrics_address(), [](const auto& s) {
    return Get(s, "toolexec_rpcs_total{code=\"OK\",method=\"ExecuteBatch\"}") == 1;
  });
  std::string exposition = Scrape(daemon_->metrics_address());
  std::ifstream in(std::string(TOOLEXEC_SOURCE_DIR) + "/deploy/grafana/toolexec.json");
  std::stringstream text;
  text << in.rdbuf();
  auto dashboard = ParseJson(text.str());
  ASSERT_TRUE(dashboard.ok()) << dashboard.status();
  std::set<std::string> queried;
  std::regex metric_name("toolexec_[a-z_]+");
  std::string all = text.str();
  for (std::sregex_iterator it(all.begin(), all.end(), metric_name), end; it != end; ++it) {
    std::string name = it->str();
    for (const char* suffix : {"_bucket", "_count", "_sum"}) {  // a histogram's series
      std::string base = name.substr(0, name.size() - strlen(suffix));
      if (absl::EndsWith(name, suffix) &&
          absl::StrContains(exposition, "# TYPE " + base + " histogram")) {
        name = base;
      }
    }
    queried.insert(name);
  }
  EXPECT_GE(queried.size(), 10u);
  for (const std::string& name : queried) {
    EXPECT_THAT(exposition, HasSubstr("# TYPE " + name + " ")) << name;
  }
}

TEST_F(MetricsTest, TheBuildInfoNamesTheVersionCommitAndBuildType) {
  const BuildInfo& build = GetBuildInfo();
  auto samples = Samples(Scrape(daemon_->metrics_address()));
  const std::string series =
      absl::StrCat("toolexec_build_info{build_type=\"", build.build_type, "\",commit=\"",
                   build.commit, "\",version=\"", build.version, "\"}");
  EXPECT_EQ(Get(samples, series), 1) << series;
  EXPECT_STRNE(build.version, "");
  EXPECT_STRNE(build.commit, "");
}

// The process_* metrics an operator's usual alerts look for, read when scraped.
TEST_F(MetricsTest, TheProcessMetricsDescribeTheDaemon) {
  auto samples = Samples(Scrape(daemon_->metrics_address()));
  EXPECT_GT(Get(samples, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(Get(samples, "process_virtual_memory_bytes"),
            Get(samples, "process_resident_memory_bytes"));
  EXPECT_GE(Get(samples, "process_threads"), 2);
  EXPECT_GE(Get(samples, "process_open_fds"), 3);
  EXPECT_GE(Get(samples, "process_max_fds"), Get(samples, "process_open_fds"));
  EXPECT_GE(Get(samples, "process_cpu_seconds_total"), 0);
  const double now = absl::ToUnixSeconds(absl::Now());
  EXPECT_GT(Get(samples, "process_start_time_seconds"), now - 24 * 3600);
  EXPECT_LE(Get(samples, "process_start_time_seconds"), now + 1);
}

TEST_F(MetricsTest, RpcsAreCountedByMethodAndCode) {
  grpc::ClientContext context;
  v1::GetStateRequest get;
  get.set_session_id("no-such-session");
  v1::GetStateResponse state;
  EXPECT_EQ(stub_->GetState(&context, get, &state).error_code(), grpc::StatusCode::NOT_FOUND);
  auto samples = ScrapeUntil(daemon_->metrics_address(), [](const auto& s) {
    return Get(s, "toolexec_rpcs_total{code=\"NOT_FOUND\",method=\"GetState\"}") == 1;
  });
  EXPECT_EQ(Get(samples, "toolexec_rpcs_total{code=\"NOT_FOUND\",method=\"GetState\"}"), 1);
  EXPECT_EQ(Get(samples, "toolexec_rpcs_total{code=\"OK\",method=\"GetState\"}"), -1);
}

// A daemon whose policy denies `rm` commands: each call the policy decides is
// counted by its decision and what took it.
class PolicyMetricsTest : public MetricsTest {
 protected:
  void Configure(DaemonOptions& options) override {
    PolicyRuleOptions rm;
    rm.name = "no rm";
    rm.tool = "run_command";
    rm.command_pattern = "rm *";
    rm.decision = PolicyDecision::kDeny;
    options.engine.policy.rules.push_back(rm);
  }
};

TEST_F(PolicyMetricsTest, DeniedAndAllowedCallsAreCounted) {
  v1::ExecuteBatchRequest request;
  AddCall(&request, "run_command", R"({"command_line":"rm -rf no-such-dir"})");
  AddCall(&request, "get_weather", R"({"city":"Paris"})");
  std::vector<v1::ToolResult> results = Execute(request, "");
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status(), v1::RESULT_STATUS_DENIED);
  EXPECT_EQ(results[1].status(), v1::RESULT_STATUS_SUCCESS);
  auto decisions = [](const std::string& decided_by, const std::string& decision) {
    return "toolexec_permission_decisions_total{decided_by=\"" + decided_by +
           "\",decision=\"" + decision + "\"}";
  };
  auto samples = ScrapeUntil(daemon_->metrics_address(), [&](const auto& s) {
    return Get(s, decisions("rule", "deny")) == 1 && Get(s, decisions("default", "allow")) == 1;
  });
  EXPECT_EQ(Get(samples, decisions("rule", "deny")), 1);      // rm
  EXPECT_EQ(Get(samples, decisions("default", "allow")), 1);  // get_weather
  for (const auto& [by, decision] : std::vector<std::pair<std::string, std::string>>{
           {"rule", "allow"}, {"default", "deny"}, {"rule", "ask"}, {"user", "allow"},
           {"user", "deny"}, {"timeout", "deny"}, {"grant", "allow"}, {"error", "deny"}}) {
    EXPECT_EQ(Get(samples, decisions(by, decision)), 0) << by << " " << decision;
  }
  EXPECT_EQ(Get(samples, decisions("user", "ask")), -1);  // cannot happen: no series
}

// A daemon that also serves MCP over HTTP: its requests have their own family,
// by MCP method and HTTP status, apart from the gRPC RPCs.
class McpHttpMetricsTest : public MetricsTest {
 protected:
  void Configure(DaemonOptions& options) override { options.server.mcp_listen = "127.0.0.1:0"; }
};

TEST_F(McpHttpMetricsTest, McpRequestsAreCountedByMethodAndHttpStatus) {
  CURL* curl = curl_easy_init();
  ASSERT_NE(curl, nullptr);
  std::string body;
  const std::string url = "http://" + daemon_->mcp_address() + "/mcp";
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 10L);
  ASSERT_EQ(curl_easy_perform(curl), CURLE_OK);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_cleanup(curl);
  ASSERT_GE(status, 400) << body;  // a GET without a session
  const std::string series =
      absl::StrCat("toolexec_mcp_http_requests_total{method=\"GET\",status=\"", status, "\"}");
  auto samples =
      ScrapeUntil(daemon_->metrics_address(), [&](const auto& s) { return Get(s, series) == 1; });
  EXPECT_EQ(Get(samples, series), 1) << series;
  for (const auto& [key, value] : samples) {
    EXPECT_FALSE(absl::StartsWith(key, "toolexec_rpcs_total{code=\"") &&
                 absl::StrContains(key, "method=\"mcp/"))
        << key;
  }
}

}  // namespace
}  // namespace toolexec

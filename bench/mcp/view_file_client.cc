// bench_view_file_client: the toolexec side of bench/mcp/view_file_vs_mcp.mjs,
// measured from toolexec's own C++ client (toolexec::Client), as the MCP side
// is measured from the MCP SDK's own client.
//
//   bench_view_file_client --target=ADDR --file=PATH [--calls=N] [--warmup=W]
//                          [--expect=TEXT] [--tool=NAME --path_arg=KEY]
//
// Connects once (one channel, reused for every call, as a harness would),
// waits until the daemon reports SERVING, makes W untimed warm-up calls, then
// N timed ones, one at a time. One call = Client::ExecuteBatchCollect of
// ExecuteBatch{calls: [view_file{file_path: PATH}]}: from send until the
// stream's final status is in. Every call (warm-up included) must return one
// result with status SUCCESS whose payload's "content" string contains TEXT
// (when given); the check runs after the clock stops.
//
// --tool and --path_arg call another tool the same way (default view_file
// and file_path): e.g. an MCP server's read_text_file{path} served by
// toolexecd, for bench/mcp/mcp_tool_vs_direct.mjs. For a tool other than
// view_file, TEXT must be in the result's model_content. --echo calls
// bench_echo_server instead, whose payload is the call's arguments: the
// cross-process gRPC anchor of the same call from the same client.
//
// Output, on success: one JSON line on stdout,
//   {"latencies_us":[...],"tool_us":[...]}
// latencies_us: client-observed wall time of each timed call (steady clock);
// tool_us: the daemon-reported ToolResult.duration of the same calls. Process
// start, channel set-up, the health check and the warm-up are never timed.
//
// Exit status: 0 on success, 1 if any RPC failed or a result was wrong,
// 2 on bad usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "google/protobuf/struct.pb.h"
#include "toolexec/v1/toolexec.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string target;
  std::string file;
  std::string expect;
  std::string tool = "view_file";
  std::string path_arg = "file_path";
  bool echo = false;
  long calls = 400;
  long warmup = 50;
};

[[noreturn]] void Usage(const std::string& problem) {
  std::fprintf(stderr,
               "bench_view_file_client: %s\n"
               "usage: bench_view_file_client --target=ADDR --file=PATH "
               "[--calls=N] [--warmup=W] [--expect=TEXT] [--tool=NAME --path_arg=KEY] [--echo]\n",
               problem.c_str());
  std::exit(2);
}

long ParseCount(const std::string& key, const std::string& value) {
  char* end = nullptr;
  long n = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || n < 0) {
    Usage("--" + key + " wants a non-negative integer, got '" + value + "'");
  }
  return n;
}

Options ParseArgs(int argc, char** argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--echo") {
      opts.echo = true;
      continue;
    }
    size_t eq = arg.find('=');
    if (arg.rfind("--", 0) != 0 || eq == std::string::npos) {
      Usage("unexpected argument '" + arg + "'");
    }
    std::string key = arg.substr(2, eq - 2);
    std::string value = arg.substr(eq + 1);
    if (key == "target") {
      opts.target = value;
    } else if (key == "file") {
      opts.file = value;
    } else if (key == "expect") {
      opts.expect = value;
    } else if (key == "tool") {
      opts.tool = value;
    } else if (key == "path_arg") {
      opts.path_arg = value;
    } else if (key == "calls") {
      opts.calls = ParseCount(key, value);
    } else if (key == "warmup") {
      opts.warmup = ParseCount(key, value);
    } else {
      Usage("unknown option --" + key);
    }
  }
  if (opts.target.empty()) Usage("--target is required");
  if (opts.file.empty()) Usage("--file is required");
  return opts;
}

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "bench_view_file_client: %s\n", what.c_str());
  std::exit(1);
}

// absl::Status::message() is an absl::string_view, which is not
// std::string_view on every platform (Debian's abseil); go through ToString.
std::string Describe(const absl::Status& status) { return status.ToString(); }

// Empty when the batch's results are what view_file must return.
std::string Check(const std::vector<toolexec::v1::ToolResult>& results, const Options& opts) {
  const std::string& expect = opts.expect;
  if (results.size() != 1) {
    return "expected 1 result, got " + std::to_string(results.size());
  }
  const toolexec::v1::ToolResult& r = results[0];
  if (r.status() != toolexec::v1::RESULT_STATUS_SUCCESS) {
    return "status " + toolexec::v1::ResultStatus_Name(r.status()) + ": " +
           r.error_message();
  }
  const auto& fields = r.payload().struct_value().fields();
  if (opts.echo) {
    auto arg = fields.find(opts.path_arg);
    if (arg == fields.end() || arg->second.string_value() != opts.file) {
      return "the echo did not return the call's arguments: " +
             r.payload().ShortDebugString().substr(0, 300);
    }
    return "";
  }
  if (opts.tool != "view_file") {
    if (r.model_content().find(expect) == std::string::npos) {
      return "model_content lacks the expected text: " + r.model_content().substr(0, 300);
    }
    return "";
  }
  auto it = fields.find("content");
  if (it == fields.end() || !it->second.has_string_value()) {
    return "payload has no string \"content\": " +
           r.payload().ShortDebugString().substr(0, 300);
  }
  if (it->second.string_value().find(expect) == std::string::npos) {
    return "content lacks the expected text: " +
           it->second.string_value().substr(0, 300);
  }
  return "";
}

double Us(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

void AppendArray(std::string* out, const char* name,
                 const std::vector<double>& values) {
  *out += '"';
  *out += name;
  *out += "\":[";
  char buf[32];
  for (size_t i = 0; i < values.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.3f", i == 0 ? "" : ",", values[i]);
    *out += buf;
  }
  *out += ']';
}

}  // namespace

int main(int argc, char** argv) {
  // As toolexecd's main does: Debian's abseil checks every Mutex acquisition
  // for lock-order cycles, which production turns off; measure what it runs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const Options opts = ParseArgs(argc, argv);

  std::unique_ptr<toolexec::Client> client = toolexec::Client::Create(opts.target);
  // Connects the channel (untimed) and proves the daemon is up.
  absl::StatusOr<bool> serving = client->Health("", absl::Seconds(10));
  if (!serving.ok()) {
    Fail("health check of " + opts.target + " failed: " + Describe(serving.status()));
  }
  if (!*serving) Fail(opts.target + " is not SERVING");

  toolexec::v1::ExecuteBatchRequest request;
  toolexec::v1::ToolCall* call = request.add_calls();
  call->set_id("v");
  call->set_name(opts.tool);
  (*call->mutable_args()->mutable_fields())[opts.path_arg].set_string_value(opts.file);

  std::vector<double> latencies;
  std::vector<double> tool_times;
  latencies.reserve(opts.calls);
  tool_times.reserve(opts.calls);
  const long total = opts.warmup + opts.calls;
  for (long i = 0; i < total; ++i) {
    const bool timed = i >= opts.warmup;
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<std::vector<toolexec::v1::ToolResult>> results =
        client->ExecuteBatchCollect(request);
    const Clock::time_point t1 = Clock::now();
    const std::string which = (timed ? "call " + std::to_string(i - opts.warmup)
                                     : "warm-up call " + std::to_string(i));
    if (!results.ok()) Fail(which + " failed: " + Describe(results.status()));
    std::string problem = Check(*results, opts);
    if (!problem.empty()) Fail(which + ": " + problem);
    if (!timed) continue;
    latencies.push_back(Us(t1 - t0));
    const google::protobuf::Duration& d = (*results)[0].duration();
    tool_times.push_back(static_cast<double>(d.seconds()) * 1e6 +
                         static_cast<double>(d.nanos()) / 1e3);
  }

  std::string out = "{";
  AppendArray(&out, "latencies_us", latencies);
  out += ',';
  AppendArray(&out, "tool_us", tool_times);
  out += "}\n";
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

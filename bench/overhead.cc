// bench_overhead: what toolexecd costs per call on top of gRPC itself, and the
// two batch figures of DESIGN.md "What fast and reliable mean here".
//
// One process, one run:
//   - a bare gRPC server-streaming echo (bench/echo.proto: the same messages as
//     ExecuteBatch), callback API, on 127.0.0.1:0;
//   - toolexecd in-process (toolexec::Daemon, example tools), on 127.0.0.1:0;
//   - the same client code for both (a sync stub per channel, ClientReader
//     loop), sequential and 8-concurrent, in alternating rounds so machine
//     noise hits both targets alike;
//   - 64 x wait{ms:100} and 1000 x get_weather, each in one batch.
//
// Exit status: 0 whatever the timings (a benchmark reports; CI never times),
// 1 if any RPC failed or any result was not a SUCCESS with the right index,
// id and payload (so the smoke run also checks correctness), 2 on bad usage or
// if a server could not start.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "bench/echo.grpc.pb.h"
#include "server/daemon.h"
#include "spdlog/spdlog.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec::bench {
namespace {

using Clock = std::chrono::steady_clock;

// ---- configuration -----------------------------------------------------------

struct Config {
  bool quick = false;
  int rounds = 3;                // alternating rounds: echo, then daemon
  int warmup = 500;              // sequential warm-up RPCs per target
  int sequential = 3000;         // timed sequential RPCs per target per round
  int threads = 8;               // concurrent client threads, one channel each
  int per_thread = 2000;         // timed RPCs per thread per round
  int per_thread_warmup = 50;    // per channel, before the timed part
  int batch_repeats = 5;         // runs of each batch figure
  int wait_calls = 64;           // wait{ms:100} calls in one batch
  int wait_ms = 100;
  int trivial_batch_calls = 1000;  // get_weather calls in one batch
};

Config QuickConfig() {
  Config c;
  c.quick = true;
  c.rounds = 2;
  c.warmup = 50;
  c.sequential = 200;
  c.per_thread = 50;
  c.per_thread_warmup = 5;
  c.batch_repeats = 2;
  return c;
}

// ---- correctness bookkeeping ---------------------------------------------------

// Every RPC is checked; the first few problems are printed, all are counted.
std::atomic<int64_t> g_failures{0};

void Fail(const std::string& what) {
  if (g_failures.fetch_add(1) < 10) std::fprintf(stderr, "FAILURE: %s\n", what.c_str());
}

// ---- the bare echo -------------------------------------------------------------

// Writes one SUCCESS result per call, one write in flight at a time, then OK.
// Never blocks; runs entirely on gRPC's callback threads.
class EchoReactor final : public grpc::ServerWriteReactor<v1::ExecuteBatchResponse> {
 public:
  explicit EchoReactor(const v1::ExecuteBatchRequest* request) : request_(request) { Next(); }

  void OnWriteDone(bool ok) override {
    if (!ok) return Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
    Next();
  }
  void OnDone() override { delete this; }

 private:
  void Next() {
    if (next_ == request_->calls_size()) return Finish(grpc::Status::OK);
    const v1::ToolCall& call = request_->calls(next_);
    response_.Clear();
    v1::ToolResult* result = response_.mutable_result();
    result->set_index(static_cast<uint32_t>(next_));
    result->set_id(call.id());
    result->set_name(call.name());
    result->set_step_id(call.step_id());
    result->set_status(v1::RESULT_STATUS_SUCCESS);
    *result->mutable_payload()->mutable_struct_value() = call.args();
    ++next_;
    StartWrite(&response_);
  }

  const v1::ExecuteBatchRequest* const request_;  // valid until OnDone
  int next_ = 0;
  v1::ExecuteBatchResponse response_;
};

class EchoService final : public Echo::CallbackService {
  grpc::ServerWriteReactor<v1::ExecuteBatchResponse>* ExecuteBatch(
      grpc::CallbackServerContext* context, const v1::ExecuteBatchRequest* request) override {
    return new EchoReactor(request);
  }
};

// ---- the client: identical for both targets --------------------------------------

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) {
  grpc::ChannelArguments args;
  // Each channel gets its own connection: without this, channels with equal
  // arguments share one subchannel (one TCP connection) process-wide.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  // gRPC deadlines take system_clock time points only.
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
    Fail("cannot connect to " + address);
  }
  return channel;
}

// What a result must look like: SUCCESS, in order, the call's id, and (for
// get_weather) the city in the payload; both targets return {"city": "Paris", ...}.
bool CheckResult(const v1::ExecuteBatchRequest& request, int index,
                 const v1::ExecuteBatchResponse& response, std::string* why) {
  if (!response.has_result()) {
    *why = "an event that is not a result";
    return false;
  }
  const v1::ToolResult& r = response.result();
  const v1::ToolCall& call = request.calls(index);
  if (r.status() != v1::RESULT_STATUS_SUCCESS) {
    *why = "result " + std::to_string(index) + " status " + v1::ResultStatus_Name(r.status()) +
           ": " + r.error_message();
    return false;
  }
  if (r.index() != static_cast<uint32_t>(index) || r.id() != call.id()) {
    *why = "result " + std::to_string(index) + " out of order (index " +
           std::to_string(r.index()) + ", id " + r.id() + ")";
    return false;
  }
  if (call.name() == "get_weather") {
    const auto& fields = r.payload().struct_value().fields();
    auto it = fields.find("city");
    if (it == fields.end() || it->second.string_value() != "Paris") {
      *why = "result " + std::to_string(index) + " payload has no city Paris";
      return false;
    }
  }
  return true;
}

// One ExecuteBatch RPC, read to the end and checked. Returns its wall time in
// microseconds. Templated only over the stub type: the code path is the same.
template <typename Stub>
double RunBatch(Stub& stub, const v1::ExecuteBatchRequest& request) {
  const auto start = Clock::now();
  grpc::ClientContext context;
  // Bounds a hung server in CI; far above any expected time.
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  std::unique_ptr<grpc::ClientReader<v1::ExecuteBatchResponse>> reader =
      stub.ExecuteBatch(&context, request);
  v1::ExecuteBatchResponse response;
  int received = 0;
  std::string why;
  bool ok = true;
  while (reader->Read(&response)) {
    if (response.has_progress()) continue;
    if (received >= request.calls_size()) {
      why = "more results than calls";
      ok = false;
    } else if (ok && !CheckResult(request, received, response, &why)) {
      ok = false;
    }
    ++received;
  }
  grpc::Status status = reader->Finish();
  const auto end = Clock::now();
  if (!status.ok()) {
    Fail("ExecuteBatch failed: " + std::to_string(status.error_code()) + " " +
         status.error_message());
  } else if (!ok) {
    Fail(why);
  } else if (received != request.calls_size()) {
    Fail("got " + std::to_string(received) + " results for " +
         std::to_string(request.calls_size()) + " calls");
  }
  return std::chrono::duration<double, std::micro>(end - start).count();
}

// The two targets, each with a sync stub on its own channel for the
// sequential runs, and a way to make a fresh channel per concurrent thread.
template <typename Service>
struct Target {
  std::string name;
  std::string address;
  std::unique_ptr<typename Service::Stub> stub;

  std::unique_ptr<typename Service::Stub> NewStub() const {
    return Service::NewStub(NewChannel(address));
  }
};

v1::ExecuteBatchRequest GetWeatherBatch(int calls) {
  v1::ExecuteBatchRequest request;
  for (int i = 0; i < calls; ++i) {
    v1::ToolCall* call = request.add_calls();
    call->set_id("call-" + std::to_string(i));
    call->set_name("get_weather");
    (*call->mutable_args()->mutable_fields())["city"].set_string_value("Paris");
  }
  return request;
}

v1::ExecuteBatchRequest WaitBatch(int calls, int ms) {
  v1::ExecuteBatchRequest request;
  for (int i = 0; i < calls; ++i) {
    v1::ToolCall* call = request.add_calls();
    call->set_id("wait-" + std::to_string(i));
    call->set_name("wait");
    (*call->mutable_args()->mutable_fields())["ms"].set_number_value(ms);
  }
  return request;
}

// ---- statistics -------------------------------------------------------------

// Nearest-rank percentile of `v` (sorted in place).
double Percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(q * static_cast<double>(v.size()) + 0.999999);
  rank = std::clamp<size_t>(rank, 1, v.size());
  return v[rank - 1];
}

double Median(std::vector<double> v) { return Percentile(v, 0.5); }

struct RoundResult {
  double p50_us = 0;
  double p99_us = 0;
  double rps = 0;
};

struct Summary {
  std::vector<RoundResult> rounds;
  double p50() const { return MedianOf(&RoundResult::p50_us); }
  double p99() const { return MedianOf(&RoundResult::p99_us); }
  double rps() const { return MedianOf(&RoundResult::rps); }
  double MedianOf(double RoundResult::*field) const {
    std::vector<double> v;
    for (const auto& r : rounds) v.push_back(r.*field);
    return Median(std::move(v));
  }
};

RoundResult Summarize(std::vector<double> latencies_us, double seconds) {
  RoundResult r;
  r.rps = static_cast<double>(latencies_us.size()) / seconds;
  r.p50_us = Percentile(latencies_us, 0.50);
  r.p99_us = Percentile(latencies_us, 0.99);
  return r;
}

// ---- the measurements -----------------------------------------------------------

template <typename Service>
RoundResult Sequential(const Target<Service>& target, const v1::ExecuteBatchRequest& request,
                       int n) {
  std::vector<double> latencies;
  latencies.reserve(n);
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) latencies.push_back(RunBatch(*target.stub, request));
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return Summarize(std::move(latencies), seconds);
}

// `threads` client threads, each on its own channel, warm up, wait at a gate,
// then run `per_thread` RPCs back to back. Throughput is all RPCs over the wall
// time from the gate opening to the last thread ending.
template <typename Service>
RoundResult Concurrent(const Target<Service>& target, const v1::ExecuteBatchRequest& request,
                       const Config& config) {
  std::mutex mu;
  std::condition_variable cv;
  int ready = 0;
  bool go = false;
  std::vector<std::vector<double>> latencies(config.threads);
  std::vector<std::thread> threads;
  for (int t = 0; t < config.threads; ++t) {
    threads.emplace_back([&, t] {
      auto stub = target.NewStub();
      for (int i = 0; i < config.per_thread_warmup; ++i) RunBatch(*stub, request);
      latencies[t].reserve(config.per_thread);
      {
        std::unique_lock<std::mutex> lock(mu);
        ++ready;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
      }
      for (int i = 0; i < config.per_thread; ++i) latencies[t].push_back(RunBatch(*stub, request));
    });
  }
  Clock::time_point start;
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return ready == config.threads; });
    go = true;
    start = Clock::now();
  }
  cv.notify_all();
  for (auto& thread : threads) thread.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  return Summarize(std::move(all), seconds);
}

template <typename Service>
std::vector<double> RepeatBatch(const Target<Service>& target,
                                const v1::ExecuteBatchRequest& request, int repeats) {
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) ms.push_back(RunBatch(*target.stub, request) / 1000.0);
  return ms;
}

// ---- output -------------------------------------------------------------

std::string Rounds(const Summary& s, double RoundResult::*field) {
  std::string out;
  for (const auto& r : s.rounds) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%.1f", out.empty() ? "" : " ", r.*field);
    out += buf;
  }
  return out;
}

void PrintTable(const char* title, const Summary& echo, const Summary& daemon) {
  std::printf("\n%s\n", title);
  std::printf("  %-8s %10s %10s %12s   %s\n", "target", "p50 µs", "p99 µs", "RPC/s",
              "per-round p50 µs | p99 µs");
  for (const auto* row : {&echo, &daemon}) {
    std::printf("  %-8s %10.1f %10.1f %12.0f   %s | %s\n", row == &echo ? "echo" : "daemon",
                row->p50(), row->p99(), row->rps(), Rounds(*row, &RoundResult::p50_us).c_str(),
                Rounds(*row, &RoundResult::p99_us).c_str());
  }
  const double p50_ratio = daemon.p50() / echo.p50();
  std::printf("  ratio daemon/echo: p50 %.2fx (target <= 1.25: %s), p99 %.2fx, throughput %.2fx\n",
              p50_ratio, p50_ratio <= 1.25 ? "met" : "NOT met", daemon.p99() / echo.p99(),
              daemon.rps() / echo.rps());
}

void PrintBatch(const char* what, const std::vector<double>& ms, const char* target) {
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  std::string runs;
  for (double v : ms) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%s%.1f", runs.empty() ? "" : " ", v);
    runs += buf;
  }
  std::printf("  %-34s min %8.1f ms  median %8.1f ms  %-22s runs: %s\n", what, sorted.front(),
              Median(ms), target, runs.c_str());
}

int Main(int argc, char** argv) {
  Config config;
  std::string audit_log;
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      config = QuickConfig();
    } else if (arg.rfind("--audit_log=", 0) == 0) {
      audit_log = arg.substr(std::string("--audit_log=").size());
    } else {
      std::fprintf(stderr,
                   "unknown argument '%s'\nusage: %s [--quick] [--audit_log=FILE]\n"
                   "  --quick  small counts: a smoke run that checks correctness, not speed\n"
                   "  --audit_log=FILE  the daemon writes its audit log there\n",
                   arg.c_str(), argv[0]);
      return 2;
    }
  }
  // The daemon logs one info line per RPC; that would time spdlog, not toolexecd.
  spdlog::set_level(spdlog::level::warn);
  // As toolexecd's main does: Debian's abseil checks every Mutex acquisition
  // for lock-order cycles, which production turns off; measure what it runs.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  std::printf("bench_overhead: toolexecd ExecuteBatch vs a bare gRPC echo (same gRPC, same "
              "messages, same client)\n");
  std::printf("command: %s\n", command_line.c_str());
  std::printf("gRPC %s, %u CPUs, spdlog level warn (per-RPC info logs off so they do not distort "
              "timing)%s\n",
              grpc::Version().c_str(), std::thread::hardware_concurrency(),
              config.quick ? "\n--quick: small counts for a smoke run; timings not meaningful"
                           : "");

  // The echo.
  EchoService echo_service;
  grpc::ServerBuilder echo_builder;
  int echo_port = 0;
  echo_builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &echo_port);
  echo_builder.RegisterService(&echo_service);
  echo_builder.SetMaxReceiveMessageSize(64 << 20);
  echo_builder.SetMaxSendMessageSize(64 << 20);
  std::unique_ptr<grpc::Server> echo_server = echo_builder.BuildAndStart();
  if (echo_server == nullptr || echo_port == 0) {
    std::fprintf(stderr, "cannot start the echo server on 127.0.0.1:0\n");
    return 2;
  }

  // The daemon, with an empty workspace of its own.
  char workspace_template[] = "/tmp/bench_overhead.XXXXXX";
  const char* workspace = mkdtemp(workspace_template);
  if (workspace == nullptr) {
    std::perror("mkdtemp");
    return 2;
  }
  DaemonOptions options;
  options.server.listen = "127.0.0.1:0";
  options.engine.workspace = workspace;
  options.engine.example_tools = true;
  options.engine.hooks.audit_log = audit_log;
  auto daemon = Daemon::Create(options);
  if (!daemon.ok()) {
    std::fprintf(stderr, "cannot create the daemon: %s\n", daemon.status().ToString().c_str());
    return 2;
  }
  if (absl::Status s = (*daemon)->Start(); !s.ok()) {
    std::fprintf(stderr, "cannot start the daemon: %s\n", s.ToString().c_str());
    return 2;
  }

  Target<Echo> echo{"echo", "127.0.0.1:" + std::to_string(echo_port), nullptr};
  echo.stub = echo.NewStub();
  Target<v1::ToolExecutor> toolexecd{"daemon", (*daemon)->address(), nullptr};
  toolexecd.stub = toolexecd.NewStub();

  const v1::ExecuteBatchRequest trivial = GetWeatherBatch(1);
  std::printf("trivial call: one get_weather{\"city\":\"Paris\"} per batch (the echo returns the "
              "args as the payload)\n");
  std::printf("%d alternating rounds (echo, then daemon); each figure is the median of the "
              "per-round values\n",
              config.rounds);

  for (int i = 0; i < config.warmup; ++i) {
    RunBatch(*echo.stub, trivial);
    RunBatch(*toolexecd.stub, trivial);
  }

  Summary seq_echo, seq_daemon, conc_echo, conc_daemon;
  for (int round = 0; round < config.rounds; ++round) {
    seq_echo.rounds.push_back(Sequential(echo, trivial, config.sequential));
    seq_daemon.rounds.push_back(Sequential(toolexecd, trivial, config.sequential));
  }
  for (int round = 0; round < config.rounds; ++round) {
    conc_echo.rounds.push_back(Concurrent(echo, trivial, config));
    conc_daemon.rounds.push_back(Concurrent(toolexecd, trivial, config));
  }

  char title[160];
  std::snprintf(title, sizeof(title),
                "Sequential: 1 client thread, %d single-call batches per round, %d warm-up",
                config.sequential, config.warmup);
  PrintTable(title, seq_echo, seq_daemon);
  std::snprintf(title, sizeof(title),
                "Concurrent: %d client threads, one channel each, %d single-call batches per "
                "thread per round",
                config.threads, config.per_thread);
  PrintTable(title, conc_echo, conc_daemon);
  std::printf("  DESIGN.md target: p50 ratio target <= 1.25 (daemon p50 / echo p50, one trivial "
              "call)\n");

  std::printf("\nBatches: wall time of one ExecuteBatch RPC, %d runs each\n",
              config.batch_repeats);
  const v1::ExecuteBatchRequest waits = WaitBatch(config.wait_calls, config.wait_ms);
  const v1::ExecuteBatchRequest trivial_batch = GetWeatherBatch(config.trivial_batch_calls);
  char what[64];
  std::snprintf(what, sizeof(what), "daemon %d x wait{ms:%d}", config.wait_calls, config.wait_ms);
  PrintBatch(what, RepeatBatch(toolexecd, waits, config.batch_repeats), "(target < 150 ms)");
  std::snprintf(what, sizeof(what), "daemon %d x get_weather", config.trivial_batch_calls);
  PrintBatch(what, RepeatBatch(toolexecd, trivial_batch, config.batch_repeats),
             "(target < 50 ms)");
  std::snprintf(what, sizeof(what), "echo   %d x get_weather", config.trivial_batch_calls);
  PrintBatch(what, RepeatBatch(echo, trivial_batch, config.batch_repeats), "(reference)");

  (*daemon)->Shutdown();
  echo_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  echo_server->Wait();
  rmdir(workspace);

  const int64_t failures = g_failures.load();
  if (failures > 0) {
    std::printf("\nFAILED: %lld RPC(s) failed or returned a wrong or non-SUCCESS result (see "
                "stderr)\n",
                static_cast<long long>(failures));
    return 1;
  }
  std::printf("\nall RPCs OK, every result SUCCESS\n");
  return 0;
}

}  // namespace
}  // namespace toolexec::bench

int main(int argc, char** argv) { return toolexec::bench::Main(argc, argv); }

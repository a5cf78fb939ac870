// bench_overhead: what toolexecd costs per call on top of gRPC itself, and the
// two batch figures of docs/DESIGN.md "What fast means".
//
// One process, one run:
//   - a bare gRPC server-streaming echo (bench/echo.proto: the same messages as
//     ExecuteBatch), callback API, on 127.0.0.1:0;
//   - toolexecd in-process (toolexec::Daemon, example tools), on 127.0.0.1:0;
//   - the same client code for both (a sync stub per channel, ClientReader
//     loop), sequential and 8-concurrent, in alternating rounds so machine
//     noise hits both targets alike;
//   - 64 x wait{ms:100} and 1000 x get_weather, each in one batch;
//   - what authentication costs per call: the same trivial call to four more
//     in-process daemons, plaintext, bearer token, TLS, and TLS + token, in
//     alternating rounds, with the ratios to plaintext (--auth: only this).
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
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/synchronization/mutex.h"
#include "bench/stats.h"
#include "bench/echo.grpc.pb.h"
#include "bench/echo_reactor.h"
#include "server/daemon.h"
#include "spdlog/spdlog.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec::bench {
namespace {

using Clock = std::chrono::steady_clock;

// ---- configuration -----------------------------------------------------------

struct Config {
  bool quick = false;
  bool auth_only = false;        // --auth: only the authentication comparison
  // Rules in the daemon's policy (none match the benchmark's calls, so every
  // call is still allowed, after all of them were evaluated); 0 = no policy.
  int policy_rules = 0;
  std::string audit_log;         // --audit_log=FILE: the daemon writes its audit log there
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

class EchoService final : public Echo::CallbackService {
  grpc::ServerWriteReactor<v1::ExecuteBatchResponse>* ExecuteBatch(
      grpc::CallbackServerContext* context, const v1::ExecuteBatchRequest* request) override {
    return new EchoReactor(request);
  }
};

// ---- the client: identical for both targets --------------------------------------

std::shared_ptr<grpc::Channel> NewChannel(
    const std::string& address, const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  grpc::ChannelArguments args;
  // Each channel gets its own connection: without this, channels with equal
  // arguments share one subchannel (one TCP connection) process-wide.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(address, credentials, args);
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
// A non-empty `authorization` is sent as that metadata (a bearer token).
template <typename Stub>
double RunBatch(Stub& stub, const v1::ExecuteBatchRequest& request,
                const std::string& authorization = "") {
  const auto start = Clock::now();
  grpc::ClientContext context;
  if (!authorization.empty()) context.AddMetadata("authorization", authorization);
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

// A target: a sync stub on its own channel for the sequential runs, a way to
// make a fresh channel per concurrent thread, and what every call sends
// (channel credentials, and an authorization header or "").
template <typename Service>
struct Target {
  Target(std::string name, std::string address)
      : name(std::move(name)), address(std::move(address)) {}

  std::string name;
  std::string address;
  std::unique_ptr<typename Service::Stub> stub;
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  std::string authorization;

  std::unique_ptr<typename Service::Stub> NewStub() const {
    return Service::NewStub(NewChannel(address, credentials));
  }
  double Run(typename Service::Stub& s, const v1::ExecuteBatchRequest& request) const {
    return RunBatch(s, request, authorization);
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

// ---- the servers ---------------------------------------------------------------

// toolexecd in-process on 127.0.0.1:0 with the example tools; null (said on
// stderr) if it cannot start.
std::unique_ptr<Daemon> StartDaemon(const Config& config, const char* workspace,
                                    const AuthOptions& auth, const char* what) {
  DaemonOptions options;
  options.server.listen = "127.0.0.1:0";
  options.server.auth = auth;
  options.engine.workspace = workspace;
  options.tools.example_tools = true;
  for (int i = 0; i < config.policy_rules; ++i) {
    // Alternately a command rule for every tool and a path rule for one tool:
    // each is looked at for every call, none matches get_weather or wait.
    PolicyRuleOptions rule;
    rule.name = "rule " + std::to_string(i);
    rule.decision = PolicyDecision::kDeny;
    if (i % 2 == 0) {
      rule.tool = "*";
      rule.command_pattern = "forbidden" + std::to_string(i) + " *";
    } else {
      rule.tool = "view_file";
      rule.path_glob = "*.secret" + std::to_string(i);
    }
    options.engine.policy.rules.push_back(std::move(rule));
  }
  options.engine.hooks.audit_log = config.audit_log;
  auto daemon = Daemon::Create(options);
  absl::Status started = daemon.ok() ? (*daemon)->Start() : daemon.status();
  if (!started.ok()) {
    std::fprintf(stderr, "cannot start the %s daemon: %s\n", what, started.ToString().c_str());
    return nullptr;
  }
  return *std::move(daemon);
}

// ---- the measurements -----------------------------------------------------------

template <typename Service>
RoundResult Sequential(const Target<Service>& target, const v1::ExecuteBatchRequest& request,
                       int n) {
  std::vector<double> latencies;
  latencies.reserve(n);
  const auto start = Clock::now();
  for (int i = 0; i < n; ++i) latencies.push_back(target.Run(*target.stub, request));
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
      for (int i = 0; i < config.per_thread_warmup; ++i) target.Run(*stub, request);
      latencies[t].reserve(config.per_thread);
      {
        std::unique_lock<std::mutex> lock(mu);
        ++ready;
        cv.notify_all();
        cv.wait(lock, [&] { return go; });
      }
      for (int i = 0; i < config.per_thread; ++i) {
        latencies[t].push_back(target.Run(*stub, request));
      }
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
  for (int i = 0; i < repeats; ++i) ms.push_back(target.Run(*target.stub, request) / 1000.0);
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
  const double rps_ratio = daemon.rps() / echo.rps();
  std::printf("  ratio daemon/echo: p50 %.2fx (target <= 1.10: %s), p99 %.2fx, throughput %.2fx "
              "(target >= 0.95: %s)\n",
              p50_ratio, p50_ratio <= 1.10 ? "met" : "NOT met", daemon.p99() / echo.p99(),
              rps_ratio, rps_ratio >= 0.95 ? "met" : "NOT met");
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

// ---- authentication: what a token and TLS cost per call ---------------------------

// A scratch directory with a token file and a self-signed certificate for
// 127.0.0.1 (made by the openssl command line tool); removed by its destructor.
struct AuthFiles {
  std::filesystem::path dir;
  std::string token = "bench-token-3e1f9a0c7b5d2468";
  std::string token_file, cert_file, key_file, cert_pem;

  ~AuthFiles() {
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
  }
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool MakeAuthFiles(AuthFiles* files) {
  char dir_template[] = "/tmp/bench_overhead_auth.XXXXXX";
  if (mkdtemp(dir_template) == nullptr) {
    std::perror("mkdtemp");
    return false;
  }
  files->dir = dir_template;
  files->token_file = (files->dir / "tokens").string();
  files->cert_file = (files->dir / "cert.pem").string();
  files->key_file = (files->dir / "key.pem").string();
  std::ofstream(files->token_file) << files->token << " bench\n";
  // Owner-only, as toolexecd wants a token file (it warns otherwise).
  std::filesystem::permissions(files->token_file, std::filesystem::perms::owner_read |
                                                      std::filesystem::perms::owner_write);
  const std::string command =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost "
      "-addext subjectAltName=IP:127.0.0.1,DNS:localhost -keyout '" +
      files->key_file + "' -out '" + files->cert_file + "' >/dev/null 2>&1";
  if (std::system(command.c_str()) != 0) {
    std::fprintf(stderr, "cannot make a test certificate: `%s` failed (is openssl installed?)\n",
                 command.c_str());
    return false;
  }
  files->cert_pem = ReadFile(files->cert_file);
  return !files->cert_pem.empty();
}

// One in-process daemon per way of calling it, identical but for its auth.
struct AuthCase {
  const char* name;
  bool token;
  bool tls;
};
constexpr AuthCase kAuthCases[] = {
    {"plaintext", false, false},
    {"token", true, false},
    {"TLS", false, true},
    {"TLS+token", true, true},
};

void PrintAuthTable(const char* title, const std::vector<Summary>& rows) {
  std::printf("\n%s\n", title);
  std::printf("  %-10s %10s %10s %12s %13s %15s   %s\n", "target", "p50 µs", "p99 µs", "RPC/s",
              "p50 vs plain", "RPC/s vs plain", "per-round p50 µs");
  const Summary& plain = rows.front();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Summary& row = rows[i];
    std::printf("  %-10s %10.1f %10.1f %12.0f %6.2fx %+5.0f %14.2fx   %s\n", kAuthCases[i].name,
                row.p50(), row.p99(), row.rps(), row.p50() / plain.p50(),
                row.p50() - plain.p50(), row.rps() / plain.rps(),
                Rounds(row, &RoundResult::p50_us).c_str());
  }
}

// Returns 0, or 2 if a daemon (or the certificate) could not be made.
int CompareAuth(const Config& config, const char* workspace) {
  AuthFiles files;
  if (!MakeAuthFiles(&files)) return 2;
  std::vector<std::unique_ptr<Daemon>> daemons;
  std::vector<Target<v1::ToolExecutor>> targets;
  for (const AuthCase& c : kAuthCases) {
    AuthOptions auth;
    if (c.token) auth.token_file = files.token_file;
    if (c.tls) {
      auth.tls.cert_file = files.cert_file;
      auth.tls.key_file = files.key_file;
    }
    std::unique_ptr<Daemon> daemon = StartDaemon(config, workspace, auth, c.name);
    if (daemon == nullptr) return 2;
    Target<v1::ToolExecutor> target(c.name, daemon->address());
    if (c.tls) {
      grpc::SslCredentialsOptions ssl;
      ssl.pem_root_certs = files.cert_pem;
      target.credentials = grpc::SslCredentials(ssl);
    }
    if (c.token) target.authorization = "Bearer " + files.token;
    target.stub = target.NewStub();
    targets.push_back(std::move(target));
    daemons.push_back(std::move(daemon));
  }

  const v1::ExecuteBatchRequest trivial = GetWeatherBatch(1);
  std::printf("\nAuthentication: the same trivial call to %zu in-process daemons that differ only "
              "in auth\n(token: a bearer token checked against a token file; TLS: a self-signed "
              "RSA-2048 certificate;\nchannels are connected before timing, so a figure is the "
              "per-call cost, not the handshake)\n",
              targets.size());
  for (int i = 0; i < config.warmup; ++i) {
    for (const auto& target : targets) target.Run(*target.stub, trivial);
  }
  std::vector<Summary> sequential(targets.size()), concurrent(targets.size());
  for (int round = 0; round < config.rounds; ++round) {
    for (size_t i = 0; i < targets.size(); ++i) {
      sequential[i].rounds.push_back(Sequential(targets[i], trivial, config.sequential));
    }
  }
  for (int round = 0; round < config.rounds; ++round) {
    for (size_t i = 0; i < targets.size(); ++i) {
      concurrent[i].rounds.push_back(Concurrent(targets[i], trivial, config));
    }
  }
  char title[160];
  std::snprintf(title, sizeof(title),
                "Auth, sequential: 1 client thread, %d single-call batches per round",
                config.sequential);
  PrintAuthTable(title, sequential);
  std::snprintf(title, sizeof(title),
                "Auth, concurrent: %d client threads, one channel each, %d batches per thread "
                "per round",
                config.threads, config.per_thread);
  PrintAuthTable(title, concurrent);
  for (auto& daemon : daemons) daemon->Shutdown();
  return 0;
}

// The daemon against the bare echo, and the batch figures. Returns 0, or 2 if
// a server could not start.
int CompareWithEcho(const Config& config, const char* workspace) {
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

  std::unique_ptr<Daemon> daemon = StartDaemon(config, workspace, AuthOptions(), "plaintext");
  if (daemon == nullptr) return 2;

  Target<Echo> echo("echo", "127.0.0.1:" + std::to_string(echo_port));
  echo.stub = echo.NewStub();
  Target<v1::ToolExecutor> toolexecd("daemon", daemon->address());
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
  std::printf("  docs/DESIGN.md goals: daemon p50 <= 1.10 x echo p50 and throughput >= 0.95 x "
              "echo's, one trivial call, sequential and with %d clients\n",
              config.threads);

  std::printf("\nBatches: wall time of one ExecuteBatch RPC, %d runs each\n",
              config.batch_repeats);
  const v1::ExecuteBatchRequest waits = WaitBatch(config.wait_calls, config.wait_ms);
  const v1::ExecuteBatchRequest trivial_batch = GetWeatherBatch(config.trivial_batch_calls);
  char what[64];
  std::snprintf(what, sizeof(what), "daemon %d x wait{ms:%d}", config.wait_calls, config.wait_ms);
  PrintBatch(what, RepeatBatch(toolexecd, waits, config.batch_repeats), "(target < 110 ms)");
  std::snprintf(what, sizeof(what), "daemon %d x get_weather", config.trivial_batch_calls);
  const std::vector<double> daemon_batch =
      RepeatBatch(toolexecd, trivial_batch, config.batch_repeats);
  PrintBatch(what, daemon_batch, "(target <= 1.5 x echo)");
  std::snprintf(what, sizeof(what), "echo   %d x get_weather", config.trivial_batch_calls);
  const std::vector<double> echo_batch = RepeatBatch(echo, trivial_batch, config.batch_repeats);
  PrintBatch(what, echo_batch, "(anchor)");
  const double batch_ratio = Median(daemon_batch) / Median(echo_batch);
  std::printf("  ratio daemon/echo, %d calls in one batch (medians): %.2fx (target <= 1.5: %s)\n",
              config.trivial_batch_calls, batch_ratio, batch_ratio <= 1.5 ? "met" : "NOT met");

  daemon->Shutdown();
  echo_server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  echo_server->Wait();
  return 0;
}

int Main(int argc, char** argv) {
  bool quick = false, auth_only = false;
  int policy_rules = 0;
  std::string audit_log;
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--auth") {
      auth_only = true;
    } else if (arg.rfind("--policy_rules=", 0) == 0 &&
               absl::SimpleAtoi(arg.substr(std::strlen("--policy_rules=")), &policy_rules) &&
               policy_rules >= 0) {
    } else if (arg.rfind("--audit_log=", 0) == 0) {
      audit_log = arg.substr(std::strlen("--audit_log="));
    } else {
      std::fprintf(stderr,
                   "unknown argument '%s'\nusage: %s [--quick] [--auth] [--policy_rules=N]\n"
                   "       [--audit_log=FILE]\n"
                   "  --quick  small counts: a smoke run that checks correctness, not speed\n"
                   "  --auth   only the authentication comparison (plaintext, token, TLS)\n"
                   "  --policy_rules=N  give the daemon a policy of N rules (none matching)\n"
                   "  --audit_log=FILE  the daemon writes its audit log there\n",
                   arg.c_str(), argv[0]);
      return 2;
    }
  }
  Config config = quick ? QuickConfig() : Config();
  config.auth_only = auth_only;
  config.policy_rules = policy_rules;
  config.audit_log = audit_log;
  if (policy_rules > 0) std::printf("policy: %d rules\n", policy_rules);
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

  // The daemons' workspace: empty, their own.
  char workspace_template[] = "/tmp/bench_overhead.XXXXXX";
  const char* workspace = mkdtemp(workspace_template);
  if (workspace == nullptr) {
    std::perror("mkdtemp");
    return 2;
  }
  int status = config.auth_only ? 0 : CompareWithEcho(config, workspace);
  if (status == 0) status = CompareAuth(config, workspace);
  rmdir(workspace);
  if (status != 0) return status;

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

// bench_load: holds N concurrent ExecuteBatch streams of mixed tool calls
// against a real toolexecd for a bounded time, on loopback only, and checks
// that nothing is lost or misordered and that the daemon's resources return
// to where they started.
//
// The daemon is a child process (the toolexecd binary next to this build,
// or --toolexecd=PATH) listening on 127.0.0.1:0, with a scratch workspace of
// small files and the example tools. Each stream is one client thread that
// sends batches back to back until the time is up:
//   normal      1..8 calls drawn from the mix below; the stream must end OK
//               with exactly one result per call, in call order, each right.
//   cancel      a fast call, then slow ones (wait 2 s, run_command sleep 5);
//               the client cancels the RPC when the first result arrives.
//   disconnect  slow calls under a 30..80 ms RPC deadline: the client goes
//               away mid-batch.
// For cancel and disconnect the results that did arrive must be an in-order
// prefix; the daemon must end the slow calls (no child process survives).
// The mix: calculate_sum (trivial), wait 5..50 ms, view_file, grep_search,
// run_command echo, view_file of a missing file (a failure), an unknown tool
// (a failure).
//
// Once a second it samples the daemon's RSS, threads, open fds and child
// processes (every descendant) from /proc. After the load it waits (up to
// the executor's idle timeout and a margin) for them to return to the
// baseline taken before the load: no child process, fds and threads at most
// the baseline plus a small slack, RSS within 64 MiB of it.
//
// Prints throughput, p50/p99 per tool (arrival after the batch was sent, and
// the daemon's own duration), the counts of lost, misordered and wrong
// results, and the resource figures; --csv=FILE writes the samples for
// bench/load/plot.py.
//
// Nothing waits unbounded, so a stuck daemon (or client) is a failure that
// says what was stuck rather than a hang:
//   - every ExecuteBatch carries a deadline (--rpc_timeout, by default the
//     run length and at least 30 s; a normal batch takes milliseconds); a
//     normal or cancelled batch that reaches it is counted as `stuck` and
//     reported with its stream, its calls and the result it was waiting for;
//   - settling is bounded (45 s), and so is the daemon's exit after SIGTERM
//     (--shutdown_timeout, 40 s): past it the daemon is SIGKILLed and the run
//     fails saying so;
//   - a watchdog thread fails the whole run (printing what each stream and
//     the main thread were doing, then SIGKILLing the daemon and exiting 1)
//     once every bound above together has passed;
//   - the daemon child dies with bench_load (PR_SET_PDEATHSIG), so a crashed
//     bench_load never leaves a daemon holding its caller's output pipe
//     (ctest waits for that pipe to close).
// Threads: main starts the daemon, the sampler, the streams and the
// watchdog, joins the streams and the sampler, settles and stops the daemon;
// the watchdog only reads the per-stream and main-thread activity (each
// under its own mutex) and, when it fires, ends the process.
//
// Exit status: 0 when nothing was lost, misordered, wrong or stuck and
// resources returned; 1 otherwise; 2 on bad usage or set-up failure.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "bench/stats.h"
#include "client/client.h"
#include "grpcpp/grpcpp.h"
#include "toolexec/v1/toolexec.grpc.pb.h"
#include "tools/process/reaper.h"

namespace toolexec::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Config {
  int streams = 64;
  int seconds = 180;
  std::string toolexecd = TOOLEXECD_PATH;
  std::string csv;
  int settle_seconds = 45;  // the executor's idle timeout (30 s) and a margin
  int rpc_timeout_seconds = 0;  // 0: the run length, at least 30 s
  int shutdown_timeout_seconds = 40;  // the daemon's exit after SIGTERM
  int startup_seconds = 30;

  int RpcTimeout() const {
    return rpc_timeout_seconds > 0 ? rpc_timeout_seconds : std::max(seconds, 30);
  }
};

// ---- the daemon under load --------------------------------------------------

struct Sample {
  double t = 0;  // seconds since the load started (negative: baseline)
  long rss_kib = 0;
  long threads = 0;
  long fds = 0;
  long children = 0;
  long results = 0;
};

// The number in /proc/<pid>/status's `key:` line (kB for Vm*), -1 if absent.
long StatusField(pid_t pid, const std::string& key) {
  for (absl::string_view line :
       absl::StrSplit(command::ReadSmallFile(absl::StrCat("/proc/", pid, "/status")), '\n')) {
    if (absl::ConsumePrefix(&line, key) && absl::ConsumePrefix(&line, ":")) {
      long v = 0;
      line = absl::StripAsciiWhitespace(line);
      return absl::SimpleAtoi(line.substr(0, line.find(' ')), &v) ? v : -1;
    }
  }
  return -1;
}

long CountFds(pid_t pid) {
  std::error_code ec;
  long n = 0;
  for (fs::directory_iterator it(absl::StrCat("/proc/", pid, "/fd"), ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return n;
}

// Every process whose parent chain reaches `root`.
long CountDescendants(pid_t root) {
  std::map<pid_t, pid_t> parent;
  std::error_code ec;
  for (fs::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
    pid_t pid = 0;
    command::ProcStat stat;
    // A process may exit at any point of the scan: it is then skipped.
    if (absl::SimpleAtoi(it->path().filename().string(), &pid) &&
        command::ReadProcStat(pid, &stat)) {
      parent[pid] = stat.ppid;
    }
  }
  long n = 0;
  for (const auto& [pid, ppid] : parent) {
    for (pid_t p = ppid; p > 1;) {
      if (p == root) {
        ++n;
        break;
      }
      auto it = parent.find(p);
      if (it == parent.end()) break;
      p = it->second;
    }
  }
  return n;
}

Sample SampleDaemon(pid_t pid) {
  Sample s;
  s.rss_kib = StatusField(pid, "VmRSS");
  s.threads = StatusField(pid, "Threads");
  s.fds = CountFds(pid);
  s.children = CountDescendants(pid);
  return s;
}

// ---- the load ---------------------------------------------------------------

enum class Kind { kSum, kWait, kView, kGrep, kCommand, kMissing, kUnknown };
constexpr Kind kMix[] = {Kind::kSum,    Kind::kWait,    Kind::kView,   Kind::kGrep,
                         Kind::kCommand, Kind::kMissing, Kind::kUnknown};
const char* KindName(Kind k) {
  switch (k) {
    case Kind::kSum: return "calculate_sum";
    case Kind::kWait: return "wait";
    case Kind::kView: return "view_file";
    case Kind::kGrep: return "grep_search";
    case Kind::kCommand: return "run_command";
    case Kind::kMissing: return "view_file(missing)";
    case Kind::kUnknown: return "unknown_tool";
  }
  return "?";
}
constexpr int kFiles = 32;

struct Expected {
  Kind kind;
  std::string needle;  // in model_content on success; "" = failure expected
};

struct Stats {
  absl::Mutex mu;
  std::map<std::string, std::vector<double>> arrival_ms ABSL_GUARDED_BY(mu);
  std::map<std::string, std::vector<double>> duration_ms ABSL_GUARDED_BY(mu);
  std::atomic<long> batches{0}, cancelled{0}, disconnected{0};
  std::atomic<long> results{0}, lost{0}, misordered{0}, wrong{0}, rpc_errors{0}, stuck{0};
  std::vector<std::string> failures ABSL_GUARDED_BY(mu);

  long Failures() const { return lost + misordered + wrong + stuck + rpc_errors; }

  void Fail(std::atomic<long>& counter, const std::string& what) {
    ++counter;
    absl::MutexLock lock(&mu);
    if (failures.size() < 10) failures.push_back(what);
  }
};

v1::ToolCall MakeToolCall(Kind kind, int index, std::mt19937& rng, Expected* expected) {
  std::string args;
  std::string name = KindName(kind);
  expected->kind = kind;
  switch (kind) {
    case Kind::kSum: {
      int a = static_cast<int>(rng() % 1000), b = static_cast<int>(rng() % 1000);
      args = absl::StrCat(R"({"numbers":[)", a, ",", b, "]}");
      expected->needle = std::to_string(a + b);
      break;
    }
    case Kind::kWait:
      args = absl::StrCat(R"({"ms":)", 5 + rng() % 46, "}");
      expected->needle = "";  // checked as a success below
      break;
    case Kind::kView: {
      int f = static_cast<int>(rng() % kFiles);
      args = absl::StrCat(R"({"file_path":"f)", f, R"(.txt"})");
      expected->needle = absl::StrCat("marker-", f, "-end");
      break;
    }
    case Kind::kGrep:
      args = R"({"pattern":"needle-[0-9]+","output_mode":"content"})";
      expected->needle = "needle-42";
      break;
    case Kind::kCommand: {
      int r = static_cast<int>(rng() % 100000);
      args = absl::StrCat(R"({"command_line":"echo load-)", r, R"("})");
      expected->needle = absl::StrCat("load-", r);
      break;
    }
    case Kind::kMissing:
      name = "view_file";
      args = absl::StrCat(R"({"file_path":"missing-)", rng() % 1000, R"(.txt"})");
      break;
    case Kind::kUnknown:
      name = "no_such_tool";
      args = "{}";
      break;
  }
  v1::ToolCall call;
  call.set_id(absl::StrCat("c", index));
  call.set_name(name);
  call.set_args_json(args);
  return call;
}

bool ExpectSuccess(Kind k) { return k != Kind::kMissing && k != Kind::kUnknown; }

// What one thread is doing and since when, for the watchdog's report.
class Activity {
 public:
  void Set(std::string what) {
    absl::MutexLock lock(&mu_);
    what_ = std::move(what);
    since_ = Clock::now();
  }
  std::string Describe() const {
    absl::MutexLock lock(&mu_);
    return absl::StrCat(what_, " (for ",
                        std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - since_)
                            .count(),
                        " s)");
  }

 private:
  mutable absl::Mutex mu_;
  std::string what_ ABSL_GUARDED_BY(mu_) = "starting";
  Clock::time_point since_ ABSL_GUARDED_BY(mu_) = Clock::now();
};

// "c2 run_command" for call `i` of `request`.
std::string CallLabel(const v1::ExecuteBatchRequest& request, size_t i) {
  if (i >= static_cast<size_t>(request.calls_size())) return "the end of the stream";
  const v1::ToolCall& call = request.calls(static_cast<int>(i));
  return absl::StrCat(call.id(), " ", call.name());
}

void RunStream(v1::ToolExecutor::Stub* stub, int stream, Clock::time_point end,
               std::chrono::seconds rpc_timeout, Stats* stats, Activity* activity) {
  std::mt19937 rng(static_cast<unsigned>(stream * 7919 + 17));
  for (long batch = 0; Clock::now() < end; ++batch) {
    int roll = static_cast<int>(rng() % 100);
    bool cancel = roll < 5;
    bool disconnect = roll >= 5 && roll < 10;
    v1::ExecuteBatchRequest request;
    std::vector<Expected> expected;
    auto add = [&](v1::ToolCall call, Expected e) {
      *request.add_calls() = std::move(call);
      expected.push_back(std::move(e));
    };
    if (cancel || disconnect) {
      Expected e;
      v1::ToolCall fast = MakeToolCall(Kind::kSum, 0, rng, &e);
      add(std::move(fast), e);
      v1::ToolCall slow;
      slow.set_id("c1");
      slow.set_name("wait");
      slow.set_args_json(R"({"ms":2000})");
      add(slow, {Kind::kWait, ""});
      v1::ToolCall sleep;
      sleep.set_id("c2");
      sleep.set_name("run_command");
      sleep.set_args_json(R"({"command_line":"sleep 5"})");
      add(sleep, {Kind::kCommand, ""});
    } else {
      int n = 1 + static_cast<int>(rng() % 8);
      for (int i = 0; i < n; ++i) {
        Expected e;
        Kind kind = kMix[rng() % (sizeof(kMix) / sizeof(kMix[0]))];
        v1::ToolCall call = MakeToolCall(kind, i, rng, &e);
        add(std::move(call), e);
      }
    }
    std::string what = absl::StrCat("stream ", stream, ": ExecuteBatch #", batch, " (",
                                    cancel ? "cancel" : disconnect ? "disconnect" : "normal",
                                    ", ", request.calls_size(), " calls)");
    grpc::ClientContext context;
    context.set_deadline(
        std::chrono::system_clock::now() +
        (disconnect ? std::chrono::milliseconds(30 + rng() % 51)
                    : std::chrono::duration_cast<std::chrono::milliseconds>(rpc_timeout)));
    activity->Set(absl::StrCat(what, ": waiting for result 0 (", CallLabel(request, 0), ")"));
    auto sent = Clock::now();
    std::unique_ptr<grpc::ClientReader<v1::ExecuteBatchResponse>> reader =
        stub->ExecuteBatch(&context, request);
    v1::ExecuteBatchResponse response;
    size_t next = 0;
    while (reader->Read(&response)) {
      if (!response.has_result()) continue;
      const v1::ToolResult& r = response.result();
      double arrival = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
      if (next >= expected.size() || r.index() != next ||
          r.id() != request.calls(static_cast<int>(next)).id()) {
        stats->Fail(stats->misordered, absl::StrCat("stream ", stream, ": result index ",
                                                    r.index(), " id ", r.id(), " where ",
                                                    next, " was due"));
        next = r.index() + 1;
        continue;
      }
      const Expected& e = expected[next++];
      ++stats->results;
      activity->Set(absl::StrCat(what, ": waiting for result ", next, " (",
                                 CallLabel(request, next), ")"));
      bool failed = !r.error_message().empty();
      if (cancel && next == 1) context.TryCancel();
      if (cancel || disconnect) continue;  // only the prefix order is checked
      if (failed == ExpectSuccess(e.kind) ||
          (!failed && !absl::StrContains(r.model_content(), e.needle))) {
        stats->Fail(stats->wrong, absl::StrCat(KindName(e.kind), ": error '",
                                               r.error_message(), "' content '",
                                               r.model_content().substr(0, 200), "'"));
      }
      double duration = static_cast<double>(r.duration().seconds()) * 1e3 +
                        static_cast<double>(r.duration().nanos()) / 1e6;
      absl::MutexLock lock(&stats->mu);
      stats->arrival_ms[KindName(e.kind)].push_back(arrival);
      stats->duration_ms[KindName(e.kind)].push_back(duration);
    }
    activity->Set(absl::StrCat(what, ": in ClientReader::Finish after ", next, " results"));
    grpc::Status status = reader->Finish();
    ++stats->batches;
    if (cancel) ++stats->cancelled;
    if (disconnect) ++stats->disconnected;
    if (!disconnect && status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      // Neither a normal batch nor the first result of a cancelled one takes
      // anywhere near the deadline: the daemon did not deliver.
      stats->Fail(stats->stuck, absl::StrCat(what, " hit its ", rpc_timeout.count(),
                                             " s deadline with ", next, " of ",
                                             expected.size(), " results, waiting for ",
                                             CallLabel(request, next)));
    } else if (cancel) {
      if (status.ok() && next != expected.size()) {
        stats->Fail(stats->lost, "a cancelled batch ended OK without all its results");
      }
    } else if (disconnect) {
      // Any prefix is right for a client that went away.
    } else if (!status.ok()) {
      stats->Fail(stats->rpc_errors, absl::StrCat("stream ", stream, ": ExecuteBatch ",
                                                  status.error_code(), " ",
                                                  status.error_message()));
    } else if (next != expected.size()) {
      stats->Fail(stats->lost, absl::StrCat("stream ", stream, ": ", next, " results for ",
                                            expected.size(), " calls"));
    }
  }
  activity->Set(absl::StrCat("stream ", stream, ": done"));
}

// ---- set-up -----------------------------------------------------------------

bool MakeWorkspace(const fs::path& ws) {
  fs::create_directories(ws);
  for (int f = 0; f < kFiles; ++f) {
    std::ofstream out(ws / absl::StrCat("f", f, ".txt"));
    for (int line = 0; line < 200; ++line) {
      out << "line " << line << " of file " << f << (line % 50 == 7 ? " needle-42" : "") << "\n";
    }
    out << "marker-" << f << "-end\n";
    if (!out) return false;
  }
  return true;
}

pid_t StartDaemon(const Config& config, const fs::path& dir, std::string* address) {
  fs::path address_file = dir / "address";
  std::vector<std::string> args = {config.toolexecd,
                                   "--listen=127.0.0.1:0",
                                   "--address_file=" + address_file.string(),
                                   "--workspace=" + (dir / "ws").string(),
                                   "--example_tools",
                                   "--log_level=warn"};
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    // Die with bench_load, whatever ends it.
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent) _exit(127);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0) return -1;
  for (auto until = Clock::now() + std::chrono::seconds(config.startup_seconds);
       Clock::now() < until;) {
    std::ifstream in(address_file);
    if (std::getline(in, *address) && !address->empty()) return pid;
    int status;
    if (waitpid(pid, &status, WNOHANG) == pid) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  return -1;
}

// SIGTERM, then up to `timeout` for the daemon to exit; past it SIGKILL.
// Returns true if it exited by itself with status 0; `*report` says how it ended.
bool StopDaemon(pid_t pid, std::chrono::seconds timeout, std::string* report) {
  kill(pid, SIGTERM);
  int wstatus = 0;
  auto start = Clock::now();
  for (;;) {
    pid_t r = waitpid(pid, &wstatus, WNOHANG);
    if (r == pid) break;
    if (r < 0) {
      *report = absl::StrCat("waitpid failed: ", strerror(errno));
      return false;
    }
    if (Clock::now() - start >= timeout) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      *report = absl::StrCat("FAILED: still running ", timeout.count(),
                             " s after SIGTERM, killed");
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (WIFEXITED(wstatus)) {
    *report = absl::StrCat(WEXITSTATUS(wstatus) == 0 ? "" : "FAILED: ", "exit ",
                           WEXITSTATUS(wstatus));
    return WEXITSTATUS(wstatus) == 0;
  }
  *report = absl::StrCat("FAILED: killed by signal ", WTERMSIG(wstatus));
  return false;
}

// Fails the run once `bound` has passed: prints what the main thread and
// every stream that is not done were doing, SIGKILLs the daemon and exits 1.
// Stop() (from the main thread) ends it without firing.
class Watchdog {
 public:
  Watchdog(std::chrono::seconds bound, pid_t daemon, const Activity* main,
           const std::vector<Activity>* streams)
      : thread_([this, bound, daemon, main, streams] {
          if (stop_.WaitForNotificationWithTimeout(absl::Seconds(bound.count()))) return;
          std::fprintf(stderr, "bench_load: STUCK: the run exceeded its %ld s bound\n",
                       static_cast<long>(bound.count()));
          std::fprintf(stderr, "  main: %s\n", main->Describe().c_str());
          for (const Activity& a : *streams) {
            std::string what = a.Describe();
            if (!absl::StrContains(what, ": done")) {
              std::fprintf(stderr, "  %s\n", what.c_str());
            }
          }
          kill(daemon, SIGKILL);
          std::fflush(stdout);
          std::fflush(stderr);
          _exit(1);
        }) {}
  ~Watchdog() { Stop(); }
  void Stop() {
    if (!stop_.HasBeenNotified()) stop_.Notify();
    if (thread_.joinable()) thread_.join();
  }

 private:
  absl::Notification stop_;
  std::thread thread_;
};

void PrintSample(const char* label, const Sample& s) {
  std::printf("  %-9s rss=%.1f MiB threads=%ld fds=%ld children=%ld\n", label,
              static_cast<double>(s.rss_kib) / 1024.0, s.threads, s.fds, s.children);
}

int Run(const Config& config) {
  char tmpl[] = "/tmp/toolexec-load-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 2;
  fs::path dir = tmpl;
  if (!MakeWorkspace(dir / "ws")) return 2;
  std::string address;
  pid_t daemon = StartDaemon(config, dir, &address);
  if (daemon < 0) {
    std::fprintf(stderr, "bench_load: cannot start %s\n", config.toolexecd.c_str());
    return 2;
  }
  // One channel per 16 streams: one HTTP/2 connection caps concurrent
  // streams, and a harness fleet would not share one either.
  std::vector<std::unique_ptr<v1::ToolExecutor::Stub>> stubs;
  for (int i = 0; i < (config.streams + 15) / 16; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("toolexec.bench.channel", i);  // distinct channels, not one shared
    stubs.push_back(v1::ToolExecutor::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args)));
  }
  // Every phase below is bounded; the watchdog fails the run if, together,
  // they still overrun (which means something waited where it must not).
  const std::chrono::seconds rpc_timeout(config.RpcTimeout());
  Activity main_activity;
  std::vector<Activity> activities(static_cast<size_t>(config.streams));
  Watchdog watchdog(rpc_timeout * 2 + std::chrono::seconds(config.seconds + config.settle_seconds +
                                                          config.shutdown_timeout_seconds + 30),
                    daemon, &main_activity, &activities);

  // Warm up (one batch of each tool), then take the baseline.
  main_activity.Set("warming up");
  Stats warm;
  Activity warm_activity;
  RunStream(stubs[0].get(), 0, Clock::now() + std::chrono::milliseconds(300), rpc_timeout, &warm,
            &warm_activity);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  Sample baseline = SampleDaemon(daemon);

  main_activity.Set("waiting for the streams to end (joining their threads)");
  Stats stats;
  std::vector<Sample> samples;
  std::atomic<bool> done{false};
  auto start = Clock::now();
  auto end = start + std::chrono::seconds(config.seconds);
  std::thread sampler([&] {
    while (!done.load()) {
      Sample s = SampleDaemon(daemon);
      s.t = std::chrono::duration<double>(Clock::now() - start).count();
      s.results = stats.results.load();
      samples.push_back(s);
      for (int i = 0; i < 10 && !done.load(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });
  std::vector<std::thread> streams;
  for (int i = 0; i < config.streams; ++i) {
    streams.emplace_back(RunStream, stubs[static_cast<size_t>(i) % stubs.size()].get(), i, end,
                         rpc_timeout, &stats, &activities[static_cast<size_t>(i)]);
  }
  for (std::thread& t : streams) t.join();
  double load_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  // Let the daemon settle back.
  main_activity.Set("settling: sampling the daemon until it is back to baseline");
  Sample after;
  bool returned = false;
  for (auto until = Clock::now() + std::chrono::seconds(config.settle_seconds);;) {
    after = SampleDaemon(daemon);
    returned = after.children == 0 && after.fds <= baseline.fds + 4 &&
               after.threads <= baseline.threads + 4 &&
               after.rss_kib <= baseline.rss_kib + 64 * 1024;
    if (returned || Clock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  double settled = std::chrono::duration<double>(Clock::now() - start).count() - load_seconds;
  done = true;
  sampler.join();
  after.t = load_seconds + settled;
  after.results = stats.results.load();
  samples.push_back(after);

  main_activity.Set("waiting for the daemon to exit after SIGTERM");
  std::string exit_report;
  bool clean_exit =
      StopDaemon(daemon, std::chrono::seconds(config.shutdown_timeout_seconds), &exit_report);
  watchdog.Stop();

  std::printf("bench_load: %d streams for %d s against toolexecd on %s\n", config.streams,
              config.seconds, address.c_str());
  std::printf("  batches=%ld (cancelled=%ld disconnected=%ld) results=%ld  %.0f results/s\n",
              stats.batches.load(), stats.cancelled.load(), stats.disconnected.load(),
              stats.results.load(), static_cast<double>(stats.results.load()) / load_seconds);
  std::printf("  lost=%ld misordered=%ld wrong=%ld stuck=%ld rpc_errors=%ld\n",
              stats.lost.load(), stats.misordered.load(), stats.wrong.load(),
              stats.stuck.load(), stats.rpc_errors.load());
  std::printf("  %-20s %8s %10s %10s %10s %10s\n", "tool", "calls", "p50 ms", "p99 ms",
              "run p50", "run p99");
  {
    absl::MutexLock lock(&stats.mu);
    for (const auto& [tool, v] : stats.arrival_ms) {
      const std::vector<double>& d = stats.duration_ms[tool];
      std::printf("  %-20s %8zu %10.2f %10.2f %10.2f %10.2f\n", tool.c_str(), v.size(),
                  Percentile(v, 0.5), Percentile(v, 0.99), Percentile(d, 0.5),
                  Percentile(d, 0.99));
    }
    for (const std::string& f : stats.failures) std::fprintf(stderr, "FAILURE: %s\n", f.c_str());
  }
  {
    absl::MutexLock lock(&warm.mu);
    for (const std::string& f : warm.failures) {
      std::fprintf(stderr, "FAILURE (warm-up): %s\n", f.c_str());
    }
  }
  Sample peak;
  for (const Sample& s : samples) {
    peak.rss_kib = std::max(peak.rss_kib, s.rss_kib);
    peak.threads = std::max(peak.threads, s.threads);
    peak.fds = std::max(peak.fds, s.fds);
    peak.children = std::max(peak.children, s.children);
  }
  PrintSample("baseline", baseline);
  PrintSample("peak", peak);
  PrintSample("after", after);
  std::printf("  resources %s to baseline %.0f s after the load; daemon exit on SIGTERM: %s\n",
              returned ? "returned" : "did NOT return", settled, exit_report.c_str());
  if (!config.csv.empty()) {
    std::ofstream csv(config.csv);
    csv << "t_s,rss_mib,threads,fds,children,results\n";
    csv << "0," << static_cast<double>(baseline.rss_kib) / 1024.0 << "," << baseline.threads
        << "," << baseline.fds << "," << baseline.children << ",0\n";
    for (const Sample& s : samples) {
      csv << s.t << "," << static_cast<double>(s.rss_kib) / 1024.0 << "," << s.threads << ","
          << s.fds << "," << s.children << "," << s.results << "\n";
    }
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  bool ok = stats.Failures() == 0 && warm.Failures() == 0 && returned && clean_exit;
  return ok ? 0 : 1;
}

int Main(int argc, char** argv) {
  Config config;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag, std::string* out) {
      std::string prefix = absl::StrCat(flag, "=");
      if (!absl::StartsWith(arg, prefix)) return false;
      *out = arg.substr(prefix.size());
      return true;
    };
    std::string v;
    if (arg == "--quick") {
      config.streams = 8;
      config.seconds = 5;
    } else if (value("--streams", &v) && absl::SimpleAtoi(v, &config.streams) &&
               config.streams > 0 && config.streams <= 1024) {
    } else if (value("--seconds", &v) && absl::SimpleAtoi(v, &config.seconds) &&
               config.seconds > 0 && config.seconds <= 3600) {
    } else if (value("--rpc_timeout", &v) && absl::SimpleAtoi(v, &config.rpc_timeout_seconds) &&
               config.rpc_timeout_seconds > 0 && config.rpc_timeout_seconds <= 3600) {
    } else if (value("--shutdown_timeout", &v) &&
               absl::SimpleAtoi(v, &config.shutdown_timeout_seconds) &&
               config.shutdown_timeout_seconds > 0 && config.shutdown_timeout_seconds <= 3600) {
    } else if (value("--toolexecd", &config.toolexecd) || value("--csv", &config.csv)) {
    } else {
      std::fprintf(stderr,
                   "usage: %s [--quick] [--streams=N] [--seconds=S] [--csv=FILE] "
                   "[--rpc_timeout=S] [--shutdown_timeout=S] [--toolexecd=PATH]\n"
                   "  --quick      8 streams for 5 s: a smoke run that checks correctness\n"
                   "  --streams=N  concurrent ExecuteBatch streams (1..1024) [64]\n"
                   "  --seconds=S  how long to hold the load (1..3600) [180]\n"
                   "  --csv=FILE   write the per-second samples (for bench/load/plot.py)\n"
                   "  --rpc_timeout=S       deadline of each ExecuteBatch; one that reaches it\n"
                   "                        is a stuck batch, a failure [run length, >= 30]\n"
                   "  --shutdown_timeout=S  how long the daemon may take to exit after SIGTERM\n"
                   "                        before it is killed and the run fails [40]\n"
                   "  --toolexecd=PATH      the daemon to load [this build's toolexecd]\n",
                   argv[0]);
      return 2;
    }
  }
  return Run(config);
}

}  // namespace
}  // namespace toolexec::bench

int main(int argc, char** argv) { return toolexec::bench::Main(argc, argv); }

// bench_recording: what recording a session (core/recorder.h) costs, as
// ratios measured in one run by one client.
//
// Two in-process daemons (example tools), identical but for the recording:
// "off" records nothing, "on" records every session (recording.all_sessions)
// into a scratch directory. One session on each; in alternating rounds:
//   - one trivial call (get_weather) per ExecuteBatch, sequential: p50;
//   - 1,000 get_weather calls in one ExecuteBatch: median wall time.
// Goals (the recording issue's): on/off <= 1.05 for the trivial call and
// <= 1.1 for the 1,000-call batch.
//
// Exit status: 0 whatever the timings, 1 if any RPC failed or a result was
// not SUCCESS, or the recording does not hold every result; 2 on bad usage or
// a daemon that cannot start.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/daemon_pair.h"
#include "bench/stats.h"
#include "server/daemon.h"
#include "spdlog/spdlog.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec::bench {
namespace {

// A daemon of example tools, recording every session into `recordings`
// unless it is empty.
std::unique_ptr<Daemon> StartDaemon(const std::string& workspace, const std::string& recordings,
                                    uint64_t max_bytes) {
  DaemonOptions options;
  options.engine.workspace = workspace;
  options.tools.example_tools = true;
  if (!recordings.empty()) {
    options.engine.recording.dir = recordings;
    options.engine.recording.all_sessions = true;
    options.engine.recording.max_bytes_per_session = max_bytes;
  }
  return StartBenchDaemon(std::move(options));
}

v1::ExecuteBatchRequest Batch(const BenchDaemon& t, int calls) {
  v1::ExecuteBatchRequest request;
  request.set_session_id(t.session);
  for (int i = 0; i < calls; ++i) {
    v1::ToolCall* call = request.add_calls();
    call->set_id("call-" + std::to_string(i));
    call->set_name("get_weather");
    (*call->mutable_args()->mutable_fields())["city"].set_string_value("Paris");
  }
  return request;
}

int Main(int argc, char** argv) {
  bool quick = false;
  constexpr uint64_t kNoLimit = uint64_t{1} << 30;
  uint64_t max_bytes = kNoLimit;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strncmp(argv[i], "--max_bytes=", 12) == 0) {
      // Past it the recording is cut: rendering goes on, writing stops.
      max_bytes = std::strtoull(argv[i] + 12, nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--max_bytes=N]\n", argv[0]);
      return 2;
    }
  }
  const int rounds = quick ? 2 : 5;
  const int sequential = quick ? 100 : 3000;
  const int warmup = quick ? 20 : 500;
  const int batch_calls = 1000;
  const int batch_repeats = quick ? 2 : 5;
  spdlog::set_level(spdlog::level::warn);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  char templ[] = "/tmp/bench_recording.XXXXXX";
  const char* scratch = mkdtemp(templ);
  if (scratch == nullptr) return 2;
  const std::string workspace = std::string(scratch) + "/ws";
  const std::string recordings = std::string(scratch) + "/recordings";
  std::filesystem::create_directories(workspace);
  BenchDaemon off, on;
  off.daemon = StartDaemon(workspace, "", max_bytes);
  on.daemon = StartDaemon(workspace, recordings, max_bytes);
  if (off.daemon == nullptr || on.daemon == nullptr || !ConnectWithSession(off) ||
      !ConnectWithSession(on)) {
    return 2;
  }

  std::printf("bench_recording: the same calls to a daemon recording every session (on) and one "
              "recording nothing (off)\n%s\n",
              quick ? "--quick: small counts for a smoke run; timings not meaningful" : "");
  const auto one_off = Batch(off, 1), one_on = Batch(on, 1);
  const auto big_off = Batch(off, batch_calls), big_on = Batch(on, batch_calls);
  for (int i = 0; i < warmup; ++i) {
    RunBatch(off, one_off);
    RunBatch(on, one_on);
  }
  std::vector<double> p50_off, p50_on, batch_off, batch_on;
  for (int r = 0; r < rounds; ++r) {
    for (BenchDaemon* t : {&off, &on}) {
      std::vector<double> lat;
      lat.reserve(sequential);
      const auto& request = t == &off ? one_off : one_on;
      for (int i = 0; i < sequential; ++i) lat.push_back(RunBatch(*t, request));
      (t == &off ? p50_off : p50_on).push_back(Percentile(lat, 0.5));
      for (int i = 0; i < batch_repeats; ++i) {
        (t == &off ? batch_off : batch_on).push_back(RunBatch(*t, t == &off ? big_off : big_on) / 1000);
      }
    }
  }
  const double trivial_off = Percentile(p50_off, 0.5), trivial_on = Percentile(p50_on, 0.5);
  const double big_off_ms = Percentile(batch_off, 0.5), big_on_ms = Percentile(batch_on, 0.5);
  std::printf("\none trivial call per batch, sequential, %d rounds x %d calls (median of the "
              "rounds' p50)\n",
              rounds, sequential);
  std::printf("  off %8.1f µs   on %8.1f µs   ratio on/off %.3fx (goal <= 1.05: %s)\n",
              trivial_off, trivial_on, trivial_on / trivial_off,
              trivial_on / trivial_off <= 1.05 ? "met" : "NOT met");
  std::printf("\n%d get_weather calls in one batch, %d runs each (median)\n", batch_calls,
              rounds * batch_repeats);
  std::printf("  off %8.2f ms   on %8.2f ms   ratio on/off %.3fx (goal <= 1.1: %s)\n", big_off_ms,
              big_on_ms, big_on_ms / big_off_ms, big_on_ms / big_off_ms <= 1.1 ? "met" : "NOT met");

  // The recording holds every result (read once the daemon has stopped).
  on.daemon->Shutdown();
  off.daemon->Shutdown();
  on.daemon.reset();  // writes what the recorder still holds
  off.daemon.reset();
  const long expected = static_cast<long>(warmup + rounds * sequential) +
                        static_cast<long>(rounds) * batch_repeats * batch_calls;
  long results = 0;
  uintmax_t bytes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(recordings)) {
    bytes += entry.file_size();
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.find("\"type\":\"result\"") != std::string::npos) ++results;
    }
  }
  std::printf("\nrecording: %ld result lines (expected %ld), %.1f MiB\n", results, expected,
              static_cast<double>(bytes) / (1 << 20));
  if (results != expected && max_bytes == kNoLimit) {
    Fail("the recording does not hold every result");
  }
  std::filesystem::remove_all(scratch);
  if (FailureCount() > 0) {
    std::printf("FAILED: %d problem(s), see stderr\n", FailureCount());
    return 1;
  }
  std::printf("all RPCs OK, every result SUCCESS and recorded\n");
  return 0;
}

}  // namespace
}  // namespace toolexec::bench

int main(int argc, char** argv) { return toolexec::bench::Main(argc, argv); }

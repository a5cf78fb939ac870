// In-process daemons for benchmarks that compare two daemons identical but
// for one option (recording on/off, checkpoints on/off), each with one
// session, called by one client in alternating rounds.
#ifndef TOOLEXEC_BENCH_DAEMON_PAIR_H_
#define TOOLEXEC_BENCH_DAEMON_PAIR_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "server/daemon.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec::bench {

// Problems a run found (a failed RPC, a result that is not a SUCCESS in
// order): the first ten are printed; a benchmark exits 1 when any occurred.
inline int& FailureCount() {
  static int failures = 0;
  return failures;
}
inline void Fail(const std::string& what) {
  if (FailureCount()++ < 10) std::fprintf(stderr, "FAILURE: %s\n", what.c_str());
}

struct BenchDaemon {
  std::unique_ptr<Daemon> daemon;
  std::unique_ptr<v1::ToolExecutor::Stub> stub;
  std::string session;
};

// Starts a daemon with `options` on a loopback port; null (and a message) if
// it cannot start.
inline std::unique_ptr<Daemon> StartBenchDaemon(DaemonOptions options) {
  options.server.listen = "127.0.0.1:0";
  auto daemon = Daemon::Create(options);
  absl::Status started = daemon.ok() ? (*daemon)->Start() : daemon.status();
  if (!started.ok()) {
    std::fprintf(stderr, "cannot start a daemon: %s\n", started.ToString().c_str());
    return nullptr;
  }
  return *std::move(daemon);
}

// Connects to `t.daemon` over its own channel and opens a session with
// `request`.
inline bool ConnectWithSession(BenchDaemon& t,
                               const v1::OpenSessionRequest& request = v1::OpenSessionRequest()) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetMaxReceiveMessageSize(64 << 20);
  auto channel =
      grpc::CreateCustomChannel(t.daemon->address(), grpc::InsecureChannelCredentials(), args);
  t.stub = v1::ToolExecutor::NewStub(channel);
  grpc::ClientContext context;
  v1::Session session;
  grpc::Status s = t.stub->OpenSession(&context, request, &session);
  if (!s.ok()) {
    std::fprintf(stderr, "OpenSession: %s\n", s.error_message().c_str());
    return false;
  }
  t.session = session.session_id();
  return true;
}

// One ExecuteBatch, read to its end; every result must be a SUCCESS, in
// order. Returns its wall time in µs; `checkpoints` (if given) counts the
// checkpoints the stream carried.
inline double RunBatch(const BenchDaemon& t, const v1::ExecuteBatchRequest& request,
                       int* checkpoints = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  auto reader = t.stub->ExecuteBatch(&context, request);
  v1::ExecuteBatchResponse response;
  int results = 0;
  while (reader->Read(&response)) {
    if (response.has_checkpoint() && checkpoints != nullptr) ++*checkpoints;
    if (!response.has_result()) continue;
    if (response.result().status() != v1::RESULT_STATUS_SUCCESS ||
        response.result().index() != static_cast<uint32_t>(results)) {
      Fail("result " + std::to_string(results) + " not a SUCCESS in order: " +
           response.result().error_message());
    }
    ++results;
  }
  grpc::Status status = reader->Finish();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) Fail("ExecuteBatch: " + status.error_message());
  if (results != request.calls_size()) Fail("missing results");
  return us;
}

}  // namespace toolexec::bench

#endif  // TOOLEXEC_BENCH_DAEMON_PAIR_H_

// bench_echo_server: the bare gRPC echo (bench/echo_reactor.h) as a process of
// its own, serving toolexec.v1.ToolExecutor/ExecuteBatch (every other RPC is
// UNIMPLEMENTED) and grpc.health.v1, so toolexec's own client can call it as
// it calls toolexecd: the cross-process anchor of a view_file call.
//
//   bench_echo_server --address_file=FILE
//
// Listens on 127.0.0.1:0, writes the bound address to FILE (write, then
// rename) once serving, and serves until SIGTERM or SIGINT. Exit 2 on bad
// usage or if it cannot listen.
#include <grpcpp/grpcpp.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "bench/echo_reactor.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec::bench {
namespace {

class EchoExecutor final : public v1::ToolExecutor::CallbackService {
  grpc::ServerWriteReactor<v1::ExecuteBatchResponse>* ExecuteBatch(
      grpc::CallbackServerContext* /*context*/, const v1::ExecuteBatchRequest* request) override {
    return new EchoReactor(request);
  }
};

int Main(int argc, char** argv) {
  std::string address_file;
  const std::string flag = "--address_file=";
  if (argc != 2 || std::string(argv[1]).rfind(flag, 0) != 0) {
    std::fprintf(stderr, "usage: %s --address_file=FILE\n", argv[0]);
    return 2;
  }
  address_file = std::string(argv[1]).substr(flag.size());

  // Signals are taken by a thread that waits for them, not a handler.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  grpc::EnableDefaultHealthCheckService(true);
  EchoExecutor service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "bench_echo_server: cannot listen on 127.0.0.1\n");
    return 2;
  }
  const std::string tmp = address_file + ".tmp";
  std::ofstream(tmp) << "127.0.0.1:" << port << "\n";
  std::rename(tmp.c_str(), address_file.c_str());

  int sig = 0;
  sigwait(&signals, &sig);
  server->Shutdown();
  return 0;
}

}  // namespace
}  // namespace toolexec::bench

int main(int argc, char** argv) { return toolexec::bench::Main(argc, argv); }

// How every unary handler ends: the status converted once (ToGrpcStatus),
// Finish called once, the RPC counted (server/metrics.h), and one log line
//   <Method> peer=<peer> [caller=<name>] [<detail>] status=<CODE> [msg="<message>"]
//   trace_id=<id> span_id=<id>
// carrying the caller's trace (RpcTrace).
#ifndef TOOLEXEC_SERVER_UNARY_H_
#define TOOLEXEC_SERVER_UNARY_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/status.h"
#include "core/engine.h"
#include "server/logging.h"
#include "tools/runtime/trace_context.h"

namespace toolexec {

// The RPC's trace: the caller's `traceparent` metadata with a new span of
// the daemon's, or a new trace when it sent none (or an invalid one).
TraceContext RpcTrace(const grpc::CallbackServerContext* context);

void FinishUnary(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                 const char* method, const CallerIdentity& caller, const absl::Status& status,
                 const std::string& detail = "");

// FinishUnary on the context's default reactor, which it returns (for the
// handler to return to gRPC).
grpc::ServerUnaryReactor* ReplyUnary(grpc::CallbackServerContext* context, const char* method,
                                     const CallerIdentity& caller, const absl::Status& status,
                                     const std::string& detail = "");

// Adds caller=<name> to a log line (nothing for an unauthenticated caller); a
// name with spaces or control characters (a certificate's) is quoted in text.
void AddCallerField(const std::string& caller_name, LogLine* line);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_UNARY_H_

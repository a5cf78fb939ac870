// How every unary handler ends: the status converted once (ToGrpcStatus),
// Finish called once, and one log line
//   <Method> peer=<peer> [caller=<name>] [<detail>] status=<CODE> [msg="<message>"]
#ifndef TOOLEXEC_SERVER_UNARY_H_
#define TOOLEXEC_SERVER_UNARY_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/status.h"
#include "core/engine.h"

namespace toolexec {

void FinishUnary(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                 const char* method, const CallerIdentity& caller, const absl::Status& status,
                 const std::string& detail = "");

// FinishUnary on the context's default reactor, which it returns (for the
// handler to return to gRPC).
grpc::ServerUnaryReactor* ReplyUnary(grpc::CallbackServerContext* context, const char* method,
                                     const CallerIdentity& caller, const absl::Status& status,
                                     const std::string& detail = "");

// " caller=<name>" for a log line ("" for an unauthenticated caller); a name
// with spaces or control characters (a certificate's) is C-escaped and quoted.
std::string CallerLogField(const CallerIdentity& caller);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_UNARY_H_

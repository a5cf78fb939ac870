// How every unary handler ends: the status converted once (ToGrpcStatus),
// Finish called once, and one log line
//   <Method> peer=<peer> [<detail>] status=<CODE> [msg="<message>"]
#ifndef TOOLEXEC_SERVER_UNARY_H_
#define TOOLEXEC_SERVER_UNARY_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "absl/status/status.h"

namespace toolexec {

void FinishUnary(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                 const char* method, const absl::Status& status, const std::string& detail = "");

// FinishUnary on the context's default reactor, which it returns (for the
// handler to return to gRPC).
grpc::ServerUnaryReactor* ReplyUnary(grpc::CallbackServerContext* context, const char* method,
                                     const absl::Status& status, const std::string& detail = "");

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_UNARY_H_

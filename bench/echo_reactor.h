// The bare echo the benchmarks measure toolexecd against: what gRPC alone
// costs for an ExecuteBatch, with no runtime behind it. Used in-process by
// bench_overhead (as toolexec.bench.Echo) and cross-process by
// bench_echo_server (as toolexec.v1.ToolExecutor).
#ifndef TOOLEXEC_BENCH_ECHO_REACTOR_H_
#define TOOLEXEC_BENCH_ECHO_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>

#include "toolexec/v1/toolexec.pb.h"

namespace toolexec::bench {

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

}  // namespace toolexec::bench

#endif  // TOOLEXEC_BENCH_ECHO_REACTOR_H_

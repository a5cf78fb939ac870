// The ExportRecording stream: the engine renders the session's recording
// (core/recording_export.h) once, off the gRPC thread (it reads and parses
// the whole file), and this writes it in chunks of kChunkBytes, one write in
// flight, then finishes OK; an error from the engine finishes the stream at
// once. Deletes itself in OnDone.
#ifndef TOOLEXEC_SERVER_EXPORT_RECORDING_REACTOR_H_
#define TOOLEXEC_SERVER_EXPORT_RECORDING_REACTOR_H_

#include <grpcpp/grpcpp.h>

#include <functional>
#include <string>

#include "core/engine.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

namespace toolexec {

class ExportRecordingReactor final
    : public grpc::ServerWriteReactor<v1::ExportRecordingResponse> {
 public:
  static constexpr size_t kChunkBytes = 64 * 1024;

  // Runs its argument on a thread that may block (the service's work
  // threads).
  using OffThread = std::function<void(std::function<void()>)>;

  static ExportRecordingReactor* Start(Engine* engine, grpc::CallbackServerContext* context,
                                       absl::StatusOr<CallerIdentity> caller,
                                       const v1::ExportRecordingRequest& request,
                                       const OffThread& off_thread);

  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  explicit ExportRecordingReactor(grpc::CallbackServerContext* context) : context_(context) {}
  // Writes the next chunk, or finishes once all are written.
  void Next();
  void End(const grpc::Status& status);

  grpc::CallbackServerContext* const context_;
  std::string caller_name_;
  std::string session_id_;
  std::string data_;
  size_t offset_ = 0;
  v1::ExportRecordingResponse response_;
  grpc::Status status_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_EXPORT_RECORDING_REACTOR_H_

#include "server/export_recording_reactor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/convert.h"
#include "server/metrics.h"
#include "server/unary.h"
#include "spdlog/spdlog.h"

namespace toolexec {

static_assert(static_cast<int>(RecordingFormat::kNative) == v1::RECORDING_FORMAT_NATIVE &&
                  static_cast<int>(RecordingFormat::kOpenAi) == v1::RECORDING_FORMAT_OPENAI &&
                  static_cast<int>(RecordingFormat::kOpenAiResponses) ==
                      v1::RECORDING_FORMAT_OPENAI_RESPONSES &&
                  static_cast<int>(RecordingFormat::kAnthropic) ==
                      v1::RECORDING_FORMAT_ANTHROPIC &&
                  static_cast<int>(RecordingFormat::kGemini) == v1::RECORDING_FORMAT_GEMINI,
              "RecordingFormat mirrors toolexec.v1.RecordingFormat");

ExportRecordingReactor* ExportRecordingReactor::Start(Engine* engine,
                                                      grpc::CallbackServerContext* context,
                                                      absl::StatusOr<CallerIdentity> caller,
                                                      const v1::ExportRecordingRequest& request,
                                                      const OffThread& off_thread) {
  auto* reactor = new ExportRecordingReactor(context);
  reactor->session_id_ = request.session_id();
  if (!caller.ok()) {
    reactor->End(ToGrpcStatus(caller.status()));
    return reactor;
  }
  reactor->caller_name_ = caller->name;
  if (!v1::RecordingFormat_IsValid(request.format())) {
    reactor->End(ToGrpcStatus(absl::InvalidArgumentError(absl::StrCat(
        "unknown format ", request.format(),
        "; one of RECORDING_FORMAT_NATIVE, _OPENAI, _OPENAI_RESPONSES, _ANTHROPIC, _GEMINI"))));
    return reactor;
  }
  // Nothing touches the reactor after it finishes (Finish is called only
  // here, or by a write this starts), so it outlives the work.
  off_thread([reactor, engine, who = *std::move(caller),
              format = static_cast<RecordingFormat>(request.format())] {
    absl::StatusOr<std::string> data = engine->ExportRecording(who, reactor->session_id_, format);
    if (!data.ok()) return reactor->End(ToGrpcStatus(data.status()));
    reactor->data_ = *std::move(data);
    reactor->Next();
  });
  return reactor;
}

void ExportRecordingReactor::Next() {
  if (offset_ >= data_.size()) return End(grpc::Status::OK);
  const size_t n = std::min(kChunkBytes, data_.size() - offset_);
  response_.set_chunk(data_.substr(offset_, n));
  offset_ += n;
  StartWrite(&response_);
}

void ExportRecordingReactor::OnWriteDone(bool ok) {
  if (!ok) return End(grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
  Next();
}

void ExportRecordingReactor::End(const grpc::Status& status) {
  status_ = status;
  Finish(status);
}

void ExportRecordingReactor::OnDone() {
  CountRpc("ExportRecording", status_.error_code());
  if (spdlog::should_log(spdlog::level::info)) {
    const std::string traceparent = RpcTrace(context_).Traceparent();
    ScopedTraceLog trace(traceparent);
    LogLine line("ExportRecording");
    line.Add("peer", context_->peer());
    AddCallerField(caller_name_, &line);
    line.Add("session", session_id_).AddNumber("bytes", offset_);
    AddStatusFields(status_, &line);
    line.Write(spdlog::level::info);
  }
  delete this;
}

}  // namespace toolexec

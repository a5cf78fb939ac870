// Conversions between the wire types (toolexec.v1, google.protobuf.Struct) and
// the runtime's types, and the one absl::Status -> grpc::Status conversion.
// Everything the gRPC adapters translate goes through here.
#ifndef TOOLEXEC_SERVER_CONVERT_H_
#define TOOLEXEC_SERVER_CONVERT_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/status.h>

#include <cstddef>
#include <limits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/engine.h"
#include "server/logging.h"
#include "google/protobuf/struct.pb.h"
#include "tools/runtime/json.h"
#include "tools/runtime/tool_registry.h"
#include "tools/runtime/tool_runner.h"
#include "tools/runtime/utf8.h"
#include "toolexec/v1/toolexec.pb.h"

namespace toolexec {

// The deepest JSON nesting the wire carries: each JSON level is three protobuf
// message levels (Value, Struct, map entry), and a protobuf parser stops at 100.
inline constexpr int kMaxWireJsonDepth = 30;

grpc::Status ToGrpcStatus(const absl::Status& status);

// Adds a finished RPC's status to its log line: status=CANCELLED msg="..."
// (msg always quoted in text; no msg field when it is empty).
void AddStatusFields(const grpc::Status& status, LogLine* line);

// Struct/Value -> JSON. Whole doubles within +-2^53 become integers, so "3"
// sent through a Struct validates against {"type":"integer"}. Fails past
// kMaxJsonDepth.
absl::StatusOr<Json> StructToJson(const google::protobuf::Struct& in);
absl::StatusOr<Json> ValueToJson(const google::protobuf::Value& in);

// JSON -> Value/Struct. Invalid UTF-8 in strings is replaced with U+FFFD (the
// wire requires valid UTF-8). Fails past kMaxWireJsonDepth.
absl::Status JsonToValue(const JsonValue& in, google::protobuf::Value* out);
absl::Status JsonToStruct(const JsonValue& in, google::protobuf::Struct* out);

// The runtime's view of one wire call.
CallRequest FromProto(const v1::ToolCall& call);
// A wire result of at most `max_bytes` encoded. A result that cannot be
// encoded (too deep, or memory ran out) becomes an INTERNAL error result
// saying why; one larger than `max_bytes` becomes a TOOL_FAILED error result
// giving its size and the limit. Either way the batch goes on.
void ToProto(ToolCallResult result, v1::ToolResult* out,
             size_t max_bytes = std::numeric_limits<size_t>::max());
void ToProto(const ProgressEvent& event, v1::ToolProgress* out);
void ToProto(const PermissionRequestEvent& event, v1::PermissionRequest* out);
// Checkpoints (tools/workspace/checkpoint).
void ToProto(const CheckpointEvent& event, v1::Checkpoint* out);
void ToProto(const checkpoint::CheckpointInfo& info, v1::Checkpoint* out);
void ToProto(const checkpoint::DiffResult& diff, v1::DiffCheckpointResponse* out);
void ToProto(const checkpoint::RestoreResult& restored, v1::RestoreCheckpointResponse* out);
void ToProto(const RegisteredTool& tool, v1::ToolDeclaration* out);
// `message` serialized deterministically (map entries, such as a Struct's
// fields, in key order), so equal messages are equal bytes.
grpc::ByteBuffer DeterministicBytes(const google::protobuf::MessageLite& message);

// Requests and answers of the Engine's calls.
BatchSpec FromProto(const v1::ExecuteBatchRequest& request);
OpenSessionSpec FromProto(const v1::OpenSessionRequest& request);
MergeOptions FromProto(const v1::CloseSessionRequest& request);
// The artifact's content and mime type (the caller checks that it has content).
Artifact FromProto(const v1::Artifact& artifact);
void ToProto(const SessionInfo& session, v1::Session* out);
void ToProto(const MergeResult& merged, v1::EventActions* out);
void ToProto(const Artifact& artifact, v1::Artifact* out);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_CONVERT_H_

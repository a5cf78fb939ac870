#include "client/client.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace toolexec {
namespace {

namespace health = ::grpc::health::v1;

// Whole files come back as tool payloads, and gRPC's 4 MiB default receive
// limit would turn a big (but legitimate) result into a failed RPC.
constexpr int kMaxReceiveMessageBytes = 64 * 1024 * 1024;

// The deadline, and the bearer token (if any) as `authorization` metadata.
void Prepare(grpc::ClientContext* context, const std::string& token, absl::Duration timeout) {
  if (!token.empty()) context->AddMetadata("authorization", absl::StrCat("Bearer ", token));
  // An infinite deadline is expressed by not setting one at all.
  if (timeout == absl::InfiniteDuration()) return;
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

// One unary call: `invoke` performs the stub call on a fresh context.
template <typename Response, typename Invoke>
absl::StatusOr<Response> Unary(const std::string& token, absl::Duration timeout, Invoke invoke) {
  grpc::ClientContext context;
  Prepare(&context, token, timeout);
  Response response;
  grpc::Status status = invoke(&context, &response);
  if (!status.ok()) return ToAbslStatus(status);
  return response;
}

// Describes the start of non-object JSON text for the error message.
const char* JsonKind(char first) {
  switch (first) {
    case '[':
      return "an array";
    case '"':
      return "a string";
    case 't':
    case 'f':
      return "a boolean";
    case 'n':
      return "null";
    default:
      return (first == '-' || std::isdigit(static_cast<unsigned char>(first)))
                 ? "a number"
                 : "not JSON";
  }
}

// A credentials file, whole (they are small; more than 1 MiB is a mistake).
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", what, " ", path, ": ", std::strerror(errno)));
  }
  std::string text;
  char buffer[8192];
  while (in.read(buffer, sizeof(buffer)) || in.gcount() > 0) {
    text.append(buffer, static_cast<size_t>(in.gcount()));
    if (text.size() > (1 << 20)) {
      return absl::InvalidArgumentError(absl::StrCat(what, " ", path, " is larger than 1 MiB"));
    }
  }
  return text;
}

}  // namespace

absl::Status ToAbslStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

absl::StatusOr<v1::ToolCall> MakeCall(std::string id, std::string name,
                                      std::string_view args_json) {
  v1::ToolCall call;
  call.set_id(std::move(id));
  call.set_name(std::move(name));
  size_t start = 0;
  while (start < args_json.size() &&
         std::isspace(static_cast<unsigned char>(args_json[start]))) {
    ++start;
  }
  if (start == args_json.size()) return call;  // no arguments: {}
  // Checked up front because protobuf's own error for a non-object Struct
  // ("Expected : between key:value pair") does not say what was wrong.
  if (args_json[start] != '{') {
    return absl::InvalidArgumentError(
        absl::StrCat("arguments of ", call.name(),
                     " must be a JSON object like {\"key\": \"value\"}, got ",
                     JsonKind(args_json[start])));
  }
  auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(args_json.data(), args_json.size()),
      call.mutable_args());
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("arguments of ", call.name(), " are not valid JSON: ",
                     parsed.ToString()));
  }
  return call;
}

// ---- Watch ------------------------------------------------------------------

Watch::~Watch() {
  if (finished_ || reader_ == nullptr) return;
  // Finish() on a live stream would block until the server ends it, so cancel
  // first and drain whatever is already buffered.
  Cancel();
  v1::SessionEvent discard;
  while (reader_->Read(&discard)) {
  }
  reader_->Finish().ok();
}

bool Watch::Next(v1::SessionEvent* event) {
  if (finished_) return false;
  return reader_->Read(event);
}

void Watch::Cancel() { context_.TryCancel(); }

absl::Status Watch::Finish() {
  if (finished_) {
    return absl::FailedPreconditionError("Watch::Finish called twice");
  }
  finished_ = true;
  return ToAbslStatus(reader_->Finish());
}

// ---- Client -----------------------------------------------------------------

std::unique_ptr<Client> Client::Create(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  return FromChannel(grpc::CreateCustomChannel(
      target, grpc::InsecureChannelCredentials(), args));
}

absl::StatusOr<std::unique_ptr<Client>> Client::Create(
    const std::string& target, const ClientCredentials& credentials) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  std::shared_ptr<grpc::ChannelCredentials> channel_credentials =
      grpc::InsecureChannelCredentials();
  const bool tls = !credentials.tls_ca_file.empty() ||
                   !credentials.tls_cert_file.empty() ||
                   !credentials.tls_key_file.empty();
  if (tls) {
    if (credentials.tls_cert_file.empty() != credentials.tls_key_file.empty()) {
      return absl::InvalidArgumentError(
          "a client certificate needs its key: give both --tls-cert and --tls-key");
    }
    grpc::SslCredentialsOptions ssl;
    // Empty = the system's trusted roots.
    if (!credentials.tls_ca_file.empty()) {
      auto ca = ReadSmallFile(credentials.tls_ca_file, "TLS CA file");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *std::move(ca);
    }
    if (!credentials.tls_cert_file.empty()) {
      auto cert = ReadSmallFile(credentials.tls_cert_file, "TLS certificate file");
      if (!cert.ok()) return cert.status();
      auto key = ReadSmallFile(credentials.tls_key_file, "TLS key file");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    channel_credentials = grpc::SslCredentials(ssl);
  }
  auto client = FromChannel(grpc::CreateCustomChannel(target, channel_credentials, args));
  client->token_ = credentials.token;
  return client;
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  auto text = ReadSmallFile(path, "token file");
  if (!text.ok()) return text.status();
  // The first line's first field, so that a daemon's token file line
  // "TOKEN NAME PROFILE" also works as a client's.
  std::string token(absl::StripAsciiWhitespace(*text));
  token = token.substr(0, token.find_first_of(" \t\r\n"));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("token file ", path, " is empty"));
  }
  return token;
}

std::unique_ptr<Client> Client::FromChannel(
    std::shared_ptr<grpc::ChannelInterface> channel) {
  return std::unique_ptr<Client>(new Client(std::move(channel)));
}

Client::Client(std::shared_ptr<grpc::ChannelInterface> channel)
    : channel_(std::move(channel)),
      stub_(v1::ToolExecutor::NewStub(channel_)),
      health_stub_(health::Health::NewStub(channel_)) {}

absl::StatusOr<v1::ListToolsResponse> Client::ListTools(
    const v1::ListToolsRequest& request, absl::Duration timeout) {
  return Unary<v1::ListToolsResponse>(
      token_, timeout, [&](grpc::ClientContext* context, auto* response) {
        return stub_->ListTools(context, request, response);
      });
}

absl::Status Client::ExecuteBatch(
    const v1::ExecuteBatchRequest& request,
    const std::function<void(const v1::ExecuteBatchResponse&)>& on_event,
    absl::Duration timeout) {
  grpc::ClientContext context;
  Prepare(&context, /*token=*/"", timeout);
  return ExecuteBatch(&context, request, on_event);
}

absl::Status Client::ExecuteBatch(
    grpc::ClientContext* context, const v1::ExecuteBatchRequest& request,
    const std::function<void(const v1::ExecuteBatchResponse&)>& on_event) {
  Prepare(context, token_, absl::InfiniteDuration());
  std::unique_ptr<grpc::ClientReader<v1::ExecuteBatchResponse>> reader =
      stub_->ExecuteBatch(context, request);
  v1::ExecuteBatchResponse response;
  while (reader->Read(&response)) {
    on_event(response);
  }
  return ToAbslStatus(reader->Finish());
}

absl::StatusOr<std::vector<v1::ToolResult>> Client::ExecuteBatchCollect(
    const v1::ExecuteBatchRequest& request, absl::Duration timeout) {
  std::vector<v1::ToolResult> results;
  results.reserve(request.calls_size());
  absl::Status status = ExecuteBatch(
      request,
      [&results](const v1::ExecuteBatchResponse& event) {
        if (event.has_result()) results.push_back(event.result());
      },
      timeout);
  if (!status.ok()) return status;
  return results;
}

absl::StatusOr<v1::Session> Client::OpenSession(
    const v1::OpenSessionRequest& request, absl::Duration timeout) {
  return Unary<v1::Session>(
      token_, timeout, [&](grpc::ClientContext* context, auto* response) {
        return stub_->OpenSession(context, request, response);
      });
}

absl::StatusOr<v1::Session> Client::UpdateSession(
    const v1::UpdateSessionRequest& request, absl::Duration timeout) {
  return Unary<v1::Session>(
      token_, timeout, [&](grpc::ClientContext* context, auto* response) {
        return stub_->UpdateSession(context, request, response);
      });
}

absl::StatusOr<v1::CloseSessionResponse> Client::CloseSession(
    const v1::CloseSessionRequest& request, absl::Duration timeout) {
  return Unary<v1::CloseSessionResponse>(
      token_, timeout, [&](grpc::ClientContext* context, auto* response) {
        return stub_->CloseSession(context, request, response);
      });
}

absl::StatusOr<v1::GetStateResponse> Client::GetState(
    const v1::GetStateRequest& request, absl::Duration timeout) {
  return Unary<v1::GetStateResponse>(
      token_, timeout, [&](grpc::ClientContext* context, auto* response) {
        return stub_->GetState(context, request, response);
      });
}

absl::StatusOr<v1::RespondPermissionResponse> Client::RespondPermission(
    const v1::RespondPermissionRequest& request, absl::Duration timeout) {
  return Unary<v1::RespondPermissionResponse>(
      token_, timeout, [&](grpc::ClientContext* context, auto* response) {
        return stub_->RespondPermission(context, request, response);
      });
}

absl::StatusOr<std::string> Client::ExportRecording(const v1::ExportRecordingRequest& request,
                                                    absl::Duration timeout) {
  grpc::ClientContext context;
  Prepare(&context, token_, timeout);
  auto reader = stub_->ExportRecording(&context, request);
  std::string out;
  v1::ExportRecordingResponse chunk;
  while (reader->Read(&chunk)) out.append(chunk.chunk());
  if (absl::Status s = ToAbslStatus(reader->Finish()); !s.ok()) return s;
  return out;
}

absl::StatusOr<v1::ListCheckpointsResponse> Client::ListCheckpoints(
    const v1::ListCheckpointsRequest& request, absl::Duration timeout) {
  return Unary<v1::ListCheckpointsResponse>(
      token_, timeout, [&](grpc::ClientContext* context, auto* response) {
        return stub_->ListCheckpoints(context, request, response);
      });
}

absl::StatusOr<v1::DiffCheckpointResponse> Client::DiffCheckpoint(
    const v1::DiffCheckpointRequest& request, absl::Duration timeout) {
  return Unary<v1::DiffCheckpointResponse>(
      token_, timeout, [&](grpc::ClientContext* context, auto* response) {
        return stub_->DiffCheckpoint(context, request, response);
      });
}

absl::StatusOr<v1::RestoreCheckpointResponse> Client::RestoreCheckpoint(
    const v1::RestoreCheckpointRequest& request, absl::Duration timeout) {
  return Unary<v1::RestoreCheckpointResponse>(
      token_, timeout, [&](grpc::ClientContext* context, auto* response) {
        return stub_->RestoreCheckpoint(context, request, response);
      });
}

std::unique_ptr<Watch> Client::WatchSession(
    const v1::WatchSessionRequest& request, absl::Duration timeout) {
  std::unique_ptr<Watch> watch(new Watch());
  Prepare(&watch->context_, token_, timeout);
  watch->reader_ = stub_->WatchSession(&watch->context_, request);
  return watch;
}

absl::StatusOr<health::HealthCheckResponse::ServingStatus>
Client::HealthStatus(const std::string& service, absl::Duration timeout) {
  health::HealthCheckRequest request;
  request.set_service(service);
  absl::StatusOr<health::HealthCheckResponse> response =
      Unary<health::HealthCheckResponse>(
          token_, timeout, [&](grpc::ClientContext* context, auto* out) {
            return health_stub_->Check(context, request, out);
          });
  if (!response.ok()) return response.status();
  return response->status();
}

absl::StatusOr<bool> Client::Health(const std::string& service,
                                    absl::Duration timeout) {
  absl::StatusOr<health::HealthCheckResponse::ServingStatus> status =
      HealthStatus(service, timeout);
  if (!status.ok()) return status.status();
  return *status == health::HealthCheckResponse::SERVING;
}

}  // namespace toolexec

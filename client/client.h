// C++ client library for toolexecd: thin synchronous wrappers over the
// toolexec.v1.ToolExecutor and grpc.health.v1.Health stubs that speak
// absl::Status instead of grpc::Status.
//
// Thread safety: a Client is safe to use from many threads at once (gRPC
// stubs and channels are). A Watch is owned by one reader thread, except
// Cancel(), which any thread may call at any time.

#ifndef TOOLEXEC_CLIENT_CLIENT_H_
#define TOOLEXEC_CLIENT_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "toolexec/v1/toolexec.grpc.pb.h"

// Inside namespace toolexec, `v1::` already names ::toolexec::v1; an alias
// `namespace v1 = ...` here would clash with the real namespace.
namespace toolexec {

// Deadline for unary RPCs when the caller does not pass one.
inline constexpr absl::Duration kDefaultUnaryTimeout = absl::Seconds(30);
// Streams get no deadline by default: every call in a batch is bounded by its
// own per-call timeout on the daemon, and a watch lasts as long as its session.
inline constexpr absl::Duration kNoDeadline = absl::InfiniteDuration();

// The one grpc::Status -> absl::Status conversion: the numeric codes are the
// same in both, and the message is kept.
absl::Status ToAbslStatus(const grpc::Status& status);

// Builds a ToolCall whose args are parsed from JSON text. Empty (or
// all-whitespace) text means no arguments, i.e. {}. Anything that is not a
// JSON object is InvalidArgument, naming what was found instead.
absl::StatusOr<v1::ToolCall> MakeCall(std::string id, std::string name,
                                      std::string_view args_json);

// A server stream of SessionEvents from WatchSession. Read it with Next()
// until it returns false, then call Finish() once for the RPC status.
//
//   auto watch = client->WatchSession(request);
//   v1::SessionEvent event;
//   while (watch->Next(&event)) Handle(event);
//   absl::Status status = watch->Finish();  // CANCELLED after Cancel()
//
// Destroying an unfinished Watch cancels it and waits for the stream to end.
class Watch final {
 public:
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;
  ~Watch();

  // Blocks until the next event arrives (true) or the stream ends (false:
  // session closed, cancelled, deadline, or an error; see Finish()).
  bool Next(v1::SessionEvent* event);

  // Ends the stream from any thread; a blocked Next() returns false promptly.
  // Idempotent and harmless after the stream has ended.
  void Cancel();

  // The RPC's final status. Call once, after Next() has returned false.
  absl::Status Finish();

 private:
  friend class Client;
  Watch() = default;

  // Declared before reader_ so that it outlives the reader that uses it.
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::SessionEvent>> reader_;
  bool finished_ = false;
};

// How a client proves who it is to a toolexecd that authenticates callers.
struct ClientCredentials {
  // Sent on every RPC as "authorization: Bearer <token>"; "" = none.
  std::string token;
  // TLS when any of these is set. PEM files: the CA that signed the daemon's
  // certificate ("" = the system's trusted roots), and the client's own
  // certificate and key for a daemon that requires one (mTLS).
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
};

// The token of a token file: its first line's first field (so a daemon's
// line "TOKEN NAME PROFILE" works too). NotFound / InvalidArgument naming
// the file (never the token) if it cannot be read or is empty.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

class Client final {
 public:
  // An insecure channel to `target`: "host:port" or "unix:/path/to.sock".
  // Never fails here; a bad or unreachable target fails each RPC with
  // UNAVAILABLE.
  static std::unique_ptr<Client> Create(const std::string& target);
  // A channel with `credentials`. Fails only for a credentials file that
  // cannot be read, or a certificate without its key.
  static absl::StatusOr<std::unique_ptr<Client>> Create(const std::string& target,
                                                        const ClientCredentials& credentials);
  // Over an existing channel (tests: an in-process channel).
  static std::unique_ptr<Client> FromChannel(
      std::shared_ptr<grpc::ChannelInterface> channel);

  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  absl::StatusOr<v1::ListToolsResponse> ListTools(
      const v1::ListToolsRequest& request,
      absl::Duration timeout = kDefaultUnaryTimeout);

  // Runs a batch and calls `on_event` on this thread for each response
  // (results in call order, progress and permission requests in between) as
  // it arrives. Returns the RPC status; a failing tool is a result, not an
  // error here.
  absl::Status ExecuteBatch(
      const v1::ExecuteBatchRequest& request,
      const std::function<void(const v1::ExecuteBatchResponse&)>& on_event,
      absl::Duration timeout = kNoDeadline);

  // The same over a context the caller owns (its deadline is the caller's;
  // the client adds its token): context->TryCancel() from any thread ends the
  // batch, and the daemon cancels its unfinished calls.
  absl::Status ExecuteBatch(
      grpc::ClientContext* context, const v1::ExecuteBatchRequest& request,
      const std::function<void(const v1::ExecuteBatchResponse&)>& on_event);

  // Runs a batch and returns only its results, in call order.
  absl::StatusOr<std::vector<v1::ToolResult>> ExecuteBatchCollect(
      const v1::ExecuteBatchRequest& request,
      absl::Duration timeout = kNoDeadline);

  absl::StatusOr<v1::Session> OpenSession(
      const v1::OpenSessionRequest& request,
      absl::Duration timeout = kDefaultUnaryTimeout);
  absl::StatusOr<v1::Session> UpdateSession(
      const v1::UpdateSessionRequest& request,
      absl::Duration timeout = kDefaultUnaryTimeout);
  absl::StatusOr<v1::CloseSessionResponse> CloseSession(
      const v1::CloseSessionRequest& request,
      absl::Duration timeout = kDefaultUnaryTimeout);
  absl::StatusOr<v1::GetStateResponse> GetState(
      const v1::GetStateRequest& request,
      absl::Duration timeout = kDefaultUnaryTimeout);
  absl::StatusOr<v1::RespondPermissionResponse> RespondPermission(
      const v1::RespondPermissionRequest& request,
      absl::Duration timeout = kDefaultUnaryTimeout);

  // A session's recording, whole (the stream's chunks joined): as written,
  // or as the provider transcript `request.format` names.
  absl::StatusOr<std::string> ExportRecording(const v1::ExportRecordingRequest& request,
                                              absl::Duration timeout = kDefaultUnaryTimeout);

  // Starts watching a session. The stream opens lazily: an unknown session
  // shows up as Next() returning false and Finish() returning NOT_FOUND.
  std::unique_ptr<Watch> WatchSession(const v1::WatchSessionRequest& request,
                                      absl::Duration timeout = kNoDeadline);

  // The raw health status of `service` ("" = the whole server).
  absl::StatusOr<grpc::health::v1::HealthCheckResponse::ServingStatus>
  HealthStatus(const std::string& service = "",
               absl::Duration timeout = absl::Seconds(5));
  // True when `service` is SERVING, false for any other serving status.
  absl::StatusOr<bool> Health(const std::string& service = "",
                              absl::Duration timeout = absl::Seconds(5));

 private:
  explicit Client(std::shared_ptr<grpc::ChannelInterface> channel);

  std::shared_ptr<grpc::ChannelInterface> channel_;
  std::unique_ptr<v1::ToolExecutor::Stub> stub_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_stub_;
  std::string token_;  // "" = send none
};

}  // namespace toolexec

#endif  // TOOLEXEC_CLIENT_CLIENT_H_

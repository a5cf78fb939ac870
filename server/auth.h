// Who may call toolexecd: bearer tokens, TLS client certificates and the uid
// of a unix-socket peer, turned into the CallerIdentity that every Engine call
// takes (core/engine.h).
//
// Every RPC of toolexec.v1.ToolExecutor and toolexec.v1.ArtifactStore starts
// with Authenticate(); gRPC's own health and reflection services never reach
// it, so probes and grpcurl's `list` work without credentials.
//
// The caller's name, in order: the NAME of the token's line; the client
// certificate's identity (its subject alternative names, else its subject
// CN, as gRPC's auth context reports them); "uid:N" for a unix-socket peer;
// for a token line without a name, one derived from the token itself
// (TokenEntry::name), so removing or reordering lines never hands one
// caller's sessions and artifacts to another; "" when the daemon
// authenticates nobody. The profile is the token line's PROFILE.
//
// Threads: Authenticate() runs on gRPC's threads, for many RPCs at once;
// ReloadTokens() on main's signal thread (SIGHUP); NoteUnixPeer() on the unix
// listener's accept thread (server/unix_listener.h). The token set is an
// immutable snapshot replaced whole under mu_, so a reload holds a call up
// for no longer than a pointer copy, and a call sees the old set or the new,
// never a mix.
#ifndef TOOLEXEC_SERVER_AUTH_H_
#define TOOLEXEC_SERVER_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/engine.h"
#include "server/options.h"

namespace toolexec {

// One line of a token file. The token itself is kept only as its SHA-256.
struct TokenEntry {
  std::array<unsigned char, 32> digest{};
  // The line's NAME; when it gives none, "token-" and the first 12 hex
  // digits of the token's SHA-256: the same wherever the line stands.
  std::string name;
  bool named = false;   // the line gives NAME
  std::string profile;  // "" when the line gives none
  int line = 0;
};

// Parses a token file's text: one token per line, `TOKEN [NAME [PROFILE]]`
// separated by spaces or tabs; blank lines and lines starting with '#' are
// skipped. InvalidArgument naming `path` and the line (never the token) for
// a line with more than three fields, a token with characters an HTTP header
// cannot carry, a token given twice, or a file with no token at all.
absl::StatusOr<std::vector<TokenEntry>> ParseTokenFile(absl::string_view text,
                                                       absl::string_view path);

// The entry for `token`, or null. Compares the token's SHA-256 with every
// entry's digest with CRYPTO_memcmp and visits every entry, so the time taken
// says nothing about how much of a guess was right or which entry matched.
const TokenEntry* MatchToken(const std::vector<TokenEntry>& entries, absl::string_view token);

// The token in an `authorization` metadata value "Bearer <token>" (scheme in
// any case), or "" if the value is not of that form.
absl::string_view BearerToken(absl::string_view authorization);

class Authenticator final {
 public:
  // OK when a token line may name `profile`; else an error saying why
  // (Engine::CheckProfile).
  using ProfileCheck = std::function<absl::Status(const std::string& profile)>;

  // Reads the token file: a malformed one, or a line whose PROFILE
  // `check_profile` (when set) refuses, is an error naming the file and the
  // line. Each line without a NAME is logged as a warning (its line number
  // and derived name, never the token).
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(
      const AuthOptions& options, ProfileCheck check_profile = nullptr);

  // The credentials for a TCP listener: TLS when a certificate is configured
  // (client certificates required and verified when a client CA is), else
  // insecure. InvalidArgument naming the file for one that cannot be read
  // or is not PEM of the right kind, and naming both when the key is not the
  // certificate's.
  static absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TcpCredentials(
      const TlsOptions& tls);

  // Who is calling. UNAUTHENTICATED when tokens are configured and the call
  // carries none or a wrong one (the message never says which tokens exist);
  // PERMISSION_DENIED for a unix-socket peer whose uid is not allowed.
  absl::StatusOr<CallerIdentity> Authenticate(const grpc::ServerContextBase& context) const;

  // Who is calling over HTTP (toolexecd's MCP endpoint, server/mcp_http.h):
  // the bearer token of an `Authorization` header value ("" when there is
  // none), checked against the same token set as Authenticate, with the
  // same UNAUTHENTICATED answers. The unauthenticated identity when no token
  // file is configured. Thread-safe like Authenticate.
  absl::StatusOr<CallerIdentity> AuthenticateBearer(absl::string_view authorization) const;

  // Reads the token file again, checked as by Create. On success the new set
  // replaces the old for every later call; on failure the old set stays and
  // the error says why.
  // OK and no-op when no token file is configured.
  absl::Status ReloadTokens();

  // The unix listener hands each accepted connection to gRPC as "fd:N"
  // (grpc::AddInsecureChannelFromFd) after recording its peer's uid here.
  void NoteUnixPeer(int fd, uint32_t uid);

 private:
  Authenticator(AuthOptions options, ProfileCheck check_profile)
      : options_(std::move(options)), check_profile_(std::move(check_profile)) {}
  // The token file's entries, each profile checked; warns of unnamed lines.
  absl::StatusOr<std::vector<TokenEntry>> LoadTokens() const;
  // The entry of `token`, or UNAUTHENTICATED: none sent (saying how to send
  // one) or not valid.
  static absl::StatusOr<const TokenEntry*> CheckBearer(const std::vector<TokenEntry>& tokens,
                                                       absl::string_view token,
                                                       absl::string_view how_to_send);

  const AuthOptions options_;
  const ProfileCheck check_profile_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const std::vector<TokenEntry>> tokens_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<int, uint32_t> unix_peers_ ABSL_GUARDED_BY(mu_);
};

// auth->Authenticate(context), or the unauthenticated identity when `auth` is
// null (a daemon built without one: tests, embedders).
absl::StatusOr<CallerIdentity> AuthenticateCall(const Authenticator* auth,
                                                const grpc::ServerContextBase& context);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_AUTH_H_

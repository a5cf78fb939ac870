// toolexecd's listener for `--listen=unix:/path`, which knows each peer's uid.
//
// gRPC 1.51 tells a handler nothing about a unix-socket peer: its peer string
// is the socket's own address, its auth context has no credentials, and the
// connection's fd is not exposed. So toolexecd accepts the connections itself:
// it binds the socket (chmod to the configured mode between bind and listen,
// so no client can connect under looser permissions), reads each accepted
// connection's SO_PEERCRED, records the uid with the Authenticator under the
// connection's fd, and hands the fd to gRPC with grpc::AddInsecureChannelFromFd,
// which names the connection "fd:N" (the handler's context->peer()).
//
// Why the fd identifies the connection: gRPC closes the fd only when the
// connection's transport is destroyed, and every call holds a reference to
// its transport, so while a handler runs its fd number cannot have been
// reused by a newer connection; a reused number is recorded afresh (with the
// new peer's uid) before gRPC sees the new connection.
//
// Threads: one accept thread, started by Serve() and joined by Stop(); both
// are called by the Daemon's owner thread, Stop() before the gRPC server
// shuts down (AddInsecureChannelFromFd needs a running server).
#ifndef TOOLEXEC_SERVER_UNIX_LISTENER_H_
#define TOOLEXEC_SERVER_UNIX_LISTENER_H_

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "server/auth.h"
#include "tools/runtime/file_io.h"

namespace toolexec {

class UnixListener final {
 public:
  // Binds and listens on `path`, with `mode` permission bits when non-zero.
  // A socket file already there is replaced only when it is stale (nobody
  // listens on it: connecting is refused); a socket a process answers on is
  // Unavailable "in use", and any other file is an error.
  static absl::StatusOr<std::unique_ptr<UnixListener>> Listen(const std::string& path,
                                                              uint32_t mode);
  ~UnixListener();  // Stop()

  // Accepts connections on a thread of its own until Stop(), handing each to
  // `server`; `server` and `auth` must outlive the listener.
  absl::Status Serve(grpc::Server* server, Authenticator* auth);
  // Stops accepting, joins the thread, removes the socket file if it is
  // still the one Listen created (not one another daemon made at the same
  // path since). Idempotent.
  void Stop();

 private:
  UnixListener(std::string path, UniqueFd fd, dev_t dev, ino_t ino)
      : path_(std::move(path)), fd_(std::move(fd)), dev_(dev), ino_(ino) {}
  void AcceptLoop(grpc::Server* server, Authenticator* auth);

  const std::string path_;
  UniqueFd fd_;
  // The socket file Listen bound (its device and inode).
  const dev_t dev_;
  const ino_t ino_;
  std::thread thread_;
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_UNIX_LISTENER_H_

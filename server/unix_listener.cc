#include "server/unix_listener.h"

#include <fcntl.h>
#include <grpcpp/server_posix.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "tools/runtime/executor.h"

namespace toolexec {

absl::StatusOr<std::unique_ptr<UnixListener>> UnixListener::Listen(const std::string& path,
                                                                   uint32_t mode) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unix socket path '", path, "' must be 1 to ", sizeof(addr.sun_path) - 1, " bytes"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  auto fail = [&path](const char* what) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on unix:", path, ": ", what, ": ", std::strerror(errno)));
  };
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fail("socket");
  // A socket left by an earlier daemon is replaced (as gRPC's own listener
  // does); any other file is not ours to remove.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot listen on unix:", path, ": a file that is not a socket is there"));
    }
    unlink(path.c_str());
  }
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail("bind");
  }
  if (mode != 0 && chmod(path.c_str(), mode) != 0) {
    unlink(path.c_str());
    return fail("chmod");
  }
  if (listen(fd.get(), SOMAXCONN) != 0) {
    unlink(path.c_str());
    return fail("listen");
  }
  return std::unique_ptr<UnixListener>(new UnixListener(path, std::move(fd)));
}

UnixListener::~UnixListener() { Stop(); }

absl::Status UnixListener::Serve(grpc::Server* server, Authenticator* auth) {
  auto thread = StartThread([this, server, auth] { AcceptLoop(server, auth); });
  if (!thread.ok()) return thread.status();
  thread_ = *std::move(thread);
  return absl::OkStatus();
}

void UnixListener::AcceptLoop(grpc::Server* server, Authenticator* auth) {
  for (;;) {
    int conn = accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (conn < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        spdlog::warn("unix:{}: accept: {}; retrying", path_, std::strerror(errno));
        usleep(100 * 1000);
        continue;
      }
      return;  // Stop() shut the socket down (EINVAL)
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      spdlog::warn("unix:{}: cannot read the peer's uid: {}", path_, std::strerror(errno));
      close(conn);
      continue;
    }
    auth->NoteUnixPeer(conn, cred.uid);
    grpc::AddInsecureChannelFromFd(server, conn);  // gRPC owns the fd now
  }
}

void UnixListener::Stop() {
  if (!fd_.valid()) return;
  shutdown(fd_.get(), SHUT_RDWR);  // wakes the blocked accept4
  if (thread_.joinable()) thread_.join();
  fd_.reset();
  unlink(path_.c_str());
}

}  // namespace toolexec

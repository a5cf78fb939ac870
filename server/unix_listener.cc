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
namespace {

// OK when the socket at `addr` is stale: connecting is refused (nobody
// listens) or it is gone. A socket that accepts, or whose state cannot be
// told, belongs to someone else and is not removed.
absl::Status CheckStaleSocket(const std::string& path, const sockaddr_un& addr) {
  UniqueFd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe.valid()) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on unix:", path, ": socket: ", std::strerror(errno)));
  }
  if (connect(probe.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno == ECONNREFUSED || errno == ENOENT) return absl::OkStatus();
    if (errno != EAGAIN) {  // EAGAIN: its backlog is full, so it is alive
      return absl::UnavailableError(
          absl::StrCat("cannot listen on unix:", path, ": a socket is there and connecting to "
                       "it fails (", std::strerror(errno), "); remove it if it is stale"));
    }
  }
  return absl::UnavailableError(
      absl::StrCat("cannot listen on unix:", path, ": in use (a process answers on it, perhaps "
                   "another toolexecd); stop it or choose another path"));
}

}  // namespace

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
  // A socket left by a daemon that is gone is replaced; one a process still
  // answers on, and any other file, are not ours to remove.
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot listen on unix:", path, ": a file that is not a socket is there"));
    }
    if (absl::Status stale = CheckStaleSocket(path, addr); !stale.ok()) return stale;
    unlink(path.c_str());
  }
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail("bind");
  }
  if (lstat(path.c_str(), &st) != 0) return fail("stat");
  if (mode != 0 && chmod(path.c_str(), mode) != 0) {
    unlink(path.c_str());
    return fail("chmod");
  }
  if (listen(fd.get(), SOMAXCONN) != 0) {
    unlink(path.c_str());
    return fail("listen");
  }
  return std::unique_ptr<UnixListener>(new UnixListener(path, std::move(fd), st.st_dev, st.st_ino));
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
  // Only our own socket file: another daemon may have replaced it since.
  struct stat st;
  if (lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    unlink(path_.c_str());
  }
}

}  // namespace toolexec

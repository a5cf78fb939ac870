#include "server/listen_probe.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/config/config.h"

namespace toolexec {

namespace {

// The kernel's answer to binding `listen` (0 = bound), or why it could not be
// tried.
struct Probe {
  int error = 0;
  std::string not_tried;
};

Probe TryBind(absl::string_view listen) {
  const std::optional<uint16_t> port = ListenPort(listen);
  if (!port) return {0, "not host:port"};
  std::string host(listen.substr(0, listen.rfind(':')));
  sockaddr_storage address{};
  socklen_t length = 0;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(*port);
    if (inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &v6->sin6_addr) != 1) {
      return {0, "not a numeric IPv6 address"};
    }
    length = sizeof(sockaddr_in6);
  } else {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(*port);
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) != 1) {
      return {0, "the host must be a numeric address (e.g. 127.0.0.1 or [::1])"};
    }
    length = sizeof(sockaddr_in);
  }
  const int fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {0, absl::StrCat("cannot make a socket: ", std::strerror(errno))};
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as the listeners do
  const int bound = bind(fd, reinterpret_cast<sockaddr*>(&address), length);
  const int error = bound == 0 ? 0 : errno;
  close(fd);
  return {error, ""};
}

std::string ErrorText(int error) {
  switch (error) {
    case EADDRINUSE:
      return "address already in use; stop what serves it or give another port";
    case EADDRNOTAVAIL:
      return "no interface of this machine has that address";
    case EACCES:
      return "permission denied (ports below 1024 need privilege)";
    default:
      return std::strerror(error);
  }
}

}  // namespace

std::string WhyCannotListen(absl::string_view listen) {
  const Probe probe = TryBind(listen);
  if (!probe.not_tried.empty()) return probe.not_tried;
  if (probe.error == 0) return "the HTTP server could not start on it";
  return ErrorText(probe.error);
}

std::optional<std::string> BindFailure(absl::string_view listen) {
  const Probe probe = TryBind(listen);
  if (!probe.not_tried.empty() || probe.error == 0) return std::nullopt;
  return ErrorText(probe.error);
}

}  // namespace toolexec

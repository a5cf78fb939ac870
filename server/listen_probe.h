// Why an HTTP listener (civetweb, under the metrics and MCP endpoints) could
// not bind an address: civetweb reports only that it failed.
#ifndef TOOLEXEC_SERVER_LISTEN_PROBE_H_
#define TOOLEXEC_SERVER_LISTEN_PROBE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace toolexec {

// Binds a TCP socket to `listen` ("host:port", "[v6]:port"; numeric hosts)
// and says what the kernel answered, e.g. "address already in use; stop what
// serves it or give another port"; if the bind succeeds, the failure lay
// elsewhere and it says only that the server could not start.
std::string WhyCannotListen(absl::string_view listen);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_LISTEN_PROBE_H_

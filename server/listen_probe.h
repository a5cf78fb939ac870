// Why a listener could not bind an address: civetweb (under the metrics and
// MCP endpoints) reports only that it failed, and gRPC's report is a dump of
// its internals.
#ifndef TOOLEXEC_SERVER_LISTEN_PROBE_H_
#define TOOLEXEC_SERVER_LISTEN_PROBE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace toolexec {

// Binds a TCP socket to `listen` ("host:port", "[v6]:port"; numeric hosts)
// and says what the kernel answered, e.g. "address already in use; stop what
// serves it or give another port"; if the bind succeeds, the failure lay
// elsewhere and it says only that the server could not start.
std::string WhyCannotListen(absl::string_view listen);

// The same probe, before a listener tries: what the kernel answered when a
// bind failed; nullopt when it succeeded or `listen` has no numeric host to
// probe (a name such as localhost is left to the listener).
std::optional<std::string> BindFailure(absl::string_view listen);

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_LISTEN_PROBE_H_

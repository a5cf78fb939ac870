// The stdio transport: toolexecd spawns the MCP server and exchanges
// newline-delimited JSON-RPC messages over its stdin and stdout. The process
// is started the way run_command starts commands (command/child_process.h):
// a session and process group of its own under a supervisor that ends the
// whole tree when the server exits, when Close() kills it, or when the
// daemon's thread that spawned it dies. Its environment is the daemon's
// scrubbed one (no secrets) plus what the config's env sets. Each line it
// writes on stderr, and each stdout line that is not a JSON-RPC message, goes
// to the daemon's log through the server's ServerLog (rate-limited and cut).
//
// Threads: one reader thread per transport spawns the process (so the
// process dies with it), reads stdout and stderr, delivers messages, and
// reaps the process; Close() wakes it, it kills the tree, and Close() joins
// it. Send() writes under a mutex, waiting for the pipe at most until its
// deadline.
#ifndef TOOLEXEC_MCP_CLIENT_STDIO_TRANSPORT_H_
#define TOOLEXEC_MCP_CLIENT_STDIO_TRANSPORT_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "mcp/client/server_log.h"
#include "mcp/client/transport.h"
#include "tools/runtime/file_io.h"

namespace toolexec::mcp {

struct StdioOptions {
  std::string server_name;  // for the log
  // argv[0]: a name looked up on the PATH of `env`, or a path (relative to
  // `cwd`).
  std::vector<std::string> argv;
  std::vector<std::string> env;  // "NAME=value": the whole environment
  std::string cwd;               // "" = the daemon's
  size_t max_message_bytes = 16 << 20;
  std::shared_ptr<ServerLog> log;  // null: one of its own
};

class StdioTransport final : public Transport {
 public:
  explicit StdioTransport(StdioOptions options);
  ~StdioTransport() override { Close(); }

  // Spawns the process; fails naming the program when it cannot be started.
  absl::Status Start(TransportCallbacks callbacks) override;
  absl::Status Send(const std::string& message, absl::Time deadline) override;
  void Close() override;
  std::string Describe() const override;

 private:
  void ReaderLoop(absl::Notification* spawned, absl::Status* spawn_status);
  // A stdout line that cannot be read (`why`; logged with `line`): when it
  // answers a request whose id shows in its `head` or `tail`, that request
  // fails now, saying why.
  void Unreadable(absl::string_view head, absl::string_view tail, const std::string& why,
                  absl::string_view line);

  StdioOptions options_;  // set once, in the constructor
  TransportCallbacks callbacks_;
  std::thread reader_;
  UniqueFd wake_;  // eventfd: Close() -> reader
  std::atomic<int> pid_{-1};
  std::atomic<bool> closing_{false};
  absl::Mutex close_mu_;  // serializes Close()

  absl::Mutex write_mu_;
  UniqueFd stdin_ ABSL_GUARDED_BY(write_mu_);
};

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_CLIENT_STDIO_TRANSPORT_H_

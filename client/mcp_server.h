// `toolexec mcp`: the daemon's tools served to MCP clients over stdio
// (newline-delimited JSON-RPC 2.0), so any MCP client (a desktop app, an IDE,
// an agent framework) can spawn it and call toolexec's tools. Every request is
// proxied to toolexecd over gRPC through Client: tools/list is ListTools
// (optionally one tool set), tools/call is an ExecuteBatch of one call, whose
// permission requests are denied at once (RespondPermission, kMcpAskDenial):
// nobody can answer them over MCP. The
// mapping to MCP and the request dispatch are mcp/serve/dispatcher.h, shared
// with toolexecd's streamable HTTP endpoint.
//
// Threads and ownership
// ---------------------
// * The reader thread (the one calling Serve, or HandleLine in tests) parses
//   each line and hands it to the dispatcher, which answers initialize, ping
//   and tools/list there, in order (a unary RPC each), and
//   notifications/cancelled.
// * Each tools/call the dispatcher accepts runs on a thread of its own,
//   started by the reader and joined by the reader once it has finished (or
//   by Shutdown()): it blocks on its ExecuteBatch stream, whose
//   grpc::ClientContext lives on that thread and is armed in the call's
//   CallCancel while the RPC runs, so notifications/cancelled can TryCancel
//   it: the daemon then cancels the call (its process tree ends), and no
//   response is sent. The dispatcher caps the calls in flight
//   (max_calls_in_flight), so a client cannot make it start threads without
//   bound.
// * Output: `write_` is called with one whole message at a time under
//   `write_mu_`, so responses and notifications never interleave.
// * Shutdown (EOF on stdin, or the destructor): every call in flight is
//   cancelled, then their threads are joined.
// Logs go to stderr only: stdout carries nothing but MCP messages.
#ifndef TOOLEXEC_CLIENT_MCP_SERVER_H_
#define TOOLEXEC_CLIENT_MCP_SERVER_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "mcp/serve/dispatcher.h"
#include "mcp/protocol/jsonrpc.h"
#include "tools/runtime/json.h"

namespace toolexec {

// A tool as toolexecd declares it on the wire, as an MCP Tool object
// (mcp::ToMcpTool): its inputSchema is parameters_json, in the declared
// order (the parameters Struct when there is none).
Json McpToolFromDeclaration(const v1::ToolDeclaration& tool);

// A result from the wire as an McpCallResult; `ask_denied`: the call's
// permission request was denied here (kMcpAskDenial).
McpCallResult McpCallResultFromToolResult(const v1::ToolResult& result, bool ask_denied);

class McpStdioServer final {
 public:
  struct Options {
    std::string tool_set;    // "" = every tool the daemon serves
    std::string session_id;  // "" = calls without a session
    std::string version;     // serverInfo.version
    // tools/call requests running at once (a thread each); past it a call is
    // refused at once with a JSON-RPC error saying so.
    size_t max_calls_in_flight = 64;
  };
  using WriteFn = std::function<void(absl::string_view message)>;

  // `client` must outlive the server; `write` gets one message (no newline)
  // at a time.
  McpStdioServer(Client* client, Options options, WriteFn write);
  ~McpStdioServer();
  McpStdioServer(const McpStdioServer&) = delete;
  McpStdioServer& operator=(const McpStdioServer&) = delete;

  // Handles one received line (reader thread only).
  void HandleLine(absl::string_view line);
  // Cancels the calls in flight and joins their threads. Idempotent.
  void Shutdown();

  // Reads newline-delimited messages from `in_fd` until EOF, writing answers
  // to `out_fd`; then Shutdown(). Returns the process exit code.
  static int Serve(Client* client, Options options, int in_fd, int out_fd);

 private:
  class GrpcToolSource;

  void Send(const std::string& message);
  // Joins the call threads that have finished (reader thread).
  void JoinFinished();

  const WriteFn write_;
  absl::Mutex write_mu_;
  std::unique_ptr<GrpcToolSource> source_;
  McpDispatcher dispatcher_;

  absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // The call threads, reader thread only; a finished one is joined when the
  // next call starts (its id is then in finished_), the rest by Shutdown().
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> finished_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_CLIENT_MCP_SERVER_H_

// `toolexec mcp`: the daemon's tools served to MCP clients over stdio
// (newline-delimited JSON-RPC 2.0), so any MCP client (a desktop app, an IDE,
// an agent framework) can spawn it and call toolexec's tools. Every request is
// proxied to toolexecd over gRPC through Client: tools/list is ListTools
// (optionally one tool set), tools/call is an ExecuteBatch of one call.
//
// Threads and ownership
// ---------------------
// * The reader thread (the one calling Serve, or HandleLine in tests) parses
//   each line and answers initialize, ping and tools/list itself, in order
//   (a unary RPC each), and notifications/cancelled.
// * Each tools/call runs on a thread of its own, started by the reader and
//   joined by the reader once it has finished (or by Shutdown()): it blocks on its ExecuteBatch
//   stream, turns ToolProgress into notifications/progress when the request carried a progress
//   token, and writes the response. Its grpc::ClientContext lives on that thread and is listed in
//   `calls_` (under `mu_`) while the RPC runs, so notifications/cancelled from the reader can
//   TryCancel it: the daemon then cancels the call (its process tree ends), and no response is
//   sent, as MCP asks of a cancelled request. At most max_calls_in_flight
//   run at once, so a client cannot make it start threads without bound.
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
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "tools/mcp/jsonrpc.h"
#include "tools/runtime/json.h"

namespace toolexec {

// The MCP protocol versions served, newest first.
inline constexpr const char* kMcpProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                       "2024-11-05"};

// The version to answer initialize with: the client's when it is served, else
// the newest served (the client then decides whether it can go on).
std::string NegotiateMcpProtocolVersion(absl::string_view requested);

// A ToolDeclaration as an MCP Tool: name, title (the display name when it
// differs), description, inputSchema (the declared parameters, as declared)
// and annotations from its tags (readOnlyHint; destructiveHint and
// idempotentHint for a tool that writes).
Json McpToolFromDeclaration(const v1::ToolDeclaration& tool);

// A ToolResult as an MCP CallToolResult: model_content (else the payload as
// JSON) as one text block, structuredContent from a successful object payload,
// isError for any failure.
Json McpCallResultFromToolResult(const v1::ToolResult& result);

class McpServer final {
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
  McpServer(Client* client, Options options, WriteFn write);
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // Handles one received line (reader thread only).
  void HandleLine(absl::string_view line);
  // Cancels the calls in flight and joins their threads. Idempotent.
  void Shutdown();

  // Reads newline-delimited messages from `in_fd` until EOF, writing answers
  // to `out_fd`; then Shutdown(). Returns the process exit code.
  static int Serve(Client* client, Options options, int in_fd, int out_fd);

 private:
  struct RunningCall {
    grpc::ClientContext* context = nullptr;
    bool cancelled = false;
  };

  void Send(const std::string& message);
  void HandleRequest(const mcp::Message& message);
  void HandleNotification(const mcp::Message& message);
  std::string Initialize(const mcp::Message& message);
  std::string ListTools(const mcp::Message& message);
  void StartCall(const mcp::Message& message);
  // A call thread: CallBody, then marks the thread finished.
  void RunCall(mcp::RequestId id, std::string name, std::string args_json, Json progress_token);
  void CallBody(const mcp::RequestId& id, const std::string& name, const std::string& args_json,
                const Json& progress_token);
  // The daemon's tools an MCP client may call (those of the tool set, run by
  // the daemon), in order; also refreshes `listed_`.
  absl::StatusOr<std::vector<v1::ToolDeclaration>> FetchTools();
  // With a tool set: whether `name` is in it (asks the daemon the first time).
  bool Listed(const std::string& name);

  Client* const client_;
  const Options options_;
  const WriteFn write_;
  absl::Mutex write_mu_;

  absl::Mutex mu_;
  std::map<std::string, RunningCall> calls_ ABSL_GUARDED_BY(mu_);  // by RequestId::Key()
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  bool have_listed_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> listed_ ABSL_GUARDED_BY(mu_);
  // The call threads, reader thread only; a finished one is joined when the
  // next call starts (its id is then in finished_), the rest by Shutdown().
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> finished_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_CLIENT_MCP_SERVER_H_

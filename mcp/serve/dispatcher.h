// toolexec's tools served to MCP clients: what both of its MCP server
// transports share. `toolexec mcp` (stdio, proxying to toolexecd over gRPC,
// client/mcp_server.h) and toolexecd's streamable HTTP endpoint
// (server/mcp_http.h, calling the Engine in-process) answer JSON-RPC requests
// through one dispatcher: initialize, ping, tools/list, tools/call and
// notifications/cancelled.
//
// The seam between them, McpToolSource, speaks MCP's JSON and the runtime's
// types, never the wire's: tools are MCP Tool objects, a call's arguments
// come parsed, its end is an McpCallResult. Each source converts at its own
// edge: `toolexec mcp` from the proto it has from gRPC, the HTTP endpoint
// not at all (declarations rendered once per registry snapshot; the
// engine's arguments and results as they are).
//
// Threads and ownership
// ---------------------
// * McpToolSource is the transport's way to reach the tools; the dispatcher
//   calls it from any thread at once.
// * McpDispatcher::Handle runs on the thread that received the message. It
//   answers every request but tools/call before it returns. A tools/call is
//   checked and reserved there (refused at once when its id is in use or
//   max_calls_in_flight calls are reserved) and returned as a McpCall; the
//   transport runs it on a thread of its choice (stdio: a thread per call;
//   HTTP: the request's own thread). McpCall::Run blocks until the call
//   ends, sending progress notifications and then the response through the
//   `send` it was given, all on that thread.
// * notifications/cancelled (Handle, any thread) and CancelAll() cancel a
//   reserved or running call through its CallCancel; a cancelled call sends
//   no response, as MCP asks. The dispatcher must outlive its McpCalls.
#ifndef TOOLEXEC_MCP_SERVE_DISPATCHER_H_
#define TOOLEXEC_MCP_SERVE_DISPATCHER_H_

#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "mcp/protocol/jsonrpc.h"
#include "tools/runtime/batch.h"
#include "tools/runtime/json.h"

namespace toolexec {

// The MCP protocol versions served, newest first.
inline constexpr const char* kMcpProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                       "2024-11-05"};

// The version to answer initialize with: the client's when it is served, else
// the newest served (the client then decides whether it can go on).
std::string NegotiateMcpProtocolVersion(absl::string_view requested);
// Whether `version` is one of kMcpProtocolVersions.
bool IsServedMcpProtocolVersion(absl::string_view version);

// A policy's ask on an MCP transport: MCP has no way to put the question to
// the client's user, so the transport denies it at once (rather than letting
// the call wait out the ask timeout), giving kMcpAskDenial as the reason.
inline constexpr char kMcpAskDenial[] = "MCP clients cannot answer permission requests";

// Cancellation of one call, between the thread running it and the one that
// receives notifications/cancelled (or shuts down). Thread-safe.
class CallCancel final {
 public:
  // From now until Disarm(), Cancel() runs `cancel`; runs it at once, on this
  // thread, if Cancel() came first.
  void Arm(std::function<void()> cancel);
  // The call has its result. Once this returns, the function given to Arm is
  // neither running nor run, and a later Cancel() is too late: it changes
  // nothing (the response is sent).
  void Disarm();
  void Cancel();
  // Whether a Cancel() came in time.
  bool cancelled() const;

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool disarmed_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> cancel_ ABSL_GUARDED_BY(mu_);
};

// One tools/call as the client sent it.
struct McpCallSpec {
  std::string id;  // the JSON-RPC id as text (7 or "7"), the call's id
  std::string name;
  // The arguments, parsed with the message: always an object ({} when none
  // were sent; anything else was refused with invalid params).
  Json args = MakeObject();
};

// How a call ended, in the terms MCP answers in; the dispatcher makes the
// answer (McpCall::Run).
struct McpCallResult {
  std::string name;  // the tool that ran
  // Set, to the message saying so, when no tool has the name: MCP makes that
  // a protocol error (invalid params), not a result.
  std::optional<std::string> unknown_tool;
  bool is_error = false;  // any failure: isError, and no structuredContent
  Json payload;           // the tool's object, or {"error": message}
  std::string model_content;  // the text for the model; "" = the payload as JSON
  // The policy asked before the tool ran, the source denied the ask at once
  // (kMcpAskDenial) and the call ended DENIED: the answer says that nobody
  // could be asked, not the policy's "Permission denied by user".
  bool ask_denied = false;
};

// The engine's result as an McpCallResult, for a source that runs calls
// in-process: its payload and model_content moved, made valid UTF-8 where a
// tool left bytes that are not (as the gRPC wire does); `ask_denied`: the
// source denied the policy's ask.
McpCallResult McpCallResultOf(ToolCallResult result, bool ask_denied);

// Where the served tools are: toolexecd over gRPC, or the Engine in-process.
class McpToolSource {
 public:
  virtual ~McpToolSource() = default;
  // The tools served, in order, as MCP Tool objects (mcp::ToMcpTool): only
  // those the daemon runs [Tools run elsewhere]. Never changed once listed,
  // so a source may hand every request the same ones.
  virtual absl::StatusOr<std::vector<std::shared_ptr<const Json>>> ListTools() = 0;
  // Runs one call to its end on this thread; `progress` gets each progress
  // text on this thread too. The source arms `cancel` while the call runs,
  // so that a cancel ends it (as a CANCELLED result, or an error). An error
  // status when the call could not run or reach its end.
  virtual absl::StatusOr<McpCallResult> Call(
      McpCallSpec call, const std::function<void(const std::string&)>& progress,
      CallCancel* cancel) = 0;
};

class McpDispatcher;

// A reserved tools/call (see McpDispatcher::Handle).
class McpCall final {
 public:
  using SendFn = std::function<void(const std::string& message)>;
  ~McpCall();  // frees the reservation
  McpCall(const McpCall&) = delete;
  McpCall& operator=(const McpCall&) = delete;

  const mcp::RequestId& id() const { return id_; }
  // Whether the client asked for progress notifications (a progressToken).
  bool wants_progress() const { return !progress_token_.IsNull(); }
  // Runs the call: progress notifications (when asked for), then the
  // response, through `send`; nothing once cancelled. At most once. True if
  // the response was sent (false: cancelled).
  bool Run(const SendFn& send);

 private:
  friend class McpDispatcher;
  McpCall(McpDispatcher* dispatcher, mcp::RequestId id, McpCallSpec spec, Json progress_token,
          std::shared_ptr<CallCancel> cancel)
      : dispatcher_(dispatcher),
        id_(std::move(id)),
        spec_(std::move(spec)),
        progress_token_(std::move(progress_token)),
        cancel_(std::move(cancel)) {}

  McpDispatcher* const dispatcher_;
  const mcp::RequestId id_;
  McpCallSpec spec_;  // given to the source by Run
  const Json progress_token_;  // null: no progress wanted
  const std::shared_ptr<CallCancel> cancel_;
};

class McpDispatcher final {
 public:
  struct Options {
    std::string version;   // serverInfo.version
    std::string tool_set;  // "" = every tool; else only the tools the source lists are callable
    // tools/call requests reserved or running at once; past it a call is
    // refused at once with a JSON-RPC error saying so.
    size_t max_calls_in_flight = 64;
    // The largest tools/call response (bytes of its JSON-RPC message) sent as
    // the tool's result; a larger one is sent as a TOOL_FAILED result giving
    // its size and this limit.
    size_t max_result_bytes = std::numeric_limits<size_t>::max();
  };
  using SendFn = McpCall::SendFn;

  // `source` must outlive the dispatcher.
  McpDispatcher(McpToolSource* source, Options options)
      : source_(source), options_(std::move(options)) {}
  ~McpDispatcher() { CancelAll(); }
  McpDispatcher(const McpDispatcher&) = delete;
  McpDispatcher& operator=(const McpDispatcher&) = delete;

  // One message from the client. A request other than tools/call is answered
  // through `send` before this returns, as is a tools/call refused at once;
  // an accepted tools/call is returned, for the caller to Run. Notifications
  // and responses return null.
  std::unique_ptr<McpCall> Handle(const mcp::Message& message, const SendFn& send);

  // Cancels every call reserved or running and refuses new ones. Idempotent.
  void CancelAll();
  // tools/call reserved or running.
  size_t calls_in_flight() const;

 private:
  friend class McpCall;
  std::string Initialize(const mcp::Message& message) const;
  // The response to the call `id` that ended with `result`.
  std::string Answer(const mcp::RequestId& id, const McpCallResult& result) const;
  std::string ListTools(const mcp::Message& message);
  std::unique_ptr<McpCall> ReserveCall(const mcp::Message& message, const SendFn& send);
  void Cancel(const JsonValue& params);
  void Release(const std::string& key, const CallCancel* cancel);
  // The source's tools, in order; also refreshes `listed_`.
  absl::StatusOr<std::vector<std::shared_ptr<const Json>>> FetchTools();
  // With a tool set: whether `name` is in it (asks the source the first time).
  bool Listed(const std::string& name);

  McpToolSource* const source_;
  const Options options_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<CallCancel>> calls_ ABSL_GUARDED_BY(mu_);  // by Key()
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  bool have_listed_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> listed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace toolexec

#endif  // TOOLEXEC_MCP_SERVE_DISPATCHER_H_

// toolexecd's tools served to MCP clients over streamable HTTP (the MCP
// transport of 2025-03-26 and later) at http://<mcp_listen>/mcp, beside the
// gRPC API. civetweb serves the HTTP; every request goes to the Engine
// in-process (never back through gRPC), through the dispatcher and the result
// mapping that `toolexec mcp` uses too (mcp/serve/dispatcher.h).
//
// Protocol
// --------
// * POST /mcp carries one JSON-RPC message. An initialize without a session
//   opens one: its id (128 random bits, hex) comes back in Mcp-Session-Id,
//   and every later request must send it (400 without; 404 for a session
//   that is unknown, ended, or another caller's). A request is answered with
//   application/json, except tools/call, answered as text/event-stream when
//   the client accepts it: progress notifications (when it sent a
//   progressToken), then the response; a cancelled call's stream ends
//   without one. A notification or response gets 202. A call the policy
//   asks about is denied at once, its result saying kMcpAskDenial.
// * DELETE /mcp ends the session and cancels its calls. GET is 405: the
//   server sends nothing outside the calls' own responses.
// * Authorization: Bearer <token>, checked against the daemon's token set
//   (Authenticator::AuthenticateBearer) on every request; 401 with
//   WWW-Authenticate when it is missing or wrong. The caller's name and
//   profile apply to its calls (policy, logs), as on gRPC.
// * DNS rebinding: a request whose Host header names a host other than a
//   loopback one (localhost, 127.0.0.0/8, [::1]; any port) or one of
//   Options::allowed_hosts is 403, before anything else is looked at; so is
//   one whose Origin is neither a loopback host nor the host the request was
//   sent to.
// * MCP-Protocol-Version: a version not served is 400; none means 2025-03-26.
// * A body over max_body_bytes is 413; one that has not arrived within
//   kBodyTimeout is 408. Headers must arrive within kHeaderTimeout (civetweb
//   drops the connection), so half-sent requests hold a worker that long at
//   most.
// * Connections (HTTP/1.1) stay open between requests, within bounds: at most
//   kKeptConnections at once are promised to stay open (the response says
//   Connection: keep-alive and Keep-Alive: timeout=<kKeepAliveIdle>), each
//   for at most kMaxRequestsPerConnection requests and
//   kMaxBytesPerConnection bytes of bodies, either way; past any bound,
//   after a 401 or 403, and while draining, the response says Connection:
//   close and the connection ends after it. A kept connection with no new request within
//   kKeepAliveIdle is closed. An SSE answer is sent chunked, so its
//   connection can stay open too. (One request per connection made each
//   call pay a connect, an accept and the accept thread's hand-over to a
//   worker, and leave a socket in TIME_WAIT; BENCHMARKS.md has the figures.)
//   TCP_NODELAY stays on: civetweb writes each header line with its own
//   send(), and on a kept connection Nagle would hold the second one until
//   the client's delayed ACK.
// * Sessions: a caller (by identity name) holds at most
//   max_sessions_per_caller; its initialize past that ends its own least
//   recently used session with no call in flight (503 when each has one).
//   kMcpMaxSessions in all: past it an initialize is 503, never another
//   caller's session ended. A session with no request and no call running
//   for session_idle_ttl ends (its next request is 404).
// * One log line per request: `MCP <verb> peer=... [caller=...] [method=...]
//   [tool=...] status=<HTTP status> [msg="..."]`, in the request's trace
//   (its traceparent header, else a new one); counted as RPCs named
//   "mcp/<method>" in the metrics.
//
// Threads and ownership
// ---------------------
// * civetweb's worker threads run the handlers, one request each; a
//   tools/call holds its worker until the call ends (kWorkerThreads bounds
//   the requests in progress; more wait in the listen queue). At most
//   kMaxCallsRunning calls run at once: one more gets a JSON-RPC error at
//   once, so a notifications/cancelled always finds a worker.
// * A kept connection holds its worker while it waits for its next request
//   (civetweb serves a connection on one thread). civetweb runs
//   kWorkerThreads + kKeptConnections workers, and a connection counts
//   against kKeptConnections from the response that promised to keep it
//   (Connection) until its next request starts or it closes, so kept
//   connections never take the workers the bounds above count on. Each
//   connection's counts live in a Connection made by civetweb's
//   init_connection callback and freed by its connection_close.
// * `sessions_` (under `mu_`) owns each Session through a shared_ptr; a
//   handler holds its session for the request, so DELETE or eviction never
//   frees one under a running call (they cancel its calls instead).
// * A call is a one-call batch the engine runs on its threads; its observer
//   only queues progress and the result under its own mutex (the runner
//   never blocks on HTTP), and the worker thread waits for them and writes
//   the events itself.
// * Shutdown, from the daemon's shutdown thread: BeginDrain() before the
//   engine's Drain makes every new request 503 while the calls in flight go
//   on, finishing or ending CANCELLED as the drain decides; Stop() after it
//   waits (kStopGrace at most) until the requests in progress have written
//   their responses, then closes the listener and joins the workers. A
//   worker waiting on a kept connection sees the stop within civetweb's
//   poll slice (2 s), as its accept thread does, so mg_stop takes no longer
//   than it did with one request per connection.
#ifndef TOOLEXEC_SERVER_MCP_HTTP_H_
#define TOOLEXEC_SERVER_MCP_HTTP_H_

#include <atomic>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/engine.h"
#include "server/auth.h"
#include "server/options.h"
#include "server/tool_declarations.h"

struct mg_connection;
struct mg_context;

namespace toolexec {

class McpHttpServer final {
 public:
  struct Options {
    std::string listen;  // "host:port"; port 0 picks one
    size_t max_body_bytes = 64 << 20;
    // A tools/call response larger than this (bytes of its JSON-RPC message)
    // is sent as a TOOL_FAILED result giving its size and the limit.
    size_t max_result_bytes = 64 << 20;
    std::string version;                 // serverInfo.version
    size_t max_sessions_per_caller = kDefaultMcpSessionsPerCaller;
    absl::Duration session_idle_ttl = kDefaultMcpSessionIdleTtl;
    // Hosts the Host header may name beyond the loopback ones
    // (NormalizeMcpAllowedHost's form).
    std::vector<std::string> allowed_hosts;
  };
  static constexpr int kWorkerThreads = 64;
  // tools/call requests in progress at once; past it a call is refused at
  // once, so the other workers stay free for cancels, pings and lists.
  static constexpr int kMaxCallsRunning = kWorkerThreads - 8;
  // How long a request's headers may take to arrive, and its body.
  static constexpr absl::Duration kHeaderTimeout = absl::Seconds(10);
  static constexpr absl::Duration kBodyTimeout = absl::Seconds(30);
  // How long Stop() waits for the requests in progress to write their
  // responses (their calls have ended: Stop comes after the engine's drain).
  static constexpr absl::Duration kStopGrace = absl::Seconds(5);
  // Connections kept open between requests (see Connections above).
  static constexpr int kKeptConnections = 16;
  static constexpr absl::Duration kKeepAliveIdle = absl::Seconds(5);
  static constexpr int kMaxRequestsPerConnection = 1000;
  static constexpr size_t kMaxBytesPerConnection = size_t{256} << 20;

  // Listens and serves. `engine`, `declarations` (its tools rendered, shared
  // with the gRPC service) and `auth` must outlive the server. Unavailable
  // if it cannot listen on options.listen.
  static absl::StatusOr<std::unique_ptr<McpHttpServer>> Start(
      Engine* engine, const ToolDeclarations* declarations, const Authenticator* auth,
      Options options);
  ~McpHttpServer();  // Stop()
  McpHttpServer(const McpHttpServer&) = delete;
  McpHttpServer& operator=(const McpHttpServer&) = delete;

  // The bound "host:port".
  const std::string& address() const { return address_; }
  // From now on every new request is 503; calls in flight go on.
  void BeginDrain() { draining_.store(true); }
  // Ends every session (cancelling what still runs), closes the listener and
  // joins the worker threads. Idempotent.
  void Stop();

 private:
  struct Session;
  struct Request;
  struct Connection;

  McpHttpServer(Engine* engine, const ToolDeclarations* declarations, const Authenticator* auth,
                Options options)
      : engine_(engine), declarations_(declarations), auth_(auth), options_(std::move(options)) {}
  static int HandleRequest(mg_connection* conn, void* self);
  // civetweb's init_connection, begin_request and connection_close
  // callbacks: a connection's counts (Connection), from its first request to
  // its end.
  static int OpenConnection(const mg_connection* conn, void** data);
  static int BeginRequest(mg_connection* conn);
  static void CloseConnection(const mg_connection* conn);
  // The connection no longer counts against kKeptConnections.
  static void Unkeep(const mg_connection* conn, Connection* connection);
  // Decides, before the headers of the response (its `status`), whether the
  // request's connection stays open after it; adds the Connection and
  // Keep-Alive headers.
  void KeepOrClose(Request& request, int status);
  // Answers one request; returns the HTTP status sent.
  int Serve(Request& request);
  int Post(Request& request);
  int Delete(Request& request);
  // The session of the request's Mcp-Session-Id, if it is the caller's.
  std::shared_ptr<Session> FindSession(const std::string& id, const CallerIdentity& caller);
  // A new session for `caller`; RESOURCE_EXHAUSTED past the caps (see
  // Sessions above), UNAVAILABLE once stopped.
  absl::StatusOr<std::shared_ptr<Session>> OpenSession(const CallerIdentity& caller);
  // Whether `session` has been idle past session_idle_ttl at `now` (mu_ held).
  bool Expired(const Session& session, absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The session is in use now (its call just ended).
  void Touch(Session& session);
  // Whether the Host header names a host this server answers to.
  bool HostAllowed(const std::string& host_header) const;

  Engine* const engine_;
  const ToolDeclarations* const declarations_;
  const Authenticator* const auth_;
  const Options options_;
  std::string address_;
  std::string host_;  // of options.listen, as civetweb takes it
  mg_context* context_ = nullptr;
  std::atomic<bool> draining_{false};
  std::atomic<int> calls_running_{0};
  std::atomic<int> requests_in_progress_{0};
  std::atomic<int> kept_connections_{0};  // against kKeptConnections

  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_ ABSL_GUARDED_BY(mu_);
  uint64_t use_counter_ ABSL_GUARDED_BY(mu_) = 0;  // orders sessions by last use
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace toolexec

#endif  // TOOLEXEC_SERVER_MCP_HTTP_H_

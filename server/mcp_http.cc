// Design in mcp_http.h.
#include "server/mcp_http.h"

#include <civetweb.h>
#include <openssl/rand.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "mcp/serve/dispatcher.h"
#include "server/logging.h"
#include "server/progress_bound.h"
#include "server/listen_probe.h"
#include "server/metrics.h"
#include "server/unary.h"
#include "spdlog/spdlog.h"
#include "mcp/protocol/jsonrpc.h"
#include "tools/runtime/trace_context.h"

namespace toolexec {
namespace {

constexpr char kSessionHeader[] = "Mcp-Session-Id";
// What a client that sends no MCP-Protocol-Version speaks (the spec's rule).
constexpr char kDefaultProtocolVersion[] = "2025-03-26";
// JSON-RPC error of a cancelled request answered as application/json, where
// the HTTP exchange needs some body (the LSP's RequestCancelled).
constexpr int kRequestCancelled = -32800;
constexpr size_t kCallsPerSession = McpHttpServer::kWorkerThreads;

// Queues one call's events for the thread waiting in EngineToolSource::Call:
// the runner's threads never wait on HTTP. Progress past the bound the gRPC
// stream keeps too is dropped (counted and logged), so a client that reads
// slowly cannot grow the daemon's memory.
class CallObserver final : public BatchObserver {
 public:
  ~CallObserver() override {
    if (bound_.dropped() > 0) {
      spdlog::warn("MCP tools/call dropped {} progress events: the client read too slowly",
                   bound_.dropped());
    }
  }
  void OnProgress(ProgressEvent event) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!bound_.Admit(event.text.size())) return;
    progress_.push_back(std::move(event.text));
    cv_.notify_all();
  }
  void OnPermissionRequest(const PermissionRequestEvent& event) override {
    std::lock_guard<std::mutex> lock(mu_);
    asks_.push_back(event.request_id);
    cv_.notify_all();
  }
  void OnResult(ToolCallResult result) override {
    std::lock_guard<std::mutex> lock(mu_);
    result_ = std::move(result);
  }
  void OnBatchDone() override {
    // Notified under the lock: the waiter frees this once it sees done_.
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    cv_.notify_all();
  }

  // Waits for events and hands them out on this thread until the batch is
  // done; returns its result.
  std::optional<ToolCallResult> Deliver(const std::function<void(const std::string&)>& progress,
                                        const std::function<void(const std::string&)>& ask) {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] { return done_ || !progress_.empty() || !asks_.empty(); });
      std::vector<std::string> texts = std::move(progress_);
      std::vector<std::string> asks = std::move(asks_);
      progress_.clear();
      bound_.Clear();
      asks_.clear();
      const bool done = done_;
      lock.unlock();
      for (const std::string& text : texts) progress(text);
      for (const std::string& id : asks) ask(id);
      lock.lock();
      if (done) return std::move(result_);
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> progress_;
  ProgressBound bound_;
  std::vector<std::string> asks_;
  std::optional<ToolCallResult> result_;
  bool done_ = false;
};

// The engine, as one caller sees it.
class EngineToolSource final : public McpToolSource {
 public:
  EngineToolSource(Engine* engine, const ToolDeclarations* declarations, CallerIdentity caller)
      : engine_(engine), declarations_(declarations), caller_(std::move(caller)) {}

  // The caller's tools, as rendered once for their registry snapshot.
  absl::StatusOr<std::vector<std::shared_ptr<const Json>>> ListTools() override {
    auto tools = engine_->ListTools(caller_, "", "");
    if (!tools.ok()) return tools.status();
    std::shared_ptr<const ToolDeclarations::Rendered> rendered = declarations_->Of(*tools);
    std::vector<std::shared_ptr<const Json>> out;
    out.reserve(tools->size());
    for (const RegisteredTool* t : *tools) {
      const Json& tool = rendered->mcp[t->position];
      // Each shares the rendering's life: no copy, no allocation of its own.
      if (!tool.IsNull()) out.emplace_back(rendered, &tool);
    }
    return out;
  }

  // The arguments go to the engine as parsed, the result comes back as the
  // engine made it: nothing is converted on the way.
  absl::StatusOr<McpCallResult> Call(McpCallSpec call,
                                     const std::function<void(const std::string&)>& progress,
                                     CallCancel* cancel) override {
    BatchSpec spec;
    CallRequest request;
    request.id = std::move(call.id);
    request.name = std::move(call.name);
    request.args = std::move(call.args);
    spec.calls.push_back(std::move(request));
    if (const std::string* traceparent = CurrentTraceLog()) spec.traceparent = *traceparent;
    CallObserver observer;
    auto started = engine_->StartBatch(caller_, std::move(spec), &observer);
    if (!started.ok()) return started.status();
    cancel->Arm([batch = started->get()] { batch->Cancel(); });
    bool denied_ask = false;
    std::optional<ToolCallResult> result = observer.Deliver(progress, [&](const std::string& id) {
      // Nobody on an MCP connection can answer; waiting would only run
      // into the ask timeout.
      denied_ask = true;
      (void)engine_->RespondPermission(caller_, id, PermissionAnswer::kDeny, kMcpAskDenial);
    });
    cancel->Disarm();
    started->reset();
    if (!result.has_value()) return absl::InternalError("the call ended without a result");
    return McpCallResultOf(*std::move(result), denied_ask);
  }

 private:
  Engine* const engine_;
  const ToolDeclarations* const declarations_;
  const CallerIdentity caller_;
};

std::string NewSessionId() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) return "";
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

std::string Header(const mg_connection* conn, const char* name) {
  const char* value = mg_get_header(conn, name);
  return value == nullptr ? "" : std::string(value);
}

// The host of "host", "host:port" or "[v6]:port", lower-cased, no brackets.
std::string HostOf(absl::string_view authority) {
  if (absl::ConsumePrefix(&authority, "[")) {
    return absl::AsciiStrToLower(authority.substr(0, authority.find(']')));
  }
  return absl::AsciiStrToLower(authority.substr(0, authority.find(':')));
}

bool IsLoopbackHost(const std::string& host) {
  return IsLocalListenAddress(
      absl::StrCat(absl::StrContains(host, ':') ? "[" + host + "]" : host, ":0"));
}

// DNS rebinding: a browser page's Origin must be a loopback host; beyond
// loopback, also the host the request was sent to (the page's own server).
bool OriginAllowed(const std::string& origin, const std::string& host_header, bool loopback_bind) {
  if (origin.empty()) return true;  // not a browser
  absl::string_view rest = origin;
  if (!absl::ConsumePrefix(&rest, "http://") && !absl::ConsumePrefix(&rest, "https://")) {
    return false;  // "null" and other schemes
  }
  const std::string host = HostOf(rest.substr(0, rest.find('/')));
  if (IsLoopbackHost(host)) return true;
  return !loopback_bind && host == HostOf(host_header);
}

// The metric's method label: the MCP method, from a fixed set, or the HTTP
// verb of a request that is not a JSON-RPC POST.
std::string MetricMethod(const std::string& verb, const std::string& method) {
  if (verb != "POST") return verb == "GET" || verb == "DELETE" ? verb : "other";
  for (const char* known : {"initialize", "ping", "tools/list", "tools/call",
                            "notifications/initialized", "notifications/cancelled"}) {
    if (method == known) return known;
  }
  return method.empty() ? "POST" : "other";
}

}  // namespace

struct McpHttpServer::Session {
  Session(std::string session_id, CallerIdentity who, Engine* engine,
          const ToolDeclarations* declarations, const Options& options)
      : id(std::move(session_id)),
        caller(std::move(who)),
        source(engine, declarations, caller),
        dispatcher(&source, McpDispatcher::Options{options.version, "", kCallsPerSession,
                                                   options.max_result_bytes}) {}

  const std::string id;
  const CallerIdentity caller;
  EngineToolSource source;
  McpDispatcher dispatcher;
  // Under the server's mu_: the order of last use, and its time (the start
  // of its last request, or the end of its last call).
  uint64_t last_use = 0;
  absl::Time last_active;
};

// What a connection has carried, and whether it holds one of the
// kKeptConnections (from the response that promised to keep it until its
// next request starts or it closes). Only its worker thread touches it.
struct McpHttpServer::Connection {
  int requests = 0;
  size_t bytes = 0;  // request and response bodies
  bool kept = false;
};

// One HTTP request as it is served, and what its log line says.
struct McpHttpServer::Request {
  McpHttpServer* server = nullptr;
  mg_connection* conn = nullptr;
  Connection* connection = nullptr;  // null if civetweb did not make one
  bool decided = false;              // KeepOrClose ran
  std::string verb;
  std::string peer;
  CallerIdentity caller;
  std::string method;   // the JSON-RPC method (POST)
  std::string tool;     // tools/call: the tool named
  std::string message;  // why it was refused

  // A whole response: `body` (JSON, or nothing) and `headers`.
  int Reply(int status, const std::string& body,
            const std::vector<std::pair<const char*, std::string>>& headers = {}) {
    mg_response_header_start(conn, status);
    server->KeepOrClose(*this, status);
    if (!body.empty()) mg_response_header_add(conn, "Content-Type", "application/json", -1);
    for (const auto& [name, value] : headers) {
      mg_response_header_add(conn, name, value.data(), static_cast<int>(value.size()));
    }
    const std::string length = absl::StrCat(body.size());
    mg_response_header_add(conn, "Content-Length", length.c_str(), -1);
    mg_response_header_send(conn);
    Write(body);
    return status;
  }
  // Part of the body: the whole of it, or one chunk of a chunked one, in
  // one write (one TCP segment where it fits). A connection whose write
  // failed is not kept.
  void Write(absl::string_view bytes, bool chunked = false) {
    if (bytes.empty()) return;
    if (connection != nullptr) connection->bytes += bytes.size();
    std::string framed;
    if (chunked) {
      framed = absl::StrCat(absl::Hex(bytes.size()), "\r\n", bytes, "\r\n");
      bytes = framed;
    }
    if (mg_write(conn, bytes.data(), bytes.size()) != static_cast<int>(bytes.size())) {
      mg_disable_connection_keep_alive(conn);
    }
  }
  // The end of a chunked body.
  void EndChunks() {
    if (mg_write(conn, "0\r\n\r\n", 5) != 5) mg_disable_connection_keep_alive(conn);
  }
  // An HTTP error with a JSON-RPC error body (no id) saying why.
  int Fail(int status, const std::string& why, int code = mcp::kInvalidRequest,
           const std::vector<std::pair<const char*, std::string>>& headers = {}) {
    message = why;
    return Reply(status, mcp::BuildError(mcp::RequestId(), code, why), headers);
  }
};

absl::StatusOr<std::unique_ptr<McpHttpServer>> McpHttpServer::Start(
    Engine* engine, const ToolDeclarations* declarations, const Authenticator* auth,
    Options options) {
  std::unique_ptr<McpHttpServer> server(
      new McpHttpServer(engine, declarations, auth, std::move(options)));
  const std::string& listen = server->options_.listen;
  const size_t colon = listen.rfind(':');
  server->host_ = listen.substr(0, colon);
  std::string ports = listen;
  // civetweb takes numeric hosts only.
  if (server->host_ == "localhost") ports = absl::StrCat("127.0.0.1", listen.substr(colon));
  constexpr unsigned kIpv6Feature = 8;  // mg_check_feature's bit for IPv6
  if (absl::StartsWith(server->host_, "[") && mg_check_feature(kIpv6Feature) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mcp_listen (--mcp_listen) ", listen,
        ": this build's civetweb has no IPv6; give an IPv4 host, e.g. 127.0.0.1:8765"));
  }
  // A kept connection holds a worker while idle: kKeptConnections of them
  // on top of the workers the requests count on.
  const std::string threads = absl::StrCat(kWorkerThreads + kKeptConnections);
  const std::string header_timeout = absl::StrCat(absl::ToInt64Milliseconds(kHeaderTimeout));
  const std::string idle_timeout = absl::StrCat(absl::ToInt64Milliseconds(kKeepAliveIdle));
  const char* config[] = {"listening_ports", ports.c_str(), "num_threads", threads.c_str(),
                          // Within the bounds KeepOrClose keeps (mcp_http.h).
                          "enable_keep_alive", "yes",
                          // A kept connection's next request (its headers)
                          // must arrive within it, or the connection closes.
                          "keep_alive_timeout_ms", idle_timeout.c_str(),
                          // A request's headers must arrive within it (from
                          // the first byte read), so a half-sent request
                          // holds a worker that long at most; a client that
                          // stops reading or sending is dropped after it too.
                          "request_timeout_ms", header_timeout.c_str(),
                          // Each SSE event is written as it comes: no Nagle delay.
                          "tcp_nodelay", "1", nullptr};
  mg_init_library(0);
  mg_callbacks callbacks{};
  callbacks.init_connection = &McpHttpServer::OpenConnection;
  callbacks.begin_request = &McpHttpServer::BeginRequest;
  callbacks.connection_close = &McpHttpServer::CloseConnection;
  mg_init_data init{};
  init.callbacks = &callbacks;
  init.user_data = server.get();
  init.configuration_options = config;
  char error_text[256] = "";
  unsigned error_code = 0;
  mg_error_data error{&error_code, error_text, sizeof(error_text)};
  server->context_ = mg_start2(&init, &error);
  if (server->context_ == nullptr) {
    mg_exit_library();
    // civetweb's text ("Failed to setup server ports") does not say why.
    return absl::UnavailableError(absl::StrCat("cannot serve MCP on ", listen,
                                               " (mcp_listen, --mcp_listen): ",
                                               WhyCannotListen(listen)));
  }
  mg_set_request_handler(server->context_, "/mcp$", &McpHttpServer::HandleRequest, server.get());
  mg_server_port port{};
  if (mg_get_server_ports(server->context_, 1, &port) < 1) {
    server->Stop();
    return absl::UnavailableError(absl::StrCat("mcp_listen: cannot listen on ", listen));
  }
  server->address_ = absl::StrCat(server->host_, ":", port.port);
  return server;
}

McpHttpServer::~McpHttpServer() { Stop(); }

void McpHttpServer::Stop() {
  std::map<std::string, std::shared_ptr<Session>> sessions;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    sessions.swap(sessions_);
  }
  draining_.store(true);
  for (auto& [id, session] : sessions) session->dispatcher.CancelAll();
  // Once civetweb stops, its writes fail: let the requests in progress (the
  // drain has ended their calls) write their responses first.
  const absl::Time deadline = absl::Now() + kStopGrace;
  while (requests_in_progress_.load() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (const int left = requests_in_progress_.load(); left > 0) {
    // Their calls ignored cancellation: civetweb's mg_stop would join their
    // workers forever. Like the engine with such calls, stop without them:
    // the listener is left to the process's exit (toolexecd exits without
    // destroying the server).
    spdlog::warn("{} MCP HTTP request(s) still running {} after they were cancelled; "
                 "stopping without them",
                 left, absl::FormatDuration(kStopGrace));
    return;
  }
  if (context_ != nullptr) {
    mg_stop(context_);  // closes the listener, joins the workers
    context_ = nullptr;
    mg_exit_library();
  }
}

int McpHttpServer::OpenConnection(const mg_connection*, void** data) {
  *data = new Connection();
  return 0;
}

void McpHttpServer::Unkeep(const mg_connection* conn, Connection* connection) {
  if (!connection->kept) return;
  connection->kept = false;
  static_cast<McpHttpServer*>(mg_get_user_data(mg_get_context(conn)))
      ->kept_connections_.fetch_sub(1);
}

int McpHttpServer::BeginRequest(mg_connection* conn) {
  auto* connection = static_cast<Connection*>(mg_get_user_connection_data(conn));
  if (connection != nullptr) {
    Unkeep(conn, connection);
    ++connection->requests;
  }
  // What is not /mcp gets civetweb's own 404, which KeepOrClose never sees.
  const char* uri = mg_get_request_info(conn)->local_uri;
  if (uri == nullptr || absl::string_view(uri) != "/mcp") mg_disable_connection_keep_alive(conn);
  return 0;  // civetweb goes on to the handler
}

void McpHttpServer::CloseConnection(const mg_connection* conn) {
  auto* connection = static_cast<Connection*>(mg_get_user_connection_data(conn));
  if (connection == nullptr) return;
  Unkeep(conn, connection);
  delete connection;
}

void McpHttpServer::KeepOrClose(Request& r, int status) {
  if (r.decided) return;
  r.decided = true;
  Connection* c = r.connection;
  // What the client asked: HTTP/1.1 keeps unless it says close; 1.0 closes
  // unless it says keep-alive.
  const std::string asked = absl::AsciiStrToLower(Header(r.conn, "Connection"));
  const char* version = mg_get_request_info(r.conn)->http_version;
  const bool client_keeps =
      absl::StrContains(asked, "keep-alive") ||
      (!absl::StrContains(asked, "close") && version != nullptr &&
       absl::string_view(version) == "1.1");
  // A caller without a valid token, or from a host not served, keeps none.
  bool keep = c != nullptr && client_keeps && status != 401 && status != 403 &&
              !draining_.load() && c->requests < kMaxRequestsPerConnection &&
              c->bytes < kMaxBytesPerConnection;
  if (keep && kept_connections_.fetch_add(1) >= kKeptConnections) {
    kept_connections_.fetch_sub(1);
    keep = false;
  }
  if (!keep) {
    mg_disable_connection_keep_alive(r.conn);
    mg_response_header_add(r.conn, "Connection", "close", -1);
    return;
  }
  c->kept = true;
  static const std::string kKeepAlive =
      absl::StrCat("timeout=", absl::ToInt64Seconds(kKeepAliveIdle));
  mg_response_header_add(r.conn, "Connection", "keep-alive", -1);
  mg_response_header_add(r.conn, "Keep-Alive", kKeepAlive.c_str(), -1);
}

int McpHttpServer::HandleRequest(mg_connection* conn, void* self) {
  auto* server = static_cast<McpHttpServer*>(self);
  server->requests_in_progress_.fetch_add(1);
  absl::Cleanup done = [server] { server->requests_in_progress_.fetch_sub(1); };
  const mg_request_info* info = mg_get_request_info(conn);
  Request request;
  request.server = server;
  request.conn = conn;
  request.connection = static_cast<Connection*>(mg_get_user_connection_data(conn));
  request.verb = info->request_method == nullptr ? "" : info->request_method;
  request.peer = absl::StrContains(info->remote_addr, ':')
                     ? absl::StrCat("[", info->remote_addr, "]:", info->remote_port)
                     : absl::StrCat(info->remote_addr, ":", info->remote_port);
  const std::string traceparent =
      TraceContext::FromTraceparent(Header(conn, "traceparent")).Traceparent();
  ScopedTraceLog trace(traceparent);
  const int status = server->Serve(request);
  CountMcpHttpRequest(MetricMethod(request.verb, request.method), status);
  if (spdlog::should_log(spdlog::level::info)) {
    LogLine line(absl::StrCat("MCP ", request.verb));
    line.Add("peer", request.peer);
    AddCallerField(request.caller.name, &line);
    if (!request.method.empty()) line.Add("method", request.method);
    if (!request.tool.empty()) line.Add("tool", request.tool);
    line.AddNumber("status", status);
    if (!request.message.empty()) line.AddQuoted("msg", request.message);
    line.Write(spdlog::level::info);
  }
  return status;
}

bool McpHttpServer::HostAllowed(const std::string& host_header) const {
  const std::string host = HostOf(host_header);
  if (host.empty()) return false;
  if (IsLoopbackHost(host)) return true;
  for (const std::string& allowed : options_.allowed_hosts) {
    if (host == allowed) return true;
  }
  return false;
}

int McpHttpServer::Serve(Request& r) {
  // DNS rebinding: a page of another site whose name now resolves to this
  // host sends its own name. Refused before the token or anything else.
  if (const std::string host = Header(r.conn, "Host"); !HostAllowed(host)) {
    return r.Fail(403, absl::StrCat("Host '", host,
                                    "' is not served (DNS rebinding protection): send "
                                    "localhost, 127.0.0.1 or [::1], or a host the daemon's "
                                    "mcp_allowed_hosts (--mcp_allowed_hosts) lists"));
  }
  if (draining_.load()) {
    return r.Fail(503, "toolexecd is shutting down", mcp::kInternalError);
  }
  if (!OriginAllowed(Header(r.conn, "Origin"), Header(r.conn, "Host"),
                     IsLocalListenAddress(options_.listen))) {
    return r.Fail(403, absl::StrCat("Origin '", Header(r.conn, "Origin"),
                                    "' may not call this server (DNS rebinding protection): "
                                    "only pages served from a loopback host may"));
  }
  auto caller = auth_->AuthenticateBearer(Header(r.conn, "Authorization"));
  if (!caller.ok()) {
    return r.Fail(401, std::string(caller.status().message()), mcp::kInvalidRequest,
                  {{"WWW-Authenticate", "Bearer realm=\"toolexec\""}});
  }
  r.caller = *std::move(caller);
  if (r.verb == "POST") return Post(r);
  if (r.verb == "DELETE") return Delete(r);
  return r.Fail(405,
                absl::StrCat(r.verb,
                             " is not served: POST JSON-RPC messages to /mcp, DELETE "
                             "it to end the session (no server-initiated stream)"),
                mcp::kInvalidRequest, {{"Allow", "POST, DELETE"}});
}

int McpHttpServer::Post(Request& r) {
  const std::string content_type = absl::AsciiStrToLower(Header(r.conn, "Content-Type"));
  if (!absl::StrContains(content_type, "application/json")) {
    return r.Fail(415, "send the JSON-RPC message with Content-Type: application/json");
  }
  const std::string accept = absl::AsciiStrToLower(Header(r.conn, "Accept"));
  const bool any = accept.empty() || absl::StrContains(accept, "*/*");
  const bool accepts_sse = any || absl::StrContains(accept, "text/event-stream");
  if (!any && !accepts_sse && !absl::StrContains(accept, "application/json")) {
    return r.Fail(406, "accept application/json and text/event-stream");
  }
  const std::string version = Header(r.conn, "MCP-Protocol-Version");
  if (!version.empty() && !IsServedMcpProtocolVersion(version)) {
    return r.Fail(400, absl::StrCat("MCP-Protocol-Version ", version, " is not served; ",
                                    "this server speaks ", kMcpProtocolVersions[0], " down to ",
                                    kDefaultProtocolVersion, " and 2024-11-05"));
  }
  // The body, within the limit.
  const long long declared = mg_get_request_info(r.conn)->content_length;
  if (declared > 0 && static_cast<unsigned long long>(declared) > options_.max_body_bytes) {
    return r.Fail(413, absl::StrCat("the message is ", declared, " bytes; at most ",
                                    options_.max_body_bytes, " are accepted"));
  }
  std::string body;
  char buffer[16384];
  // civetweb bounds each read; this bounds them all, so a body sent a byte at
  // a time cannot hold the worker.
  const absl::Time body_deadline = absl::Now() + kBodyTimeout;
  for (;;) {
    int n = mg_read(r.conn, buffer, sizeof(buffer));
    if (n <= 0) break;
    if (absl::Now() > body_deadline) {
      return r.Fail(408, absl::StrCat("the message did not arrive within ",
                                      absl::FormatDuration(kBodyTimeout)));
    }
    body.append(buffer, static_cast<size_t>(n));
    if (r.connection != nullptr) r.connection->bytes += static_cast<size_t>(n);
    if (body.size() > options_.max_body_bytes) {
      return r.Fail(413, absl::StrCat("the message is over the limit of ", options_.max_body_bytes,
                                      " bytes"));
    }
  }
  auto message = mcp::ParseMessage(body);
  if (!message.ok()) {
    return r.Fail(400, std::string(message.status().message()), mcp::kParseError);
  }
  const bool is_request = message->kind == mcp::Message::Kind::kRequest;
  r.method = message->is_response() ? "response" : message->method;

  std::shared_ptr<Session> session;
  const std::string session_id = Header(r.conn, kSessionHeader);
  bool opened = false;
  if (session_id.empty()) {
    if (!is_request || message->method != "initialize") {
      return r.Fail(400, absl::StrCat("the ", kSessionHeader,
                                      " header is missing: send "
                                      "initialize first, then the id it returned with every "
                                      "request"));
    }
    auto opened_session = OpenSession(r.caller);
    if (!opened_session.ok()) {
      return r.Fail(503, std::string(opened_session.status().message()), mcp::kInternalError);
    }
    session = *std::move(opened_session);
    opened = true;
  } else {
    session = FindSession(session_id, r.caller);
    if (session == nullptr) {
      return r.Fail(404,
                    "unknown MCP session (ended, expired, or never opened): initialize "
                    "a new one");
    }
  }

  std::vector<std::string> sent;
  auto collect = [&sent](const std::string& m) { sent.push_back(m); };
  std::unique_ptr<McpCall> call = session->dispatcher.Handle(*message, collect);
  if (call == nullptr) {
    if (!is_request) return r.Reply(202, "");
    std::vector<std::pair<const char*, std::string>> headers;
    if (opened) headers.emplace_back(kSessionHeader, session->id);
    return sent.empty() ? r.Fail(500, "no answer", mcp::kInternalError)
                        : r.Reply(200, sent.back(), headers);
  }
  if (const JsonValue* params = &message->params;
      params->IsObject() && params->HasMember("name") && (*params)["name"].IsString()) {
    r.tool = (*params)["name"].GetString();
  }
  if (calls_running_.fetch_add(1) >= kMaxCallsRunning) {
    calls_running_.fetch_sub(1);
    r.message = "too many tool calls in flight";
    return r.Reply(200, mcp::BuildError(
                            call->id(), mcp::kInternalError,
                            absl::StrCat("too many tool calls in flight (", kMaxCallsRunning,
                                         ") on this server; wait for one to finish, then call "
                                         "again")));
  }
  absl::Cleanup running = [this, &session] {
    calls_running_.fetch_sub(1);
    Touch(*session);  // a long call is use too: its session's idle time starts now
  };
  if (!accepts_sse) {
    // One JSON answer: only the last message (the response) is kept, so a
    // call's progress cannot pile up while it runs.
    std::string last;
    if (!call->Run([&last](const std::string& m) { last = m; })) {
      r.message = "cancelled";
      return r.Reply(200,
                     mcp::BuildError(call->id(), kRequestCancelled, "the request was cancelled"));
    }
    return r.Reply(200, last);
  }
  // Server-sent events: each message as one event, written as it comes, as
  // one chunk (so the stream's end needs no end of the connection).
  mg_response_header_start(r.conn, 200);
  KeepOrClose(r, 200);
  mg_response_header_add(r.conn, "Content-Type", "text/event-stream", -1);
  mg_response_header_add(r.conn, "Cache-Control", "no-cache", -1);
  mg_response_header_add(r.conn, "Transfer-Encoding", "chunked", -1);
  mg_response_header_send(r.conn);
  const bool answered = call->Run([&r](const std::string& m) {
    r.Write(absl::StrCat("event: message\ndata: ", m, "\n\n"), /*chunked=*/true);
  });
  r.EndChunks();
  if (!answered) r.message = "cancelled";
  return 200;
}

int McpHttpServer::Delete(Request& r) {
  const std::string session_id = Header(r.conn, kSessionHeader);
  if (session_id.empty()) {
    return r.Fail(400, absl::StrCat("DELETE needs the ", kSessionHeader, " header"));
  }
  std::shared_ptr<Session> session = FindSession(session_id, r.caller);
  if (session == nullptr) return r.Fail(404, "unknown MCP session");
  {
    absl::MutexLock lock(&mu_);
    sessions_.erase(session_id);
  }
  session->dispatcher.CancelAll();
  return r.Reply(200, "");
}

bool McpHttpServer::Expired(const Session& session, absl::Time now) const {
  return now - session.last_active >= options_.session_idle_ttl &&
         session.dispatcher.calls_in_flight() == 0;
}

void McpHttpServer::Touch(Session& session) {
  absl::MutexLock lock(&mu_);
  session.last_use = ++use_counter_;
  session.last_active = absl::Now();
}

std::shared_ptr<McpHttpServer::Session> McpHttpServer::FindSession(const std::string& id,
                                                                   const CallerIdentity& caller) {
  const absl::Time now = absl::Now();
  std::shared_ptr<Session> expired;
  {
    absl::MutexLock lock(&mu_);
    auto it = sessions_.find(id);
    // Another caller's session is as unknown as one that never was; so is the
    // caller's own once its credential's profile changed (a token reload), so
    // that no call runs under the profile it had when the session opened.
    if (it == sessions_.end() || it->second->caller.name != caller.name ||
        it->second->caller.profile != caller.profile) {
      return nullptr;
    }
    if (!Expired(*it->second, now)) {
      it->second->last_use = ++use_counter_;
      it->second->last_active = now;
      return it->second;
    }
    expired = std::move(it->second);
    sessions_.erase(it);
  }
  expired->dispatcher.CancelAll();
  spdlog::info("MCP session {}… ended: no request for {}", expired->id.substr(0, 8),
               absl::FormatDuration(options_.session_idle_ttl));
  return nullptr;
}

absl::StatusOr<std::shared_ptr<McpHttpServer::Session>> McpHttpServer::OpenSession(
    const CallerIdentity& caller) {
  std::string id = NewSessionId();
  if (id.empty()) return absl::InternalError("no random bytes for a session id");
  auto session = std::make_shared<Session>(id, caller, engine_, declarations_, options_);
  const absl::Time now = absl::Now();
  std::vector<std::shared_ptr<Session>> expired;
  std::shared_ptr<Session> evicted;
  absl::Status refused;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return absl::UnavailableError("toolexecd is shutting down");
    // The idle ones go first; then the caller's own count, and only its own
    // sessions may make room.
    size_t own = 0;
    auto oldest_own = sessions_.end();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (Expired(*it->second, now)) {
        expired.push_back(std::move(it->second));
        it = sessions_.erase(it);
        continue;
      }
      if (it->second->caller.name == caller.name) {
        ++own;
        if (it->second->dispatcher.calls_in_flight() == 0 &&
            (oldest_own == sessions_.end() ||
             it->second->last_use < oldest_own->second->last_use)) {
          oldest_own = it;
        }
      }
      ++it;
    }
    if (own >= options_.max_sessions_per_caller) {
      if (oldest_own == sessions_.end()) {
        refused = absl::ResourceExhaustedError(absl::StrCat(
            "this caller holds its maximum of ", options_.max_sessions_per_caller,
            " MCP sessions, each with a call in flight; end one (DELETE) or retry later"));
      } else {
        evicted = std::move(oldest_own->second);
        sessions_.erase(oldest_own);
      }
    } else if (sessions_.size() >= kMcpMaxSessions) {
      refused = absl::ResourceExhaustedError(absl::StrCat(
          "toolexecd holds its maximum of ", kMcpMaxSessions,
          " MCP sessions; end one (DELETE), or retry once idle ones end (after ",
          absl::FormatDuration(options_.session_idle_ttl), " without a request)"));
    }
    if (refused.ok()) {
      session->last_use = ++use_counter_;
      session->last_active = now;
      sessions_.emplace(id, session);
    }
  }
  // A request that found one just before may have started a call on it.
  for (const std::shared_ptr<Session>& idle : expired) {
    idle->dispatcher.CancelAll();
    spdlog::info("MCP session {}… ended: no request for {}", idle->id.substr(0, 8),
                 absl::FormatDuration(options_.session_idle_ttl));
  }
  if (evicted != nullptr) {
    evicted->dispatcher.CancelAll();
    spdlog::info("MCP session {}… ended: least recently used of its caller's {}",
                 evicted->id.substr(0, 8), options_.max_sessions_per_caller);
  }
  if (!refused.ok()) return refused;
  return session;
}

}  // namespace toolexec

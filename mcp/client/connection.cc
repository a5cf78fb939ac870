#include "mcp/client/connection.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/runtime/json_fields.h"

namespace toolexec::mcp {
namespace {

using builtin::StringField;

// More pages than any real server has; a server that keeps sending cursors
// is refused rather than followed forever.
constexpr int kMaxListPages = 1000;

// "message", or "3/10", or "3" of a progress notification.
std::string ProgressText(const JsonValue& params) {
  std::string message = StringField(params, "message");
  if (!message.empty()) return message;
  auto number = [&](const char* key) -> std::string {
    auto it = params.FindMember(key);
    if (it == params.MemberEnd() || !it->value.IsNumber()) return "";
    double d = it->value.GetDouble();
    if (auto i = IntegralValue(d)) return absl::StrCat(*i);
    return absl::StrCat(d);
  };
  std::string progress = number("progress");
  std::string total = number("total");
  return total.empty() ? progress : absl::StrCat(progress, "/", total);
}

}  // namespace

struct Connection::Pending {
  absl::Mutex mu;
  absl::CondVar cv;
  bool done ABSL_GUARDED_BY(mu) = false;
  bool cancelled ABSL_GUARDED_BY(mu) = false;
  bool finished ABSL_GUARDED_BY(mu) = false;  // the caller stopped waiting
  absl::StatusOr<Json> result ABSL_GUARDED_BY(mu) = absl::UnknownError("no response");
  ProgressSink progress;
};

Connection::Connection(std::string server_name, std::unique_ptr<Transport> transport,
                       std::shared_ptr<ServerLog> log)
    : server_name_(std::move(server_name)),
      transport_(std::move(transport)),
      log_(log != nullptr ? std::move(log) : std::make_shared<ServerLog>(server_name_)) {}

Connection::~Connection() { Close(); }

absl::StatusOr<ServerInfo> Connection::Open(Callbacks callbacks, absl::Time deadline,
                                            const CancellationToken* cancel) {
  callbacks_ = std::move(callbacks);
  TransportCallbacks tc;
  tc.on_message = [this](Message msg) { OnMessage(std::move(msg)); };
  tc.on_closed = [this](absl::Status why) { OnClosed(std::move(why)); };
  if (absl::Status s = transport_->Start(std::move(tc)); !s.ok()) return s;

  Json params(rapidjson::kObjectType);
  auto& alloc = params.GetAllocator();
  params.AddMember("protocolVersion", JsonValue(kProtocolVersions[0], alloc), alloc);
  params.AddMember("capabilities", JsonValue(rapidjson::kObjectType), alloc);
  JsonValue client_info(rapidjson::kObjectType);
  client_info.AddMember("name", "toolexec", alloc);
  client_info.AddMember("version", "0.1.0", alloc);
  params.AddMember("clientInfo", client_info, alloc);
  auto result = Request("initialize", std::move(params), deadline, cancel);
  if (!result.ok()) return result.status();
  ServerInfo info;
  info.protocol_version = StringField(*result, "protocolVersion");
  bool supported = false;
  for (const char* v : kProtocolVersions) supported = supported || info.protocol_version == v;
  if (!supported) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the MCP server answered protocol version '", info.protocol_version,
        "'; toolexec speaks ", absl::StrJoin(std::begin(kProtocolVersions),
                                             std::end(kProtocolVersions), ", ")));
  }
  if (result->IsObject() && result->HasMember("serverInfo")) {
    info.name = StringField((*result)["serverInfo"], "name");
    info.version = StringField((*result)["serverInfo"], "version");
  }
  if (result->IsObject() && result->HasMember("capabilities") &&
      (*result)["capabilities"].IsObject() && (*result)["capabilities"].HasMember("tools")) {
    info.tools_list_changed = builtin::BoolField((*result)["capabilities"]["tools"], "listChanged");
  }
  transport_->SetProtocolVersion(info.protocol_version);
  if (absl::Status s = transport_->Send(BuildNotification("notifications/initialized", nullptr),
                                        deadline);
      !s.ok()) {
    return s;
  }
  return info;
}

absl::StatusOr<ToolListing> Connection::ListTools(
    absl::Time deadline, const CancellationToken* cancel,
    const std::function<bool(const JsonValue& tool)>& keep) {
  ToolListing listing;
  size_t bytes = 0;
  std::string cursor;
  for (int page = 0; page < kMaxListPages; ++page) {
    Json params(rapidjson::kObjectType);
    if (!cursor.empty()) {
      params.AddMember("cursor", MakeString(cursor, params.GetAllocator()), params.GetAllocator());
    }
    auto result = Request("tools/list", std::move(params), deadline, cancel);
    if (!result.ok()) return result.status();
    if (!result->IsObject() || !result->HasMember("tools") || !(*result)["tools"].IsArray()) {
      return absl::InvalidArgumentError("tools/list: the result has no \"tools\" array");
    }
    for (const JsonValue& t : (*result)["tools"].GetArray()) {
      if (keep && !keep(t)) continue;
      const size_t size = ToJsonString(t).size();
      if (listing.left_out > 0 || listing.tools.size() >= kMaxListedTools ||
          bytes + size > kMaxListedBytes) {
        ++listing.left_out;  // and every one after it, to keep the server's order
        continue;
      }
      bytes += size;
      listing.tools.push_back(CopyJson(t));
    }
    cursor = StringField(*result, "nextCursor");
    if (cursor.empty()) return listing;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("tools/list: still paging after ", kMaxListPages, " pages"));
}

absl::StatusOr<Json> Connection::Request(absl::string_view method, Json params, absl::Time deadline,
                                         const CancellationToken* cancel, ProgressSink progress) {
  if (!params.IsObject()) params.SetObject();
  auto pending = std::make_shared<Pending>();
  pending->progress = std::move(progress);
  int64_t id;
  {
    absl::MutexLock lock(&mu_);
    if (!closed_.ok()) return closed_;
    id = next_id_++;
    pending_.emplace(id, pending);
  }
  auto& alloc = params.GetAllocator();
  if (pending->progress) {
    if (!params.HasMember("_meta") || !params["_meta"].IsObject()) {
      params.RemoveMember("_meta");
      params.AddMember("_meta", JsonValue(rapidjson::kObjectType), alloc);
    }
    params["_meta"].RemoveMember("progressToken");
    params["_meta"].AddMember("progressToken", JsonValue(id), alloc);
  }
  auto forget = [&] {
    absl::MutexLock lock(&mu_);
    pending_.erase(id);
  };
  if (absl::Status s = transport_->Send(BuildRequest(RequestId(id), method, &params), deadline);
      !s.ok()) {
    forget();
    return absl::UnavailableError(absl::StrCat("MCP server '", server_name_, "': ", s.message()));
  }
  int callback = 0;
  if (cancel != nullptr) {
    callback = cancel->AddCallback([pending] {
      absl::MutexLock lock(&pending->mu);
      pending->cancelled = true;
      pending->cv.SignalAll();
    });
  }
  absl::StatusOr<Json> outcome = absl::UnknownError("");
  bool answered = false;
  bool cancelled = false;
  {
    absl::MutexLock lock(&pending->mu);
    while (!pending->done && !pending->cancelled) {
      if (pending->cv.WaitWithDeadline(&pending->mu, deadline)) break;
    }
    pending->finished = true;  // no progress after this
    answered = pending->done;
    cancelled = pending->cancelled;
    if (answered) outcome = std::move(pending->result);
  }
  if (cancel != nullptr) cancel->RemoveCallback(callback);
  forget();
  if (answered) return outcome;
  // notifications/cancelled: the server should stop; a late response is dropped.
  const char* reason = cancelled ? "cancelled by the client" : "timed out";
  Json note(rapidjson::kObjectType);
  note.AddMember("requestId", JsonValue(id), note.GetAllocator());
  note.AddMember("reason", JsonValue(reason, note.GetAllocator()), note.GetAllocator());
  (void)transport_->Send(BuildNotification("notifications/cancelled", &note),
                         absl::Now() + absl::Seconds(1));
  if (cancelled) return absl::CancelledError(absl::StrCat(method, " cancelled"));
  return absl::DeadlineExceededError(
      absl::StrCat("MCP server '", server_name_, "' did not answer ", method, " in time"));
}

void Connection::OnMessage(Message msg) {
  switch (msg.kind) {
    case Message::Kind::kResult:
    case Message::Kind::kError: {
      if (msg.id.kind() != RequestId::Kind::kNumber) {
        log_->Write("", absl::StrCat("a response with an unknown id ", msg.id.DebugString()));
        return;
      }
      std::shared_ptr<Pending> p;
      {
        absl::MutexLock lock(&mu_);
        auto it = pending_.find(msg.id.number());
        if (it == pending_.end()) return;  // late (cancelled or timed out)
        p = it->second;
      }
      absl::MutexLock lock(&p->mu);
      if (msg.kind == Message::Kind::kResult) {
        p->result = std::move(msg.result);
      } else {
        p->result = RpcErrorStatus(msg.error, absl::StrCat("MCP server '", server_name_, "'"));
      }
      p->done = true;
      p->cv.SignalAll();
      return;
    }
    case Message::Kind::kNotification: {
      if (msg.method == "notifications/progress") {
        if (!msg.params.IsObject() || !msg.params.HasMember("progressToken")) return;
        const JsonValue& token = msg.params["progressToken"];
        if (!token.IsInt64()) return;
        std::shared_ptr<Pending> p;
        {
          absl::MutexLock lock(&mu_);
          auto it = pending_.find(token.GetInt64());
          if (it == pending_.end()) return;
          p = it->second;
        }
        absl::MutexLock lock(&p->mu);
        if (!p->finished && p->progress) p->progress(ProgressText(msg.params));
        return;
      }
      if (msg.method == "notifications/message") {
        log_->Write("log", msg.params.IsObject() && msg.params.HasMember("data")
                               ? ToJsonString(msg.params["data"])
                               : std::string());
        return;
      }
      if (callbacks_.on_notification) callbacks_.on_notification(msg.method);
      return;
    }
    case Message::Kind::kRequest: {
      // toolexec offers no client capabilities (roots, sampling,
      // elicitation); it answers ping.
      std::string reply;
      if (msg.method == "ping") {
        reply = BuildResult(msg.id, Json(rapidjson::kObjectType));
      } else {
        reply = BuildError(msg.id, kMethodNotFound,
                           absl::StrCat("toolexec does not support ", msg.method));
      }
      (void)transport_->Send(reply, absl::Now() + absl::Seconds(5));
      return;
    }
  }
}

void Connection::FailAll(const absl::Status& why) {
  std::map<int64_t, std::shared_ptr<Pending>> pending;
  {
    absl::MutexLock lock(&mu_);
    pending.swap(pending_);
  }
  for (auto& [id, p] : pending) {
    absl::MutexLock lock(&p->mu);
    if (p->done) continue;
    p->result = why;
    p->done = true;
    p->cv.SignalAll();
  }
}

void Connection::OnClosed(absl::Status why) {
  absl::Status failure = absl::UnavailableError(absl::StrCat(
      "MCP server '", server_name_, "' is unavailable: ",
      why.ok() ? "its connection was closed" : why.message()));
  bool notify;
  {
    absl::MutexLock lock(&mu_);
    if (closed_.ok()) closed_ = failure;
    notify = !close_called_;
    if (notify && !why.ok()) end_reason_ = std::string(why.message());
  }
  FailAll(failure);
  if (notify && callbacks_.on_closed) callbacks_.on_closed(failure);
}

void Connection::Close() {
  {
    absl::MutexLock lock(&mu_);
    if (close_called_) return;
    close_called_ = true;
    if (closed_.ok()) {
      closed_ = absl::UnavailableError(
          absl::StrCat("MCP server '", server_name_, "' is unavailable: it is restarting"));
    }
  }
  transport_->Close();
  absl::Status why;
  {
    absl::MutexLock lock(&mu_);
    why = closed_;
  }
  FailAll(why);
}

std::string Connection::end_reason() const {
  absl::MutexLock lock(&mu_);
  return end_reason_;
}

bool Connection::closed() const {
  absl::MutexLock lock(&mu_);
  return !closed_.ok();
}

}  // namespace toolexec::mcp

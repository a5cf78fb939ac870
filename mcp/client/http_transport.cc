#include "mcp/client/http_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "spdlog/spdlog.h"
#include "tools/runtime/executor.h"

namespace toolexec::mcp {
namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// What one POST's (or the GET stream's) answer holds so far.
struct Answer {
  Answer(const std::atomic<bool>* closing, size_t max_bytes,
         std::function<void(absl::string_view)> deliver)
      : deliver(std::move(deliver)), closing(closing), max_bytes(max_bytes) {}
  std::function<void(absl::string_view)> deliver;
  // An event too long to read (its ends); set by the transfer's owner.
  std::function<void(const MessageEnds&)> too_long;
  const std::atomic<bool>* closing = nullptr;
  size_t max_bytes = 0;
  std::string content_type;
  std::string session_id;
  std::string body;  // a JSON answer (or an error's text)
  bool too_big = false;
  std::unique_ptr<SseParser> sse;
};

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Answer*>(user);
  absl::string_view line(data, size * n);
  size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    absl::string_view name = absl::StripAsciiWhitespace(line.substr(0, colon));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(colon + 1));
    if (absl::EqualsIgnoreCase(name, "content-type")) a->content_type = absl::AsciiStrToLower(value);
    if (absl::EqualsIgnoreCase(name, "mcp-session-id")) a->session_id = std::string(value);
  } else if (absl::StartsWith(line, "HTTP/")) {
    a->content_type.clear();  // a new response (after a redirect or 100)
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Answer*>(user);
  absl::string_view bytes(data, size * n);
  if (absl::StartsWith(a->content_type, "text/event-stream")) {
    if (a->sse == nullptr) {
      a->sse = std::make_unique<SseParser>(a->max_bytes, a->deliver, a->too_long);
    }
    a->sse->Feed(bytes);
  } else if (a->body.size() + bytes.size() <= a->max_bytes) {
    a->body.append(bytes.data(), bytes.size());
  } else {
    a->too_big = true;
    return 0;  // aborts the transfer
  }
  return size * n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<Answer*>(user)->closing->load() ? 1 : 0;
}

// What a POST and the GET stream share: where to, with which headers, and
// where the answer goes.
void SetUpTransfer(CURL* curl, const HttpOptions& options, curl_slist* headers, Answer* answer) {
  curl_easy_setopt(curl, CURLOPT_URL, options.url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, answer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, answer);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options.connect_timeout)));
  // libcurl's default, said here since a request written in two segments
  // on a kept connection would otherwise wait for the server's delayed ACK.
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  // A handle keeps one connection: the pool bounds them (HttpTransport).
  curl_easy_setopt(curl, CURLOPT_MAXCONNECTS, 1L);
}

// Transfer errors that mean the server cannot be reached any more.
bool ConnectionLost(CURLcode code) {
  switch (code) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

}  // namespace

void SseParser::Feed(absl::string_view bytes) {
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    absl::string_view piece = bytes.substr(0, newline);
    if (long_line_) {
      if (long_data_) ends_.Append(piece);
    } else if (line_.size() + piece.size() <= max_event_bytes_) {
      line_.append(piece.data(), piece.size());
    } else {
      // The event this line belongs to is dropped; the ends of its data are kept.
      too_long_ = true;
      long_line_ = true;
      absl::string_view start = line_;
      long_data_ = absl::ConsumePrefix(&start, "data:");
      if (long_data_) {
        absl::ConsumePrefix(&start, " ");
        if (ends_.bytes() == 0 && has_data_) ends_.Append(absl::StrCat(data_, "\n"));
        ends_.Append(start);
        ends_.Append(piece);
      }
      line_.clear();
    }
    if (newline == absl::string_view::npos) return;
    bytes.remove_prefix(newline + 1);
    if (long_line_) {
      long_line_ = false;
      continue;
    }
    absl::string_view line = line_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    Line(line);
    line_.clear();
  }
}

void SseParser::Line(absl::string_view line) {
  if (line.empty()) {  // the end of an event
    if (has_data_ && !too_long_) on_data_(data_);
    if (too_long_ && ends_.bytes() > 0 && on_too_long_) on_too_long_(ends_);
    ends_.Clear();
    data_.clear();
    has_data_ = false;
    too_long_ = false;
    return;
  }
  if (line.front() == ':') return;  // a comment (keep-alive)
  size_t colon = line.find(':');
  absl::string_view field = line.substr(0, colon);
  absl::string_view value = colon == absl::string_view::npos ? "" : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "id") {
    if (value.find('\0') == absl::string_view::npos) last_event_id_ = std::string(value);
    return;
  }
  if (field == "retry") {
    int64_t ms;
    if (!value.empty() && absl::ascii_isdigit(value.front()) && absl::SimpleAtoi(value, &ms)) {
      retry_ms_ = ms;
    }
    return;
  }
  if (field != "data") return;  // event
  if (too_long_ || data_.size() + value.size() + 1 > max_event_bytes_) {
    if (ends_.bytes() == 0) ends_.Append(data_);
    ends_.Append(absl::StrCat("\n", value));
    too_long_ = true;
    return;
  }
  if (has_data_) data_.push_back('\n');
  data_.append(value.data(), value.size());
  has_data_ = true;
}

HttpTransport::HttpTransport(HttpOptions options) : options_(std::move(options)) {
  if (options_.log == nullptr) options_.log = std::make_shared<ServerLog>(options_.server_name);
  GlobalInit();
}

absl::Status HttpTransport::Start(TransportCallbacks callbacks) {
  callbacks_ = std::move(callbacks);
  return absl::OkStatus();
}

void HttpTransport::SetProtocolVersion(const std::string& version) {
  absl::MutexLock lock(&mu_);
  protocol_version_ = version;
}

void HttpTransport::ReapWorkers() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if ((*it)->done.load()) {
      (*it)->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void HttpTransport::Deliver(absl::string_view text) {
  // An event without data primes the client for resumption: nothing to read.
  if (closing_.load() || ended_.load() || absl::StripAsciiWhitespace(text).empty()) return;
  auto msg = ParseMessage(text);
  if (!msg.ok()) {
    Unreadable(text, text,
               absl::StrCat("its message could not be read: ", msg.status().message()));
    return;
  }
  callbacks_.on_message(*std::move(msg));
}

bool HttpTransport::Unreadable(absl::string_view head, absl::string_view tail,
                               const std::string& why) {
  options_.log->Write("", why);
  auto answer = AnswerInPlaceOf(head, tail, why);
  if (!answer.has_value()) return false;
  if (!closing_.load() && !ended_.load()) callbacks_.on_message(*std::move(answer));
  return true;
}

std::string HttpTransport::TooLong(const MessageEnds& ends) const {
  return absl::StrCat("its message of ", ends.bytes(), " bytes is over the limit of ",
                      options_.max_message_bytes, " bytes");
}

void HttpTransport::Ended(absl::Status why) {
  if (ended_.exchange(true)) return;
  callbacks_.on_closed(std::move(why));
}

absl::Status HttpTransport::Send(const std::string& message, absl::Time deadline) {
  if (closing_.load() || ended_.load()) {
    return absl::UnavailableError(absl::StrCat("the HTTP session with ", options_.url, " ended"));
  }
  auto parsed = ParseMessage(message);
  if (!parsed.ok()) return parsed.status();
  if (parsed->kind != Message::Kind::kRequest) {
    Post(message, RequestId(), deadline);
    if (parsed->method == "notifications/initialized") StartListening();
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  ReapWorkers();
  auto worker = std::make_unique<Worker>();
  Worker* w = worker.get();
  RequestId id = parsed->id;
  auto thread = StartThread([this, w, message, id, deadline] {
    Post(message, id, deadline);
    w->done.store(true);
  });
  if (!thread.ok()) return thread.status();
  worker->thread = std::move(*thread);
  workers_.push_back(std::move(worker));
  return absl::OkStatus();
}

void* HttpTransport::TakeHandle() {
  {
    absl::MutexLock lock(&mu_);
    if (!idle_handles_.empty()) {
      CURL* curl = static_cast<CURL*>(idle_handles_.back());
      idle_handles_.pop_back();
      curl_easy_reset(curl);  // the options; its connection stays
      return curl;
    }
  }
  return curl_easy_init();
}

void HttpTransport::PutHandle(void* curl) {
  {
    absl::MutexLock lock(&mu_);
    if (!closing_.load() && idle_handles_.size() < kIdleHandles) {
      idle_handles_.push_back(curl);
      return;
    }
  }
  curl_easy_cleanup(static_cast<CURL*>(curl));
}

void HttpTransport::Post(const std::string& body, const RequestId& id, absl::Time deadline) {
  CURL* curl = static_cast<CURL*>(TakeHandle());
  if (curl == nullptr) return;
  struct curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(headers, "Accept: application/json, text/event-stream");
  headers = SessionHeaders(headers);
  Answer answer(&closing_, options_.max_message_bytes,
                [this](absl::string_view text) { Deliver(text); });
  // An answer too long to read fails its request now; when its id does not
  // show, the request this POST carries fails once the stream ends.
  std::string unread;
  answer.too_long = [this, &unread](const MessageEnds& ends) {
    std::string why = TooLong(ends);
    if (!Unreadable(ends.head(), ends.tail(), why)) unread = std::move(why);
  };
  SetUpTransfer(curl, options_, headers, &answer);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &answer);
  // The caller gives up at its deadline (and cancels); the transfer ends soon after.
  int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now()) + 1000;
  if (deadline != absl::InfiniteFuture()) {
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(std::max<int64_t>(ms, 1000)));
  }
  CURLcode code = curl_easy_perform(curl);
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  PutHandle(curl);
  if (closing_.load()) return;

  if (!answer.session_id.empty()) {
    absl::MutexLock lock(&mu_);
    if (session_id_.empty()) session_id_ = answer.session_id;
  }
  auto fail_request = [&](const std::string& text) {
    if (id.is_none()) {
      spdlog::warn("MCP server '{}': {}", options_.server_name, text);
      return;
    }
    Deliver(BuildError(id, kInternalError, text));
  };
  if (code != CURLE_OK) {
    std::string text = absl::StrCat("HTTP POST to ", options_.url, " failed: ",
                                    curl_easy_strerror(code));
    if (answer.too_big) {
      text = absl::StrCat("an answer from ", options_.url, " exceeded ",
                          options_.max_message_bytes, " bytes");
    }
    if (ConnectionLost(code)) {
      Ended(absl::UnavailableError(text));
    } else {
      fail_request(text);
    }
    return;
  }
  bool has_session;
  {
    absl::MutexLock lock(&mu_);
    has_session = !session_id_.empty();
  }
  if (status == 404 && has_session) {
    Ended(absl::UnavailableError(absl::StrCat("the server ended the MCP session (HTTP 404 from ",
                                              options_.url, ")")));
    return;
  }
  if (status < 200 || status >= 300) {
    // A JSON-RPC error in the body answers the request as it is.
    auto msg = ParseMessage(answer.body);
    if (msg.ok() && msg->kind == Message::Kind::kError && !id.is_none()) {
      Deliver(BuildError(id, msg->error.code, msg->error.message));
      return;
    }
    fail_request(absl::StrCat("HTTP ", status, " from ", options_.url, ": ",
                              answer.body.substr(0, 300)));
    return;
  }
  if (!absl::StartsWith(answer.content_type, "text/event-stream") && !answer.body.empty()) {
    Deliver(answer.body);
  }
  // (Ignored when the request was answered after all.)
  if (!unread.empty() && !id.is_none()) Deliver(BuildError(id, kInternalError, unread));
}

curl_slist* HttpTransport::SessionHeaders(curl_slist* headers) const {
  {
    absl::MutexLock lock(&mu_);
    if (!session_id_.empty()) {
      headers = curl_slist_append(headers, absl::StrCat("Mcp-Session-Id: ", session_id_).c_str());
    }
    if (!protocol_version_.empty()) {
      headers = curl_slist_append(
          headers, absl::StrCat("MCP-Protocol-Version: ", protocol_version_).c_str());
    }
  }
  for (const auto& [name, value] : options_.headers) {
    headers = curl_slist_append(headers, absl::StrCat(name, ": ", value).c_str());
  }
  return headers;
}

void HttpTransport::StartListening() {
  absl::MutexLock close_lock(&close_mu_);
  if (closing_.load() || ended_.load() || listener_.joinable()) return;
  auto thread = StartThread([this] { Listen(); });
  if (!thread.ok()) {
    spdlog::warn("MCP server '{}': no thread for the server's GET stream ({}); messages it "
                 "sends unprompted are missed",
                 options_.server_name, std::string(thread.status().message()));
    return;
  }
  listener_ = std::move(*thread);
}

void HttpTransport::Listen() {
  constexpr absl::Duration kFirstPause = absl::Seconds(1);
  constexpr absl::Duration kMaxPause = absl::Seconds(30);
  // A stream that ends sooner than this after it was asked for counts as a failure.
  constexpr absl::Duration kShortStream = absl::Seconds(5);
  absl::Duration failing = kFirstPause;  // the next pause after a failed open
  while (true) {
    absl::Duration pause;
    const absl::Time opened = absl::Now();
    switch (ListenOnce()) {
      case ListenEnd::kClosing:
        return;
      case ListenEnd::kNotOffered:
        spdlog::debug("MCP server '{}' offers no GET stream", options_.server_name);
        return;
      case ListenEnd::kEnded:  // the server ended a stream it had opened
        // Its "retry", within 1 s to 30 s ("retry: 0" is no reason to
        // hammer it); a stream that keeps ending at once is a failing one.
        pause = std::clamp(retry_ms_ >= 0 ? absl::Milliseconds(retry_ms_) : kFirstPause,
                           kFirstPause, kMaxPause);
        if (absl::Now() - opened < kShortStream) {
          pause = std::max(pause, failing);
          failing = std::min(failing * 2, kMaxPause);
        } else {
          failing = kFirstPause;
        }
        break;
      case ListenEnd::kFailed:
        pause = failing;
        failing = std::min(failing * 2, kMaxPause);
        break;
    }
    absl::MutexLock lock(&listen_mu_);
    const absl::Time until = absl::Now() + pause;
    while (!closing_.load() && !ended_.load()) {
      if (listen_cv_.WaitWithDeadline(&listen_mu_, until)) break;
    }
    if (closing_.load() || ended_.load()) return;
  }
}

HttpTransport::ListenEnd HttpTransport::ListenOnce() {
  CURL* curl = curl_easy_init();
  CURLM* multi = curl_multi_init();
  if (curl == nullptr || multi == nullptr) {
    if (curl != nullptr) curl_easy_cleanup(curl);
    if (multi != nullptr) curl_multi_cleanup(multi);
    return ListenEnd::kFailed;
  }
  curl_slist* headers = curl_slist_append(nullptr, "Accept: text/event-stream");
  if (!last_event_id_.empty()) {
    headers = curl_slist_append(headers, absl::StrCat("Last-Event-ID: ", last_event_id_).c_str());
  }
  headers = SessionHeaders(headers);
  Answer answer(&closing_, options_.max_message_bytes,
                [this](absl::string_view text) { Deliver(text); });
  answer.too_long = [this](const MessageEnds& ends) {
    Unreadable(ends.head(), ends.tail(), TooLong(ends));
  };
  SetUpTransfer(curl, options_, headers, &answer);
  curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  // An idle stream whose connection silently died is noticed, and reopened.
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, 10L);
  curl_multi_add_handle(multi, curl);
  {
    absl::MutexLock lock(&listen_mu_);
    listen_multi_ = multi;  // from now on Close() wakes the poll below
  }
  CURLcode code = CURLE_OK;
  bool opened = false;
  int running = 1;
  while (!closing_.load() && !ended_.load()) {
    if (curl_multi_perform(multi, &running) != CURLM_OK) break;
    if (!opened && absl::StartsWith(answer.content_type, "text/event-stream")) {
      long status = 0;
      curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
      if (status == 200) {
        opened = true;
        // What changed while no stream was open went nowhere: list again.
        Deliver(BuildNotification("notifications/tools/list_changed", nullptr));
      }
    }
    if (running == 0) break;
    curl_multi_poll(multi, nullptr, 0, 1000, nullptr);
  }
  {
    absl::MutexLock lock(&listen_mu_);
    listen_multi_ = nullptr;
  }
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
    if (m->msg == CURLMSG_DONE) code = m->data.result;
  }
  long status = 0;
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  if (answer.sse != nullptr) {
    if (!answer.sse->last_event_id().empty()) last_event_id_ = answer.sse->last_event_id();
    if (answer.sse->retry_ms() >= 0) retry_ms_ = answer.sse->retry_ms();
  }
  curl_multi_remove_handle(multi, curl);
  curl_multi_cleanup(multi);
  curl_easy_cleanup(curl);
  curl_slist_free_all(headers);
  if (closing_.load() || ended_.load()) return ListenEnd::kClosing;
  // 405 is how a server says it has no such stream; a 404 from one that
  // serves only POST means the same (an expired session shows on a POST).
  if (status == 405 || status == 404) return ListenEnd::kNotOffered;
  if (opened) return ListenEnd::kEnded;
  spdlog::debug("MCP server '{}': the GET stream did not open: {} (HTTP {})",
                options_.server_name, curl_easy_strerror(code), status);
  return ListenEnd::kFailed;
}

void HttpTransport::Close() {
  absl::MutexLock close_lock(&close_mu_);
  if (closing_.exchange(true)) return;
  {
    absl::MutexLock lock(&listen_mu_);
    if (listen_multi_ != nullptr) curl_multi_wakeup(static_cast<CURLM*>(listen_multi_));
    listen_cv_.SignalAll();
  }
  if (listener_.joinable()) listener_.join();
  std::list<std::unique_ptr<Worker>> workers;
  std::string session;
  {
    absl::MutexLock lock(&mu_);
    workers.swap(workers_);
    session = session_id_;
  }
  for (auto& w : workers) w->thread.join();
  std::vector<void*> idle;
  {
    absl::MutexLock lock(&mu_);
    idle.swap(idle_handles_);
  }
  // The DELETE goes on a kept connection, if there is one.
  CURL* kept = nullptr;
  if (!idle.empty()) {
    kept = static_cast<CURL*>(idle.back());
    idle.pop_back();
    curl_easy_reset(kept);
  }
  for (void* handle : idle) curl_easy_cleanup(static_cast<CURL*>(handle));
  if (!session.empty() && !ended_.load()) {
    // Ends the session on the server (best effort; 405 means it keeps none).
    CURL* curl = kept != nullptr ? kept : curl_easy_init();
    kept = nullptr;
    if (curl != nullptr) {
      struct curl_slist* headers = SessionHeaders(nullptr);
      curl_easy_setopt(curl, CURLOPT_URL, options_.url.c_str());
      curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "DELETE");
      curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
      curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 2000L);
      curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION,
                       +[](char*, size_t size, size_t n, void*) { return size * n; });
      (void)curl_easy_perform(curl);
      curl_slist_free_all(headers);
      curl_easy_cleanup(curl);
    }
  }
  if (kept != nullptr) curl_easy_cleanup(kept);
  if (!ended_.exchange(true) && callbacks_.on_closed) callbacks_.on_closed(absl::OkStatus());
}

}  // namespace toolexec::mcp

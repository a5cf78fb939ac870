// The streamable HTTP transport (libcurl): every message is a POST to the
// server's MCP endpoint with the config's headers, the Mcp-Session-Id the
// server assigned at initialize, and MCP-Protocol-Version once negotiated. A
// request's answer is one JSON body or a server-sent event stream carrying
// the server's progress and other messages before the response; both reach
// on_message as they arrive. A failed connection or an expired session (404)
// ends the transport (the server is then reconnected by its supervisor); any
// other HTTP error answers that request with a JSON-RPC error. Close() sends
// DELETE to end the session. Once the client has sent
// notifications/initialized, a GET holds a server-sent event stream open for
// the messages the server sends unprompted (tools/list_changed, logs). Each
// time it opens, the connection hears a tools/list_changed of the
// transport's own, since what changed while no stream was open is unknown.
// When the server ends it, it is opened again after the server's "retry" (or
// 1 s; kept within 1 s to 30 s), with the last event id it saw
// (Last-Event-ID); when it cannot be opened, or keeps ending within 5 s,
// after a pause that doubles from 1 s up to 30 s. A 405 or a 404 means
// the server offers none (an expired session shows on the next POST).
//
// Threads: one thread per request in flight (its POST may stream for as long
// as the call runs); notifications are posted on the caller's thread; one
// thread holds the GET stream. Close() aborts the transfers (the GET's at
// once, through curl_multi_wakeup) and joins the threads.
//
// Connections: a POST (and Close's DELETE) takes a libcurl handle from the
// transport's pool, or a new one when all are in use (concurrent requests),
// and puts it back after; a handle keeps its one connection open
// (HTTP/1.1 keep-alive), so sequential requests, and concurrent ones once
// they are done, reuse the same few connections instead of connecting for
// each. At most kIdleHandles wait in the pool; more are cleaned up, closing
// their connections. A connection the server has closed is noticed by
// libcurl before it is used, and a request it sent on one that died at that
// moment is sent again on a new one (libcurl's retry of a reused
// connection). Close() cleans up the pool.
#ifndef TOOLEXEC_MCP_CLIENT_HTTP_TRANSPORT_H_
#define TOOLEXEC_MCP_CLIENT_HTTP_TRANSPORT_H_

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "mcp/client/server_log.h"
#include "mcp/client/transport.h"

struct curl_slist;  // libcurl's header list

namespace toolexec::mcp {

struct HttpOptions {
  std::string server_name;
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  size_t max_message_bytes = 16 << 20;
  absl::Duration connect_timeout = absl::Seconds(10);
  std::shared_ptr<ServerLog> log;  // null: one of its own
};

// Splits a text/event-stream into events and hands each event's data (its
// "data:" lines joined with "\n") to `on_data`. "id:" and "retry:" are kept
// (for reconnecting); comments and "event:" are ignored. Memory is bounded by
// `max_event_bytes`: a longer event is dropped, and the ends of its data go to
// `on_too_long` (if set) when it ends.
class SseParser {
 public:
  SseParser(size_t max_event_bytes, std::function<void(absl::string_view data)> on_data,
            std::function<void(const MessageEnds&)> on_too_long = nullptr)
      : max_event_bytes_(max_event_bytes),
        on_data_(std::move(on_data)),
        on_too_long_(std::move(on_too_long)) {}
  void Feed(absl::string_view bytes);
  // The last event id the stream set ("" = none), and the reconnection time
  // it asked for (negative = none), in milliseconds.
  const std::string& last_event_id() const { return last_event_id_; }
  int64_t retry_ms() const { return retry_ms_; }

 private:
  void Line(absl::string_view line);
  size_t max_event_bytes_;
  std::string line_;
  std::function<void(absl::string_view)> on_data_;
  std::function<void(const MessageEnds&)> on_too_long_;
  std::string data_;
  bool has_data_ = false;
  bool too_long_ = false;   // the event is dropped
  bool long_line_ = false;  // inside a line over the limit (its data go to ends_)
  bool long_data_ = false;  // ... and it is a "data:" line
  MessageEnds ends_;        // of a dropped event's data
  std::string last_event_id_;
  int64_t retry_ms_ = -1;
};

class HttpTransport final : public Transport {
 public:
  // libcurl handles (with their connections) kept between requests.
  static constexpr size_t kIdleHandles = 8;

  explicit HttpTransport(HttpOptions options);
  ~HttpTransport() override { Close(); }

  absl::Status Start(TransportCallbacks callbacks) override;
  absl::Status Send(const std::string& message, absl::Time deadline) override;
  void Close() override;
  std::string Describe() const override { return options_.url; }
  void SetProtocolVersion(const std::string& version) override;

 private:
  struct Worker {
    std::thread thread;
    std::atomic<bool> done{false};
  };
  // One POST; messages in the answer go to on_message. `id` is the request's
  // (kNone for a notification or response).
  void Post(const std::string& body, const RequestId& id, absl::Time deadline);
  // The GET stream: Listen() runs on listener_ until Close(); ListenOnce()
  // holds one GET open until it ends and says how.
  enum class ListenEnd { kEnded, kFailed, kNotOffered, kClosing };
  void StartListening();
  void Listen();
  ListenEnd ListenOnce();
  // A handle for one transfer, reset: from the pool, or a new one (null if
  // libcurl cannot make one). PutHandle gives it back.
  void* TakeHandle();
  void PutHandle(void* curl);
  // Adds the session id, the protocol version and the config's headers.
  ::curl_slist* SessionHeaders(::curl_slist* headers) const;
  void Ended(absl::Status why);
  void ReapWorkers() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Deliver(absl::string_view text);
  // A message from the server that cannot be read (`why`, logged): when it
  // answers a request whose id shows in its `head` or `tail`, that request
  // fails now, saying why (true).
  bool Unreadable(absl::string_view head, absl::string_view tail, const std::string& why);
  // Why a message of these ends was dropped.
  std::string TooLong(const MessageEnds& ends) const;

  HttpOptions options_;  // set once, in the constructor
  TransportCallbacks callbacks_;
  std::atomic<bool> closing_{false};
  std::atomic<bool> ended_{false};
  absl::Mutex close_mu_;

  mutable absl::Mutex mu_;
  std::string session_id_ ABSL_GUARDED_BY(mu_);
  std::string protocol_version_ ABSL_GUARDED_BY(mu_);
  std::list<std::unique_ptr<Worker>> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<void*> idle_handles_ ABSL_GUARDED_BY(mu_);  // CURL*, each with its connection

  std::thread listener_ ABSL_GUARDED_BY(close_mu_);
  absl::Mutex listen_mu_;
  absl::CondVar listen_cv_;  // wakes the pause between GETs on Close
  void* listen_multi_ ABSL_GUARDED_BY(listen_mu_) = nullptr;  // the GET's CURLM*
  // The listener thread's own: what the last stream said for the next one.
  std::string last_event_id_;
  int64_t retry_ms_ = -1;
};

}  // namespace toolexec::mcp

#endif  // TOOLEXEC_MCP_CLIENT_HTTP_TRANSPORT_H_

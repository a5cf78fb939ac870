// Connection over an in-memory transport: the handshake, correlation,
// progress, cancellation and the transport's end, without a process.
#include "mcp/client/connection.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "mcp/client/http_transport.h"

namespace toolexec::mcp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A server scripted by the test: every message the client sends is recorded
// and passed to `respond`, which may answer through Deliver().
class FakeTransport final : public Transport {
 public:
  std::function<void(FakeTransport&, const Message&)> respond;

  absl::Status Start(TransportCallbacks callbacks) override {
    callbacks_ = std::move(callbacks);
    return absl::OkStatus();
  }
  absl::Status Send(const std::string& message, absl::Time) override {
    auto msg = ParseMessage(message);
    EXPECT_TRUE(msg.ok()) << message;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::UnavailableError("closed");
      sent_.push_back(message);
    }
    if (respond) respond(*this, *msg);
    return absl::OkStatus();
  }
  void Close() override {
    absl::MutexLock lock(&mu_);
    closed_ = true;
  }
  std::string Describe() const override { return "fake"; }

  // Delivers a message from the "server" on the calling thread.
  void Deliver(const std::string& text) { callbacks_.on_message(*ParseMessage(text)); }
  void End(absl::Status why) { callbacks_.on_closed(std::move(why)); }
  std::vector<std::string> sent() {
    absl::MutexLock lock(&mu_);
    return sent_;
  }

 private:
  TransportCallbacks callbacks_;
  absl::Mutex mu_;
  std::vector<std::string> sent_;
  bool closed_ = false;
};

std::string Reply(const Message& m, const std::string& result) {
  return R"({"jsonrpc":"2.0","id":)" + m.id.DebugString() + R"(,"result":)" + result + "}";
}

// Answers initialize with `version`.
void Handshake(FakeTransport& t, const Message& m, const std::string& version) {
  if (m.method == "initialize") {
    t.Deliver(Reply(m, R"({"protocolVersion":")" + version +
                           R"(","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1"}})"));
  }
}

TEST(ConnectionTest, HandshakeNegotiatesAndListsWithCursors) {
  auto transport = std::make_unique<FakeTransport>();
  FakeTransport* t = transport.get();
  t->respond = [](FakeTransport& t, const Message& m) {
    Handshake(t, m, "2025-06-18");
    if (m.method == "tools/list") {
      bool second = m.params.HasMember("cursor");
      t.Deliver(Reply(m, second ? R"({"tools":[{"name":"b"}]})"
                                : R"({"tools":[{"name":"a"}],"nextCursor":"p2"})"));
    }
  };
  Connection c("fake", std::move(transport));
  auto info = c.Open({}, absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->protocol_version, "2025-06-18");
  EXPECT_TRUE(info->tools_list_changed);
  auto tools = c.ListTools(absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(tools.ok()) << tools.status();
  ASSERT_EQ(tools->tools.size(), 2u);
  EXPECT_STREQ(tools->tools[1]["name"].GetString(), "b");
  EXPECT_EQ(tools->left_out, 0u);
  auto sent = t->sent();
  ASSERT_GE(sent.size(), 2u);
  EXPECT_THAT(sent[0], HasSubstr(R"("protocolVersion":"2025-11-25")"));
  EXPECT_EQ(sent[1], R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
}

// A listing keeps kMaxListedTools tools and kMaxListedBytes of them, in the
// server's order; the rest are counted, and only what is kept is held.
TEST(ConnectionTest, ListingsAreCappedInToolsAndBytes) {
  for (bool big : {false, true}) {
    SCOPED_TRACE(big ? "bytes" : "tools");
    auto transport = std::make_unique<FakeTransport>();
    transport->respond = [big](FakeTransport& t, const Message& m) {
      Handshake(t, m, "2025-06-18");
      if (m.method != "tools/list") return;
      // Three pages of 600 tools, or of 10 tools of 300 KB each.
      int page = m.params.HasMember("cursor") ? std::stoi(m.params["cursor"].GetString()) : 0;
      std::string tools;
      for (int i = 0; i < (big ? 10 : 600); ++i) {
        tools += (i ? "," : "") + std::string(R"({"name":"t)") + std::to_string(page * 1000 + i) +
                 R"(","description":")" + std::string(big ? 300000 : 1, 'x') + "\"}";
      }
      std::string next = page < 2 ? R"(,"nextCursor":")" + std::to_string(page + 1) + "\"" : "";
      t.Deliver(Reply(m, R"({"tools":[)" + tools + "]" + next + "}"));
    };
    Connection c("fake", std::move(transport));
    ASSERT_TRUE(c.Open({}, absl::Now() + absl::Seconds(5)).ok());
    auto listing = c.ListTools(absl::Now() + absl::Seconds(30), nullptr, [](const JsonValue& t) {
      return std::string(t["name"].GetString()) != "t1";  // a filter: never counted
    });
    ASSERT_TRUE(listing.ok()) << listing.status();
    const size_t kept = big ? 3 : kMaxListedTools;  // 3 x 300 KB fit in 1 MiB
    EXPECT_EQ(listing->tools.size(), kept);
    EXPECT_EQ(listing->left_out, (big ? 30u : 1800u) - 1 - kept);
    EXPECT_STREQ(listing->tools.back()["name"].GetString(), big ? "t3" : "t1400");
  }
}

TEST(ConnectionTest, RefusesAnUnknownProtocolVersion) {
  auto transport = std::make_unique<FakeTransport>();
  transport->respond = [](FakeTransport& t, const Message& m) { Handshake(t, m, "1999-01-01"); };
  Connection c("fake", std::move(transport));
  auto info = c.Open({}, absl::Now() + absl::Seconds(5));
  ASSERT_FALSE(info.ok());
  EXPECT_THAT(info.status().message(), HasSubstr("1999-01-01"));
}

TEST(ConnectionTest, ProgressThenResultAndErrors) {
  auto transport = std::make_unique<FakeTransport>();
  transport->respond = [](FakeTransport& t, const Message& m) {
    Handshake(t, m, "2025-11-25");
    if (m.method == "tools/call") {
      int64_t token = m.params["_meta"]["progressToken"].GetInt64();
      std::string p = R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":)" +
                      std::to_string(token);
      // In order, from one thread, as a stream would carry them.
      std::string reply = Reply(m, R"({"content":[]})");
      std::thread([&t, p, reply] {
        t.Deliver(p + R"(,"progress":1,"total":2}})");
        absl::SleepFor(absl::Milliseconds(20));
        t.Deliver(p + R"(,"progress":2,"message":"halfway"}})");
        absl::SleepFor(absl::Milliseconds(20));
        t.Deliver(reply);
      }).detach();
    }
    if (m.method == "bad") {
      t.Deliver(R"({"jsonrpc":"2.0","id":)" + m.id.DebugString() +
                R"(,"error":{"code":-32602,"message":"no such tool"}})");
    }
  };
  Connection c("fake", std::move(transport));
  ASSERT_TRUE(c.Open({}, absl::Now() + absl::Seconds(5)).ok());
  std::vector<std::string> progress;
  absl::Mutex mu;
  auto r = c.Request("tools/call", Json(rapidjson::kObjectType), absl::Now() + absl::Seconds(5),
                     nullptr, [&](absl::string_view text) {
                       absl::MutexLock lock(&mu);
                       progress.emplace_back(text);
                     });
  ASSERT_TRUE(r.ok()) << r.status();
  absl::MutexLock lock(&mu);
  EXPECT_THAT(progress, ElementsAre("1/2", "halfway"));
  auto bad = c.Request("bad", Json(rapidjson::kObjectType), absl::Now() + absl::Seconds(5));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("no such tool"));
}

TEST(ConnectionTest, CancellationSendsNotificationsCancelled) {
  auto transport = std::make_unique<FakeTransport>();
  FakeTransport* t = transport.get();
  transport->respond = [](FakeTransport& t, const Message& m) { Handshake(t, m, "2025-11-25"); };
  Connection c("fake", std::move(transport));
  ASSERT_TRUE(c.Open({}, absl::Now() + absl::Seconds(5)).ok());
  CancellationToken token;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(50));
    token.Cancel(CancelReason::kCancelled);
  });
  auto r = c.Request("tools/call", Json(rapidjson::kObjectType), absl::Now() + absl::Seconds(30),
                     &token);
  canceller.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  auto sent = t->sent();
  ASSERT_FALSE(sent.empty());
  auto last = ParseMessage(sent.back());
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->method, "notifications/cancelled");
  auto call = ParseMessage(sent[sent.size() - 2]);
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(last->params["requestId"].GetInt64(), call->id.number());

  // A deadline cancels too.
  auto late = c.Request("tools/call", Json(rapidjson::kObjectType),
                        absl::Now() + absl::Milliseconds(50));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(t->sent().back(), HasSubstr("notifications/cancelled"));
}

TEST(ConnectionTest, TheTransportsEndFailsWaitingRequestsUnavailable) {
  auto transport = std::make_unique<FakeTransport>();
  FakeTransport* t = transport.get();
  transport->respond = [](FakeTransport& t, const Message& m) { Handshake(t, m, "2025-11-25"); };
  Connection c("fake", std::move(transport));
  absl::Notification closed;
  Connection::Callbacks callbacks;
  callbacks.on_closed = [&](absl::Status) { closed.Notify(); };
  ASSERT_TRUE(c.Open(std::move(callbacks), absl::Now() + absl::Seconds(5)).ok());
  std::thread ender([&] {
    absl::SleepFor(absl::Milliseconds(50));
    t->End(absl::UnavailableError("the MCP server process exited with code 3"));
  });
  auto r = c.Request("tools/call", Json(rapidjson::kObjectType), absl::Now() + absl::Seconds(30));
  ender.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("MCP server 'fake' is unavailable"));
  EXPECT_THAT(r.status().message(), HasSubstr("exited with code 3"));
  EXPECT_TRUE(closed.HasBeenNotified());
  EXPECT_EQ(c.end_reason(), "the MCP server process exited with code 3");
  // And later requests fail at once.
  EXPECT_EQ(c.Request("x", Json(rapidjson::kObjectType), absl::Now() + absl::Seconds(30)).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(SseParserTest, EventsAcrossChunks) {
  std::vector<std::string> events;
  SseParser p(100, [&](absl::string_view d) { events.emplace_back(d); });
  p.Feed("id: 1\r\nevent: message\r\ndata: {\"a\"");
  p.Feed(":1}\r\n\r\n: keep-alive\n\ndata:x\ndata: y\n\n");
  p.Feed("id: 2\n\n");  // an event without data is nothing
  p.Feed("data: " + std::string(200, 'z') + "\n\ndata: ok\n\n");  // too long: dropped
  EXPECT_THAT(events, ElementsAre("{\"a\":1}", "x\ny", "ok"));
  EXPECT_EQ(p.last_event_id(), "2");
  EXPECT_EQ(p.retry_ms(), -1);
}

// What a reconnecting client needs: the last id the stream set and the
// reconnection time it asked for (digits only).
TEST(SseParserTest, KeepsTheLastIdAndRetry) {
  SseParser p(100, [](absl::string_view) {});
  p.Feed("retry: 2500\nid: ev-7\ndata: x\n\nretry: soon\n\n");
  EXPECT_EQ(p.last_event_id(), "ev-7");
  EXPECT_EQ(p.retry_ms(), 2500);
}

// An event too long to keep goes to on_too_long with the ends of its data.
TEST(SseParserTest, ATooLongEventReportsItsEnds) {
  std::vector<std::string> events;
  size_t too_long = 0;
  std::string head;
  SseParser p(
      1000, [&](absl::string_view d) { events.emplace_back(d); },
      [&](const MessageEnds& ends) {
        too_long = ends.bytes();
        head = std::string(ends.head().substr(0, 30));
      });
  const std::string data = R"({"jsonrpc":"2.0","id":5,"result":")" + std::string(5000, 'r') + "\"}";
  const std::string stream = "event: message\ndata: " + data + "\n\ndata: ok\n\n";
  for (size_t i = 0; i < stream.size(); i += 700) p.Feed(stream.substr(i, 700));
  EXPECT_THAT(events, ElementsAre("ok"));
  EXPECT_EQ(too_long, data.size());
  EXPECT_EQ(head, data.substr(0, 30));
}

}  // namespace
}  // namespace toolexec::mcp

#include "mcp/protocol/jsonrpc.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace toolexec::mcp {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ParseMessageTest, Request) {
  auto msg = ParseMessage(R"({"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"cursor":"c"}})");
  ASSERT_TRUE(msg.ok()) << msg.status();
  EXPECT_EQ(msg->kind, Message::Kind::kRequest);
  EXPECT_EQ(msg->id, RequestId(7));
  EXPECT_EQ(msg->method, "tools/list");
  EXPECT_STREQ(msg->params["cursor"].GetString(), "c");
}

TEST(ParseMessageTest, StringAndNumberIdsDiffer) {
  auto a = ParseMessage(R"({"jsonrpc":"2.0","id":"7","result":{}})");
  auto b = ParseMessage(R"({"jsonrpc":"2.0","id":7,"result":{}})");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->id, b->id);
  EXPECT_NE(a->id.Key(), b->id.Key());
  EXPECT_EQ(a->id.DebugString(), "\"7\"");
}

TEST(ParseMessageTest, Notification) {
  auto msg = ParseMessage(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})");
  ASSERT_TRUE(msg.ok()) << msg.status();
  EXPECT_EQ(msg->kind, Message::Kind::kNotification);
  EXPECT_TRUE(msg->params.IsNull());
}

TEST(ParseMessageTest, ResultAndError) {
  auto ok = ParseMessage(R"({"jsonrpc":"2.0","id":1,"result":{"tools":[]}})");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->kind, Message::Kind::kResult);
  EXPECT_TRUE(ok->result["tools"].IsArray());

  auto err = ParseMessage(
      R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":[1]}})");
  ASSERT_TRUE(err.ok()) << err.status();
  EXPECT_EQ(err->kind, Message::Kind::kError);
  EXPECT_TRUE(err->id.is_none());
  EXPECT_EQ(err->error.code, kParseError);
  EXPECT_EQ(err->error.message, "Parse error");
  EXPECT_TRUE(err->error.data.IsArray());
  absl::Status status = RpcErrorStatus(err->error, "tools/call");
  EXPECT_THAT(status.message(), HasSubstr("tools/call: Parse error (JSON-RPC error -32700)"));
}

TEST(ParseMessageTest, RejectsMalformed) {
  const char* bad[] = {
      "not json",
      "[]",
      R"([{"jsonrpc":"2.0","method":"x"}])",
      R"("text")",
      R"({"id":1,"method":"x"})",
      R"({"jsonrpc":"1.0","id":1,"method":"x"})",
      R"({"jsonrpc":"2.0","id":1.5,"method":"x"})",
      R"({"jsonrpc":"2.0","id":{},"method":"x"})",
      R"({"jsonrpc":"2.0","id":1,"method":3})",
      R"({"jsonrpc":"2.0","id":1,"method":"x","params":3})",
      R"({"jsonrpc":"2.0","id":1})",
      R"({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}})",
      R"({"jsonrpc":"2.0","result":{}})",
      R"({"jsonrpc":"2.0","id":1,"error":{"message":"m"}})",
      R"({"jsonrpc":"2.0","id":1,"error":{"code":1}})",
      R"({"jsonrpc":"2.0","id":1,"error":"boom"})",
  };
  for (const char* text : bad) {
    auto msg = ParseMessage(text);
    EXPECT_FALSE(msg.ok()) << text;
    if (!msg.ok()) {
      EXPECT_EQ(msg.status().code(), absl::StatusCode::kInvalidArgument) << text;
      EXPECT_THAT(msg.status().message(), HasSubstr("invalid JSON-RPC message")) << text;
    }
  }
}

TEST(ParseMessageTest, DeepNestingIsRefusedNotCrashing) {
  std::string deep(100000, '[');
  auto msg = ParseMessage(R"({"jsonrpc":"2.0","method":"x","params":)" + deep);
  EXPECT_FALSE(msg.ok());
}

TEST(BuildTest, RoundTrips) {
  Json params = *ParseJson(R"({"name":"echo","arguments":{"message":"hi\nthere"}})");
  std::string request = BuildRequest(RequestId(3), "tools/call", &params);
  EXPECT_EQ(request.find('\n'), std::string::npos);  // newline framing stays intact
  auto parsed = ParseMessage(request);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->kind, Message::Kind::kRequest);
  EXPECT_EQ(parsed->id, RequestId(3));
  EXPECT_EQ(ToJsonString(parsed->params), ToJsonString(params));

  EXPECT_EQ(BuildNotification("notifications/initialized", nullptr),
            R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  Json result = *ParseJson(R"({"ok":true})");
  EXPECT_EQ(BuildResult(RequestId("a"), result), R"({"jsonrpc":"2.0","id":"a","result":{"ok":true}})");
  Json first = *ParseJson(R"({"name":"a"})");
  Json second = *ParseJson(R"({"name":"b","n":[1,2.5]})");
  EXPECT_EQ(BuildListResult(RequestId(4), "tools", {&first, &second}),
            R"({"jsonrpc":"2.0","id":4,"result":{"tools":[{"name":"a"},{"name":"b","n":[1,2.5]}]}})");
  EXPECT_EQ(BuildListResult(RequestId(), "tools", {}),
            R"({"jsonrpc":"2.0","id":null,"result":{"tools":[]}})");
  EXPECT_EQ(BuildError(RequestId(), kInvalidRequest, "bad"),
            R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}})");
  Json data = *ParseJson(R"({"why":1})");
  auto error = ParseMessage(BuildError(RequestId(9), kMethodNotFound, "no such method", &data));
  ASSERT_TRUE(error.ok()) << error.status();
  EXPECT_EQ(error->error.code, kMethodNotFound);
  EXPECT_EQ(ToJsonString(error->error.data), R"({"why":1})");
  EXPECT_EQ(RpcErrorStatus(error->error, "x").code(), absl::StatusCode::kNotFound);
}

std::vector<std::string> FeedAll(LineFramer& framer, const std::vector<std::string>& chunks,
                                 int* dropped_reports) {
  std::vector<std::string> lines;
  for (const std::string& chunk : chunks) {
    absl::Status s = framer.Feed(chunk, [&](absl::string_view l) { lines.emplace_back(l); });
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
      ++*dropped_reports;
    }
  }
  return lines;
}

TEST(LineFramerTest, SplitsAcrossChunksAndDropsCarriageReturns) {
  LineFramer framer(100);
  int dropped = 0;
  auto lines = FeedAll(framer, {"{\"a\":", "1}\r\n\n{\"b\"", ":2}\n{\"c\":3}"}, &dropped);
  EXPECT_THAT(lines, ElementsAre("{\"a\":1}", "{\"b\":2}"));
  EXPECT_EQ(framer.buffered(), 7u);  // the incomplete last line waits
  EXPECT_EQ(dropped, 0);
}

TEST(LineFramerTest, DropsAnOversizedLineWithBoundedMemoryAndResyncs) {
  LineFramer framer(10);
  int dropped = 0;
  auto lines = FeedAll(framer, {"0123456789\n", "abcdefgh", "ijklmnop", std::string(1000, 'x'),
                                "tail\nok\n", "0123456789\r\n"},
                       &dropped);
  EXPECT_THAT(lines, ElementsAre("0123456789", "ok", "0123456789"));
  EXPECT_EQ(dropped, 1);
  EXPECT_EQ(framer.buffered(), 0u);
  // While discarding, nothing piles up.
  LineFramer big(10);
  ASSERT_FALSE(big.Feed(std::string(5000, 'y') + "\n", [](absl::string_view) {}).ok());
  (void)big.Feed(std::string(5000, 'y'), [](absl::string_view) {});
  EXPECT_EQ(big.buffered(), 0u);
}

TEST(LineFramerTest, ExactLimitWithCarriageReturnIsKept) {
  LineFramer framer(3);
  int dropped = 0;
  auto lines = FeedAll(framer, {"abc\r", "\nabcd\n"}, &dropped);
  EXPECT_THAT(lines, ElementsAre("abc"));
  EXPECT_EQ(dropped, 1);
}

// A message that cannot be read answers its request with an error at once
// when its id shows: first among its members (Python's SDK) or last (the
// TypeScript SDK writes {"result":...,"jsonrpc":"2.0","id":7}).
TEST(AnswerInPlaceOfTest, FindsTheIdAtEitherEnd) {
  const std::string big(200000, 'x');
  auto first = AnswerInPlaceOf(R"({"jsonrpc":"2.0","id":7,"result":{"text":")" + big.substr(0, 100),
                               "", "too long");
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->kind, Message::Kind::kError);
  EXPECT_EQ(first->id, RequestId(7));
  EXPECT_EQ(first->error.message, "too long");
  auto last = AnswerInPlaceOf(R"({"result":{"text":")" + big.substr(0, 100),
                              "xxx\"}},\"jsonrpc\":\"2.0\", \"id\" : \"a\\\"b\" }\n", "too long");
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->id, RequestId(std::string("a\"b")));
  // The whole text, nested too deep: the parse runs without recursion.
  std::string deep = R"({"jsonrpc":"2.0","id":9,"result":)" + std::string(100000, '[') +
                     std::string(100000, ']') + "}";
  auto nested = AnswerInPlaceOf(deep, deep, "too deep");
  ASSERT_TRUE(nested.has_value());
  EXPECT_EQ(nested->id, RequestId(9));
  // Not a response, or no id to be seen: nothing to answer.
  EXPECT_FALSE(AnswerInPlaceOf(R"({"jsonrpc":"2.0","id":3,"method":"sampling/x","params":{)", "",
                               "x").has_value());
  EXPECT_FALSE(AnswerInPlaceOf(R"({"jsonrpc":"2.0","method":"notifications/message","params":)",
                               R"("x"}})", "x").has_value());
  EXPECT_FALSE(AnswerInPlaceOf(R"({"result":{"a":{"id":4,)", R"("id":4}})", "x").has_value());
  EXPECT_FALSE(AnswerInPlaceOf("not json", "not json", "x").has_value());
}

// A head cut inside a multi-byte UTF-8 sequence is read up to its end and no
// further (fuzz/corpus/mcp_fuzzer/stdio_cut_utf8_sequence: read past the end
// under ASan before).
TEST(AnswerInPlaceOfTest, AHeadCutInsideACharacterIsReadToItsEnd) {
  for (const char* lead : {"\xc3", "\xe2\x82", "\xf0", "\xf0\x9f\x98"}) {
    const std::string head =
        std::string(R"({"jsonrpc":"2.0","id":5,"result":{"text":"aaaaaaaaaaaaaaaaaaaa)") + lead;
    auto answer = AnswerInPlaceOf(absl::string_view(head), "", "too long");
    ASSERT_TRUE(answer.has_value()) << head;
    EXPECT_EQ(answer->id, RequestId(5));
  }
}

TEST(LineFramerTest, AnOversizedLineReportsItsEnds) {
  LineFramer framer(1000);
  std::vector<std::string> lines;
  size_t dropped = 0;
  std::string head, tail;
  auto on_line = [&](absl::string_view l) { lines.emplace_back(l); };
  auto on_dropped = [&](const MessageEnds& ends) {
    dropped = ends.bytes();
    head = std::string(ends.head());
    tail = std::string(ends.tail());
  };
  const std::string line =
      R"({"jsonrpc":"2.0","id":5,"result":")" + std::string(300000, 'r') + "\"}";
  for (size_t i = 0; i < line.size(); i += 4096) {
    EXPECT_TRUE(framer.Feed(line.substr(i, 4096), on_line, on_dropped).ok());
  }
  EXPECT_FALSE(framer.Feed("\nok\n", on_line, on_dropped).ok());
  EXPECT_THAT(lines, ElementsAre("ok"));
  EXPECT_EQ(dropped, line.size());
  EXPECT_EQ(head, line.substr(0, MessageEnds::kKeep));
  EXPECT_EQ(tail, line.substr(line.size() - MessageEnds::kKeep));
  EXPECT_LE(framer.buffered(), 1000u);
}

}  // namespace
}  // namespace toolexec::mcp

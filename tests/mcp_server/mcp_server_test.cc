// The MCP serving seam without processes: `toolexec mcp`'s mappings of the
// wire (a ToolDeclaration as an MCP Tool, a ToolResult as an McpCallResult),
// the engine's result as an McpCallResult, version negotiation, and the
// dispatcher's answers against a source without a daemon.
#include "client/mcp_server.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "google/protobuf/util/json_util.h"
#include "tools/runtime/call_result.h"
#include "tools/runtime/utf8.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;

Json Parse(const std::string& text) {
  auto parsed = ParseJson(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.ok() ? *std::move(parsed) : Json();
}

v1::ToolResult ResultFromJson(const std::string& json) {
  v1::ToolResult result;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(json, &result).ok()) << json;
  return result;
}

TEST(McpProtocolVersion, ClientsVersionWhenServedElseTheNewest) {
  EXPECT_EQ(NegotiateMcpProtocolVersion("2024-11-05"), "2024-11-05");
  EXPECT_EQ(NegotiateMcpProtocolVersion("2025-06-18"), "2025-06-18");
  EXPECT_EQ(NegotiateMcpProtocolVersion("2025-11-25"), "2025-11-25");
  EXPECT_EQ(NegotiateMcpProtocolVersion("2099-01-01"), "2025-11-25");
  EXPECT_EQ(NegotiateMcpProtocolVersion(""), "2025-11-25");
}

TEST(McpToolFromDeclaration, SchemaAsDeclaredAndAnnotationsFromTags) {
  v1::ToolDeclaration tool;
  tool.set_name("edit_file");
  tool.set_description("Edits a file.");
  tool.set_display_name("Edit file");
  tool.set_parameters_json(R"({"type":"object","properties":{"b":{"type":"string"},"a":{}}})");
  tool.add_tags("destructive");
  Json mcp = McpToolFromDeclaration(tool);
  EXPECT_EQ(ToJsonString(mcp),
            R"({"name":"edit_file","title":"Edit file","description":"Edits a file.",)"
            R"("inputSchema":{"type":"object","properties":{"b":{"type":"string"},"a":{}}},)"
            R"("annotations":{"readOnlyHint":false,"destructiveHint":true}})");

  v1::ToolDeclaration reader;
  reader.set_name("view_file");
  reader.set_display_name("view_file");
  reader.set_read_only(true);
  reader.add_tags("read_only");
  // No parameters_json: the Struct; no "type": MCP needs an object schema.
  (*reader.mutable_parameters()->mutable_fields())["properties"].mutable_struct_value();
  Json r = McpToolFromDeclaration(reader);
  EXPECT_FALSE(r.HasMember("title"));
  EXPECT_EQ(ToJsonString(r["inputSchema"]), R"({"properties":{},"type":"object"})");
  EXPECT_EQ(ToJsonString(r["annotations"]), R"({"readOnlyHint":true})");

  v1::ToolDeclaration plain;  // neither read-only nor tagged destructive
  plain.set_name("get_weather");
  EXPECT_EQ(ToJsonString(McpToolFromDeclaration(plain)["annotations"]),
            R"({"readOnlyHint":false,"destructiveHint":false})");
}

TEST(McpCallResultFromToolResult, TheWiresResultInMcpsTerms) {
  McpCallResult ok = McpCallResultFromToolResult(
      ResultFromJson(R"({"name":"view_file","status":"RESULT_STATUS_SUCCESS",)"
                     R"("payload":{"total_lines":2},"model_content":"1\tfirst\n2\tsecond"})"),
      false);
  EXPECT_EQ(ok.name, "view_file");
  EXPECT_FALSE(ok.unknown_tool.has_value());
  EXPECT_FALSE(ok.is_error);
  EXPECT_EQ(ToJsonString(ok.payload), R"({"total_lines":2})");
  EXPECT_EQ(ok.model_content, "1\tfirst\n2\tsecond");
  EXPECT_FALSE(ok.ask_denied);

  for (const char* status : {"RESULT_STATUS_ERROR", "RESULT_STATUS_TIMEOUT",
                             "RESULT_STATUS_CANCELLED", "RESULT_STATUS_DENIED"}) {
    McpCallResult failed = McpCallResultFromToolResult(
        ResultFromJson(absl::StrCat(R"({"status":")", status,
                                    R"(","payload":{"error":"boom"},"error_message":"boom"})")),
        true);
    EXPECT_TRUE(failed.is_error) << status;
    EXPECT_EQ(ToJsonString(failed.payload), R"({"error":"boom"})");
    // Only a denial is the ask's.
    EXPECT_EQ(failed.ask_denied, absl::string_view(status) == "RESULT_STATUS_DENIED") << status;
  }

  McpCallResult unknown = McpCallResultFromToolResult(
      ResultFromJson(R"({"status":"RESULT_STATUS_ERROR","error_message":"unknown tool 'x'",)"
                     R"("exception":{"code":"ERROR_CODE_UNKNOWN_TOOL"}})"),
      false);
  EXPECT_EQ(unknown.unknown_tool, "unknown tool 'x'");
}

TEST(McpCallResultOf, TheEnginesResultMovedAndMadeUtf8) {
  ToolCallResult r;
  r.name = "cat";
  r.payload = Parse(R"({"text":"ok","lines":["fine"]})");
  // Bytes a tool may leave in its result: not UTF-8.
  r.payload["text"].SetString("a\xff", r.payload.GetAllocator());
  r.payload["lines"][0].SetString("\xc0!", r.payload.GetAllocator());
  r.model_content = "x\xfe";
  McpCallResult out = McpCallResultOf(std::move(r), false);
  EXPECT_EQ(out.name, "cat");
  EXPECT_FALSE(out.is_error);
  EXPECT_EQ(ToJsonString(out.payload), "{\"text\":\"a\xEF\xBF\xBD\",\"lines\":[\"\xEF\xBF\xBD!\"]}");
  EXPECT_EQ(out.model_content, "x\xEF\xBF\xBD");

  ToolCallResult unknown;
  SetFailure(unknown, ErrorCode::kUnknownTool, "nope", "", "nope", "unknown tool 'nope'", 1000);
  EXPECT_EQ(McpCallResultOf(std::move(unknown), false).unknown_tool, "unknown tool 'nope'");

  ToolCallResult denied;
  SetFailure(denied, ErrorCode::kDenied, "cat", "", "cat", "Permission denied by user", 1000);
  McpCallResult d = McpCallResultOf(std::move(denied), true);
  EXPECT_TRUE(d.is_error);
  EXPECT_TRUE(d.ask_denied);
}

// Requests answered without the daemon: the client is never used.
class McpServerMessages : public ::testing::Test {
 protected:
  McpServerMessages()
      : server_(nullptr, {"", "", "9.9"},
                [this](absl::string_view m) { sent_.push_back(Parse(std::string(m))); }) {}
  McpStdioServer server_;
  std::vector<Json> sent_;
};

TEST_F(McpServerMessages, InitializePingUnknownMethodAndParseError) {
  server_.HandleLine(
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}})");
  server_.HandleLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  server_.HandleLine(R"({"jsonrpc":"2.0","id":"p","method":"ping"})");
  server_.HandleLine(R"({"jsonrpc":"2.0","id":3,"method":"prompts/list"})");
  server_.HandleLine(R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}})");
  server_.HandleLine("{oops");
  ASSERT_EQ(sent_.size(), 5u);
  EXPECT_EQ(ToJsonString(sent_[0]),
            R"({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26",)"
            R"("capabilities":{"tools":{"listChanged":false}},)"
            R"("serverInfo":{"name":"toolexec","version":"9.9"}}})");
  EXPECT_EQ(ToJsonString(sent_[1]), R"({"jsonrpc":"2.0","id":"p","result":{}})");
  EXPECT_EQ(sent_[2]["error"]["code"].GetInt(), -32601);
  EXPECT_EQ(sent_[3]["error"]["code"].GetInt(), -32602);
  EXPECT_EQ(sent_[4]["error"]["code"].GetInt(), -32700);
  EXPECT_TRUE(sent_[4]["id"].IsNull());
}

// A daemon that never answers: a socket that listens but never accepts (the
// kernel completes the connection, nobody speaks HTTP/2), so every call
// stays in flight until it is cancelled.
class SilentDaemon {
 public:
  SilentDaemon() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    EXPECT_EQ(getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    target_ = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  }
  ~SilentDaemon() { close(fd_); }
  const std::string& target() const { return target_; }

 private:
  int fd_ = -1;
  std::string target_;
};

std::string CallLine(int id) {
  return absl::StrCat(R"({"jsonrpc":"2.0","id":)", id,
                      R"(,"method":"tools/call","params":{"name":"wait","arguments":{}}})");
}

TEST(McpServerCalls, InFlightCallsAreCappedCancelledAndJoined) {
  SilentDaemon daemon;
  std::unique_ptr<Client> client = Client::Create(daemon.target());
  absl::Mutex mu;
  std::vector<std::string> sent;
  McpStdioServer::Options options;
  options.max_calls_in_flight = 2;
  {
    McpStdioServer server(client.get(), options, [&](absl::string_view m) {
      absl::MutexLock lock(&mu);
      sent.emplace_back(m);
    });
    server.HandleLine(CallLine(1));
    server.HandleLine(CallLine(2));
    server.HandleLine(CallLine(3));  // over the cap: refused at once
    {
      absl::MutexLock lock(&mu);
      ASSERT_EQ(sent.size(), 1u);
      Json refused = Parse(sent[0]);
      EXPECT_EQ(refused["id"].GetInt(), 3);
      EXPECT_THAT(std::string(refused["error"]["message"].GetString()),
                  HasSubstr("too many tool calls in flight (2)"));
    }
    // MCP: a cancelled request gets no response; its slot is freed.
    server.HandleLine(
        R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})");
    // Shutdown cancels call 2 and joins both threads.
    server.Shutdown();
  }
  absl::MutexLock lock(&mu);
  EXPECT_EQ(sent.size(), 1u) << sent.back();
}

// The dispatcher both transports share, against a source without a daemon.
class FakeSource final : public McpToolSource {
 public:
  absl::StatusOr<std::vector<std::shared_ptr<const Json>>> ListTools() override {
    ++lists;
    return std::vector<std::shared_ptr<const Json>>{
        std::make_shared<const Json>(Parse(R"({"name":"echo","inputSchema":{"type":"object"}})")),
        std::make_shared<const Json>(Parse(R"({"name":"wait","inputSchema":{"type":"object"}})"))};
  }
  // "echo" answers at once after one progress text; "block" waits until
  // cancelled; "answer" ends as `answer` says.
  absl::StatusOr<McpCallResult> Call(McpCallSpec call,
                                     const std::function<void(const std::string&)>& progress,
                                     CallCancel* cancel) override {
    progress(progress_text);
    McpCallResult result;
    result.name = call.name;
    result.payload = MakeObject();
    if (call.name == "answer") return answer();
    if (call.name == "block") {
      absl::Notification cancelled;
      cancel->Arm([&cancelled] { cancelled.Notify(); });
      cancelled.WaitForNotification();
      cancel->Disarm();
      result.is_error = true;
      return result;
    }
    if (call.name == "late") {  // the result is in; then a cancel comes
      cancel->Arm([] {});
      cancel->Disarm();
      if (after_result) after_result();
    }
    result.model_content = absl::StrCat("echo ", call.id, " ", ToJsonString(call.args));
    return result;
  }
  std::function<McpCallResult()> answer;
  std::function<void()> after_result;
  std::string progress_text = "working";
  int lists = 0;
};

mcp::Message Message(const std::string& text) {
  auto m = mcp::ParseMessage(text);
  EXPECT_TRUE(m.ok()) << text;
  return *std::move(m);
}

TEST(McpDispatcher, ListsDaemonToolsCallsWithProgressAndCancelsWithoutAResponse) {
  FakeSource source;
  McpDispatcher dispatcher(&source, {"1", "", 8});
  std::vector<std::string> sent;
  auto send = [&sent](const std::string& m) { sent.push_back(m); };

  EXPECT_EQ(dispatcher.Handle(Message(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})"), send),
            nullptr);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0], R"({"jsonrpc":"2.0","id":1,"result":{"tools":[)"
                     R"({"name":"echo","inputSchema":{"type":"object"}},)"
                     R"({"name":"wait","inputSchema":{"type":"object"}}]}})");

  sent.clear();
  std::unique_ptr<McpCall> call = dispatcher.Handle(
      Message(R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo",)"
              R"("arguments":{"x":1},"_meta":{"progressToken":"t"}}})"),
      send);
  ASSERT_NE(call, nullptr);
  EXPECT_TRUE(call->wants_progress());
  // The id is reserved until the call is gone.
  EXPECT_EQ(dispatcher.Handle(
                Message(R"({"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo"}})"),
                send),
            nullptr);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_THAT(sent[0], HasSubstr("already in use"));
  sent.clear();
  EXPECT_TRUE(call->Run(send));
  call.reset();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(ToJsonString(Parse(sent[0])), R"({"jsonrpc":"2.0","method":"notifications/progress",)"
                                          R"("params":{"progressToken":"t","progress":1,"message":"working"}})");
  EXPECT_EQ(std::string(Parse(sent[1])["result"]["content"][0]["text"].GetString()),
            R"(echo "c" {"x":1})");
  EXPECT_EQ(dispatcher.calls_in_flight(), 0u);

  // Cancelled while it runs: no response at all (no progress token: no
  // progress either).
  sent.clear();
  call = dispatcher.Handle(
      Message(R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"block"}})"), send);
  ASSERT_NE(call, nullptr);
  std::thread runner([&] { EXPECT_FALSE(call->Run(send)); });
  dispatcher.Handle(
      Message(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}})"),
      send);
  runner.join();
  EXPECT_TRUE(sent.empty()) << sent.front();

  // A cancel that comes once the call has its result (a shutdown after the
  // drain) is too late: the response is still sent.
  sent.clear();
  source.after_result = [&dispatcher] {
    dispatcher.Handle(
        Message(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}})"),
        [](const std::string&) {});
  };
  call = dispatcher.Handle(
      Message(R"({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"late"}})"), send);
  ASSERT_NE(call, nullptr);
  EXPECT_TRUE(call->Run(send));
  call.reset();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_THAT(sent[0], HasSubstr(R"("id":6,"result")"));
  sent.clear();

  // Cancelled before it runs: the source is never called.
  call = dispatcher.Handle(
      Message(R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"block"}})"), send);
  dispatcher.CancelAll();
  EXPECT_FALSE(call->Run(send));
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(dispatcher.Handle(
                Message(R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo"}})"),
                send),
            nullptr);
  EXPECT_THAT(sent.at(0), HasSubstr("shutting down"));
}

// `toolexec mcp --tool_set`: a tool outside the set is refused before the
// daemon is asked to run it; the names listed are kept for later calls.
TEST(McpDispatcher, WithAToolSetOnlyTheToolsListedAreCalled) {
  FakeSource source;
  McpDispatcher dispatcher(&source, {"1", "files", 8});
  std::vector<std::string> sent;
  auto send = [&sent](const std::string& m) { sent.push_back(m); };
  EXPECT_EQ(dispatcher.Handle(Message(R"({"jsonrpc":"2.0","id":1,"method":"tools/call",)"
                                      R"("params":{"name":"run_command"}})"),
                              send),
            nullptr);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(Parse(sent[0])["error"]["code"].GetInt(), -32602);
  EXPECT_THAT(sent[0], HasSubstr("unknown tool 'run_command': it is not in the tool set 'files'"));
  std::unique_ptr<McpCall> call = dispatcher.Handle(
      Message(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}})"), send);
  EXPECT_NE(call, nullptr);
  EXPECT_EQ(source.lists, 1);
}

// A tool's progress holds the bytes its command printed; the notification is
// JSON, so it carries them as UTF-8 (each ill-formed part as U+FFFD).
TEST(McpDispatcher, ProgressOfBytesThatAreNotUtf8IsSentAsUtf8) {
  FakeSource source;
  source.progress_text = "out\xff\xe2\x82!";
  McpDispatcher dispatcher(&source, {"1", "", 8});
  std::vector<std::string> sent;
  auto send = [&sent](const std::string& m) { sent.push_back(m); };
  std::unique_ptr<McpCall> call = dispatcher.Handle(
      Message(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",)"
              R"("_meta":{"progressToken":"t"}}})"),
      send);
  ASSERT_NE(call, nullptr);
  EXPECT_TRUE(call->Run(send));
  ASSERT_EQ(sent.size(), 2u);
  ASSERT_TRUE(IsValidUtf8(sent[0])) << sent[0];
  EXPECT_EQ(std::string(Parse(sent[0])["params"]["message"].GetString()),
            "out\xEF\xBF\xBD\xEF\xBF\xBD!");
}

// The response to a tools/call of "answer", whose source ends it with
// `result`, from a dispatcher sending responses of `max_result_bytes` at most.
std::string AnswerTo(McpCallResult result,
                     size_t max_result_bytes = std::numeric_limits<size_t>::max()) {
  FakeSource source;
  source.answer = [&result] { return std::move(result); };
  McpDispatcher dispatcher(&source, {"1", "", 8, max_result_bytes});
  std::vector<std::string> sent;
  auto send = [&sent](const std::string& m) { sent.push_back(m); };
  std::unique_ptr<McpCall> call = dispatcher.Handle(
      Message(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"answer"}})"), send);
  EXPECT_NE(call, nullptr);
  if (call != nullptr) {
    EXPECT_TRUE(call->Run(send));
  }
  EXPECT_EQ(sent.size(), 1u);
  return sent.empty() ? "" : sent.back();
}

McpCallResult Ended(const char* payload, const char* model_content, bool is_error = false) {
  McpCallResult r;
  r.name = "view_file";
  r.payload = Parse(payload);
  r.model_content = model_content;
  r.is_error = is_error;
  return r;
}

TEST(McpDispatcher, AnswersACallsEndInMcpsTerms) {
  EXPECT_EQ(AnswerTo(Ended(R"({"total_lines":2})", "1\tfirst\n2\tsecond")),
            R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"1\tfirst\n2\tsecond"}],)"
            R"("structuredContent":{"total_lines":2}}})");
  // Without model_content the payload is the text.
  EXPECT_EQ(AnswerTo(Ended(R"({"result":42})", "")),
            R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"{\"result\":42}"}],)"
            R"("structuredContent":{"result":42}}})");
  // A failure is isError, without structuredContent.
  EXPECT_EQ(AnswerTo(Ended(R"({"error":"boom"})", "Error: boom", true)),
            R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Error: boom"}],)"
            R"("isError":true}})");
  // MCP: an unknown tool is a protocol error.
  McpCallResult unknown;
  unknown.unknown_tool = "unknown tool 'answer'";
  EXPECT_EQ(AnswerTo(std::move(unknown)),
            R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool 'answer'"}})");
}

TEST(McpDispatcher, ADeniedAskSaysNobodyCouldBeAsked) {
  McpCallResult denied = Ended(R"({"error":"x"})", "Error: Permission denied by user: x", true);
  denied.ask_denied = true;
  Json answer = Parse(AnswerTo(std::move(denied)));
  EXPECT_TRUE(answer["result"]["isError"].GetBool());
  EXPECT_FALSE(answer["result"].HasMember("structuredContent"));
  const std::string text = answer["result"]["content"][0]["text"].GetString();
  EXPECT_THAT(text, HasSubstr("the policy asks before view_file runs, and MCP clients cannot "
                              "answer permission requests"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("denied by user")));
}

TEST(McpDispatcher, AResponseOverTheLimitIsAFailureSayingSo) {
  const std::string fits = AnswerTo(Ended(R"({"total_lines":2})", "two lines"), 200);
  EXPECT_THAT(fits, HasSubstr("two lines"));
  Json answer = Parse(AnswerTo(Ended(R"({"total_lines":2})", std::string(300, 'x').c_str()), 200));
  EXPECT_TRUE(answer["result"]["isError"].GetBool());
  EXPECT_THAT(std::string(answer["result"]["content"][0]["text"].GetString()),
              HasSubstr("tool 'view_file' returned a result of "));
  EXPECT_THAT(std::string(answer["result"]["content"][0]["text"].GetString()),
              HasSubstr("bytes, over the limit of 200 bytes for one result"));
}

}  // namespace
}  // namespace toolexec

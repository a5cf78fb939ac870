// A real daemon on 127.0.0.1:0, driven through the client library: the gRPC
// adapter, the reactors, sessions, drain and the error contract ([Names and order] [Batches] [Failures are results] [Arguments] [Context] [Display]).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <grpcpp/generic/generic_stub.h>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "client/client.h"
#include "google/protobuf/util/json_util.h"
#include "server/daemon.h"
#include "spdlog/spdlog.h"
#include "tests/common/log_lines.h"
#include "tests/common/test_tools.h"

namespace toolexec {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::J;
using testing::MakeTool;

// Set by the "blocker" tool when its cancellation token trips.
std::atomic<int> g_blocker_cancelled{0};

absl::Status InstallTestTools(ToolRegistry& r) {
  auto add = [&](std::unique_ptr<Tool> t) { return r.Register(std::move(t), "test"); };
  if (auto s = add(MakeTool("throws", [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
        throw std::runtime_error("kaboom");
      }));
      !s.ok())
    return s;
  if (auto s = add(MakeTool(
          "notify",
          [](const JsonValue& a, ToolContext& ctx) -> absl::StatusOr<Json> {
            if (auto st = ctx.send(a["text"].GetString()); !st.ok()) return st;
            Json out = MakeObject();
            out.AddMember("idle", ctx.is_idle().value_or(false), out.GetAllocator());
            return out;
          },
          R"({"type":"object","properties":{"text":{"type":"string"}},"required":["text"]})",
          /*needs_context=*/true));
      !s.ok())
    return s;
  if (auto s = add(MakeTool("stubborn", [](const JsonValue&, ToolContext&) -> absl::StatusOr<Json> {
        absl::SleepFor(absl::Milliseconds(1500));  // ignores cancellation
        return Json();
      }));
      !s.ok())
    return s;
  return add(MakeTool("blocker", [](const JsonValue&, ToolContext& ctx) -> absl::StatusOr<Json> {
    if (ctx.cancellation().WaitFor(absl::Seconds(30))) {
      ++g_blocker_cancelled;
      return absl::CancelledError("cancelled");
    }
    return Json();
  }));
}

class DaemonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { spdlog::set_level(spdlog::level::warn); }

  void SetUp() override { StartDaemon({}); }
  void TearDown() override {
    if (daemon_) daemon_->Shutdown();
  }

  void StartDaemon(DaemonOptions options) {
    if (daemon_) daemon_->Shutdown();
    options.server.listen = options.server.listen == ServerOptions().listen ? "127.0.0.1:0" : options.server.listen;
    if (options.engine.workspace.empty()) {
      options.engine.workspace = std::filesystem::temp_directory_path().string();
    }
    options.tools.example_tools = true;
    auto d = Daemon::Create(options, InstallTestTools);
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = std::move(*d);
    ASSERT_TRUE(daemon_->Start().ok());
    client_ = Client::Create(daemon_->address());
  }

  static v1::ToolCall MakeCallOrDie(const std::string& id, const std::string& name,
                                    const std::string& args = "") {
    auto c = MakeCall(id, name, args);
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
  }

  v1::ExecuteBatchRequest Batch(std::vector<v1::ToolCall> calls, const std::string& session = "") {
    v1::ExecuteBatchRequest req;
    req.set_session_id(session);
    for (auto& c : calls) *req.add_calls() = std::move(c);
    return req;
  }

  std::vector<v1::ToolResult> Results(const v1::ExecuteBatchRequest& req) {
    auto r = client_->ExecuteBatchCollect(req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::vector<v1::ToolResult>{};
  }

  static std::string PayloadJson(const v1::ToolResult& r) {
    std::string out;
    (void)google::protobuf::util::MessageToJsonString(r.payload(), &out);
    return out;
  }

  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> client_;
};

TEST_F(DaemonTest, ListToolsInRegistrationOrder) {
  auto r = client_->ListTools({});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> names;
  for (const auto& t : r->tools()) names.push_back(t.name());
  // Built-ins, then the example tools, then the test's own [Names and order].
  EXPECT_THAT(names, ElementsAre("view_file", "create_file", "edit_file",
                                 "str_replace_based_edit_tool", "apply_patch", "list_directory",
                                 "find_file", "search_directory", "grep_search", "run_command",
                                 "command_status", "kill_command", "bash", "shell", "finish",
                                 "exit_loop",
                                 "load_artifacts", "get_weather", "counter", "check_inventory",
                                 "calculate_sum", "wait", "throws", "notify", "stubborn",
                                 "blocker"));
  const auto& weather = r->tools(17);
  EXPECT_EQ(weather.tool_type(), v1::TOOL_TYPE_API_CALL);
  EXPECT_TRUE(weather.read_only());
  EXPECT_EQ(weather.executor(), v1::EXECUTOR_DAEMON);
  EXPECT_EQ(weather.parameters().fields().at("type").string_value(), "object");
  EXPECT_TRUE(r->tools(16).needs_context());
  EXPECT_EQ(r->tools(0).tool_type(), v1::TOOL_TYPE_FILE_READ);
  EXPECT_EQ(r->tools(9).tool_type(), v1::TOOL_TYPE_BASH_CMD);
}

// The bytes of a ListTools response, as a harness receives them.
std::string ListToolsBytes(const std::string& address, v1::DeclarationFormat format) {
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  v1::ListToolsRequest request;
  request.set_format(format);
  std::string request_bytes = request.SerializeAsString();
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer in(&slice, 1), out;
  grpc::ClientContext context;
  absl::Notification done;
  grpc::Status status;
  stub.UnaryCall(&context, "/toolexec.v1.ToolExecutor/ListTools", grpc::StubOptions(), &in, &out,
                 [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  EXPECT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  (void)out.Dump(&slices);
  std::string bytes;
  for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return bytes;
}

// Provider prompt caches key on bytes: the declarations are the same bytes on
// every call and after a restart, and the schema text keeps its declared order.
TEST_F(DaemonTest, ListToolsBytesAreStableAcrossCallsAndRestarts) {
  for (auto format : {v1::DECLARATION_FORMAT_NATIVE, v1::DECLARATION_FORMAT_OPENAI_STRICT}) {
    const std::string first = ListToolsBytes(daemon_->address(), format);
    ASSERT_FALSE(first.empty());
    for (int i = 0; i < 19; ++i) EXPECT_EQ(ListToolsBytes(daemon_->address(), format), first);
    StartDaemon({});
    EXPECT_EQ(ListToolsBytes(daemon_->address(), format), first);
  }
  auto r = client_->ListTools({});
  ASSERT_TRUE(r.ok());
  const std::string& view = r->tools(0).parameters_json();
  EXPECT_LT(view.find("\"file_path\""), view.find("\"start_line\""));
  EXPECT_LT(view.find("\"start_line\""), view.find("\"end_line\""));
  EXPECT_TRUE(r->provider_tools_json().empty());
  v1::ListToolsRequest gemini;
  gemini.set_format(v1::DECLARATION_FORMAT_GEMINI);
  auto g = client_->ListTools(gemini);
  ASSERT_TRUE(g.ok());
  EXPECT_THAT(g->provider_tools_json(), HasSubstr(R"({"name":"view_file","description":)"));
  gemini.set_format(static_cast<v1::DeclarationFormat>(42));
  EXPECT_EQ(client_->ListTools(gemini).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DaemonTest, ListToolsRejectsUnknownSet) {
  v1::ListToolsRequest req;
  req.set_tool_set("everything");
  auto r = client_->ListTools(req);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("read_only"));
  req.set_tool_set("read_only");  // [Tool sets], exactly, in registration order
  auto read_only = client_->ListTools(req);
  ASSERT_TRUE(read_only.ok());
  std::vector<std::string> names;
  for (const auto& t : read_only->tools()) names.push_back(t.name());
  EXPECT_THAT(names, ElementsAre("view_file", "list_directory", "find_file", "search_directory",
                                 "finish"));
}

TEST_F(DaemonTest, MixedBatchStreamsInCallOrderWithErrorFields) {
  auto req = Batch({MakeCallOrDie("a", "wait", R"({"ms":300,"value":"slow"})"),
                    MakeCallOrDie("b", "get_weather", R"({"city":"Paris"})"),
                    MakeCallOrDie("c", "nosuch"), MakeCallOrDie("d", "throws"),
                    MakeCallOrDie("e", "calculate_sum", R"({"numbers":"not a list"})")});
  req.mutable_calls(1)->set_step_id("step-7");
  std::vector<std::pair<uint32_t, absl::Time>> arrivals;
  std::vector<v1::ToolResult> results;
  absl::Time start = absl::Now();
  absl::Status s = client_->ExecuteBatch(req, [&](const v1::ExecuteBatchResponse& e) {
    if (e.has_result()) {
      arrivals.push_back({e.result().index(), absl::Now()});
      results.push_back(e.result());
    }
  });
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_EQ(results.size(), 5u);
  for (uint32_t i = 0; i < 5; ++i) EXPECT_EQ(results[i].index(), i);
  // Call 0 takes 300 ms; nothing after it may overtake it.
  EXPECT_GE(arrivals[1].second - start, absl::Milliseconds(250));
  EXPECT_EQ(results[0].status(), v1::RESULT_STATUS_SUCCESS);
  EXPECT_FALSE(results[0].has_exception());
  EXPECT_EQ(results[1].step_id(), "step-7");
  EXPECT_EQ(results[1].payload().struct_value().fields().at("city").string_value(), "Paris");
  EXPECT_EQ(results[1].compact_summary(), "[get_weather: completed]");
  EXPECT_EQ(results[1].display().title(), "Weather in Paris");

  const auto& unknown = results[2];
  EXPECT_EQ(unknown.status(), v1::RESULT_STATUS_ERROR);
  EXPECT_EQ(unknown.exception().code(), v1::ERROR_CODE_UNKNOWN_TOOL);
  EXPECT_EQ(unknown.exception().tool_name(), "nosuch");
  EXPECT_EQ(unknown.exception().server_name(), "");
  EXPECT_EQ(unknown.exception().call_id(), "c");
  EXPECT_EQ(unknown.payload().struct_value().fields().at("error").string_value(),
            unknown.error_message());

  EXPECT_EQ(results[3].exception().code(), v1::ERROR_CODE_TOOL_FAILED);
  EXPECT_THAT(results[3].error_message(), HasSubstr("kaboom"));
  EXPECT_EQ(results[4].exception().code(), v1::ERROR_CODE_INVALID_ARGUMENTS);
  EXPECT_THAT(results[4].error_message(), HasSubstr("args.numbers"));
}

TEST_F(DaemonTest, BadInputGetsClearErrorsAndTheDaemonStaysUp) {
  std::string deep = std::string(100, '[') + "1" + std::string(100, ']');
  auto results = Results(Batch({MakeCallOrDie("1", "get_weather", ""),
                                [] {
                                  v1::ToolCall c;
                                  c.set_id("2");
                                  c.set_name("get_weather");
                                  c.set_args_json("{bad json");
                                  return c;
                                }(),
                                [&] {
                                  v1::ToolCall c;
                                  c.set_id("3");
                                  c.set_name("get_weather");
                                  c.set_args_json(R"({"city":)" + deep + "}");
                                  return c;
                                }(),
                                MakeCallOrDie("4", "check_inventory", "{}"),
                                MakeCallOrDie("5", "wait", R"({"ms":"soon"})")}));
  ASSERT_EQ(results.size(), 5u);
  EXPECT_EQ(results[0].status(), v1::RESULT_STATUS_SUCCESS);  // empty args mean {}
  EXPECT_EQ(results[1].exception().code(), v1::ERROR_CODE_INVALID_ARGUMENTS);
  EXPECT_THAT(results[1].error_message(), HasSubstr("args_json"));
  EXPECT_EQ(results[2].exception().code(), v1::ERROR_CODE_INVALID_ARGUMENTS);
  EXPECT_THAT(results[2].error_message(), HasSubstr("deeper"));
  EXPECT_EQ(results[3].exception().code(), v1::ERROR_CODE_INVALID_ARGUMENTS);
  EXPECT_THAT(results[3].error_message(), HasSubstr("item"));
  EXPECT_EQ(results[4].exception().code(), v1::ERROR_CODE_INVALID_ARGUMENTS);

  // A 100-level-deep Struct cannot even be parsed by protobuf: the RPC fails
  // with a status, and the daemon keeps serving.
  v1::ToolCall deep_struct;
  deep_struct.set_name("get_weather");
  google::protobuf::Value* v = &(*deep_struct.mutable_args()->mutable_fields())["city"];
  for (int i = 0; i < 100; ++i) v = v->mutable_list_value()->add_values();
  v->set_string_value("x");
  auto r = client_->ExecuteBatchCollect(Batch({deep_struct}));
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(client_->ListTools({}).ok());
  EXPECT_EQ(client_->Health().value_or(false), true);
}

// Keeps the messages logged through it.
// The per-RPC line keeps the status message apart from the timing.
TEST_F(DaemonTest, BatchLogLineSeparatesTheMessageFromTheTiming) {
  std::string line;
  {
    testing::CaptureLog log;
    auto r = client_->ExecuteBatchCollect(Batch({MakeCallOrDie("1", "get_weather")}, "s-nope"));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
    for (int i = 0; i < 500 && line.empty(); ++i) {  // the line is written after the reply
      for (const auto& l : log.sink().Lines()) {
        if (absl::StartsWith(l, "ExecuteBatch ")) line = l;
      }
      if (line.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    daemon_->Shutdown();
    daemon_.reset();
  }
  EXPECT_THAT(line, ::testing::MatchesRegex(
                        R"(.* status=NOT_FOUND msg="[^"]*s-nope[^"]*" ms=[0-9.]+)"));
}

TEST_F(DaemonTest, RequestLevelErrorsAreRpcStatuses) {
  auto unknown = client_->ExecuteBatchCollect(Batch({MakeCallOrDie("1", "get_weather")}, "s-nope"));
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);

  v1::ExecuteBatchRequest negative = Batch({MakeCallOrDie("1", "get_weather")});
  negative.mutable_timeout()->set_seconds(-1);
  EXPECT_EQ(client_->ExecuteBatchCollect(negative).status().code(),
            absl::StatusCode::kInvalidArgument);

  DaemonOptions small;
  small.engine.max_calls_per_batch = 2;
  small.engine.max_pending_calls = 2;
  StartDaemon(small);
  auto over = client_->ExecuteBatchCollect(Batch(
      {MakeCallOrDie("1", "get_weather"), MakeCallOrDie("2", "get_weather"),
       MakeCallOrDie("3", "get_weather")}));
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(over.status().message(), HasSubstr("limit is 2"));
}

TEST_F(DaemonTest, EmptyBatchFinishesOk) {
  auto r = client_->ExecuteBatchCollect(Batch({}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->empty());
}

TEST_F(DaemonTest, SessionStateCounterAndClose) {
  v1::OpenSessionRequest open;
  open.set_conversation_id("conv-1");
  auto session = client_->OpenSession(open);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_EQ(session->conversation_id(), "conv-1");
  EXPECT_EQ(session->tools_size(), static_cast<int>(daemon_->engine().registry().size()));
  const std::string id = session->session_id();

  // 8 clients x 100 counter calls through real ExecuteBatch RPCs.
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      auto client = Client::Create(daemon_->address());
      for (int i = 0; i < 100; ++i) {
        auto r = client->ExecuteBatchCollect(Batch({MakeCallOrDie("c", "counter")}, id));
        ASSERT_TRUE(r.ok());
        ASSERT_EQ(r->at(0).status(), v1::RESULT_STATUS_SUCCESS) << r->at(0).error_message();
      }
    });
  }
  for (auto& t : threads) t.join();
  v1::GetStateRequest get;
  get.set_session_id(id);
  auto state = client_->GetState(get);
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->state().fields().at("count").number_value(), 800);

  auto last = Results(Batch({MakeCallOrDie("c", "counter")}, id));
  EXPECT_EQ(last[0].actions().state_delta().fields().at("count").number_value(), 801);

  v1::CloseSessionRequest close;
  close.set_session_id(id);
  ASSERT_TRUE(client_->CloseSession(close).ok());
  EXPECT_EQ(client_->GetState(get).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->CloseSession(close).status().code(), absl::StatusCode::kNotFound);
  auto after = client_->ExecuteBatchCollect(Batch({MakeCallOrDie("c", "counter")}, id));
  EXPECT_EQ(after.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(DaemonTest, SessionToolSubsets) {
  v1::OpenSessionRequest both;
  both.add_enabled_tools("get_weather");
  both.add_disabled_tools("wait");
  EXPECT_EQ(client_->OpenSession(both).status().code(), absl::StatusCode::kInvalidArgument);

  v1::OpenSessionRequest unknown;
  unknown.add_enabled_tools("no_such_tool");
  auto u = client_->OpenSession(unknown);
  EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(u.status().message(), HasSubstr("no_such_tool"));

  v1::OpenSessionRequest subagent;
  subagent.set_subagent("researcher");  // none configured
  auto sa = client_->OpenSession(subagent);
  EXPECT_EQ(sa.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sa.status().message(), HasSubstr("unknown subagent 'researcher'"));

  v1::OpenSessionRequest enabled;
  enabled.add_enabled_tools("get_weather");
  enabled.add_enabled_tools("counter");
  auto s = client_->OpenSession(enabled);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(s->tools(), ElementsAre("get_weather", "counter"));
  v1::ListToolsRequest list;
  list.set_session_id(s->session_id());
  EXPECT_EQ(client_->ListTools(list)->tools_size(), 2);
  auto results = Results(Batch({MakeCallOrDie("1", "wait", R"({"ms":1})")}, s->session_id()));
  EXPECT_EQ(results[0].status(), v1::RESULT_STATUS_DENIED);
  EXPECT_EQ(results[0].exception().code(), v1::ERROR_CODE_DENIED);

  v1::OpenSessionRequest outside;
  outside.add_workspaces("/");
  EXPECT_EQ(client_->OpenSession(outside).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DaemonTest, WatchSessionReceivesSentMessagesAndEndsOnClose) {
  auto session = client_->OpenSession({});
  ASSERT_TRUE(session.ok());
  v1::WatchSessionRequest watch_req;
  watch_req.set_session_id(session->session_id());
  auto watch = client_->WatchSession(watch_req);
  // The watch registers asynchronously: send until the first message arrives.
  std::vector<std::string> received;
  absl::Notification got_one;
  std::thread reader([&] {
    v1::SessionEvent e;
    while (watch->Next(&e)) {
      received.push_back(e.message().text() + "/" + e.message().tool_name());
      got_one.Notify();
    }
  });
  for (int i = 0; i < 50 && !got_one.HasBeenNotified(); ++i) {
    auto r = Results(Batch({MakeCallOrDie("1", "notify", R"({"text":"hello"})")},
                           session->session_id()));
    ASSERT_EQ(r[0].status(), v1::RESULT_STATUS_SUCCESS) << r[0].error_message();
    got_one.WaitForNotificationWithTimeout(absl::Milliseconds(50));
  }
  ASSERT_TRUE(got_one.HasBeenNotified());
  v1::CloseSessionRequest close;
  close.set_session_id(session->session_id());
  ASSERT_TRUE(client_->CloseSession(close).ok());
  reader.join();  // the stream ended because the session closed
  EXPECT_TRUE(watch->Finish().ok());
  ASSERT_FALSE(received.empty());
  EXPECT_EQ(received[0], "hello/notify");

  v1::WatchSessionRequest missing;
  missing.set_session_id("s-missing");
  auto w2 = client_->WatchSession(missing);
  v1::SessionEvent e;
  EXPECT_FALSE(w2->Next(&e));
  EXPECT_EQ(w2->Finish().code(), absl::StatusCode::kNotFound);
}

TEST_F(DaemonTest, UpdateSessionIdleIsSeenByTools) {
  auto session = client_->OpenSession({});
  ASSERT_TRUE(session.ok());
  v1::UpdateSessionRequest update;
  update.set_session_id(session->session_id());
  update.set_idle(true);
  auto updated = client_->UpdateSession(update);
  ASSERT_TRUE(updated.ok());
  EXPECT_TRUE(updated->idle());
  auto r = Results(Batch({MakeCallOrDie("1", "notify", R"({"text":"x"})")}, session->session_id()));
  EXPECT_TRUE(r[0].payload().struct_value().fields().at("idle").bool_value());
}

TEST_F(DaemonTest, ClientCancellationReachesTheTool) {
  int before = g_blocker_cancelled.load();
  absl::Time start = absl::Now();
  absl::Status s = client_->ExecuteBatch(Batch({MakeCallOrDie("1", "blocker")}),
                                         [](const v1::ExecuteBatchResponse&) {},
                                         absl::Milliseconds(200));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  for (int i = 0; i < 100 && g_blocker_cancelled.load() == before; ++i) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(g_blocker_cancelled.load(), before + 1);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_TRUE(client_->ListTools({}).ok());
}

TEST_F(DaemonTest, RequestTimeoutAppliesPerCall) {
  auto req = Batch({MakeCallOrDie("1", "wait", R"({"ms":5000})"), MakeCallOrDie("2", "get_weather")});
  req.mutable_timeout()->set_nanos(100 * 1000 * 1000);
  auto results = Results(req);
  EXPECT_EQ(results[0].status(), v1::RESULT_STATUS_TIMEOUT);
  EXPECT_EQ(results[0].exception().code(), v1::ERROR_CODE_TIMEOUT);
  EXPECT_EQ(results[1].status(), v1::RESULT_STATUS_SUCCESS);
}

TEST_F(DaemonTest, DrainLetsInFlightBatchesFinishAndRefusesNewOnes) {
  absl::Notification started;
  v1::ToolResult slow_result;
  absl::Status slow_status;
  std::thread in_flight([&] {
    slow_status = client_->ExecuteBatch(
        Batch({MakeCallOrDie("1", "wait", R"({"ms":600,"value":1})")}),
        [&](const v1::ExecuteBatchResponse& e) {
          if (e.has_result()) slow_result = e.result();
        });
  });
  // Wait until the daemon sees the batch.
  for (int i = 0; i < 200 && daemon_->engine().in_flight_batches() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_EQ(daemon_->engine().in_flight_batches(), 1);
  std::thread stopper([&] { daemon_->Shutdown(); });
  for (int i = 0; i < 200 && !daemon_->engine().draining(); ++i) absl::SleepFor(absl::Milliseconds(5));
  auto refused = client_->ExecuteBatchCollect(Batch({MakeCallOrDie("1", "get_weather")}));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(client_->Health().value_or(true), false);  // NOT_SERVING while draining
  in_flight.join();
  stopper.join();
  EXPECT_TRUE(slow_status.ok()) << slow_status;
  EXPECT_EQ(slow_result.status(), v1::RESULT_STATUS_SUCCESS);
  daemon_.reset();
}

// Batches that reach a daemon as it shuts down are refused with UNAVAILABLE
// (retry elsewhere), never failed as CANCELLED.
TEST_F(DaemonTest, BatchesArrivingDuringShutdownAreUnavailable) {
  constexpr int kClients = 8;
  std::atomic<int> sent{0};
  std::vector<absl::Status> last(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      auto client = Client::Create(daemon_->address());
      for (;;) {
        auto r = client->ExecuteBatchCollect(Batch({MakeCallOrDie("1", "get_weather")}),
                                             absl::Seconds(10));
        ++sent;
        if (!r.ok()) {
          last[i] = r.status();
          return;
        }
      }
    });
  }
  for (int i = 0; i < 400 && sent.load() < 50; ++i) absl::SleepFor(absl::Milliseconds(5));
  daemon_->Shutdown();
  for (auto& t : clients) t.join();
  for (const absl::Status& s : last) EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  daemon_.reset();
}

TEST_F(DaemonTest, DrainGraceCancelsStragglers) {
  DaemonOptions options;
  options.server.drain_grace = absl::Milliseconds(200);
  StartDaemon(options);
  v1::ToolResult result;
  std::thread in_flight([&] {
    (void)client_->ExecuteBatch(Batch({MakeCallOrDie("1", "wait", R"({"ms":20000})")}),
                                [&](const v1::ExecuteBatchResponse& e) {
                                  if (e.has_result()) result = e.result();
                                });
  });
  for (int i = 0; i < 200 && daemon_->engine().in_flight_batches() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  absl::Time start = absl::Now();
  daemon_->Shutdown();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  in_flight.join();
  EXPECT_EQ(result.status(), v1::RESULT_STATUS_CANCELLED);
  EXPECT_THAT(result.error_message(), HasSubstr("cancelled"));
  daemon_.reset();
}

// A tool that ignores cancellation cannot hold shutdown beyond the grace.
TEST_F(DaemonTest, ShutdownDoesNotWaitForeverForAStubbornTool) {
  DaemonOptions options;
  options.server.drain_grace = absl::Milliseconds(50);
  options.engine.tool_stop_grace = absl::Milliseconds(100);
  StartDaemon(options);
  v1::ToolResult result;
  std::thread in_flight([&] {
    (void)client_->ExecuteBatch(Batch({MakeCallOrDie("1", "stubborn")}),
                                [&](const v1::ExecuteBatchResponse& e) {
                                  if (e.has_result()) result = e.result();
                                });
  });
  for (int i = 0; i < 200 && daemon_->engine().in_flight_batches() == 0; ++i) absl::SleepFor(absl::Milliseconds(5));
  absl::Time start = absl::Now();
  daemon_->Shutdown();
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(1200));  // the tool sleeps 1.5 s
  in_flight.join();
  EXPECT_EQ(result.status(), v1::RESULT_STATUS_CANCELLED);
  daemon_.reset();  // waits for the tool before freeing what it uses
}

TEST_F(DaemonTest, AnsweringNoPendingPermissionRequestIsNotFound) {
  v1::RespondPermissionRequest req;
  req.set_request_id("perm-none");
  req.set_decision(v1::PERMISSION_DECISION_ALLOW_ONCE);
  auto r = client_->RespondPermission(req);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("is not pending"));
}

TEST_F(DaemonTest, ServesOnAUnixSocket) {
  std::string path = absl::StrCat(std::filesystem::temp_directory_path().string(),
                                   "/toolexec-test-", getpid(), ".sock");
  DaemonOptions options;
  options.server.listen = "unix:" + path;
  StartDaemon(options);
  EXPECT_EQ(daemon_->address(), "unix:" + path);
  auto r = Results(Batch({MakeCallOrDie("1", "get_weather", R"({"city":"Oslo"})")}));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status(), v1::RESULT_STATUS_SUCCESS);
  daemon_->Shutdown();
  daemon_.reset();
  std::filesystem::remove(path);
}

// A session's workspace is the directory it named at OpenSession, held open.
// <base>/ws is the daemon's workspace, <base>/ws/proj the session's, and
// <base>/outside lies outside both.
class WorkspaceSwapTest : public DaemonTest {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/toolexec-swap-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    std::filesystem::create_directories(Proj() + "/sub");
    std::filesystem::create_directories(Outside() + "/sub");
    Write(Proj() + "/marker.txt", "original\n");
    Write(Outside() + "/marker.txt", "OUTSIDE\n");
    Write(Outside() + "/outside_only.txt", "OUTSIDE\n");
    Write(Ws() + "/a.txt", "a regular file\n");
  }
  void TearDown() override {
    DaemonTest::TearDown();
    std::error_code ec;
    std::filesystem::remove_all(base_, ec);
  }

  std::string Ws() const { return base_ + "/ws"; }
  std::string Proj() const { return base_ + "/ws/proj"; }
  std::string Original() const { return base_ + "/ws/proj.orig"; }
  std::string Outside() const { return base_ + "/outside"; }

  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path) << text;
  }
  static bool Exists(const std::string& path) {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  void StartIn(DaemonOptions options = {}) {
    options.engine.workspace = Ws();
    StartDaemon(std::move(options));
  }
  std::string OpenOn(const std::string& workspace, const std::string& parent = "") {
    v1::OpenSessionRequest open;
    if (!workspace.empty()) open.add_workspaces(workspace);
    open.set_parent_session_id(parent);
    auto s = client_->OpenSession(open);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? s->session_id() : "";
  }
  // `mv proj proj.orig; ln -s <outside> proj`.
  void ReplaceBySymlinkOut() {
    ASSERT_EQ(rename(Proj().c_str(), Original().c_str()), 0);
    ASSERT_EQ(symlink(Outside().c_str(), Proj().c_str()), 0);
  }
  // The symlink gives way to a new, empty directory of the same name.
  void ReplaceByNewDirectory() {
    ASSERT_EQ(unlink(Proj().c_str()), 0);
    ASSERT_EQ(mkdir(Proj().c_str(), 0755), 0);
    Write(Proj() + "/decoy.txt", "DECOY\n");
  }

  // Every file tool through `session` acts on the original directory.
  void ExpectToolsSeeTheOriginal(const std::string& session, const std::string& new_file) {
    auto r = Results(Batch(
        {MakeCallOrDie("view", "view_file", R"({"file_path":"marker.txt"})"),
         MakeCallOrDie("view_abs", "view_file",
                       absl::StrCat(R"({"file_path":")", Proj(), R"(/marker.txt"})")),
         MakeCallOrDie("create", "create_file",
                       absl::StrCat(R"({"file_path":")", new_file, R"(","contents":"made\n"})")),
         MakeCallOrDie("list", "list_directory", R"({"directory_path":"."})"),
         MakeCallOrDie("grep", "grep_search",
                       R"({"pattern":"origina|OUTSID|DECO","output_mode":"content"})")},
        session));
    ASSERT_EQ(r.size(), 5u);
    for (const auto& result : r) {
      ASSERT_EQ(result.status(), v1::RESULT_STATUS_SUCCESS)
          << result.id() << ": " << result.error_message();
      EXPECT_THAT(PayloadJson(result), Not(HasSubstr("OUTSIDE"))) << result.id();
      EXPECT_THAT(PayloadJson(result), Not(HasSubstr("DECOY"))) << result.id();
    }
    EXPECT_THAT(PayloadJson(r[0]), HasSubstr("original"));
    EXPECT_THAT(PayloadJson(r[1]), HasSubstr("original"));
    EXPECT_EQ(Read(Original() + "/" + new_file), "made\n");
    EXPECT_FALSE(Exists(Outside() + "/" + new_file));
    EXPECT_FALSE(Exists(Proj() + "/" + new_file));
    EXPECT_THAT(PayloadJson(r[3]), HasSubstr("marker.txt"));
    EXPECT_THAT(PayloadJson(r[3]), Not(HasSubstr("outside_only")));
    EXPECT_THAT(PayloadJson(r[3]), Not(HasSubstr("decoy")));
    EXPECT_THAT(PayloadJson(r[4]), HasSubstr("original"));
  }

  std::string base_;
};

TEST_F(WorkspaceSwapTest, FileToolsKeepTheDirectoryOpenedAtOpenSession) {
  StartIn();
  const std::string session = OpenOn("proj");
  const std::string child = OpenOn("", session);  // inherits the parent's workspace
  ReplaceBySymlinkOut();
  ExpectToolsSeeTheOriginal(session, "new.txt");
  ExpectToolsSeeTheOriginal(child, "child.txt");
  ReplaceByNewDirectory();
  ExpectToolsSeeTheOriginal(session, "new2.txt");
  ExpectToolsSeeTheOriginal(child, "child2.txt");
}

TEST_F(WorkspaceSwapTest, SandboxedCommandsBindTheDirectoryOpenedAtOpenSession) {
  DaemonOptions options;
  options.tools.builtin.sandbox = "bwrap";
  options.engine.workspace = Ws();
  options.server.listen = "127.0.0.1:0";
  options.tools.example_tools = true;
  if (auto probe = Daemon::Create(options, InstallTestTools); !probe.ok()) {
    GTEST_SKIP() << "bwrap cannot create its sandbox here: " << probe.status();
  }
  StartIn(options);
  const std::string session = OpenOn(Proj());
  ReplaceBySymlinkOut();
  const std::string script =
      absl::StrCat("cat marker.txt; cat ", Proj(), "/marker.txt; ls ", Proj(),
                   "; echo from-sandbox > cmd.txt && cd sub && echo sub > w.txt && pwd");
  for (int round = 0; round < 2; ++round) {
    auto r = Results(Batch({MakeCallOrDie("run", "run_command",
                                          absl::StrCat(R"({"command_line":")", script, R"("})")),
                            MakeCallOrDie("run_sub", "run_command",
                                          R"({"command_line":"echo in-sub > w2.txt && pwd",)"
                                          R"("working_dir":"sub"})")},
                           session));
    ASSERT_EQ(r.size(), 2u);
    for (const auto& result : r) {
      ASSERT_EQ(result.status(), v1::RESULT_STATUS_SUCCESS) << result.error_message();
      const std::string payload = PayloadJson(result);
      EXPECT_THAT(payload, HasSubstr("\"exit_code\":0")) << payload;
      EXPECT_THAT(payload, Not(HasSubstr("OUTSIDE"))) << payload;
      EXPECT_THAT(payload, Not(HasSubstr("outside_only"))) << payload;
      EXPECT_THAT(payload, Not(HasSubstr("decoy"))) << payload;
      EXPECT_THAT(payload, HasSubstr(Proj() + "/sub")) << payload;  // pwd: the workspace path
    }
    EXPECT_THAT(PayloadJson(r[0]), HasSubstr("original\\noriginal\\n"));
    EXPECT_EQ(Read(Original() + "/cmd.txt"), "from-sandbox\n");
    EXPECT_EQ(Read(Original() + "/sub/w.txt"), "sub\n");
    EXPECT_EQ(Read(Original() + "/sub/w2.txt"), "in-sub\n");
    EXPECT_FALSE(Exists(Outside() + "/cmd.txt"));
    EXPECT_FALSE(Exists(Outside() + "/sub/w.txt"));
    EXPECT_FALSE(Exists(Outside() + "/sub/w2.txt"));
    std::filesystem::remove(Original() + "/cmd.txt");
    std::filesystem::remove(Original() + "/sub/w.txt");
    std::filesystem::remove(Original() + "/sub/w2.txt");
    if (round == 0) {
      ReplaceByNewDirectory();
      std::filesystem::create_directories(Proj() + "/sub");
    }
  }
}

TEST_F(WorkspaceSwapTest, OpenSessionRefusesAWorkspaceThatIsNotADirectory) {
  StartIn();
  v1::OpenSessionRequest open;
  open.add_workspaces("a.txt");
  auto s = client_->OpenSession(open);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("'a.txt' is not a directory"));
}

}  // namespace
}  // namespace toolexec

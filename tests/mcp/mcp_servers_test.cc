// The MCP client against real third-party MCP servers from npm
// (tests/mcp/package.json; scripts/test.sh installs them): a daemon on
// 127.0.0.1:0 registers their tools, and the client library drives it.
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "google/protobuf/util/json_util.h"
#include "mcp/client/http_transport.h"
#include "server/daemon.h"
#include "spdlog/sinks/base_sink.h"
#include "spdlog/spdlog.h"

namespace toolexec {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kModules = std::string(TOOLEXEC_MCP_NODE_MODULES) + "/@modelcontextprotocol";
const std::string kEverything = kModules + "/server-everything/dist/index.js";
const std::string kFilesystem = kModules + "/server-filesystem/dist/index.js";

mcp::McpServerOptions Everything(const std::string& name = "everything") {
  mcp::McpServerOptions o;
  o.name = name;
  o.command = {"node", kEverything, "stdio"};
  o.startup_timeout = absl::Seconds(30);
  o.trusted_annotations = true;  // its tools' readOnlyHint, idempotentHint count
  return o;
}

mcp::McpServerOptions Filesystem(const std::string& root, bool prefix) {
  mcp::McpServerOptions o;
  o.name = "fs";
  o.command = {"node", kFilesystem, root};
  o.prefix_tool_names = prefix;
  o.startup_timeout = absl::Seconds(30);
  return o;
}

std::string PayloadJson(const v1::ToolResult& r) {
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(r.payload(), &out);
  return out;
}

// The pids whose command line holds every one of `parts`.
std::vector<pid_t> FindProcesses(const std::vector<std::string>& parts) {
  std::vector<pid_t> out;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(entry.path() / "cmdline");
    std::stringstream ss;
    ss << f.rdbuf();
    std::string cmdline = ss.str();
    bool all = !cmdline.empty();
    for (const auto& p : parts) all = all && absl::StrContains(cmdline, p);
    if (all) out.push_back(std::stoi(name));
  }
  return out;
}

class McpServersTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { spdlog::set_level(spdlog::level::warn); }
  // Whether the tests start servers from npm (tests/mcp/node_modules).
  virtual bool UsesNodeServers() const { return true; }
  void SetUp() override {
    if (UsesNodeServers()) {
      ASSERT_TRUE(std::filesystem::exists(kEverything))
          << "run `npm install` in tests/mcp (scripts/test.sh does)";
    }
    root_ = std::filesystem::temp_directory_path() / absl::StrCat("mcp_test_", getpid());
    std::filesystem::create_directories(root_);
    std::ofstream(root_ / "hello.txt") << "hello from the filesystem server\n";
  }
  void TearDown() override {
    if (daemon_) daemon_->Shutdown();
    std::filesystem::remove_all(root_);
  }

  absl::Status StartDaemon(std::vector<mcp::McpServerOptions> servers) {
    DaemonOptions options;
    options.server.listen = "127.0.0.1:0";
    options.engine.workspace = root_.string();
    options.engine.mcp_servers = std::move(servers);
    auto d = Daemon::Create(options);
    if (!d.ok()) return d.status();
    daemon_ = std::move(*d);
    if (absl::Status s = daemon_->Start(); !s.ok()) return s;
    client_ = Client::Create(daemon_->address());
    return absl::OkStatus();
  }

  const v1::ToolDeclaration* FindTool(const v1::ListToolsResponse& list, const std::string& name) {
    for (const auto& t : list.tools()) {
      if (t.name() == name) return &t;
    }
    return nullptr;
  }

  v1::ListToolsResponse List() {
    auto list = client_->ListTools(v1::ListToolsRequest());
    EXPECT_TRUE(list.ok()) << list.status();
    return list.ok() ? *list : v1::ListToolsResponse();
  }

  // Runs one call; collects its progress texts in `progress` when given.
  v1::ToolResult Call(const std::string& name, const std::string& args,
                      std::vector<std::string>* progress = nullptr,
                      absl::Duration timeout = absl::Seconds(60),
                      const std::string& session_id = "") {
    v1::ExecuteBatchRequest req;
    req.set_session_id(session_id);
    auto call = MakeCall("1", name, args);
    EXPECT_TRUE(call.ok()) << call.status();
    *req.add_calls() = *call;
    req.mutable_timeout()->set_seconds(absl::ToInt64Seconds(timeout));
    v1::ToolResult result;
    absl::Status s = client_->ExecuteBatch(req, [&](const v1::ExecuteBatchResponse& e) {
      if (e.has_result()) result = e.result();
      if (e.has_progress() && progress != nullptr) progress->push_back(e.progress().text());
    });
    EXPECT_TRUE(s.ok()) << s;
    return result;
  }

  std::filesystem::path root_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> client_;
};

TEST_F(McpServersTest, StdioToolsAreListedAndCalled) {
  ASSERT_TRUE(StartDaemon({Everything(), Filesystem(root_.string(), /*prefix=*/true)}).ok());
  v1::ListToolsResponse list = List();
  const v1::ToolDeclaration* echo = FindTool(list, "echo");
  ASSERT_NE(echo, nullptr);
  EXPECT_EQ(echo->server_name(), "everything");
  EXPECT_TRUE(echo->read_only());  // readOnlyHint
  EXPECT_THAT(echo->tags(), testing::Contains("idempotent"));
  EXPECT_THAT(echo->parameters_json(), HasSubstr("message"));
  EXPECT_EQ(echo->unavailable_reason(), "");
  const v1::ToolDeclaration* read = FindTool(list, "fs__read_text_file");
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->server_name(), "fs");
  // The built-ins come first, then each server's tools in config order.
  EXPECT_EQ(list.tools(0).server_name(), "");

  v1::ToolResult r = Call("echo", R"({"message":"hi"})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_EQ(PayloadJson(r), R"({"result":"Echo: hi"})");

  r = Call("get-structured-content", R"({"location":"New York"})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_THAT(PayloadJson(r), HasSubstr("\"temperature\""));  // structuredContent as-is

  r = Call("get-tiny-image", "{}");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_THAT(PayloadJson(r), HasSubstr(R"("mime_type":"image/png")"));
  EXPECT_THAT(PayloadJson(r), HasSubstr(R"("data":"iVBOR)"));

  r = Call("fs__read_text_file", absl::StrCat(R"({"path":")", (root_ / "hello.txt").string(), "\"}"));
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_THAT(PayloadJson(r), HasSubstr("hello from the filesystem server"));

  // The server's isError: a failure naming the server.
  r = Call("fs__read_text_file", R"({"path":"/etc/passwd"})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_ERROR);
  EXPECT_EQ(r.exception().code(), v1::ERROR_CODE_TOOL_FAILED);
  EXPECT_EQ(r.exception().server_name(), "fs");
  EXPECT_EQ(r.exception().tool_name(), "fs__read_text_file");
  EXPECT_THAT(r.error_message(), HasSubstr("outside allowed directories"));
}

TEST_F(McpServersTest, ProgressAndCancellation) {
  ASSERT_TRUE(StartDaemon({Everything()}).ok());
  std::vector<std::string> progress;
  v1::ToolResult r = Call("trigger-long-running-operation", R"({"duration":1,"steps":3})", &progress);
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_THAT(progress, testing::ElementsAre("1/3", "2/3", "3/3"));

  // The batch's timeout reaches the server as notifications/cancelled; the
  // server goes on serving.
  absl::Time start = absl::Now();
  r = Call("trigger-long-running-operation", R"({"duration":30,"steps":30})", nullptr,
           absl::Seconds(1));
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_TIMEOUT);
  EXPECT_EQ(r.exception().server_name(), "everything");
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
  r = Call("echo", R"({"message":"still here"})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
}

TEST_F(McpServersTest, KilledServerIsUnavailableThenRestarted) {
  ASSERT_TRUE(StartDaemon({Everything()}).ok());
  auto kill_server = [] {
    auto pids = FindProcesses({kEverything, "stdio"});
    ASSERT_FALSE(pids.empty());
    for (pid_t p : pids) kill(p, SIGKILL);
  };
  // A read-only, idempotent call in flight is sent again once the server is back.
  std::vector<std::string> progress;
  std::thread killer([&] {
    absl::SleepFor(absl::Milliseconds(1500));
    kill_server();
  });
  v1::ToolResult r = Call("trigger-long-running-operation", R"({"duration":3,"steps":3})", &progress);
  killer.join();
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_THAT(PayloadJson(r), HasSubstr("completed"));

  // While it is down: ListTools says so and a call fails SERVER_UNAVAILABLE.
  kill_server();
  std::string reason;
  for (int i = 0; i < 200 && reason.empty(); ++i) {
    v1::ListToolsResponse list = List();
    const v1::ToolDeclaration* t = FindTool(list, "toggle-simulated-logging");
    ASSERT_NE(t, nullptr);
    reason = t->unavailable_reason();
    if (reason.empty()) absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_THAT(reason, HasSubstr("MCP server 'everything' is unavailable"));
  r = Call("toggle-simulated-logging", "{}");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_ERROR);
  EXPECT_EQ(r.exception().code(), v1::ERROR_CODE_SERVER_UNAVAILABLE);
  EXPECT_EQ(r.exception().server_name(), "everything");

  // Restarted with backoff: calls work again.
  bool recovered = false;
  for (int i = 0; i < 300 && !recovered; ++i) {
    recovered = Call("echo", R"({"message":"back"})").status() == v1::RESULT_STATUS_SUCCESS;
    if (!recovered) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(recovered);
  v1::ListToolsResponse list = List();
  ASSERT_NE(FindTool(list, "echo"), nullptr);
  EXPECT_EQ(FindTool(list, "echo")->unavailable_reason(), "");
}

TEST_F(McpServersTest, NameCollisionIsAStartupErrorNamingBothSources) {
  // server-filesystem has edit_file and list_directory, as toolexec does.
  absl::Status s = StartDaemon({Filesystem(root_.string(), /*prefix=*/false)});
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(s.message()), testing::ContainsRegex("duplicate tool name '(edit_file|list_directory)'"));
  EXPECT_THAT(s.message(), HasSubstr("built-in"));
  EXPECT_THAT(s.message(), HasSubstr("MCP server 'fs'"));
  EXPECT_THAT(s.message(), HasSubstr("prefix_tool_names"));
}

TEST_F(McpServersTest, ToolFilterAndSlowServerDoNotBlockStartup) {
  mcp::McpServerOptions fs = Filesystem(root_.string(), /*prefix=*/false);
  fs.enabled_tools = {"read_text_file"};
  mcp::McpServerOptions dead;
  dead.name = "dead";
  dead.command = {"sleep", "600"};  // never answers initialize
  dead.startup_timeout = absl::Milliseconds(500);
  absl::Time start = absl::Now();
  ASSERT_TRUE(StartDaemon({fs, dead}).ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(25));
  v1::ListToolsResponse list = List();
  ASSERT_NE(FindTool(list, "read_text_file"), nullptr);
  EXPECT_EQ(FindTool(list, "write_file"), nullptr);
  for (const auto& t : list.tools()) EXPECT_NE(t.server_name(), "dead");
}

// ---- Tools that change while the daemon runs ---------------------------------

const std::string kChanging = std::string(TOOLEXEC_MCP_FIXTURES) + "/changing_server.mjs";

// tests/mcp/fixtures/changing_server.mjs: add_tool and remove_tool change
// its tool list and send notifications/tools/list_changed.
mcp::McpServerOptions Changing(absl::Duration start_delay = absl::ZeroDuration()) {
  mcp::McpServerOptions o;
  o.name = "changing";
  o.command = {"node", kChanging};
  if (start_delay > absl::ZeroDuration()) {
    o.command.push_back("--delay-ms");
    o.command.push_back(std::to_string(absl::ToInt64Milliseconds(start_delay)));
  }
  o.startup_timeout = absl::Seconds(30);
  return o;
}

class McpChangingToolsTest : public McpServersTest {
 protected:
  // Lists until `done` holds (true) or 30 s passed (false).
  bool ListUntil(const std::function<bool(const v1::ListToolsResponse&)>& done) {
    for (absl::Time end = absl::Now() + absl::Seconds(30); absl::Now() < end;) {
      if (done(List())) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }
  bool Listed(const std::string& name) {
    return ListUntil([&](const auto& list) { return FindTool(list, name) != nullptr; });
  }
  bool NotListed(const std::string& name) {
    return ListUntil([&](const auto& list) { return FindTool(list, name) == nullptr; });
  }
};

TEST_F(McpChangingToolsTest, ALateServerIsListedAsNotReadyThenItsToolsAppear) {
  mcp::McpServerOptions late = Changing(/*start_delay=*/absl::Seconds(3));
  late.startup_timeout = absl::Milliseconds(300);
  absl::Time start = absl::Now();
  ASSERT_TRUE(StartDaemon({late}).ok());
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));  // did not wait for it
  v1::ListToolsResponse list = List();
  EXPECT_EQ(FindTool(list, "add_tool"), nullptr);
  ASSERT_EQ(list.mcp_servers_size(), 1);
  EXPECT_EQ(list.mcp_servers(0).name(), "changing");
  EXPECT_FALSE(list.mcp_servers(0).ready());
  EXPECT_THAT(list.mcp_servers(0).unavailable_reason(), HasSubstr("MCP server"));

  ASSERT_TRUE(Listed("add_tool"));
  list = List();
  EXPECT_EQ(FindTool(list, "add_tool")->server_name(), "changing");
  ASSERT_EQ(list.mcp_servers_size(), 1);
  EXPECT_TRUE(list.mcp_servers(0).ready());
  EXPECT_EQ(list.mcp_servers(0).tools(), 2u);
  v1::ToolResult r = Call("add_tool", R"({"name":"gizmo"})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
}

TEST_F(McpChangingToolsTest, AToolAddedIsCallableAndARemovedOneIsUnknown) {
  ASSERT_TRUE(StartDaemon({Changing()}).ok());
  for (const char* name : {"gizmo", "gizmo2"}) {
    v1::ToolResult r = Call("add_tool", absl::StrCat(R"({"name":")", name, R"("})"));
    ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  }
  ASSERT_TRUE(Listed("gizmo2"));
  v1::ListToolsResponse list = List();
  ASSERT_NE(FindTool(list, "gizmo"), nullptr);
  EXPECT_EQ(FindTool(list, "gizmo")->server_name(), "changing");
  // After the built-ins, in the server's order.
  EXPECT_EQ(list.tools(list.tools_size() - 1).name(), "gizmo2");
  v1::ToolResult r = Call("gizmo", "{}");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_THAT(PayloadJson(r), HasSubstr("gizmo done"));

  r = Call("remove_tool", R"({"name":"gizmo"})");
  ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  ASSERT_TRUE(NotListed("gizmo"));
  r = Call("gizmo", "{}");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_ERROR);
  EXPECT_EQ(r.exception().code(), v1::ERROR_CODE_UNKNOWN_TOOL);
  EXPECT_THAT(r.error_message(), HasSubstr("unknown tool 'gizmo'; did you mean gizmo2"));
}

TEST_F(McpChangingToolsTest, ARuntimeNameCollisionIsRefusedAndShown) {
  ASSERT_TRUE(StartDaemon({Changing()}).ok());
  v1::ToolResult r = Call("add_tool", R"({"name":"view_file"})");
  ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  ASSERT_TRUE(ListUntil([](const v1::ListToolsResponse& list) {
    return list.mcp_servers_size() == 1 && list.mcp_servers(0).refused_tools_size() > 0;
  }));
  v1::ListToolsResponse list = List();
  EXPECT_THAT(list.mcp_servers(0).refused_tools(0),
              AllOf(HasSubstr("'view_file'"), HasSubstr("built-in"),
                    HasSubstr("MCP server 'changing'")));
  EXPECT_EQ(list.mcp_servers(0).tools(), 3u);  // listed, one of them refused
  ASSERT_NE(FindTool(list, "view_file"), nullptr);
  EXPECT_EQ(FindTool(list, "view_file")->server_name(), "");  // still the built-in
  r = Call("view_file", R"({"file_path":"hello.txt"})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_THAT(PayloadJson(r), HasSubstr("hello from the filesystem server"));
}

TEST_F(McpChangingToolsTest, ACallRunningWhileItsToolIsRemovedCompletes) {
  ASSERT_TRUE(StartDaemon({Changing()}).ok());
  v1::ToolResult r = Call("add_tool", R"({"name":"sleeper","ms":3000})");
  ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  ASSERT_TRUE(Listed("sleeper"));
  v1::ToolResult running;
  std::thread caller([&] { running = Call("sleeper", "{}"); });
  absl::SleepFor(absl::Milliseconds(800));
  r = Call("remove_tool", R"({"name":"sleeper"})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_TRUE(NotListed("sleeper"));
  caller.join();
  EXPECT_EQ(running.status(), v1::RESULT_STATUS_SUCCESS) << running.error_message();
  EXPECT_THAT(PayloadJson(running), HasSubstr("sleeper done"));
}

// The streamable HTTP transport, against server-everything's HTTP mode.
class McpHttpTest : public McpServersTest {
 protected:
  void SetUp() override {
    McpServersTest::SetUp();
    port_ = FreePort();
    server_pid_ = fork();
    if (server_pid_ == 0) {
      StartServer();
      _exit(127);
    }
    url_ = absl::StrCat("http://127.0.0.1:", port_, "/mcp");
    for (int i = 0; i < 200 && !Listening(port_); ++i) absl::SleepFor(absl::Milliseconds(50));
    ASSERT_TRUE(Listening(port_)) << "the HTTP MCP server did not listen";
  }
  // In the child: execs the server, listening on port_.
  virtual void StartServer() {
    setenv("PORT", std::to_string(port_).c_str(), 1);
    execlp("node", "node", kEverything.c_str(), "streamableHttp", nullptr);
  }
  // The server at url_, as toolexecd's MCP server `name`.
  mcp::McpServerOptions HttpServer(const std::string& name) const {
    mcp::McpServerOptions web;
    web.name = name;
    web.url = url_;
    web.startup_timeout = absl::Seconds(30);
    return web;
  }
  // The number a counting tool of the server answers, or -1.
  int Count(const std::string& tool) {
    v1::ToolResult r = Call(tool, "{}");
    EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
    const std::string payload = PayloadJson(r);  // {"result":"<count>"}
    const size_t digits = payload.find_first_of("0123456789");
    return digits == std::string::npos ? -1 : std::atoi(payload.c_str() + digits);
  }
  // How many GETs the server has seen (its tool get_requests), or -1.
  int Gets() { return Count("get_requests"); }
  void TearDown() override {
    McpServersTest::TearDown();
    if (server_pid_ > 0) {
      kill(server_pid_, SIGKILL);
      waitpid(server_pid_, nullptr, 0);
    }
  }
  static int FreePort() {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
  }
  static bool Listening(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    return ok;
  }
  int port_ = 0;
  pid_t server_pid_ = -1;
  std::string url_;
};

TEST_F(McpHttpTest, ToolsOverStreamableHttp) {
  mcp::McpServerOptions web;
  web.name = "web";
  web.url = url_;
  web.headers = {{"X-Test", "1"}};
  web.prefix_tool_names = true;
  ASSERT_TRUE(StartDaemon({web}).ok());
  v1::ListToolsResponse list = List();
  const v1::ToolDeclaration* echo = FindTool(list, "web__echo");
  ASSERT_NE(echo, nullptr);
  EXPECT_EQ(echo->server_name(), "web");
  v1::ToolResult r = Call("web__echo", R"({"message":"over http"})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_EQ(PayloadJson(r), R"({"result":"Echo: over http"})");
  std::vector<std::string> progress;
  r = Call("web__trigger-long-running-operation", R"({"duration":1,"steps":2})", &progress);
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_THAT(progress, testing::ElementsAre("1/2", "2/2"));
  r = Call("web__get-sum", R"({"a":2,"b":3})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_THAT(PayloadJson(r), HasSubstr("5"));
}

// changing_server.mjs over streamable HTTP: list_changed arrives only on
// the GET stream the client holds open.
class McpHttpChangingToolsTest : public McpHttpTest {
 protected:
  void StartServer() override {
    execlp("node", "node", kChanging.c_str(), "--http", std::to_string(port_).c_str(),
           no_get_ ? "--no-get" : nullptr, nullptr);
  }
  bool no_get_ = false;
  // The fixture, as toolexecd's MCP server "changing".
  mcp::McpServerOptions Server() const { return HttpServer("changing"); }
  bool Listed(const std::string& name) {
    for (absl::Time end = absl::Now() + absl::Seconds(30); absl::Now() < end;) {
      if (FindTool(List(), name) != nullptr) return true;
      absl::SleepFor(absl::Milliseconds(50));
    }
    return false;
  }
};

TEST_F(McpHttpChangingToolsTest, ListChangedOnTheGetStreamIsSeenAndTheStreamReopened) {
  ASSERT_TRUE(StartDaemon({Server()}).ok());
  v1::ToolResult r = Call("add_tool", R"({"name":"gizmo"})");
  ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  ASSERT_TRUE(Listed("gizmo"));
  EXPECT_EQ(FindTool(List(), "gizmo")->server_name(), "changing");

  // The server ends the stream; the client opens another.
  r = Call("drop_stream", "{}");
  ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  bool reopened = false;
  for (absl::Time end = absl::Now() + absl::Seconds(20); !reopened && absl::Now() < end;) {
    reopened = Gets() >= 2;
    if (!reopened) absl::SleepFor(absl::Milliseconds(100));
  }
  ASSERT_TRUE(reopened);
  r = Call("add_tool", R"({"name":"gizmo2"})");
  ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  EXPECT_TRUE(Listed("gizmo2"));
}

// A server that answers GET with 404 (it routes only POST) has no stream to
// offer; its session goes on (it used to be ended and reconnected forever).
class McpHttpPostOnlyTest : public McpHttpChangingToolsTest {
 protected:
  void SetUp() override {
    no_get_ = true;
    McpHttpChangingToolsTest::SetUp();
  }
};

TEST_F(McpHttpPostOnlyTest, AServerWithoutAGetStreamKeepsItsSession) {
  ASSERT_TRUE(StartDaemon({Server()}).ok());
  for (int i = 0; i < 3; ++i) {
    absl::SleepFor(absl::Milliseconds(700));  // time for the GET and its answer
    v1::ToolResult r = Call("get_requests", "{}");
    ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
    EXPECT_EQ(PayloadJson(r), R"({"result":"1"})");  // asked once, not again
  }
}

// ---- A server that misbehaves: the daemon outlives it -----------------------

const std::string kUnruly = std::string(TOOLEXEC_MCP_FIXTURES) + "/unruly_server.py";

// tests/mcp/fixtures/unruly_server.py (Python's standard library only), with `flags`.
mcp::McpServerOptions Unruly(std::vector<std::string> flags = {}) {
  mcp::McpServerOptions o;
  o.name = "unruly";
  o.command = {"python3", kUnruly};
  for (auto& f : flags) o.command.push_back(std::move(f));
  o.startup_timeout = absl::Seconds(30);
  return o;
}

class McpUnrulyServerTest : public McpChangingToolsTest {
 protected:
  bool UsesNodeServers() const override { return false; }
  void Restart(std::vector<mcp::McpServerOptions> servers) {
    if (daemon_) daemon_->Shutdown();
    client_.reset();
    daemon_.reset();
    ASSERT_TRUE(StartDaemon(std::move(servers)).ok());
  }
  // A session of the built-in read_only profile.
  std::string ReadOnlySession() {
    v1::OpenSessionRequest req;
    req.set_policy_profile("read_only");
    auto session = client_->OpenSession(req);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? session->session_id() : "";
  }
};

TEST_F(McpUnrulyServerTest, ARefCycleListedAfterListChangedIsRefusedAndTheDaemonGoesOn) {
  ASSERT_TRUE(StartDaemon({Unruly()}).ok());
  v1::ToolResult r = Call("add_cyclic", "{}");
  ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  // The listing after list_changed is published: the tool after the cycle is
  // there, the cyclic one is refused naming the cycle.
  ASSERT_TRUE(Listed("after_loop"));
  v1::ListToolsResponse list = List();
  EXPECT_EQ(FindTool(list, "loop"), nullptr);
  ASSERT_EQ(list.mcp_servers_size(), 1);
  EXPECT_THAT(list.mcp_servers(0).refused_tools(),
              testing::Contains(AllOf(HasSubstr("'loop'"), HasSubstr("\"$ref\" cycle: # -> #"))));
  r = Call("echo", R"({"text":"still here"})");
  EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
}

TEST_F(McpUnrulyServerTest, ReadOnlyHintCountsOnlyFromATrustedServer) {
  for (bool trusted : {false, true}) {
    SCOPED_TRACE(trusted ? "trusted" : "untrusted");
    mcp::McpServerOptions server = Unruly();
    server.trusted_annotations = trusted;
    Restart({server});
    v1::ListToolsResponse list = List();
    const v1::ToolDeclaration* tool = FindTool(list, "delete_everything");
    ASSERT_NE(tool, nullptr);
    EXPECT_EQ(tool->read_only(), trusted);
    EXPECT_EQ(std::count(tool->tags().begin(), tool->tags().end(), "destructive"), trusted ? 0 : 1);
    v1::ToolResult r =
        Call("delete_everything", "{}", nullptr, absl::Seconds(60), ReadOnlySession());
    if (trusted) {
      EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
    } else {
      EXPECT_EQ(r.status(), v1::RESULT_STATUS_DENIED) << r.error_message();
    }
  }
}

// Captures what the daemon logs while it lives. Made before the daemon starts;
// its sink stays on the logger when it goes (the daemon, stopped only in
// TearDown, may still be logging, and the logger's sink list is not safe to
// change under a thread that logs), and only stops recording.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<Sink>()) {
    spdlog::default_logger()->sinks().push_back(sink_);
    spdlog::set_level(spdlog::level::info);
  }
  ~LogCapture() {
    sink_->recording.store(false);
    spdlog::set_level(spdlog::level::warn);
  }
  std::vector<std::string> Lines(const std::string& containing) {
    absl::MutexLock lock(&sink_->mu);
    std::vector<std::string> out;
    for (const std::string& line : sink_->lines) {
      if (absl::StrContains(line, containing)) out.push_back(line);
    }
    return out;
  }

 private:
  struct Sink final : spdlog::sinks::base_sink<std::mutex> {
    absl::Mutex mu;
    std::vector<std::string> lines ABSL_GUARDED_BY(mu);
    std::atomic<bool> recording{true};
    void sink_it_(const spdlog::details::log_msg& msg) override {
      if (!recording.load()) return;
      absl::MutexLock lock(&mu);
      lines.emplace_back(msg.payload.data(), msg.payload.size());
    }
    void flush_() override {}
  };
  std::shared_ptr<Sink> sink_;
};

TEST_F(McpUnrulyServerTest, WhatAServerWritesToTheLogIsRateLimitedAndCut) {
  LogCapture log;
  ASSERT_TRUE(StartDaemon({Unruly()}).ok());
  // 500 log notifications, 500 stdout lines that are not JSON-RPC and 500
  // stderr lines, each over 2 KB, in well under a second.
  absl::Time start = absl::Now();
  v1::ToolResult r = Call("flood_log", R"({"lines":500})");
  ASSERT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::vector<std::string> lines = log.Lines("MCP server 'unruly'");
  // The burst, then 20 a second (generously: the start-up lines count too).
  EXPECT_LT(lines.size(), 130 + 20 * seconds) << lines.size() << " lines in " << seconds << " s";
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& line) { return line.size() > 1200; }),
            0);
  // The lines left out are counted once lines are logged again.
  bool counted = false;
  for (absl::Time end = absl::Now() + absl::Seconds(20); !counted && absl::Now() < end;) {
    ASSERT_EQ(Call("flood_log", R"({"lines":1})").status(), v1::RESULT_STATUS_SUCCESS);
    counted = !log.Lines("were not logged (over 20 a second)").empty();
    if (!counted) absl::SleepFor(absl::Milliseconds(200));
  }
  EXPECT_TRUE(counted);
}

// tests/mcp/fixtures/unruly_server.py over streamable HTTP.
class McpUnrulyHttpTest : public McpHttpTest {
 protected:
  bool UsesNodeServers() const override { return false; }
  void StartServer() override {
    execlp("python3", "python3", kUnruly.c_str(), "--http", std::to_string(port_).c_str(),
           nullptr);
  }
  mcp::McpServerOptions Server() const { return HttpServer("unruly"); }
  // How many TCP connections have carried a POST to the server.
  int PostConnections() { return Count("post_connections"); }
};

TEST_F(McpUnrulyHttpTest, AGetStreamThatEndsAtOnceWithRetryZeroIsReopenedWithBackoff) {
  ASSERT_TRUE(StartDaemon({Server()}).ok());
  // The stream says "retry: 0" and ends: reopened after 1 s, then 2 s, ...
  // (it was reopened at once, over a thousand times a second).
  absl::SleepFor(absl::Seconds(4));
  const int gets = Gets();
  EXPECT_GE(gets, 1);
  EXPECT_LE(gets, 4);
}

// unruly_server.py over HTTP closing connections idle for 1 s.
class McpKeepAliveHttpTest : public McpUnrulyHttpTest {
 protected:
  void StartServer() override {
    execlp("python3", "python3", kUnruly.c_str(), "--http", std::to_string(port_).c_str(),
           "--idle-close", "1", nullptr);
  }
  void ExpectEcho(const std::string& text) {
    v1::ToolResult r = Call("echo", absl::StrCat(R"({"text":")", text, R"("})"));
    EXPECT_EQ(r.status(), v1::RESULT_STATUS_SUCCESS) << r.error_message();
    EXPECT_THAT(PayloadJson(r), HasSubstr(text));
  }
};

TEST_F(McpKeepAliveHttpTest, SequentialCallsShareAConnectionAndOneTheServerClosedIsReplaced) {
  ASSERT_TRUE(StartDaemon({Server()}).ok());
  const int before = PostConnections();
  ASSERT_GE(before, 1);
  for (int i = 0; i < 20; ++i) ExpectEcho(absl::StrCat("call ", i));
  // They took the one connection (one connection each made 20 more; a stall
  // of over 1 s between two calls of a loaded machine may add one).
  const int after_calls = PostConnections();
  EXPECT_LE(after_calls, before + 1);
  // The server says Connection: close and closes: the next call connects anew.
  EXPECT_EQ(Call("close_connection", "{}").status(), v1::RESULT_STATUS_SUCCESS);
  ExpectEcho("after the server closed");
  const int reconnected = PostConnections();
  EXPECT_GT(reconnected, after_calls);
  // The server closes the connection once idle for 1 s: the call after that
  // is not lost, it goes on a new connection.
  absl::SleepFor(absl::Milliseconds(1500));
  ExpectEcho("after an idle close");
  EXPECT_GT(PostConnections(), reconnected);
}

TEST_F(McpUnrulyHttpTest, ConcurrentCallsReuseABoundedPoolOfConnections) {
  ASSERT_TRUE(StartDaemon({Server()}).ok());
  auto burst = [this](int calls) {
    std::vector<std::thread> threads;
    for (int i = 0; i < calls; ++i) {
      threads.emplace_back([this] {
        EXPECT_EQ(Call("sleep", R"({"ms":300})").status(), v1::RESULT_STATUS_SUCCESS);
      });
    }
    for (std::thread& t : threads) t.join();
  };
  const int start = PostConnections();
  constexpr int kBurst = 12;
  static_assert(kBurst > mcp::HttpTransport::kIdleHandles);
  burst(kBurst);
  const int after_burst = PostConnections();
  EXPECT_LE(after_burst, start + kBurst);
  EXPECT_GE(after_burst, start + 2);  // they ran at once, on connections of their own
  // The pool kept kIdleHandles of them: a burst as big opens only the rest.
  burst(kBurst);
  EXPECT_LE(PostConnections(),
            after_burst + kBurst - static_cast<int>(mcp::HttpTransport::kIdleHandles));
}

TEST_F(McpUnrulyServerTest, ListingsOverTheCapsAreCutAndSaySo) {
  // The server's own tools (unruly_server.py), listed before the t<i> ones.
  constexpr uint32_t kOwn = 10;
  // 1,210 tools; then 50 tools, 40 of them with 100 KB descriptions (4 MB of
  // declarations), of which the first 10 fit in 1 MiB.
  for (bool big : {false, true}) {
    SCOPED_TRACE(big ? "bytes" : "tools");
    Restart({Unruly(big ? std::vector<std::string>{"--tools", "40", "--pad", "100000"}
                        : std::vector<std::string>{"--tools", "1200"})});
    v1::ListToolsResponse list = List();
    ASSERT_EQ(list.mcp_servers_size(), 1);
    const v1::McpServerStatus& status = list.mcp_servers(0);
    EXPECT_TRUE(status.ready());
    const uint32_t extra_kept = big ? 10 : 1000 - kOwn;  // what fits after the server's own
    EXPECT_EQ(status.tools(), kOwn + extra_kept);
    EXPECT_EQ(status.tools_left_out(), (big ? 40u : 1200u) - extra_kept);
    EXPECT_NE(FindTool(list, "echo"), nullptr);
    EXPECT_NE(FindTool(list, absl::StrCat("t", extra_kept - 1)), nullptr);
    EXPECT_EQ(FindTool(list, absl::StrCat("t", extra_kept)), nullptr);
  }
}

// An answer over 16 MiB or nested deeper than the parser takes fails its call
// at once, saying so (it was dropped, and the call waited out its timeout).
void ExpectUnreadableAnswersFailAtOnce(
    const std::function<v1::ToolResult(const std::string&)>& call) {
  const std::pair<std::string, std::string> cases[] = {
      {"big_answer", "bytes is over the limit of 16777216 bytes"},
      {"deep_answer", "nests deeper than"}};
  for (const auto& [tool, why] : cases) {
    SCOPED_TRACE(tool);
    absl::Time start = absl::Now();
    v1::ToolResult r = call(tool);
    EXPECT_EQ(r.status(), v1::RESULT_STATUS_ERROR) << r.error_message();
    EXPECT_THAT(r.error_message(), AllOf(HasSubstr("MCP server 'unruly'"), HasSubstr(why)));
    EXPECT_LT(absl::Now() - start, absl::Seconds(30));  // the timeout is 60 s
  }
  EXPECT_EQ(call("echo").status(), v1::RESULT_STATUS_SUCCESS);
}

TEST_F(McpUnrulyServerTest, AnAnswerTooBigOrTooDeepFailsItsCallAtOnce) {
  ASSERT_TRUE(StartDaemon({Unruly()}).ok());
  ExpectUnreadableAnswersFailAtOnce([this](const std::string& tool) { return Call(tool, "{}"); });
}

TEST_F(McpUnrulyHttpTest, AnAnswerTooBigOrTooDeepFailsItsCallAtOnce) {
  ASSERT_TRUE(StartDaemon({Server()}).ok());
  ExpectUnreadableAnswersFailAtOnce([this](const std::string& tool) { return Call(tool, "{}"); });
}

TEST_F(McpUnrulyServerTest, AListingTooDeepSaysWhyTheServerIsNotReady) {
  mcp::McpServerOptions server = Unruly({"--deep-list"});
  server.startup_timeout = absl::Milliseconds(100);
  ASSERT_TRUE(StartDaemon({server}).ok());
  std::string reason;
  for (absl::Time end = absl::Now() + absl::Seconds(20); absl::Now() < end;) {
    v1::ListToolsResponse list = List();
    ASSERT_EQ(list.mcp_servers_size(), 1);
    EXPECT_FALSE(list.mcp_servers(0).ready());
    reason = list.mcp_servers(0).unavailable_reason();
    if (absl::StrContains(reason, "nests deeper than")) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_THAT(reason, HasSubstr("nests deeper than"));
  EXPECT_THAT(reason, testing::Not(HasSubstr("is starting")));
}

}  // namespace
}  // namespace toolexec

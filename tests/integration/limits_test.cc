// The daemon at the system's limits: results larger than a message and the
// user's task limit (RLIMIT_NPROC).
// A call that cannot run or cannot be sent fails as a result; the batch goes
// on; the daemon neither aborts nor fails the stream, and SIGTERM still drains.
//
// The task-limit test runs the real toolexecd. RLIMIT_NPROC does not bind
// root, so it runs the daemon as an otherwise unused uid and needs root.
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "server/daemon.h"
#include "spdlog/spdlog.h"
#include "tests/common/daemon_process.h"
#include "tests/common/test_tools.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A temporary directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string templ = std::filesystem::temp_directory_path().string() + "/toolexec-limits-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

v1::ToolCall Call(const std::string& id, const std::string& name, const std::string& args) {
  auto call = MakeCall(id, name, args);
  if (!call.ok()) throw std::runtime_error(call.status().ToString());
  return *call;
}

// ---------------------------------------------------------------------------
// Results larger than one message.

TEST(ResultSizeTest, AResultLargerThanAMessageFailsAndTheLaterResultsArrive) {
  spdlog::set_level(spdlog::level::warn);
  TempDir dir;
  DaemonOptions options;
  options.server.listen = "127.0.0.1:0";
  options.engine.workspace = dir.path();
  options.server.max_receive_message_bytes = 1 << 20;
  options.server.max_send_message_bytes = 1 << 20;
  auto daemon = Daemon::Create(options, [](ToolRegistry& r) {
    return r.Register(testing::MakeTool("sized",
                                        [](const JsonValue& a, ToolContext&) -> absl::StatusOr<Json> {
                                          Json out = MakeObject();
                                          std::string text(a["bytes"].GetUint(), 'x');
                                          out.AddMember("text", JsonValue(text, out.GetAllocator()),
                                                        out.GetAllocator());
                                          return out;
                                        }),
                      "test");
  });
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  ASSERT_TRUE((*daemon)->Start().ok());
  auto client = Client::Create((*daemon)->address());

  v1::ExecuteBatchRequest request;
  *request.add_calls() = Call("small", "sized", R"({"bytes": 1000})");
  *request.add_calls() = Call("big", "sized", R"({"bytes": 2000000})");
  *request.add_calls() = Call("after", "sized", R"({"bytes": 10})");
  auto results = client->ExecuteBatchCollect(request);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 3u);
  EXPECT_EQ((*results)[0].status(), v1::RESULT_STATUS_SUCCESS);
  const v1::ToolResult& big = (*results)[1];
  EXPECT_EQ(big.status(), v1::RESULT_STATUS_ERROR);
  EXPECT_EQ(big.exception().code(), v1::ERROR_CODE_TOOL_FAILED);
  EXPECT_THAT(big.error_message(), HasSubstr("tool 'sized' returned a result of 2"));
  EXPECT_THAT(big.error_message(), HasSubstr(" bytes, over the limit of 1048570 bytes"));
  EXPECT_EQ(big.payload().struct_value().fields().at("error").string_value(), big.error_message());
  EXPECT_EQ((*results)[2].status(), v1::RESULT_STATUS_SUCCESS);
  EXPECT_EQ((*results)[2].id(), "after");
  (*daemon)->Shutdown();
}

// ---------------------------------------------------------------------------
// The real toolexecd under rlimits.

using ::toolexec::test_support::DaemonProcess;

// The processes (thread group leaders) whose real uid is `uid`.
std::vector<pid_t> ProcessesOf(uid_t uid) {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    struct stat st;
    if (stat(entry.path().c_str(), &st) == 0 && st.st_uid == uid) pids.push_back(pid);
  }
  return pids;
}

// A command takes the daemon's user to its task limit. Batches still get a
// result per call (those no thread can run fail saying why), and SIGTERM
// drains: exit 0, no abort, no command process left behind.
TEST(TaskLimitTest, BatchesFailClearlyAndSigtermStillDrains) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "needs root: RLIMIT_NPROC binds only a non-root uid, and the test runs the "
                    "daemon as an otherwise unused one";
  }
  const uid_t uid = 65000 - static_cast<uid_t>(getpid() % 1000);
  // Whatever way the test ends, nothing of that user outlives it.
  struct KillAll {
    uid_t uid;
    ~KillAll() {
      for (pid_t pid : ProcessesOf(uid)) kill(pid, SIGKILL);
    }
  } kill_all{uid};
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string workspace = dir.path() + "/ws";
  ASSERT_EQ(mkdir(workspace.c_str(), 0755), 0);
  ASSERT_EQ(chown(workspace.c_str(), uid, uid), 0);
  { std::ofstream(workspace + "/a.txt") << "hello\n"; }
  ASSERT_EQ(chown((workspace + "/a.txt").c_str(), uid, uid), 0);
  const std::string state = dir.path() + "/state";
  ASSERT_EQ(mkdir(state.c_str(), 0755), 0);
  ASSERT_EQ(chown(state.c_str(), uid, uid), 0);

  const char* binary = getenv("TOOLEXECD");  // another build, e.g. to compare
  DaemonProcess daemon({binary != nullptr ? binary : TOOLEXECD_PATH, state,
                        {"--listen=127.0.0.1:0", "--workspace=" + workspace,
                         "--drain_grace_ms=3000"},
                        static_cast<int>(uid), /*nproc=*/64});
  const std::string address = daemon.WaitForAddress();
  ASSERT_FALSE(address.empty()) << daemon.Log();
  auto client = Client::Create(address);

  // The command forks until its user is out of tasks, and stays.
  v1::ExecuteBatchRequest fill;
  *fill.add_calls() = Call("fill", "run_command",
                           R"({"command_line": "for i in $(seq 100); do sleep 300 & done; wait",
                               "background": true})");
  auto filled = client->ExecuteBatchCollect(fill);
  ASSERT_TRUE(filled.ok()) << filled.status();
  ASSERT_EQ(filled->at(0).status(), v1::RESULT_STATUS_SUCCESS) << filled->at(0).error_message();
  size_t before = 0;
  for (absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end;) {
    size_t now = ProcessesOf(uid).size();
    if (now > 30 && now == before) break;  // the command stopped growing
    before = now;
    absl::SleepFor(absl::Milliseconds(300));
  }

  v1::ExecuteBatchRequest batch;
  for (int i = 0; i < 8; ++i) {
    *batch.add_calls() = Call(absl::StrCat(i), "view_file", R"({"file_path": "a.txt"})");
  }
  auto results = client->ExecuteBatchCollect(batch);
  ASSERT_TRUE(results.ok()) << results.status();  // never a bare UNIMPLEMENTED
  ASSERT_EQ(results->size(), 8u);
  int refused = 0;
  for (const auto& r : *results) {
    if (r.status() == v1::RESULT_STATUS_SUCCESS) continue;
    ++refused;
    EXPECT_THAT(r.error_message(), HasSubstr("cannot start a thread")) << r.DebugString();
  }
  EXPECT_GT(refused, 0) << "the daemon's user never reached its task limit";

  int status = daemon.SignalAndWait(SIGTERM, absl::Seconds(30));
  ASSERT_NE(status, -1) << "no exit 30 s after SIGTERM\n" << daemon.Log();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "wait status " << status << "\n" << daemon.Log();
  EXPECT_THAT(daemon.Log(), Not(HasSubstr("terminate called")));
  std::vector<pid_t> left;
  for (absl::Time end = absl::Now() + absl::Seconds(5); absl::Now() < end;) {
    left = ProcessesOf(uid);
    if (left.empty()) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(left.empty()) << left.size() << " processes of the daemon's user are left";
}

}  // namespace
}  // namespace toolexec

// Session recordings through the Engine, no transport (core/recorder.h,
// core/recording_export.h): every event in order, permission questions and
// answers, the cut at max_bytes_per_session, secrets masked as the audit log
// masks them, a file that stays parseable when the daemon is killed mid-batch,
// recordings read back after a restart, and the provider transcripts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "core/audit_log.h"
#include "core/engine.h"
#include "core/recorder.h"
#include "core/recording_export.h"
#include "tools/runtime/provider_format.h"
#include "tests/common/test_tools.h"
#include "tests/unit/builtin/file_test_util.h"
#include "tests/unit/engine_test_util.h"

namespace toolexec {
namespace {

using toolexec::testing::WithExampleTools;

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::Call;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string Type(const JsonValue& e) { return e["type"].GetString(); }

// Calls from {id, name, args JSON} triples (CallRequest is move-only).
std::vector<CallRequest> Calls(std::vector<std::vector<std::string>> specs) {
  std::vector<CallRequest> out;
  for (const auto& c : specs) out.push_back(Call(c[0], c[1], c.size() > 2 ? c[2] : ""));
  return out;
}

// Collects one batch (results and questions) and waits for its end.
class Batch final : public BatchObserver {
 public:
  void OnProgress(ProgressEvent) override {}
  void OnPermissionRequest(const PermissionRequestEvent& e) override {
    absl::MutexLock lock(&mu_);
    requests.push_back(e.request_id);
  }
  void OnResult(ToolCallResult r) override {
    absl::MutexLock lock(&mu_);
    results.push_back(std::move(r));
  }
  void OnBatchDone() override { done.Notify(); }
  bool Wait() { return done.WaitForNotificationWithTimeout(absl::Seconds(30)); }
  std::string FirstRequest() {
    for (int i = 0; i < 3000; ++i) {
      {
        absl::MutexLock lock(&mu_);
        if (!requests.empty()) return requests[0];
      }
      absl::SleepFor(absl::Milliseconds(1));
    }
    return "";
  }
  absl::Mutex mu_;
  std::vector<std::string> requests;
  std::vector<ToolCallResult> results;
  absl::Notification done;
};

class RecordingTest : public ::testing::Test {
 protected:
  void Start(const std::function<void(EngineOptions&)>& more = nullptr,
             const ToolCatalogueOptions& tools = WithExampleTools()) {
    EngineOptions options;
    options.workspace = tree_.path();
    options.recording.dir = dir();
    options.recording.producer = "test";
    if (more) more(options);
    auto engine = CreateEngine(options, tools, [](ToolRegistry& r) -> absl::Status {
      // echo: its arguments back, as a tool whose output repeats its input.
      return r.Register(testing::MakeTool("echo",
                                          [](const JsonValue& args, ToolContext&) {
                                            return absl::StatusOr<Json>(CopyJson(args));
                                          }),
                        "test");
    });
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }
  std::string dir() const { return tree_.path() + "/recordings"; }

  std::string Open(bool record = true, const std::string& caller = "") {
    OpenSessionSpec spec;
    spec.record = record;
    spec.conversation_id = "conv-1";
    auto info = engine_->OpenSession({caller, ""}, spec);
    EXPECT_TRUE(info.ok()) << info.status();
    if (!info.ok()) return "";
    if (record) {
      EXPECT_EQ(info->recording, absl::StrCat(dir(), "/", info->session_id, ".jsonl"));
    }
    return info->session_id;
  }

  std::vector<ToolCallResult> Run(const std::string& session, std::vector<CallRequest> calls) {
    BatchSpec spec;
    spec.session_id = session;
    spec.calls = std::move(calls);
    Batch b;
    auto started = engine_->StartBatch({}, std::move(spec), &b);
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return {};
    EXPECT_TRUE(b.Wait());
    return std::move(b.results);
  }

  void Close(const std::string& session) { testing::CloseSessionAndWait(*engine_, {}, session); }

  // The recording as the engine exports it (natively: the file's lines).
  Recording Read(const std::string& session, const CallerIdentity& caller = {}) {
    auto text = engine_->ExportRecording(caller, session, RecordingFormat::kNative);
    EXPECT_TRUE(text.ok()) << text.status();
    auto parsed = ParseRecording(text.ok() ? *text : "");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    if (!parsed.ok()) return Recording();
    return *std::move(parsed);
  }

  static std::vector<std::string> Types(const Recording& r) {
    std::vector<std::string> out;
    for (const Json& e : r.events) out.push_back(Type(e));
    return out;
  }

  testing::TempTree tree_;
  std::unique_ptr<Engine> engine_;
};

TEST_F(RecordingTest, RecordsEveryEventInOrder) {
  Start();
  const std::string s = Open();
  auto first = Run(s, Calls({{"a", "get_weather", R"({"city":"Paris"})"},
                             {"b", "no_such_tool", "{}"},
                             {"c", "calculate_sum", R"({"numbers":[1,2,3.5]})"}}));
  ASSERT_EQ(first.size(), 3u);
  Run(s, Calls({{"d", "echo", R"({"x":1})"}}));
  Close(s);
  Recording r = Read(s);
  EXPECT_EQ(r.header["format"].GetString(), std::string("toolexec-recording/1"));
  EXPECT_EQ(r.header["session_id"].GetString(), s);
  EXPECT_FALSE(r.torn_tail);
  EXPECT_THAT(Types(r), ElementsAre("open_session", "batch", "result", "result", "result",
                                    "batch", "result", "close_session"));
  EXPECT_EQ(r.events[0]["session"]["conversation_id"].GetString(), std::string("conv-1"));
  EXPECT_EQ(r.events[1]["batch"].GetUint64(), 1u);
  EXPECT_EQ(r.events[1]["calls"][1]["name"].GetString(), std::string("no_such_tool"));
  EXPECT_EQ(r.events[1]["calls"][0]["args"]["city"].GetString(), std::string("Paris"));
  // Results in call order, whole, as the caller got them.
  for (int i = 0; i < 3; ++i) {
    const JsonValue& result = r.events[2 + i]["result"];
    EXPECT_EQ(r.events[2 + i]["batch"].GetUint64(), 1u);
    EXPECT_EQ(result["index"].GetUint(), static_cast<unsigned>(i));
    EXPECT_EQ(result["id"].GetString(), first[i].id);
    EXPECT_EQ(result["model_content"].GetString(), first[i].model_content);
    EXPECT_EQ(ToJsonString(result["payload"]), ToJsonString(first[i].payload));
  }
  EXPECT_EQ(r.events[2]["result"]["status"].GetString(), std::string("RESULT_STATUS_SUCCESS"));
  EXPECT_EQ(r.events[3]["result"]["status"].GetString(), std::string("RESULT_STATUS_ERROR"));
  EXPECT_EQ(r.events[3]["result"]["exception"]["code"].GetString(),
            std::string("ERROR_CODE_UNKNOWN_TOOL"));
  EXPECT_EQ(r.events[5]["batch"].GetUint64(), 2u);
  EXPECT_EQ(r.events[6]["result"]["payload"]["x"].GetInt(), 1);
}

TEST_F(RecordingTest, AWritingBatchsCheckpointIsRecordedBeforeItsResults) {
  Start([this](EngineOptions& o) {
    o.checkpoints_enabled = true;
    o.checkpoints.store_dir = tree_.path() + "-store";
  });
  const std::string s = Open();
  Run(s, Calls({{"a", "create_file", R"({"file_path":"made.txt","contents":"x"})"}}));
  Run(s, Calls({{"b", "view_file", R"({"file_path":"made.txt"})"}}));  // read-only: none
  auto listed = engine_->ListCheckpoints({}, s);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  Close(s);
  Recording r = Read(s);
  EXPECT_THAT(Types(r), ElementsAre("open_session", "batch", "checkpoint", "result", "batch",
                                    "result", "close_session"));
  const JsonValue& c = r.events[2]["checkpoint"];
  EXPECT_EQ(c["id"].GetString(), (*listed)[0].id);
  EXPECT_EQ(c["session_id"].GetString(), s);
  ASSERT_EQ(c["tools"].Size(), 1u);
  EXPECT_EQ(c["tools"][0].GetString(), std::string("create_file"));
  EXPECT_EQ(r.events[2]["batch"].GetUint64(), 1u);
}

TEST_F(RecordingTest, OnlyRecordedSessionsUnlessAllSessions) {
  Start();
  const std::string plain = Open(/*record=*/false);
  Run(plain, Calls({{"a", "echo", "{}"}}));
  EXPECT_EQ(engine_->ExportRecording({}, plain, RecordingFormat::kNative).status().code(),
            absl::StatusCode::kNotFound);
  engine_.reset();
  Start([](EngineOptions& o) { o.recording.all_sessions = true; });
  const std::string all = Open(/*record=*/false);
  Run(all, Calls({{"a", "echo", "{}"}}));
  EXPECT_THAT(Types(Read(all)), ElementsAre("open_session", "batch", "result"));
}

TEST_F(RecordingTest, RecordRequiresARecordingDir) {
  Start([](EngineOptions& o) { o.recording.dir = ""; });
  OpenSessionSpec spec;
  spec.record = true;
  auto info = engine_->OpenSession({}, spec);
  EXPECT_EQ(info.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(info.status().message(), HasSubstr("recording.dir"));
}

TEST_F(RecordingTest, PermissionQuestionsAndAnswersAreRecorded) {
  Start([](EngineOptions& o) {
    o.policy.rules.push_back(testing::Rule("ask", "echo", PolicyDecision::kAsk));
  });
  const std::string s = Open();
  BatchSpec spec;
  spec.session_id = s;
  spec.calls.push_back(Call("a", "echo", R"({"v":1})"));
  Batch b;
  auto started = engine_->StartBatch({}, std::move(spec), &b);
  ASSERT_TRUE(started.ok()) << started.status();
  const std::string request = b.FirstRequest();
  ASSERT_FALSE(request.empty());
  ASSERT_TRUE(engine_->RespondPermission({}, request, PermissionAnswer::kAllowOnce, "ok").ok());
  ASSERT_TRUE(b.Wait());
  Recording r = Read(s);
  EXPECT_THAT(Types(r), ElementsAre("open_session", "batch", "permission_request",
                                    "permission_answer", "result"));
  EXPECT_EQ(r.events[2]["request"]["request_id"].GetString(), request);
  EXPECT_EQ(r.events[3]["decision"].GetString(), std::string("allow_once"));
  EXPECT_EQ(r.events[4]["result"]["status"].GetString(), std::string("RESULT_STATUS_SUCCESS"));
}

TEST_F(RecordingTest, CutPastMaxBytesAndTheSessionGoesOn) {
  Start([](EngineOptions& o) { o.recording.max_bytes_per_session = 8192; });
  const std::string s = Open();
  const std::string big(3000, 'x');
  for (int i = 0; i < 5; ++i) {
    auto results =
        Run(s, Calls({{absl::StrCat(i), "echo", absl::StrCat(R"({"text":")", big, "\"}")}}));
    ASSERT_EQ(results.size(), 1u);
    EXPECT_TRUE(results[0].ok()) << results[0].error_message;  // the calls go on
  }
  Close(s);
  const std::string path = absl::StrCat(dir(), "/", s, ".jsonl");
  EXPECT_LE(ReadAll(path).size(), 8192u);
  Recording r = Read(s);
  ASSERT_FALSE(r.events.empty());
  EXPECT_EQ(Type(r.events.back()), "cut");
  EXPECT_THAT(r.events.back()["reason"].GetString(), HasSubstr("max_bytes_per_session"));
  const std::vector<std::string> types = Types(r);
  EXPECT_EQ(std::count(types.begin(), types.end(), "cut"), 1);
}

TEST_F(RecordingTest, SecretsAreMaskedAsTheAuditLogMasksThem) {
  Start();
  const std::string s = Open();
  const std::string args =
      R"({"api_token":"tok-SECRET1","cmd":"GITHUB_TOKEN=SECRET2 git push",)"
      R"("url":"https://me:SECRET3@example.com/x","note":"Authorization: Bearer SECRET4"})";
  Run(s, Calls({{"a", "echo", args}}));
  Close(s);
  const std::string text = ReadAll(absl::StrCat(dir(), "/", s, ".jsonl"));
  for (const char* secret : {"SECRET1", "SECRET2", "SECRET3", "SECRET4"}) {
    EXPECT_THAT(text, Not(HasSubstr(secret))) << secret;
  }
  Recording r = Read(s);
  // The same masking as the audit log's, in the request and in the result
  // (which echoes it), and nothing else changed.
  Json expected = AuditLog::Redact(testing::J(args));
  EXPECT_EQ(ToJsonString(r.events[1]["calls"][0]["args"]), ToJsonString(expected));
  EXPECT_EQ(ToJsonString(r.events[2]["result"]["payload"]), ToJsonString(expected));
  EXPECT_THAT(ToJsonString(expected), HasSubstr("git push"));
}

TEST_F(RecordingTest, SurvivesARestartAndBelongsToItsCaller) {
  Start();
  const std::string s = Open(true, "alice");
  BatchSpec spec;
  spec.session_id = s;
  spec.calls.push_back(Call("a", "echo", R"({"v":2})"));
  Batch b;
  ASSERT_TRUE(engine_->StartBatch({"alice", ""}, std::move(spec), &b).ok());
  ASSERT_TRUE(b.Wait());
  engine_->Drain(absl::Now() + absl::Seconds(5));  // the daemon stops, closing its sessions
  engine_.reset();
  Start();
  EXPECT_THAT(Types(Read(s, {"alice", ""})),
              ElementsAre("open_session", "batch", "result", "close_session"));
  EXPECT_EQ(engine_->ExportRecording({"bob", ""}, s, RecordingFormat::kNative).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(
      engine_->ExportRecording({}, "../etc/passwd", RecordingFormat::kNative).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// A call by a tool's provider-safe name, and a Responses native item, are
// exported as the model sent them, its result included.
TEST_F(RecordingTest, TranscriptsAnswerTheNameAndItemTheModelSent) {
  ToolCatalogueOptions tools = WithExampleTools();
  CommandToolOptions echo;
  echo.name = "acme.echo";
  echo.description = "Echoes its arguments.";
  echo.argv = {"/bin/cat"};
  tools.command_tools.push_back(echo);
  Start(nullptr, tools);
  const std::string s = Open();
  auto calls = Calls({{"e1", "acme_echo", R"({"x":1})"}, {"p1", "apply_patch",
      R"({"operation":{"type":"create_file","path":"n.txt","diff":"+one\n"}})"}});
  calls[1].item_type = "apply_patch_call";
  auto results = Run(s, std::move(calls));
  ASSERT_EQ(results.size(), 2u);
  ASSERT_TRUE(results[1].ok()) << results[1].error_message;

  Json gemini = testing::J(*engine_->ExportRecording({}, s, RecordingFormat::kGemini));
  ASSERT_EQ(gemini.Size(), 2u);
  EXPECT_EQ(gemini[0]["parts"][0]["functionCall"]["name"].GetString(), std::string("acme_echo"));
  EXPECT_EQ(gemini[1]["parts"][0]["functionResponse"]["name"].GetString(),
            std::string("acme_echo"));

  Json responses =
      testing::J(*engine_->ExportRecording({}, s, RecordingFormat::kOpenAiResponses));
  ASSERT_EQ(responses.Size(), 4u);
  EXPECT_EQ(responses[1]["type"].GetString(), std::string("apply_patch_call"));
  EXPECT_EQ(responses[1]["operation"]["path"].GetString(), std::string("n.txt"));
  EXPECT_EQ(responses[3]["type"].GetString(), std::string("apply_patch_call_output"));
  EXPECT_EQ(responses[3]["status"].GetString(), std::string("completed"));
}

TEST_F(RecordingTest, TranscriptsPairCallsWithTheirResults) {
  Start();
  const std::string s = Open();
  auto results = Run(s, Calls({{"t1", "get_weather", R"({"city":"Paris"})"},
                               {"t2", "no_such_tool", "{}"}}));
  ASSERT_EQ(results.size(), 2u);
  auto openai = engine_->ExportRecording({}, s, RecordingFormat::kOpenAi);
  ASSERT_TRUE(openai.ok()) << openai.status();
  Json messages = testing::J(*openai);
  ASSERT_EQ(messages.Size(), 3u);
  EXPECT_EQ(messages[0]["role"].GetString(), std::string("assistant"));
  EXPECT_EQ(messages[0]["tool_calls"][0]["id"].GetString(), std::string("t1"));
  EXPECT_EQ(messages[0]["tool_calls"][0]["function"]["arguments"].GetString(),
            std::string(R"({"city":"Paris"})"));
  EXPECT_EQ(messages[1]["role"].GetString(), std::string("tool"));
  EXPECT_EQ(messages[1]["tool_call_id"].GetString(), std::string("t1"));
  EXPECT_EQ(messages[1]["content"].GetString(), results[0].model_content);
  EXPECT_EQ(messages[2]["content"].GetString(), results[1].model_content);

  Json anthropic = testing::J(*engine_->ExportRecording({}, s, RecordingFormat::kAnthropic));
  ASSERT_EQ(anthropic.Size(), 2u);
  EXPECT_EQ(anthropic[0]["content"][1]["type"].GetString(), std::string("tool_use"));
  EXPECT_EQ(anthropic[1]["content"][1]["is_error"].GetBool(), true);
  EXPECT_EQ(anthropic[1]["content"][0]["is_error"].GetBool(), false);

  Json gemini = testing::J(*engine_->ExportRecording({}, s, RecordingFormat::kGemini));
  ASSERT_EQ(gemini.Size(), 2u);
  EXPECT_EQ(gemini[0]["role"].GetString(), std::string("model"));
  EXPECT_EQ(gemini[1]["parts"][1]["functionResponse"]["response"]["error"].GetString(),
            results[1].model_content);

  Json responses =
      testing::J(*engine_->ExportRecording({}, s, RecordingFormat::kOpenAiResponses));
  ASSERT_EQ(responses.Size(), 4u);
  EXPECT_EQ(responses[0]["type"].GetString(), std::string("function_call"));
  EXPECT_EQ(responses[2]["type"].GetString(), std::string("function_call_output"));
  EXPECT_EQ(responses[2]["call_id"].GetString(), std::string("t1"));
}

// Python's json.dumps(v, ensure_ascii=False), for the text of a result without
// model_content; expectations from CPython 3.11.
TEST(PythonJsonTextTest, WritesWhatJsonDumpsWrites) {
  EXPECT_EQ(PythonJsonText(testing::J(R"({"a":[1,2.5,"x\ny\u0001é"],"b":null,"c":true})")),
            "{\"a\": [1, 2.5, \"x\\ny\\u0001é\"], \"b\": null, \"c\": true}");
  EXPECT_EQ(PythonJsonText(testing::J("[1e-05,1e16,123456789.125,0.1,3.0]")),
            "[1e-05, 1e+16, 123456789.125, 0.1, 3]");
  EXPECT_EQ(PythonJsonText(testing::J("{}")), "{}");
  EXPECT_EQ(PythonJsonText(testing::J("[]")), "[]");
}

// A daemon killed (SIGKILL) while a batch runs leaves a file whose every line
// parses: the batches before it are whole.
TEST(RecordingCrashTest, KillMidBatchLeavesAParseableFile) {
  testing::TempTree tree;
  const std::string dir = tree.path() + "/rec";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    EngineOptions options;
    options.workspace = tree.path();
    options.recording.dir = dir;
    auto engine = CreateEngine(options, WithExampleTools());
    if (!engine.ok()) _exit(2);
    OpenSessionSpec spec;
    spec.record = true;
    auto info = (*engine)->OpenSession({}, spec);
    if (!info.ok()) _exit(3);
    // Many results in one batch, so the kill may land while they are written.
    for (int round = 0;; ++round) {
      BatchSpec batch;
      batch.session_id = info->session_id;
      for (int i = 0; i < 500; ++i) {
        batch.calls.push_back(Call(absl::StrCat(round, "-", i), "calculate_sum",
                                   R"({"numbers":[1,2,3]})"));
      }
      Batch b;
      auto started = (*engine)->StartBatch({}, std::move(batch), &b);
      if (!started.ok() || !b.Wait()) _exit(4);
      if (round == 0) {
        const std::string id = info->session_id;
        (void)!write(ready[1], id.data(), id.size());
        close(ready[1]);
      }
    }
  }
  close(ready[1]);
  char buf[128];
  ssize_t n = read(ready[0], buf, sizeof(buf));
  close(ready[0]);
  ASSERT_GT(n, 0) << "the child never finished its first batch";
  const std::string session(buf, static_cast<size_t>(n));
  const std::string path = absl::StrCat(dir, "/", session, ".jsonl");
  // The first batch reaches the file once the writer thread gets to it (the
  // second batch waits for that); on a loaded machine that can take a while.
  for (int i = 0; i < 3000; ++i) {
    auto written = ParseRecording(ReadAll(path));
    if (written.ok() && written->events.size() >= 502) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(20));  // more batches, one in flight
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  const std::string text = ReadAll(path);
  auto r = ParseRecording(text);
  ASSERT_TRUE(r.ok()) << r.status();
  // The header, open_session, and at least the first batch whole.
  ASSERT_GE(r->events.size(), 502u);
  EXPECT_EQ(Type(r->events[0]), "open_session");
  EXPECT_EQ(Type(r->events[1]), "batch");
  for (size_t i = 2; i < 502; ++i) EXPECT_EQ(Type(r->events[i]), "result");
}

}  // namespace
}  // namespace toolexec

// The example tools, through the runner as the daemon runs them.
#include "examples/tools/examples.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "tests/common/test_tools.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

using ::testing::ElementsAre;

class ExamplesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(examples::RegisterExampleTools(registry_).ok());
    runner_ = std::make_unique<ToolRunner>(&registry_, ToolRunner::Options{});
  }
  ToolCallResult RunOne(const std::string& name, const std::string& args,
                        std::shared_ptr<Session> session = nullptr) {
    return testing::RunOneCall(*runner_, name, args, std::move(session));
  }
  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(ExamplesTest, RegisteredInOrder) {
  EXPECT_THAT(registry_.names(),
              ElementsAre("get_weather", "counter", "check_inventory", "calculate_sum", "wait"));
  // Registering them twice is the [Names and order] duplicate error.
  EXPECT_EQ(examples::RegisterExampleTools(registry_).code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(ExamplesTest, GetWeather) {
  EXPECT_EQ(ToJsonString(RunOne("get_weather", R"({"city":"Paris"})").payload),
            R"({"temperature":22,"condition":"sunny","city":"Paris"})");
  EXPECT_EQ(ToJsonString(RunOne("get_weather", "").payload),
            R"({"temperature":22,"condition":"sunny","city":"Unknown"})");
}

TEST_F(ExamplesTest, CalculateSumReturnsAString) {
  EXPECT_EQ(ToJsonString(RunOne("calculate_sum", R"({"numbers":[1,2,3]})").payload),
            R"({"result":"Sum: 6"})");
  EXPECT_EQ(ToJsonString(RunOne("calculate_sum", R"({"numbers":["1", 1.5]})").payload),
            R"({"result":"Sum: 2.5"})");
  EXPECT_EQ(RunOne("calculate_sum", R"({"numbers":["x"]})").error->code,
            ErrorCode::kInvalidArguments);
}

TEST_F(ExamplesTest, CheckInventory) {
  auto r = RunOne("check_inventory", R"({"item":"apples"})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_STREQ(r.payload["item"].GetString(), "apples");
  EXPECT_TRUE(r.payload["count"].IsInt64());
  EXPECT_EQ(RunOne("check_inventory", "{}").error->code, ErrorCode::kInvalidArguments);
}

TEST_F(ExamplesTest, CounterNeedsASessionAndCountsAtomically) {
  EXPECT_EQ(RunOne("counter", "").error->code, ErrorCode::kNoContext);
  SessionManager sessions(&registry_, {});
  auto s = *sessions.Open({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) ASSERT_TRUE(RunOne("counter", "", s).ok());
    });
  }
  for (auto& t : threads) t.join();
  auto last = RunOne("counter", "", s);
  EXPECT_EQ(ToJsonString(last.payload), R"({"count":801})");
  EXPECT_EQ(ToJsonString(last.actions.state_delta), R"({"count":801})");
}

TEST_F(ExamplesTest, WaitReturnsAndIsCancellable) {
  auto r = RunOne("wait", R"({"ms":"20","value":{"a":1}})");
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(ToJsonString(r.payload), R"({"waited_ms":20,"value":{"a":1}})");
  BatchRequest req;
  req.timeout = absl::Milliseconds(50);
  req.calls.push_back(CallRequest{.id = "1", .name = "wait", .args_json = R"({"ms":10000})"});
  absl::Time start = absl::Now();
  auto results = runner_->Run(std::move(req));
  EXPECT_EQ(results->at(0).status, ResultStatus::kTimeout);
  runner_->Shutdown();  // returns promptly only if the tool woke up
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

}  // namespace
}  // namespace toolexec

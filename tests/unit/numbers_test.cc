// Numbers arrive two ways: as JSON text (args_json) and as a protobuf Struct
// (args, doubles only). Both must give a tool the same exact value, and an
// integral number is an integer on both [Arguments].
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "server/convert.h"
#include "tests/common/test_tools.h"
#include "examples/tools/examples.h"
#include "tools/runtime/tool_runner.h"

namespace toolexec {
namespace {

class NumbersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(examples::RegisterExampleTools(registry_).ok());
    ASSERT_TRUE(registry_
                    .Register(testing::MakeTool(
                                  "echo_count",
                                  [](const JsonValue& args, ToolContext&) -> absl::StatusOr<Json> {
                                    // Reads an int64, as a tool given "integer" may.
                                    Json out;
                                    out.SetInt64(args["count"].GetInt64());
                                    return out;
                                  },
                                  R"({"type":"object","properties":{"count":{"type":"integer"}},
                                      "required":["count"]})"),
                              "test")
                    .ok());
    runner_ = std::make_unique<ToolRunner>(&registry_, ToolRunner::Options{});
  }

  ToolCallResult ViaText(const std::string& name, const std::string& args_json) {
    return testing::RunOneCall(*runner_, name, args_json);
  }

  // The args channel: the daemon's own Struct -> JSON conversion.
  ToolCallResult ViaStruct(const std::string& name, const google::protobuf::Struct& args) {
    auto json = StructToJson(args);
    if (!json.ok()) throw std::runtime_error(json.status().ToString());
    BatchRequest req;
    req.calls.push_back(CallRequest{.id = "1", .name = name, .args = std::move(*json)});
    auto r = runner_->Run(std::move(req));
    if (!r.ok()) throw std::runtime_error(r.status().ToString());
    return std::move(r->at(0));
  }

  ToolRegistry registry_;
  std::unique_ptr<ToolRunner> runner_;
};

TEST_F(NumbersTest, BothChannelsGiveTheSameExactSum) {
  for (double d : {927.3655785987305, 0.1, 1.0000000000000002, 123456789.12345679}) {
    SCOPED_TRACE(d);
    google::protobuf::Struct args;
    (*args.mutable_fields())["numbers"].mutable_list_value()->add_values()->set_number_value(d);
    auto via_struct = ViaStruct("calculate_sum", args);
    char text[64];
    std::snprintf(text, sizeof text, R"({"numbers":[%.17g]})", d);
    auto via_text = ViaText("calculate_sum", text);
    ASSERT_TRUE(via_struct.ok()) << via_struct.error_message;
    ASSERT_TRUE(via_text.ok()) << via_text.error_message;
    EXPECT_EQ(ToJsonString(via_text.payload), ToJsonString(via_struct.payload));
  }
  // As a model writes it (the shortest form), and the sum printed shortest.
  auto r = ViaText("calculate_sum", R"({"numbers":[927.3655785987305]})");
  EXPECT_EQ(ToJsonString(r.payload), R"({"result":"Sum: 927.3655785987305"})");
}

TEST_F(NumbersTest, AnIntegralNumberIsAnIntegerOnBothChannels) {
  for (const char* literal : {"1.0", "1e2", "-3.00", "2E0"}) {
    SCOPED_TRACE(literal);
    auto via_text = ViaText("echo_count", absl::StrCat(R"({"count":)", literal, "}"));
    ASSERT_TRUE(via_text.ok()) << via_text.error_message;
    google::protobuf::Struct args;
    (*args.mutable_fields())["count"].set_number_value(std::strtod(literal, nullptr));
    auto via_struct = ViaStruct("echo_count", args);
    ASSERT_TRUE(via_struct.ok()) << via_struct.error_message;
    EXPECT_EQ(ToJsonString(via_text.payload), ToJsonString(via_struct.payload));
  }
  auto fraction = ViaText("echo_count", R"({"count":1.5})");
  ASSERT_FALSE(fraction.ok());
  EXPECT_EQ(fraction.error->code, ErrorCode::kInvalidArguments);
}

}  // namespace
}  // namespace toolexec

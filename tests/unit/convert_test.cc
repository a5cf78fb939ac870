// The wire conversions of the gRPC adapter (no server needed).
#include "server/convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "server/logging.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "tests/common/test_tools.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::J;

TEST(ConvertTest, StructRoundTripAndWholeNumbersBecomeIntegers) {
  google::protobuf::Struct s;
  ASSERT_TRUE(JsonToStruct(J(R"({"i":3,"f":0.5,"s":"x","b":true,"n":null,"a":[1,{"k":[]}]})"), &s)
                  .ok());
  auto back = StructToJson(s);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE((*back)["i"].IsInt64());
  EXPECT_EQ((*back)["i"].GetInt64(), 3);
  EXPECT_DOUBLE_EQ((*back)["f"].GetDouble(), 0.5);
  EXPECT_TRUE((*back)["n"].IsNull());
  EXPECT_EQ(ToJsonString((*back)["a"]), R"([1,{"k":[]}])");
}

TEST(ConvertTest, InvalidUtf8IsReplaced) {
  EXPECT_EQ(SanitizeUtf8("ok\xff!"), "ok\xEF\xBF\xBD!");
  EXPECT_EQ(SanitizeUtf8("\xC3\xA9"), "\xC3\xA9");        // é stays
  EXPECT_EQ(SanitizeUtf8("\xC3"), "\xEF\xBF\xBD");         // truncated sequence
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  // One U+FFFD per maximal subpart (tools/runtime/utf8.h), as the tools use:
  // a truncated 3-byte sequence is one, not one per byte.
  EXPECT_EQ(SanitizeUtf8("a\xE2\x82z"), "a\xEF\xBF\xBDz");
  google::protobuf::Struct s;
  ASSERT_TRUE(JsonToStruct(J(R"({"k":""})"), &s).ok());
  Json doc = J(R"({"k":""})");
  doc["k"].SetString("x \xF0\x9F\x98 y", doc.GetAllocator());
  ASSERT_TRUE(JsonToStruct(doc, &s).ok());
  EXPECT_EQ(s.fields().at("k").string_value(), "x \xEF\xBF\xBD y");
}

TEST(ConvertTest, ResultTooDeepForTheWireBecomesAnInternalError) {
  ToolCallResult r;
  r.name = "deep";
  r.payload = J(std::string(40, '[') + std::string(40, ']'));
  v1::ToolResult out;
  ToProto(std::move(r), &out);
  EXPECT_EQ(out.status(), v1::RESULT_STATUS_ERROR);
  EXPECT_EQ(out.exception().code(), v1::ERROR_CODE_INTERNAL);
  EXPECT_THAT(out.error_message(), HasSubstr("cannot be sent"));
}

TEST(ConvertTest, SuccessHasNoException) {
  ToolCallResult r;
  r.name = "t";
  r.id = "c1";
  r.payload = J(R"({"a":1})");
  v1::ToolResult out;
  ToProto(std::move(r), &out);
  EXPECT_EQ(out.status(), v1::RESULT_STATUS_SUCCESS);
  EXPECT_FALSE(out.has_exception());
  EXPECT_TRUE(out.error_message().empty());
  EXPECT_EQ(out.id(), "c1");
}

// The per-RPC log lines end "status=<CODE>[ msg=\"...\"] ms=<n>": the message
// is quoted and escaped, so it never runs into the next field.
TEST(ConvertTest, StatusLogFieldsKeepTheMessageApart) {
  auto text = [](const grpc::Status& status) {
    LogLine line("RPC");
    AddStatusFields(status, &line);
    return line.Text();
  };
  EXPECT_EQ(text(grpc::Status::OK), "RPC status=OK");
  EXPECT_EQ(text(grpc::Status(grpc::StatusCode::CANCELLED, "cancelled")),
            "RPC status=CANCELLED msg=\"cancelled\"");
  EXPECT_EQ(text(grpc::Status(grpc::StatusCode::UNAVAILABLE, "a \"b\"\nc")),
            "RPC status=UNAVAILABLE msg=\"a \\\"b\\\"\\nc\"");
}

// A log line's text form keeps plain values bare and quotes the rest; its
// time is UTC and says so.
TEST(ConvertTest, LogLinesQuoteWhatNeedsItAndCarryTheirZone) {
  LogLine line("ListTools");
  line.Add("peer", "ipv4:127.0.0.1:5").Add("caller", "CN=a b").AddNumber("ms", 1.234, 2);
  EXPECT_EQ(line.Text(), "ListTools peer=ipv4:127.0.0.1:5 caller=\"CN=a b\" ms=1.23");
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_formatter(NewLogFormatter(LogFormat::kText));
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("text", sink));
  line.Write(spdlog::level::info);
  spdlog::set_default_logger(previous);
  EXPECT_THAT(out.str(), ::testing::MatchesRegex(
                             "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{3}Z info ListTools "
                             "peer=ipv4:127.0.0.1:5 caller=\"CN=a b\" ms=1.23\n"));
}

TEST(ConvertTest, ErrorCodesMapOneToOne) {
  ToolCallResult r;
  r.status = ResultStatus::kTimeout;
  r.error = ToolCallError{"m", "t", "srv", ErrorCode::kTimeout};
  r.error_message = "m";
  r.payload = J(R"({"error":"m"})");
  v1::ToolResult out;
  ToProto(std::move(r), &out);
  EXPECT_EQ(out.status(), v1::RESULT_STATUS_TIMEOUT);
  EXPECT_EQ(out.exception().code(), v1::ERROR_CODE_TIMEOUT);
  EXPECT_EQ(out.exception().server_name(), "srv");
}

}  // namespace
}  // namespace toolexec

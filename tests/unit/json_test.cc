#include "tools/runtime/json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace toolexec {
namespace {

using ::testing::HasSubstr;

// A misused value throws (the runner makes it one failed call) rather than
// reading memory it should not.
TEST(JsonValueTest, AMisusedValueThrows) {
  Json number;
  number.SetInt(7);
  EXPECT_THROW(number.GetString(), std::runtime_error);
  Json object = MakeObject();
  EXPECT_THROW(object.PushBack(JsonValue(1), object.GetAllocator()), std::runtime_error);
}

// A small document takes a small block, not a 64 KiB one; a value larger
// than a block still fits, and a large document grows block by block.
TEST(JsonValueTest, ADocumentsPoolGrowsInSmallBlocks) {
  Json small = MakeObject();
  AddMember(small, "city", MakeString("Paris", small.GetAllocator()), small.GetAllocator());
  EXPECT_LE(small.GetAllocator().Capacity(), 1024u);

  const std::string big(100000, 'x');
  Json large = MakeObject();
  AddMember(large, "text", MakeString(big, large.GetAllocator()), large.GetAllocator());
  for (int i = 0; i < 1000; ++i) {
    AddMember(large, "k" + std::to_string(i), JsonValue(i), large.GetAllocator());
  }
  EXPECT_EQ(StringOf(large["text"]), big);
  EXPECT_EQ(large["k999"].GetInt(), 999);
  auto parsed = ParseJson(ToJsonString(large));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, large);
}

TEST(ParseJsonTest, ParsesValues) {
  auto doc = ParseJson(R"( {"a": [1, 2.5, "x", true, null]} )");
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_EQ(ToJsonString(*doc), R"({"a":[1,2.5,"x",true,null]})");
}

TEST(ParseJsonTest, ReportsOffsetOfError) {
  auto doc = ParseJson(R"({"a": })");
  ASSERT_FALSE(doc.ok());
  EXPECT_EQ(doc.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(doc.status().message(), HasSubstr("offset"));
}

TEST(ParseJsonTest, RejectsTrailingText) {
  EXPECT_FALSE(ParseJson("{} {}").ok());
  EXPECT_TRUE(ParseJson("{}  \n").ok());
}

TEST(ParseJsonTest, RejectsInvalidUtf8) { EXPECT_FALSE(ParseJson("\"\xff\"").ok()); }

TEST(ParseJsonTest, DepthLimit) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  auto doc = ParseJson(deep);
  ASSERT_FALSE(doc.ok());
  EXPECT_THAT(doc.status().message(), HasSubstr("deeper than 64"));
  std::string ok(64, '[');
  ok += std::string(64, ']');
  EXPECT_TRUE(ParseJson(ok).ok());
}

TEST(ParseJsonTest, HostileDepthDoesNotOverflowTheStack) {
  std::string deep(1000000, '[');
  EXPECT_FALSE(ParseJson(deep, 2000000).ok());  // unterminated, but no crash
}

// Every decimal literal reads as the double strtod (correctly rounded) gives.
TEST(ParseJsonTest, NumbersAreParsedExactly) {
  auto doc = ParseJson("[927.3655785987305]");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ((*doc)[0].GetDouble(), 927.3655785987305);
  std::mt19937_64 random(20261203);
  int wrong = 0;
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = random();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isfinite(d)) continue;
    char text[64];
    std::snprintf(text, sizeof text, i % 2 == 0 ? "%.16g" : "%.17g", d);
    auto parsed = ParseJson(text);
    ASSERT_TRUE(parsed.ok()) << text;
    if ((*parsed).GetDouble() != std::strtod(text, nullptr)) ++wrong;
  }
  EXPECT_EQ(wrong, 0);
}

// Every digit zero and an exponent far from 0: zero, with its sign (RapidJSON
// 1.1.0 alone read "0.0e40" as -1.5e228 and "0e-30" as 9.6e-240).
TEST(ParseJsonTest, ZeroWithAnyExponentIsZero) {
  auto doc = ParseJson("[0.0e40, -0.0e40, 0e-30, 0.000E+300, -0.00e-100, 0, -0, 0.0, 1e-30]");
  ASSERT_TRUE(doc.ok()) << doc.status();
  const auto& a = (*doc).GetArray();
  for (rapidjson::SizeType i = 0; i < 5; ++i) {
    ASSERT_TRUE(a[i].IsDouble()) << i;
    EXPECT_EQ(a[i].GetDouble(), 0.0) << i;
    EXPECT_EQ(std::signbit(a[i].GetDouble()), i == 1 || i == 4) << i;
  }
  EXPECT_TRUE(a[5].IsInt() && a[5].GetInt() == 0);
  EXPECT_TRUE(a[6].IsInt() && a[6].GetInt() == 0);
  EXPECT_TRUE(a[7].IsDouble() && a[7].GetDouble() == 0.0);
  EXPECT_EQ(a[8].GetDouble(), 1e-30);
  // Significant digits below the smallest double, written with many zeros
  // after the point (an int overflowed inside RapidJSON's conversion, found
  // by the args fuzzer: fuzz/corpus/args_fuzzer/number_below_smallest_double):
  // zero, with its sign; near the smallest double, what strtod reads.
  const std::string zeros(270, '0');
  for (const std::string& text :
       std::vector<std::string>{"-0." + zeros + "2496382341217243e-219", "0." + zeros + "5e-140", "1e-401",
        "0.0" + zeros + "1e-300", "-0." + zeros.substr(100) + "2" + zeros.substr(170) + "1e-219"}) {
    auto tiny = ParseJson(text);
    ASSERT_TRUE(tiny.ok()) << text << ": " << tiny.status();
    EXPECT_EQ((*tiny).GetDouble(), 0.0) << text;
    EXPECT_EQ(std::signbit((*tiny).GetDouble()), text[0] == '-') << text;
  }
  for (const std::string& text : std::vector<std::string>{"0." + zeros + "1e-40", "4.9e-324", "0." + zeros + "25e-30",
                                  "1" + zeros + "e-500"}) {
    auto near = ParseJson(text);
    ASSERT_TRUE(near.ok()) << text << ": " << near.status();
    EXPECT_EQ((*near).GetDouble(), std::strtod(text.c_str(), nullptr)) << text;
  }
  // A number too big for a double is still refused, where it starts.
  auto big = ParseJson("[1, 1e400]");
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(std::string(big.status().message()), ::testing::HasSubstr("offset 4: Number too big"));
}

// A lone surrogate would decode to bytes that are not UTF-8: refused, where
// the string ends. A pair is one character; "\u0000" is a character too.
TEST(ParseJsonTest, RefusesLoneSurrogates) {
  for (const char* text : {R"(["\udc00"])", R"({"\ude00x": 1})", R"(["\ud71d\ude00"])",
                           R"(["\ud800"])", R"(["\ud800x"])"}) {
    auto doc = ParseJson(text);
    ASSERT_FALSE(doc.ok()) << text;
    EXPECT_THAT(std::string(doc.status().message()), HasSubstr("surrogate")) << text;
  }
  auto pair = ParseJson(R"(["\ud83d\ude00", "a\u0000b"])");
  ASSERT_TRUE(pair.ok()) << pair.status();
  EXPECT_EQ(std::string((*pair)[0].GetString()), "\xF0\x9F\x98\x80");
  EXPECT_EQ((*pair)[1].GetStringLength(), 3u);
  EXPECT_TRUE(ParseJson(ToJsonString(*pair)).ok());
}

TEST(IntegralNumbersTest, IntegralDoublesBecomeIntegers) {
  Json doc = *ParseJson(R"({"a":1.0,"b":[1e2,-0.0,2.5,9007199254740992.0,1e300],"c":3})");
  EXPECT_TRUE(HasIntegralNonIntegers(doc));
  IntegralNumbersToIntegers(doc);
  EXPECT_FALSE(HasIntegralNonIntegers(doc));
  EXPECT_EQ(ToJsonString(doc), R"({"a":1,"b":[100,0,2.5,9007199254740992,1e300],"c":3})");
  EXPECT_TRUE(doc["a"].IsInt64());
  EXPECT_EQ(IntegralValue(2.0), 2);
  EXPECT_EQ(IntegralValue(0.5), std::nullopt);
  EXPECT_EQ(IntegralValue(std::nan("")), std::nullopt);
}

TEST(SanitizeJsonUtf8Test, StringsAndKeysBecomeUtf8InPlace) {
  Json doc = *ParseJson(R"({"k":"v","list":["ok",{"inner":"x"}],"n":1})");
  auto& a = doc.GetAllocator();
  EXPECT_FALSE(SanitizeJsonUtf8(doc, a));
  EXPECT_EQ(ToJsonString(doc), R"({"k":"v","list":["ok",{"inner":"x"}],"n":1})");
  doc["k"].SetString("v\xff", a);
  doc["list"][1]["inner"].SetString("\xe2\x82x", a);
  doc["list"][1].MemberBegin()->name.SetString("in\xc0", a);
  EXPECT_TRUE(SanitizeJsonUtf8(doc, a));
  EXPECT_EQ(ToJsonString(doc),
            "{\"k\":\"v\xEF\xBF\xBD\",\"list\":[\"ok\",{\"in\xEF\xBF\xBD\":\"\xEF\xBF\xBDx\"}],\"n\":1}");
  Json text(rapidjson::kStringType);
  text.SetString("\xff", text.GetAllocator());
  EXPECT_TRUE(SanitizeJsonUtf8(text, text.GetAllocator()));
  EXPECT_EQ(StringOf(text), "\xEF\xBF\xBD");
}

TEST(JsonDepthTest, CountsNesting) {
  EXPECT_EQ(JsonDepth(*ParseJson("1")), 0);
  EXPECT_EQ(JsonDepth(*ParseJson("{}")), 1);
  EXPECT_EQ(JsonDepth(*ParseJson(R"({"a":[[1]]})")), 3);
}

}  // namespace
}  // namespace toolexec

// [Arguments]: coercion, then validation, then defaults.
#include "tools/runtime/schema.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/common/test_tools.h"

namespace toolexec {
namespace {

using ::testing::HasSubstr;
using testing::J;

std::unique_ptr<CompiledSchema> Compile(const std::string& text) {
  auto s = CompiledSchema::Compile(text);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

// Coerces `args` against `schema` and returns the JSON text.
std::string Coerced(const std::string& schema, const std::string& args) {
  Json doc = J(args);
  Compile(schema)->Coerce(doc);
  return ToJsonString(doc);
}

constexpr const char* kScalars = R"({
  "type": "object",
  "properties": {
    "i": {"type": "integer"},
    "n": {"type": "number"},
    "b": {"type": "boolean"},
    "s": {"type": "string"},
    "a": {"type": "array", "items": {"type": "integer"}},
    "o": {"type": "object", "properties": {"x": {"type": "integer"}}},
    "ni": {"type": ["integer", "null"]},
    "either": {"type": ["integer", "string"]}
  }
})";

TEST(CoerceTest, StringToInteger) { EXPECT_EQ(Coerced(kScalars, R"({"i":"3"})"), R"({"i":3})"); }
TEST(CoerceTest, NegativeStringToInteger) {
  EXPECT_EQ(Coerced(kScalars, R"({"i":"-42"})"), R"({"i":-42})");
}
TEST(CoerceTest, StringToNumber) { EXPECT_EQ(Coerced(kScalars, R"({"n":"0.5"})"), R"({"n":0.5})"); }
TEST(CoerceTest, StringToBoolean) {
  EXPECT_EQ(Coerced(kScalars, R"({"b":"true"})"), R"({"b":true})");
  EXPECT_EQ(Coerced(kScalars, R"({"b":"TRUE"})"), R"({"b":true})");
  EXPECT_EQ(Coerced(kScalars, R"({"b":"False"})"), R"({"b":false})");
}
TEST(CoerceTest, NumberToString) {
  EXPECT_EQ(Coerced(kScalars, R"({"s":7})"), R"({"s":"7"})");
  EXPECT_EQ(Coerced(kScalars, R"({"s":0.5})"), R"({"s":"0.5"})");
}
TEST(CoerceTest, JsonTextToArrayAndObject) {
  EXPECT_EQ(Coerced(kScalars, R"({"a":"[1, \"2\"]"})"), R"({"a":[1,2]})");
  EXPECT_EQ(Coerced(kScalars, R"({"o":"{\"x\": \"5\"}"})"), R"({"o":{"x":5}})");
}
TEST(CoerceTest, RecursesIntoArraysAndObjects) {
  EXPECT_EQ(Coerced(kScalars, R"({"a":["1","2"],"o":{"x":"9"}})"), R"({"a":[1,2],"o":{"x":9}})");
}
TEST(CoerceTest, NullableType) {
  EXPECT_EQ(Coerced(kScalars, R"({"ni":"4"})"), R"({"ni":4})");
  EXPECT_EQ(Coerced(kScalars, R"({"ni":null})"), R"({"ni":null})");
}

// An integral number is an integer however it is written [Arguments].
TEST(CoerceTest, IntegralNumbersAreIntegers) {
  EXPECT_EQ(Coerced(kScalars, R"({"i":1.0})"), R"({"i":1})");
  EXPECT_EQ(Coerced(kScalars, R"({"i":1e2,"a":[2.0]})"), R"({"i":100,"a":[2]})");
  EXPECT_EQ(Coerced(kScalars, R"({"i":"1.0"})"), R"({"i":1})");
  auto schema = Compile(kScalars);
  Json args = J(R"({"i":1.0,"ni":-2e0,"a":[3.0]})");
  ASSERT_TRUE(schema->Prepare(args).ok()) << schema->Prepare(args);
  EXPECT_EQ(args["i"].GetInt64(), 1);
  Json fraction = J(R"({"i":1.5})");
  EXPECT_THAT(schema->Prepare(fraction).message(), HasSubstr("args.i"));
  // Validation alone agrees (draft 7: an integer is a number with no fraction).
  EXPECT_TRUE(schema->Validate(J(R"({"i":1.0,"o":{"x":2.0}})")).ok());
}

// What must stay untouched, so the real type error still surfaces.
TEST(CoerceTest, LeavesAmbiguousOrWrongValuesUntouched) {
  EXPECT_EQ(Coerced(kScalars, R"({"i":"not a number"})"), R"({"i":"not a number"})");
  EXPECT_EQ(Coerced(kScalars, R"({"i":"3.5"})"), R"({"i":"3.5"})");
  EXPECT_EQ(Coerced(kScalars, R"({"b":"maybe"})"), R"({"b":"maybe"})");
  EXPECT_EQ(Coerced(kScalars, R"({"n":"inf"})"), R"({"n":"inf"})");
  EXPECT_EQ(Coerced(kScalars, R"({"n":"0x10"})"), R"({"n":"0x10"})");
  EXPECT_EQ(Coerced(kScalars, R"({"a":"[1,"})"), R"({"a":"[1,"})");
  EXPECT_EQ(Coerced(kScalars, R"({"a":"{\"x\":1}"})"), R"({"a":"{\"x\":1}"})");
  // Two non-null types: converting would be a guess.
  EXPECT_EQ(Coerced(kScalars, R"({"either":"3"})"), R"({"either":"3"})");
  // Keys the schema does not name.
  EXPECT_EQ(Coerced(kScalars, R"({"unnamed":"3"})"), R"({"unnamed":"3"})");
}

TEST(ValidateTest, InvalidArgumentsNamePathAndRule) {
  auto schema = Compile(kScalars);
  Json args = J(R"({"i":"3.5"})");
  absl::Status s = schema->Prepare(args);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("args.i"));
  EXPECT_THAT(s.message(), HasSubstr("type"));
}

TEST(ValidateTest, NestedPathNamesTheArrayIndex) {
  auto schema = Compile(kScalars);
  Json args = J(R"({"a":[1,"x",3]})");
  absl::Status s = schema->Prepare(args);
  EXPECT_THAT(s.message(), HasSubstr("args.a[1]"));
}

TEST(ValidateTest, MissingRequiredField) {
  auto schema = Compile(R"({"type":"object","properties":{"city":{"type":"string"}},
                            "required":["city"]})");
  Json args = J("{}");
  absl::Status s = schema->Prepare(args);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("city"));
}

TEST(ValidateTest, ArgumentsMustBeAnObject) {
  auto schema = Compile(kScalars);
  Json args = J("[1,2]");
  absl::Status s = schema->Prepare(args);
  EXPECT_THAT(s.message(), HasSubstr("must be a JSON object, got array"));
}

TEST(DefaultsTest, AbsentOptionalPropertyGetsItsDefault) {
  auto schema = Compile(R"({"type":"object","properties":{
      "depth":{"type":"integer","default":1},
      "hidden":{"type":"boolean","default":false},
      "given":{"type":"integer","default":5},
      "nested":{"type":"object","properties":{"k":{"type":"string","default":"v"}}}}})");
  Json args = J(R"({"given":"9","nested":{}})");
  ASSERT_TRUE(schema->Prepare(args).ok());
  EXPECT_EQ(args["depth"].GetInt(), 1);
  EXPECT_FALSE(args["hidden"].GetBool());
  EXPECT_EQ(args["given"].GetInt(), 9);  // coerced, not replaced by the default
  EXPECT_STREQ(args["nested"]["k"].GetString(), "v");
}

TEST(CompileTest, RejectsInvalidSchemas) {
  EXPECT_FALSE(CompiledSchema::Compile("not json").ok());
  EXPECT_FALSE(CompiledSchema::Compile("[]").ok());
  EXPECT_FALSE(CompiledSchema::Compile(R"({"type":"string"})").ok());
  auto bad = CompiledSchema::Compile(R"({"type":"object","properties":{"x":{"type":7}}})");
  EXPECT_FALSE(bad.ok());
}

// "pattern" is matched with RE2 (linear time, no recursion): a long string
// neither crashes the daemon nor takes forever, as std::regex would.
TEST(PatternTest, LongStringsAreMatchedWithoutCrashing) {
  auto schema = Compile(R"({"type":"object","properties":{
      "name":{"type":"string","pattern":"^[a-z]+$"}}})");
  Json good = J("{}");
  good.AddMember("name", JsonValue().SetString(std::string(200000, 'a').c_str(), good.GetAllocator()),
                 good.GetAllocator());
  EXPECT_TRUE(schema->Prepare(good).ok());
  Json bad = J("{}");
  bad.AddMember("name", JsonValue().SetString((std::string(200000, 'a') + "1").c_str(),
                                         bad.GetAllocator()),
                bad.GetAllocator());
  absl::Status s = schema->Prepare(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("args.name"));
  EXPECT_THAT(s.message(), HasSubstr("^[a-z]+$"));
}

TEST(PatternTest, PatternIsASearchNotAFullMatch) {
  auto schema = Compile(R"({"type":"object","properties":{
      "id":{"type":"string","pattern":"[0-9]{3}"}}})");
  Json yes = J(R"({"id":"ab123cd"})");
  EXPECT_TRUE(schema->Prepare(yes).ok());
  Json no = J(R"({"id":"ab12cd"})");
  EXPECT_FALSE(schema->Prepare(no).ok());
}

TEST(PatternTest, APropertyNamedPatternIsNotAKeyword) {
  // grep_search has a property called "pattern"; only keyword positions count.
  auto schema = Compile(R"({"type":"object","properties":{
      "pattern":{"type":"string","pattern":"^x"}},"required":["pattern"]})");
  Json yes = J(R"({"pattern":"xyz"})");
  EXPECT_TRUE(schema->Prepare(yes).ok());
  Json no = J(R"({"pattern":"yz"})");
  EXPECT_FALSE(schema->Prepare(no).ok());
}

TEST(PatternTest, AppliesInsideCombinatorsItemsAndRefs) {
  auto schema = Compile(R"({"type":"object",
      "definitions":{"code":{"type":"string","pattern":"^[A-Z]{2}$"}},
      "properties":{
        "codes":{"type":"array","items":{"$ref":"#/definitions/code"}},
        "either":{"anyOf":[{"type":"string","pattern":"^a"},{"type":"string","pattern":"^b"}]}}})");
  Json ok = J(R"({"codes":["AB","CD"],"either":"bee"})");
  EXPECT_TRUE(schema->Prepare(ok).ok());
  Json bad_item = J(R"({"codes":["AB","cd"]})");
  EXPECT_THAT(schema->Prepare(bad_item).message(), HasSubstr("args.codes[1]"));
  Json bad_any = J(R"({"either":"cat"})");
  EXPECT_FALSE(schema->Prepare(bad_any).ok());
}

TEST(PatternTest, NonStringsAreNotMatched) {
  auto schema = Compile(R"({"type":"object","properties":{
      "v":{"type":["string","integer"],"pattern":"^[a-z]+$"}}})");
  Json n = J(R"({"v":7})");
  EXPECT_TRUE(schema->Prepare(n).ok());
}

TEST(PatternTest, AnUnsupportedPatternIsAClearCompileError) {
  // RE2 has no lookaround or backreferences; say so when the tool registers.
  auto s = CompiledSchema::Compile(R"js({"type":"object","properties":{
      "x":{"type":"string","pattern":"^(?!foo)"}}})js");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("properties/x"));
  EXPECT_THAT(s.status().message(), HasSubstr("RE2"));
  EXPECT_FALSE(CompiledSchema::Compile(R"({"type":"object","properties":{
      "x":{"type":"string","pattern":7}}})").ok());
}

TEST(PatternTest, ARefIntoAnyPartOfTheSchemaIsMatchedWithRe2Too) {
  // valijson follows a $ref to any JSON pointer, not only to definitions.
  auto schema = Compile(R"({"type":"object",
      "x-shared":{"word":{"type":"string","pattern":"^[a-z]+$"}},
      "properties":{"v":{"$ref":"#/x-shared/word"}}})");
  Json good = J("{}");
  good.AddMember("v", JsonValue().SetString(std::string(400000, 'a').c_str(), good.GetAllocator()),
                 good.GetAllocator());
  EXPECT_TRUE(schema->Prepare(good).ok());
  Json bad = J(R"({"v":"A"})");
  EXPECT_FALSE(schema->Prepare(bad).ok());
}

TEST(PatternTest, PatternsWithNulAreRefused) {
  // valijson keeps a pattern only up to its first NUL: say so at registration
  // rather than match a different expression.
  auto nul = CompiledSchema::Compile(
      R"({"type":"object","properties":{"x":{"type":"string","pattern":"a\u0000b"}}})");
  ASSERT_FALSE(nul.ok());
  EXPECT_THAT(nul.status().message(), HasSubstr("U+0000"));
  // Keywords of toolexec's own do not exist: this is an unknown keyword.
  EXPECT_TRUE(CompiledSchema::Compile(R"({"type":"object","x-toolexec-pattern":"0"})").ok());
  // Outside schema positions a pattern RE2 cannot read is data, not an error.
  EXPECT_TRUE(CompiledSchema::Compile(
                  R"js({"type":"object","x-ui":{"hint":{"pattern":"(?!x)"}}})js")
                  .ok());
}

TEST(FormatTest, DateTimeFormatsAreCheckedWithoutCrashingOnLongInput) {
  auto schema = Compile(R"({"type":"object","properties":{
      "d":{"type":"string","format":"date"},
      "t":{"type":"string","format":"time"},
      "dt":{"type":"string","format":"date-time"},
      "n":{"type":"integer","format":"int32"},
      "e":{"type":"string","format":"email"}}})");
  Json ok = J(R"({"d":"2026-12-03","t":"16:52:45Z","dt":"2026-12-03T16:52:45+02:00",
                  "n":5,"e":"anything"})");
  EXPECT_TRUE(schema->Prepare(ok).ok()) << schema->Prepare(ok);
  Json bad_date = J(R"({"d":"2026-02-30"})");
  EXPECT_THAT(schema->Prepare(bad_date).message(), HasSubstr("args.d"));
  Json bad_time = J(R"({"t":"25:00:00Z"})");
  EXPECT_THAT(schema->Prepare(bad_time).message(), HasSubstr("valid time"));
  Json bad_dt = J(R"({"dt":"2026-12-03 16:52:45Z"})");
  EXPECT_THAT(schema->Prepare(bad_dt).message(), HasSubstr("valid date-time"));
  Json huge = J("{}");
  huge.AddMember("d", JsonValue().SetString((std::string(200000, '1') + "-01-01").c_str(),
                                       huge.GetAllocator()),
                 huge.GetAllocator());
  EXPECT_TRUE(schema->Prepare(huge).ok());  // a very long year is still a date
}

TEST(PatternPropertiesTest, LongPropertyNamesAreMatchedWithRe2) {
  auto schema = Compile(R"({"type":"object","patternProperties":{
      "^[a-z]+$":{"type":"integer"}},"additionalProperties":false})");
  Json ok = J(R"({"abc":1})");
  EXPECT_TRUE(schema->Prepare(ok).ok());
  Json wrong = J(R"({"abc":"x"})");
  EXPECT_THAT(schema->Prepare(wrong).message(), HasSubstr("args.abc"));
  Json extra = J(R"({"ABC":1})");
  EXPECT_THAT(schema->Prepare(extra).message(), HasSubstr("'ABC'"));
  Json huge = J("{}");
  huge.AddMember(JsonValue().SetString(std::string(200000, 'a').c_str(), huge.GetAllocator()),
                 JsonValue(1), huge.GetAllocator());
  EXPECT_TRUE(schema->Prepare(huge).ok());
}


// A strict-mode null for an optional property means absent; for a required
// one, or where the schema admits null, it stays.
TEST(NullOptionalTest, NullOptionalIsRemovedThenDefaulted) {
  auto schema = Compile(R"({"type":"object","required":["r"],"properties":{
      "r":{"type":"string"},"d":{"type":"integer","default":3},"o":{"type":"string"},
      "n":{"type":["string","null"]},
      "nested":{"type":"object","properties":{"x":{"type":"boolean","default":false}}}}})");
  Json args = J(R"({"r":"a","d":null,"o":null,"n":null,"nested":{"x":null}})");
  ASSERT_TRUE(schema->Prepare(args).ok());
  EXPECT_EQ(ToJsonString(args), R"({"r":"a","n":null,"nested":{"x":false},"d":3})");
  Json required_null = J(R"({"r":null})");
  absl::Status s = schema->Prepare(required_null);
  EXPECT_THAT(s.message(), HasSubstr("args.r: expected type string, got null"));
}

// Every broken rule, each with its path and what was expected.
TEST(ValidationMessageTest, NamesEveryViolationWithTheExpectedType) {
  auto schema = Compile(R"({"type":"object","required":["a"],"properties":{
      "a":{"type":"integer"},"b":{"type":"string","enum":["x","y"]},
      "c":{"type":"array","items":{"type":"boolean"}}}})");
  Json args = J(R"({"a":"many","b":"z","c":[true,"maybe"]})");
  std::string m(schema->Prepare(args).message());
  EXPECT_THAT(m, HasSubstr("args.a: expected type integer, got string \"many\""));
  EXPECT_THAT(m, HasSubstr("args.b: expected one of [\"x\",\"y\"], got \"z\""));
  EXPECT_THAT(m, HasSubstr("args.c[1]: expected type boolean, got string \"maybe\""));
}

TEST(ValidationMessageTest, ListsAtMostTenProblems) {
  auto schema = Compile(R"({"type":"object","properties":{
      "a":{"type":"array","items":{"type":"boolean"}}}})");
  Json args = J(R"({"a":[1,2,3,4,5,6,7,8,9,10,11,12]})");
  std::string m(schema->Prepare(args).message());
  EXPECT_THAT(m, HasSubstr("args.a[9]: expected type boolean, got integer 10; and 2 more"));
  EXPECT_THAT(m, ::testing::Not(HasSubstr("args.a[10]")));
}

// A huge request makes a bounded message: keys are cut, and only the first
// unknown ones are named.
TEST(ValidationMessageTest, HugeOrManyUnknownKeysMakeABoundedMessage) {
  auto schema = Compile(R"({"type":"object","additionalProperties":false,"properties":{
      "n":{"type":"object","additionalProperties":false,"properties":{"k":{"type":"integer"}}}}})");
  const std::string huge(4 << 20, 'k');
  Json one = J(absl::StrCat(R"({")", huge, R"(":1,"n":{")", huge, R"(":2}})"));
  std::string m(schema->Prepare(one).message());
  EXPECT_LT(m.size(), 2000u) << m.substr(0, 300);
  EXPECT_THAT(m, HasSubstr("unknown argument 'kkkk"));
  EXPECT_THAT(m, HasSubstr("more bytes]"));

  std::string many = "{";
  for (int i = 0; i < 100000; ++i) absl::StrAppend(&many, i == 0 ? "" : ",", "\"key", i, "\":1");
  Json lots = J(absl::StrCat(many, "}"));
  m = std::string(schema->Prepare(lots).message());
  EXPECT_LT(m.size(), 2000u) << m.substr(0, 300);
  EXPECT_THAT(m, HasSubstr("'key9', and 99990 more"));
}

TEST(ValidationMessageTest, UnknownArgumentsNameTheKnownOnes) {
  auto schema = Compile(R"({"type":"object","additionalProperties":false,"properties":{
      "file_path":{"type":"string"},"start_line":{"type":"integer"}}})");
  Json args = J(R"({"path":"a","file_path":"b","limit":3})");
  EXPECT_THAT(schema->Prepare(args).message(),
              HasSubstr("args: unknown arguments 'path', 'limit'; the known ones are file_path, "
                        "start_line"));
}

}  // namespace
}  // namespace toolexec
